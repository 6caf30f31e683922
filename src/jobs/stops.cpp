// SPDX-License-Identifier: Apache-2.0
#include "jobs/stops.h"

#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

// After a slice that took its whole time the loop waits up to a
// millisecond for events before the next (serve/service.cpp): on a small
// machine the exits of the jobs just signalled, the kernel's teardown of
// their namespaces, would otherwise take the CPU in the middle of a slice.
constexpr size_t kStopBatch = 64;
constexpr int64_t kStopSliceNs = 2'000'000;

}  // namespace

void Stops::begin(Job& j, Call::End why) {
  if (j.done) return;
  if (j.stop_queued) {
    if (j.queued_why == Call::End::main_exited && !j.stop_after) j.stop_after = why;
    return;
  }
  if (j.call->finishing() && !j.call->waiting_for_tree()) return;
  j.stop_queued = true;
  j.queued_why = why;
  queue_.push_back({j.num, true});
}

void Stops::main_exited(Job& j) {
  if (!j.main_watched) return;
  j.poller.unwatch(j.call->pidfd());
  j.main_watched = false;
  // (A stop that waits for its turn begins as it would have.)
  if (j.stopping() || j.done) return;
  host_.note_owner_end(j);
  j.stop_queued = true;
  j.queued_why = Call::End::main_exited;
  queue_.push_back({j.num, true});
}

void Stops::step_due(Job& j) {
  j.drop_stop_watch();
  j.rescan_at = kForever;
  if (j.step_queued) return;
  j.step_queued = true;
  queue_.push_back({j.num, false});
}

void Stops::run_slice() {
  const int64_t until = sys::monotonic_ns() + kStopSliceNs;
  slice_full_ = false;
  for (size_t taken = 0; !queue_.empty() && taken < kStopBatch; ++taken) {
    if (taken > 0 && sys::monotonic_ns() >= until) {
      slice_full_ = true;
      break;
    }
    const Work w = queue_.front();
    queue_.pop_front();
    Job* j = host_.job_by_num(w.job);
    if (!j) continue;
    if (w.begin) {
      if (j->stop_queued) start(*j);
      continue;
    }
    if (!j->step_queued) continue;
    j->step_queued = false;
    if (!j->done && j->call->finishing()) after_step(*j, j->call->resume_finish());
  }
}

// The end of a main process that exited on its own is taken the same way;
// a stop asked for while it waited is asked again.
void Stops::start(Job& j) {
  j.stop_queued = false;
  if (j.done) return;
  const Call::End why = j.queued_why;
  if (why == Call::End::main_exited) {
    const uint64_t num = j.num;
    auto after = j.stop_after;
    j.stop_after.reset();
    if (!j.call->finishing()) after_step(j, j.call->begin_finish(why));
    if (Job* still = host_.job_by_num(num); still && after) begin(*still, *after);
    return;
  }
  if (is_time_up(why)) return time_up(j);
  if (j.call->waiting_for_tree()) {
    // waitTree: the main process is gone and its tree is waited for; an
    // owner's end stops the tree instead.
    if (!j.ended_by) j.ended_by = why;
    j.drop_stop_watch();
    after_step(j, j.call->resume_finish(true, why));
    return;
  }
  if (j.call->finishing()) return;
  if (!j.ended_by) j.ended_by = why;
  unwatch_main(j);
  after_step(j, j.call->begin_finish(why));
}

// The job's time was up when the stop was asked for: the call's own rule
// (its timeout, its idle timeout) ends it now, if it still holds (output
// that came meanwhile moved the idle time on; a main process that exited
// meanwhile ended the call itself), and the job takes its end from the call.
void Stops::time_up(Job& j) {
  const bool waited = j.call->waiting_for_tree();
  if (j.call->finishing() && !waited) return;
  // (A tree waited for is looked at again: the step may also find it empty.)
  if (waited) j.drop_stop_watch();
  j.call->step();
  const Call::End end = j.call->end_cause();
  if (end != Call::End::main_exited && !j.ended_by) j.ended_by = end;
  if (!waited && end == Call::End::main_exited) return;
  unwatch_main(j);
  after_step(j, j.call->finished());
}

void Stops::unwatch_main(Job& j) {
  if (!j.main_watched) return;
  j.poller.unwatch(j.call->pidfd());
  j.main_watched = false;
}

void Stops::after_step(Job& j, bool over) {
  j.drop_stop_watch();  // (done by the callers that step a stop already watched)
  j.rescan_at = kForever;
  // A job that waits for its tree is not over: what was asked for from
  // inside it is part of that tree.
  if (!j.call->waiting_for_tree()) host_.stop_owned(j.num);
  if (over) {
    host_.job_over(j);
    return;
  }
  j.watch_stop();
}

}  // namespace pmon::serve
