// SPDX-License-Identifier: Apache-2.0
// The job table's events and time: a job's fds (its output, its stdin, its
// main process, its stop's watch, its owner's pidfd), its deadlines, the
// lines its readiness probe reads and the probes that are due.
#include <poll.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "jobs/job_table.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace

// --- events and time ------------------------------------------------------

void JobTable::on_event(uint64_t t, uint32_t events) {
  const uint64_t id = tag_id(t);
  if (tag_kind(t) == Tag::stream) {
    // (what its reader took may let the job's output flow again)
    if (Job* j = streams_.job_of(id)) touch(*j);
    return streams_.on_event(id, events);
  }
  Job* j = job_by_num(id & ~kOwnerWatch);
  if (!j) return;
  switch (tag_kind(t)) {
    case Tag::job_main:
      if (id & kOwnerWatch) {
        // The call this job was asked for from has ended.
        poller_.unwatch(j->tie.owner_pidfd.get());
        j->tie.owner_pidfd.reset();
        stops_.begin(*j, Call::End::owner_ended);
        return;
      }
      stops_.main_exited(*j);
      return;
    case Tag::job_out:
      j->pull(false, false, scratch_);
      streams_.pump(*j);
      if (j->ready) feed_lines(*j, sys::monotonic_ns());
      answers_.settle(*j);
      // A job's pipe ends a moment before its main process is reaped (a
      // process closes its files on the way out): when its pidfd says so
      // already, the exit is handled in this wake, not in one more.
      if (!j->out && j->main_watched && readable_now(j->call->pidfd())) stops_.main_exited(*j);
      return;
    case Tag::job_err:
      if (j->err_buffer) j->pull(true, false, scratch_);
      if (j->ready) feed_lines(*j, sys::monotonic_ns());
      answers_.settle(*j);
      return;
    case Tag::job_ready:
      if (j->ready) j->ready->on_socket(events, sys::monotonic_ns());
      probe(*j);
      return;
    case Tag::job_in: j->write_stdin(); return;
    case Tag::job_stop:
      if (!j->call->finishing()) return;  // (an event of a watch dropped in this batch)
      // The step is taken in its turn (the stop re-reads the boundary then).
      stops_.step_due(*j);
      return;
    default: return;
  }
}

// Every job is in the index by when it is next due; what may have changed
// that (a job found, an event of its own) is looked at again here, and so
// is every job looked at in every round (a wait's due time depends on its
// connection too). A round thus costs what it touched, not the number of
// jobs: a service with a thousand jobs closing at once looked at every one
// of them twice after every round of events.
int64_t JobTable::due_of(const Job& j, bool& each_round) const {
  int64_t next = kForever;
  // (Work queued for it is done without waiting.)
  if (!j.done && !j.stopping()) next = std::min(next, j.call->timeout_at());
  if (j.call->finishing() && !j.step_queued) next = std::min({next, j.call->finish_deadline(), j.rescan_at});
  next = std::min(next, answers_.next_due(j));
  if (j.ready) next = std::min(next, j.ready->next_due());
  each_round = !j.waiters.empty() || (j.ready && !j.ready->decided());
  return next;
}

bool JobTable::due_now(const Job& j, int64_t now) const {
  const bool finishing = j.call->finishing() && !j.step_queued;
  return (!j.done && !j.stopping() && now >= j.call->timeout_at()) ||
         (finishing && (now >= j.call->finish_deadline() || now >= j.rescan_at)) || !j.waiters.empty() ||
         (j.ready && !j.ready->decided());
}

void JobTable::unindex(Job& j) {
  if (j.due_key != kForever) due_.erase({j.due_key, j.num});
  if (j.each_round) each_round_.erase(j.num);
  j.due_key = kForever;
  j.each_round = false;
}

void JobTable::reindex() {
  std::vector<uint64_t> nums = std::move(touched_);
  touched_.clear();
  nums.insert(nums.end(), each_round_.begin(), each_round_.end());
  for (uint64_t num : nums) {
    Job* found = job_at(num);
    if (!found) continue;
    Job& j = *found;
    j.touched = false;
    bool each = false;
    const int64_t due = due_of(j, each);
    if (due != j.due_key) {
      if (j.due_key != kForever) due_.erase({j.due_key, j.num});
      if (due != kForever) due_.insert({due, j.num});
      j.due_key = due;
    }
    if (each != j.each_round) {
      if (each) each_round_.insert(j.num);
      else each_round_.erase(j.num);
      j.each_round = each;
    }
  }
}

int64_t JobTable::next_deadline() {
  reindex();
  const int64_t next = due_.empty() ? kForever : due_.begin()->first;
  check_index(next);
  return next;
}

// Builds with PMON_CHECK_INDEX (the sanitized ones) check the index against
// every job, as each round looked at them before it: a job whose due time
// changed unseen would be stopped late, or never.
void JobTable::check_index([[maybe_unused]] int64_t next) const {
#ifdef PMON_CHECK_INDEX
  int64_t all = kForever;
  for (auto& [id, j] : jobs_) {
    bool each = false;
    const int64_t due = due_of(*j, each);
    all = std::min(all, due);
    if (due != j->due_key || each != j->each_round) {
      std::fprintf(stderr, "pmon: internal error: job %s is due at %lld in the index, at %lld in fact (each round: %d, %d)\n",
                   id.c_str(), static_cast<long long>(j->due_key), static_cast<long long>(due), j->each_round, each);
      std::abort();
    }
  }
  if (all != next) {
    std::fprintf(stderr, "pmon: internal error: the index's next deadline is %lld, the jobs' %lld\n",
                 static_cast<long long>(next), static_cast<long long>(all));
    std::abort();
  }
#endif
}

void JobTable::on_time() {
  reindex();
  const int64_t now = sys::monotonic_ns();
  // The jobs with something due: those looked at in every round, and
  // those whose time has come.
  std::vector<uint64_t> nums(each_round_.begin(), each_round_.end());
  for (auto it = due_.begin(); it != due_.end() && it->first <= now; ++it) nums.push_back(it->second);
  std::sort(nums.begin(), nums.end());
  nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
#ifdef PMON_CHECK_INDEX
  for (auto& [id, j] : jobs_)
    if (due_now(*j, now) && !std::binary_search(nums.begin(), nums.end(), j->num)) {
      std::fprintf(stderr, "pmon: internal error: job %s is due and the index did not say so\n", id.c_str());
      std::abort();
    }
#endif
  for (uint64_t num : nums) {
    Job* j = job_by_num(num);
    if (!j || !due_now(*j, now)) continue;
    // Its time is up: the call's own rule ends it in its turn (jobs/stops.h).
    if (!j->done && !j->stopping())
      if (auto due = j->call->due_end(now)) stops_.begin(*j, *due);
    // A stop's deadline or rescan: its next step, in its turn.
    if (j->call->finishing() && !j->step_queued && (now >= j->call->finish_deadline() || now >= j->rescan_at))
      stops_.step_due(*j);
    if (!j->waiters.empty()) answers_.settle(*j);
    probe(*j);  // (last: it may stop the job, which may then be gone)
  }
}

// --- readiness ------------------------------------------------------------

void JobTable::feed_lines(Job& j, int64_t now) {
  ReadyCheck& r = *j.ready;
  if (r.decided() || !r.wants_lines()) return;
  auto feed = [&](int s, const OutputBuffer& b) {
    while (!r.decided() && b.total() > r.scanned(s)) {
      OutputBuffer::Read rd = b.read(r.scanned(s), size_t{64} << 10);
      if (rd.next <= r.scanned(s)) break;  // (a character not whole yet)
      r.feed(s, rd.text, rd.next, now);
    }
  };
  feed(0, j.buffer);
  if (j.err_buffer) feed(1, *j.err_buffer);
}

void JobTable::probe(Job& j) {
  if (!j.ready || j.ready->decided()) return;
  ReadyCheck& r = *j.ready;
  const int64_t now = sys::monotonic_ns();
  if (j.done) {
    feed_lines(j, now);  // what it said before it ended
    r.job_ended(ended_words(j), now);
  } else {
    feed_lines(j, now);
    if (r.wants_ports(now)) r.saw_ports(j.listening(answers_.port_tables()), now);
    r.on_time(now);
  }
  if (!r.decided()) return;
  answers_.settle(j);
  if (r.timed_out() && r.probe().stop_on_timeout && !j.done && !j.stopping())
    stops_.begin(j, Call::End::not_ready);
}

}  // namespace pmon::serve
