// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_table.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>

#include "core/units.h"
#include "jobs/call_records.h"
#include "sys/proc.h"
#include "sys/pty.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

// "t" and 16 hex digits from getrandom: ids a client of another session
// cannot guess (a counter's next value would name somebody's job).
std::string random_terminal_id() {
  // The kernel's random bytes, fetched for 32 ids at a time.
  thread_local uint64_t pool[32];
  thread_local size_t left = 0;
  if (left == 0) {
    size_t got = 0;
    auto* p = reinterpret_cast<unsigned char*>(pool);
    while (got < sizeof pool) {
      ssize_t n = ::getrandom(p + got, sizeof pool - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    left = got / sizeof pool[0];
    if (left == 0) pool[0] = 0, left = 1;  // (getrandom does not fail for so few bytes)
  }
  const uint64_t v = pool[--left];
  char buf[24];
  std::snprintf(buf, sizeof buf, "t%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

JobTable::JobTable(Backend& backend, const ServeOptions& opts, Poller& poller, RequestBudget& waiting,
                   const SpawnBase& base)
    : backend_(backend),
      opts_(opts),
      poller_(poller),
      waiting_(waiting),
      spawn_base_(base),
      output_budget_(opts.output_share()),
      io_budget_(opts.io_share()),
      answers_(opts.queue_share()),
      streams_(poller, io_budget_),
      stops_(*this) {}

void JobTable::set_front(Front* front) {
  front_ = front;
  answers_.set_front(front);
}

const Job* JobTable::peek(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

// Whoever finds a job may change what is due of it: it is looked at again
// (reindex) before the next round's deadline is taken.
Job* JobTable::find(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return nullptr;
  touch(*it->second);
  return it->second.get();
}

Job* JobTable::job_at(uint64_t num) const {
  auto it = by_num_.find(num);
  return it == by_num_.end() ? nullptr : it->second;
}

Job* JobTable::job_by_num(uint64_t num) {
  Job* j = job_at(num);
  if (j) touch(*j);
  return j;
}

std::expected<Job*, Error> JobTable::get(const std::string& id) {
  if (Job* j = find(id)) return j;
  return std::unexpected(Error::of(Errc::unknown_job, id));
}

// A request from a process inside a pmon call (any backend) makes a job of
// that call, kept or not: it ends when the call ends, its leaf is made
// inside the call's leaf where there is one (so the call's stop and report
// cover it), and the service is never a way out of a call.
bool JobTable::owned_by(const Job& j, const Asker& a, const std::optional<std::string>& session) const {
  return (j.owner == 0 || j.creator == a.conn) && (!session || j.session == session);
}

Job* JobTable::running_named(const Asker& a, const std::string& name, const std::optional<std::string>& session) {
  for (auto& [num, id] : job_keys_)
    if (const Job* j = peek(id); j && !j->done && j->name == name && owned_by(*j, a, session)) return find(id);
  return nullptr;
}

std::expected<std::optional<Started>, Error> JobTable::start(const Asker& a, const CreateParams& p) {
  Job* old = p.name && !p.name->empty() ? running_named(a, *p.name, p.session_id) : nullptr;
  if (!old) {
    if (!p.ready) {
      auto j = create(a, p);
      if (!j) return std::unexpected(j.error());
      return Started{(*j)->id, false, std::nullopt};
    }
    // Answered once the job is ready or cannot be; over the limits of
    // requests that wait, nothing is started.
    Waiter w = waiter(Waiter::Kind::ready, a, std::nullopt);
    if (auto e = admit(a, w)) return std::unexpected(*e);
    auto j = create(a, p);
    if (!j) return std::unexpected(j.error());
    (*j)->waiters.push_back(std::move(w));
    probe(**j);
    return std::nullopt;
  }
  if (!p.replace && !old->stopping())
    return Started{old->id, true,
                   old->ready && old->ready->decided() ? old->ready->outcome() : std::optional<ReadyOutcome>()};
  if (replacing_.size() >= opts_.max_jobs)
    return std::unexpected(Error::line("too many jobs wait for the job of their name to stop (at most " +
                                          std::to_string(opts_.max_jobs) + "); try again once they have"));
  replacing_.push_back({old->num, a, p});
  if (!old->stopping()) stops_.begin(*old, Call::End::replaced);
  return std::nullopt;
}

void JobTable::start_replacements() {
  if (replacing_.empty()) return;
  std::vector<std::pair<Replacement, std::string>> due;  // and the old job's id when not confirmed gone
  std::erase_if(replacing_, [&](Replacement& r) {
    const Job* old = job_by_num(r.old_num);
    if (old && !old->done) return false;
    due.emplace_back(std::move(r), old && !old->call->result().cleanup_verified ? old->id : "");
    return true;
  });
  for (auto& [r, unverified] : due) {
    if (!unverified.empty()) {
      front_->created(r.asker,
                      std::unexpected(Error::line("job '" + unverified + "' of the name '" + r.params.name.value_or("") +
                                                     "' could not be confirmed gone; nothing new was started")));
      continue;
    }
    if (shutting_down_) {
      front_->created(r.asker, std::unexpected(Error::line("the service is stopping")));
      continue;
    }
    // Looked for again: another may have started one of that name since.
    auto s = start(r.asker, r.params);
    if (!s) front_->created(r.asker, std::unexpected(s.error()));
    else if (*s) front_->created(r.asker, **s);
  }
}

std::expected<Job*, Error> JobTable::find_own(const Asker& a, const FindParams& p) {
  for (auto& [num, id] : job_keys_) {
    const Job* seen = peek(id);
    if (!seen || seen->done || !owned_by(*seen, a, p.session_id) || (p.name && seen->name != *p.name)) continue;
    Job* j = find(id);
    if (p.port) {
      auto ports = j->listening(answers_.port_tables());
      if (std::ranges::none_of(ports, [&](const ListeningPort& l) { return l.port == *p.port; })) continue;
    }
    return j;
  }
  Error e;
  e.code = Errc::no_such_job;
  e.text = p.name.value_or("");
  e.port = p.port;
  return std::unexpected(e);
}

std::expected<Job*, Error> JobTable::create(const Asker& a, const CreateParams& p) {
  using std::unexpected;
  if (!refused_.empty()) return unexpected(Error::line(refused_));
  if (jobs_.size() >= opts_.max_jobs && opts_.make_room) make_room();
  if (jobs_.size() >= opts_.max_jobs) {
    Error e;
    e.code = Errc::too_many_jobs;
    e.text = std::to_string(opts_.max_jobs);
    return unexpected(std::move(e));
  }
  if (!spawn_base_.wrapper.empty())
    if (auto cannot = check_runnable(p)) return unexpected(*cannot);
  auto io = open_stdio(p);
  if (!io) return unexpected(io.error());
  RunOptions ro = run_options(p, *io, spawn_base_, opts_.stop);
  const PeerCall* from = nullptr;
  if (a.sock >= 0) {
    auto pc = peer_calls_.of(a.conn, a.sock);
    if (!pc)
      return unexpected(Error::line("cannot tell which pmon call the request comes from: the process that "
                                       "connected has exited; connect from the process that creates the job"));
    from = *pc;
    if (from->call_over)
      return unexpected(Error::line("the pmon call this request comes from has ended; a job started from "
                                       "inside a call ends with it"));
  }
  uint64_t owner_job = 0;
  if (from && from->service_child != 0)
    for (auto& [tid, oj] : jobs_)
      if (!oj->done && oj->call->pid() == from->service_child) {
        if (oj->stopping()) return unexpected(Error::of(Errc::owner_stopping, tid));
        owner_job = oj->num;
      }
  if (from && !from->leaf.empty()) ro.inside_cgroup = from->leaf;

  const uint64_t n = next_job_++;
  if (p.output_backpressure && p.output_byte_limit == 0)
    return unexpected(
        Error::line("invalid params: 'outputBackpressure' needs an outputByteLimit of at least 1", Errc::invalid_argument));
  if (auto too_much = output_fits(p)) return unexpected(*too_much);
  auto job = std::make_unique<Job>(static_cast<size_t>(p.output_byte_limit), &output_budget_, poller_);
  Job& j = *job;
  j.backpressure = p.output_backpressure;
  j.limit = static_cast<size_t>(p.output_byte_limit);
  if (io->err_r) j.err_buffer = std::make_unique<OutputBuffer>(j.limit, &output_budget_);
  j.num = n;
  do j.id = random_terminal_id();
  while (jobs_.contains(j.id));
  // The operator's --spool-limit bounds what a client may ask for: the
  // spool is on the runtime dir's file system (tmpfs /run for root).
  open_spools(j, std::min(p.spool_byte_limit.value_or(opts_.spool_limit), opts_.spool_limit), spool_dir_);
  j.name = p.name.value_or("");
  j.tell_end = p.tell_end;
  j.own_pmon = !spawn_base_.wrapper.empty();
  // Its own pmon's report, for what that pmon stopped (its leftovers).
  if (j.own_pmon && spool_dir_.ensure()) {
    j.inner_report = spool_dir_.path() + "/" + j.id + ".call.json";
    auto dashes = std::find(ro.call.spawn.argv.begin(), ro.call.spawn.argv.end(), "--");
    ro.call.spawn.argv.insert(dashes, {"--report", j.inner_report});
  }
  j.command = {p.command};
  j.command.insert(j.command.end(), p.args.begin(), p.args.end());
  j.creator = a.conn;
  j.owner = p.keep ? 0 : a.conn;
  j.keep = p.keep;
  j.pty = p.pty.has_value();
  j.stdin_kind = j.pty ? "pty" : p.stdin_null ? "null" : "pipe";
  j.session = p.session_id;
  j.started = std::chrono::system_clock::now();
  j.call = std::make_unique<Call>(backend_, std::move(ro));
  if (auto s = j.call->start(); !s) {
    if (s.error().err == EMFILE || s.error().err == ENFILE)
      return unexpected(fd_error(s.error().text, s.error().err));
    return unexpected(s.error());
  }
  // (a job without spool files has its record too, where the service
  // keeps spools at all: without one, no directory of spools either)
  if (opts_.spool_limit > 0) write_job_record(j, records_);
  j.tie.owner_job = owner_job;
  if (owner_job != 0) ++owned_jobs_;
  if (from && !from->leaf.empty() && j.call->cgroup() && j.call->cgroup()->starts_with(from->leaf + "/"))
    j.tie.owner_leaf = from->leaf;
  if (from && from->supervisor) {
    j.tie.owner_pidfd = Fd(::fcntl(from->supervisor.get(), F_DUPFD_CLOEXEC, 0));
    if (j.tie.owner_pidfd) poller_.watch(j.tie.owner_pidfd.get(), EPOLLIN, tag(Tag::job_main, n | kOwnerWatch));
  }
  if (from && from->call_pmon != 0 && j.tie.owner_leaf.empty() && !opts_.socket_path.empty())
    j.tie.leave_record(*from, opts_.socket_path, j.id, j.call->command_pid(), j.command);
  // Our copies of the child's ends go, or EOF never comes.
  io->out_w.reset();
  io->err_w.reset();
  io->in_r.reset();
  j.out = std::move(io->out_r);
  j.in = std::move(io->in_w);
  j.err = std::move(io->err_r);
  job_keys_[n] = j.id;
  by_num_[n] = &j;
  j.watch_started();
  if (p.ready) j.ready = std::make_unique<ReadyCheck>(*p.ready, sys::monotonic_ns(), poller_, tag(Tag::job_ready, n));
  std::string id = j.id;
  jobs_.emplace(id, std::move(job));
  touch(j);
  return &j;
}

// A job's buffers may grow to outputByteLimit each (stdout, and stderr
// apart): more than the budget's share for all output is refused.
std::optional<Error> JobTable::output_fits(const CreateParams& p) const {
  const uint64_t buffers = p.separate_stderr && !p.pty ? 2 : 1;
  const uint64_t share = output_budget_.limit();
  if (p.output_byte_limit * buffers <= share) return std::nullopt;
  return Error::line("invalid params: 'outputByteLimit' " + std::to_string(p.output_byte_limit) +
                            (buffers == 2 ? " (twice, with separateStderr)" : "") +
                            " does not fit the service's memory budget, which keeps " + std::to_string(share) +
                            " bytes for all jobs' output (--memory-budget " +
                            std::to_string(opts_.memory_budget >> 20) + "M); ask for at most " +
                            std::to_string(share / buffers) + " or start the service with a larger --memory-budget",
                     Errc::invalid_argument);
}

void JobTable::catch_up(Job& j) {
  if (!j.backpressure || !j.done) return;
  j.pull(false, false, scratch_);
  if (j.err_buffer) j.pull(true, false, scratch_);
}

std::expected<StreamStart, Error> JobTable::open_stream(uint64_t conn, Job& j, std::optional<uint64_t> since,
                                                           bool follow) {
  return streams_.open(conn, j, since, follow);
}

OutputRead JobTable::read_output(Job& j, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since,
                                 uint64_t max, bool bytes) {
  return bytes ? j.read_bytes(since, stderr_since, max) : answers_.read(j, since, stderr_since, max);
}

std::optional<Error> JobTable::write(Job& j, const std::string& data, bool eof) {
  if (!j.in || j.in_eof) {
    Error e = Error::of(Errc::no_stdin, j.id);
    if (std::string_view(j.stdin_kind) == "null") e.text = "null";  // words() says how to get a pipe
    return e;
  }
  constexpr size_t kMaxPending = size_t{8} << 20;
  // What the pipe takes at once is not held (nor counted).
  std::string_view rest = data;
  if (j.in_pending.empty()) rest.remove_prefix(j.write_now(rest));
  const size_t need = j.in_pending.size() + rest.size() + (eof && j.pty ? 1 : 0);
  if (need > kMaxPending) return Error::of(Errc::stdin_full, j.id);
  if (!j.hold_stdin(need, kMaxPending, io_budget_)) {
    Error e = Error::of(Errc::stdin_full, j.id);
    e.text = std::to_string(io_budget_.limit());  // the budget, not this job, is full
    return e;
  }
  j.in_pending += rest;
  // A terminal's end of input is its EOF character; closing the master
  // would hang the terminal up instead.
  if (eof && j.pty) j.in_pending += '\x04';
  else if (eof) j.in_eof = true;
  j.write_stdin();
  return std::nullopt;
}

std::optional<Error> JobTable::resize(Job& j, PtySize size) {
  if (!j.pty) return Error::of(Errc::no_pty, j.id);
  if (j.done || !j.in) return Error::of(Errc::job_ended, j.id);
  if (auto r = sys::resize_pty(j.in.get(), size.rows, size.cols); !r) {
    Error e = Error::of(Errc::cannot_resize, j.id);
    e.text = r.error().message();
    return e;
  }
  return std::nullopt;
}

std::vector<std::string> JobTable::job_ids(const std::optional<std::string>& session) {
  std::vector<std::string> out;
  for (auto& [num, id] : job_keys_)
    if (const Job* j = peek(id); j && (!session || j->session == session)) out.push_back(id);
  return out;
}

size_t JobTable::close_session(uint64_t conn, const std::string& session) {
  std::vector<std::string> ids;
  for (auto& [tid, j] : jobs_)
    if (j->session == session && j->creator == conn) ids.push_back(tid);
  for (const std::string& tid : ids)
    if (Job* j = find(tid)) dismiss(*j, Call::End::session_closed);
  return ids.size();
}

void JobTable::connection_closed(uint64_t conn) {
  peer_calls_.forget(conn);
  std::erase_if(replacing_, [&](const Replacement& r) { return r.asker.conn == conn; });
  streams_.end_all_of_conn(conn);
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_)
    if (j->owner == conn) ids.push_back(id);
  for (const std::string& id : ids)
    if (Job* j = find(id)) dismiss(*j, Call::End::connection_closed);
  for (auto& [id, j] : jobs_)
    if (std::erase_if(j->waiters, [&](const Waiter& w) { return w.conn == conn; }) > 0) touch(*j);
}

void JobTable::shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_) ids.push_back(id);
  for (const std::string& id : ids)
    if (Job* j = find(id)) dismiss(*j, Call::End::service_stopped);
}

}  // namespace pmon::serve
