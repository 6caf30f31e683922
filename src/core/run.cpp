#include "core/run.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "core/units.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

std::string_view to_string(Outcome o) noexcept {
  switch (o) {
    case Outcome::exited: return "exited";
    case Outcome::signaled: return "signaled";
    case Outcome::timeout: return "timeout";
    case Outcome::cancelled: return "cancelled";
    case Outcome::not_started: return "not_started";
  }
  return "?";
}

int RunResult::status() const noexcept {
  if (outcome == Outcome::not_started) return error_status;
  if (!cleanup_verified) return 125;
  switch (outcome) {
    case Outcome::not_started: return error_status;
    case Outcome::timeout: return 124;
    case Outcome::cancelled: return 128 + cancel_signal;
    case Outcome::signaled: return 128 + signal.value_or(0);
    case Outcome::exited: return exit_code.value_or(0);
  }
  return 125;
}

RunResult not_started(std::vector<std::string> command, ConfineKind confinement, const SpawnError& err,
                      std::chrono::system_clock::time_point started_at) {
  RunResult r;
  r.command = std::move(command);
  r.confinement = confinement;
  r.started_at = started_at;
  r.duration_ms = std::max(0.0, std::chrono::duration<double, std::milli>(
                                    std::chrono::system_clock::now() - started_at).count());
  r.outcome = Outcome::not_started;
  r.error = err.message;
  r.error_status = err.exit_code;
  // A child whose exec failed is reaped before the error is returned.
  r.cleanup_verified = true;
  return r;
}

void merge_escaped(std::vector<Leftover>& leftovers, std::vector<Leftover>& escaped) {
  std::erase_if(escaped, [&](const Leftover& e) {
    for (Leftover& l : leftovers)
      if (l.pid == e.pid && l.start_time == e.start_time) {
        l.action = e.action;
        return true;
      }
    return false;
  });
}

namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

enum class Wake { main_exit, deadline, cancel, boundary, timer };

}  // namespace

class Runner final : public StopWaiter {
 public:
  Runner(Backend& backend, RunOptions opts) : backend_(backend), opts_(std::move(opts)) {}

  std::expected<RunResult, SpawnError> run();

  // The phases of run(), also driven one by one through Call.
  std::expected<void, SpawnError> start();
  std::string wait_for_end();  // "" (main exited), "timeout" or "cancel"
  RunResult finish(std::string reason);

  // finish() without blocking (Call::begin_finish): the phases it waits in.
  enum class Phase { none, waiting_tree, stopping, collecting_main, done };
  bool async_begin(std::string reason);
  bool async_resume(bool escalate);
  Watch async_watch();
  int64_t async_deadline() const;

  // StopWaiter: the stop keeps reaping and hears a second cancel signal.
  StopWake wait(int64_t deadline, const Watch& w) override {
    bool was = escalate_;
    Wake wake = wait(deadline, false, &w);
    if (wake == Wake::deadline) return StopWake::deadline;
    if (wake == Wake::cancel && escalate_ && !was) return StopWake::escalate;
    return StopWake::changed;
  }

 private:
  double since_start_ms() const { return (sys::monotonic_ns() - t0_) / 1e6; }
  void trace(const std::string& line) const {
    if (opts_.trace) opts_.trace(line);
  }

  friend class Call;

  Wake wait(int64_t deadline, bool watch_main, const Watch* w);
  void drain_signals(bool* cancelled);
  void note_main_exit();
  void reap_orphans();
  void finish_reaping();
  void stop(const std::string& reason);
  bool wait_until_empty(Boundary& b, std::string* reason);
  void stop_escapes(std::string* reason);
  // The parts of finish() before and after the stop.
  std::string settle(std::string reason);
  void stop_context(StopContext& ctx);
  RunResult complete(std::string reason);
  bool async_after_stop();

  Backend& backend_;
  RunOptions opts_;
  int64_t t0_ = 0;
  int64_t deadline_ = kForever;
  std::unique_ptr<Boundary> b_;
  Child child_;
  RunResult res_;
  bool main_exited_ = false;
  bool main_reaped_ = false;
  siginfo_t main_si_{};
  int cancel_sig_ = 0;
  bool cancelled_ = false;
  bool escalate_ = false;
  bool cancel_fd_done_ = false;
  LeftoverTracker leftovers_;
  std::vector<Leftover> escaped_;
  uint64_t reaped_cpu_usec_ = 0;
  // Call's state.
  bool started_ = false;
  bool finished_ = false;
  RunResult result_;
  // The non-blocking finish.
  Phase phase_ = Phase::none;
  std::string reason_;
  std::unique_ptr<StopMachine> machine_;
  int64_t collect_deadline_ = 0;
};

Wake Runner::wait(int64_t deadline, bool watch_main, const Watch* w) {
  // Fixed on entry: capture traffic must not keep postponing a rescan.
  const int64_t rescan_at = (w != nullptr && w->rescan_ms >= 0)
                                ? sys::monotonic_ns() + int64_t{w->rescan_ms} * 1'000'000
                                : kForever;
  // Once the deadline or the rescan is due, one more poll that does not
  // block: a stop that rescans back to back still reads its signals (and
  // reaps on SIGCHLD) between scans.
  bool due_polled = false;
  for (;;) {
    if (watch_main && main_exited_) return Wake::main_exit;
    std::vector<pollfd> fds;
    int main_i = -1, sig_i = -1, cancel_i = -1;
    if (watch_main && !main_exited_) {
      main_i = static_cast<int>(fds.size());
      fds.push_back({child_.pidfd.get(), POLLIN, 0});
    }
    if (opts_.signal_fd >= 0) {
      sig_i = static_cast<int>(fds.size());
      fds.push_back({opts_.signal_fd, POLLIN, 0});
    }
    // After the first cancel the fd stays watched: a second one skips the
    // grace period (the binding's second task.cancel()).
    if (opts_.cancel_fd >= 0 && !escalate_ && !cancel_fd_done_) {
      cancel_i = static_cast<int>(fds.size());
      fds.push_back({opts_.cancel_fd, POLLIN, 0});
    }
    // The pipes are read whenever we wait, so a writer never blocks on a
    // full pipe while we wait for it to exit.
    size_t capture_from = fds.size();
    if (opts_.capture != nullptr) {
      std::vector<pollfd> c = opts_.capture->pollfds();
      fds.insert(fds.end(), c.begin(), c.end());
    }
    size_t watch_from = fds.size();
    if (w != nullptr) fds.insert(fds.end(), w->fds.begin(), w->fds.end());

    // The deadline is recomputed on every pass: poll may return early.
    int64_t now = sys::monotonic_ns();
    // The call's own deadline: a timeout, whatever else is pending.
    if (watch_main && deadline != kForever && now >= deadline) return Wake::deadline;
    int64_t until = std::min(deadline, rescan_at);
    int timeout_ms = -1;
    if (until != kForever && now >= until) {
      if (due_polled) return deadline != kForever && now >= deadline ? Wake::deadline : Wake::timer;
      due_polled = true;
      timeout_ms = 0;
    } else if (until != kForever) {
      timeout_ms = static_cast<int>(std::min<int64_t>((until - now + 999'999) / 1'000'000, 1 << 30));
    }

    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Wake::timer;  // poll cannot fail otherwise with valid fds
    }
    for (size_t i = capture_from; i < watch_from; ++i) {
      if (fds[i].revents == 0) continue;
      (void)opts_.capture->pump();
      opts_.capture->close_finished();
      break;
    }
    if (sig_i >= 0 && (fds[sig_i].revents & POLLIN)) {
      bool cancelled = false;
      drain_signals(&cancelled);
      if (cancelled) return Wake::cancel;
    }
    if (cancel_i >= 0 && fds[cancel_i].revents != 0) {
      uint64_t v;
      ssize_t r = ::read(opts_.cancel_fd, &v, sizeof v);
      // A closed pipe stays readable: it cancels once, never escalates.
      if (r == 0 || (fds[cancel_i].revents & (POLLHUP | POLLERR)) != 0) cancel_fd_done_ = true;
      if (!cancelled_) {
        cancelled_ = true;
        return Wake::cancel;
      }
      if (r > 0) {
        escalate_ = true;
        return Wake::cancel;
      }
    }
    // Reaping the orphans on SIGCHLD may have collected the main process
    // before its pidfd said so.
    if (main_i >= 0 && (fds[main_i].revents != 0 || main_exited_)) {
      note_main_exit();
      return Wake::main_exit;
    }
    for (size_t i = watch_from; i < fds.size(); ++i)
      if (fds[i].revents != 0) return Wake::boundary;
    if (n == 0) {
      if (deadline != kForever && sys::monotonic_ns() >= deadline) return Wake::deadline;
      return Wake::timer;
    }
  }
}

void Runner::drain_signals(bool* cancelled) {
  signalfd_siginfo info;
  bool chld = false;
  for (;;) {
    ssize_t n = ::read(opts_.signal_fd, &info, sizeof info);
    if (n != static_cast<ssize_t>(sizeof info)) break;
    if (info.ssi_signo == SIGCHLD) {
      chld = true;
      continue;
    }
    // The first cancel signal starts the stop; a second one skips the grace.
    if (cancelled_) escalate_ = true;
    if (!cancelled_) cancel_sig_ = static_cast<int>(info.ssi_signo);
    cancelled_ = true;
    *cancelled = true;
  }
  if (chld) reap_orphans();
}

void Runner::note_main_exit() {
  if (main_exited_) return;
  siginfo_t si{};
  // pgroup signals by group id, so there the zombie is kept (WNOWAIT): it
  // pins the pid and the group id until the stop is over, and nothing
  // signalled later can be a stranger that inherited the number. Every
  // other backend addresses processes by pidfd or cgroup only, so the main
  // process is reaped at once and later reaping needs no /proc scan.
  const bool pin = b_->kind() == ConfineKind::pgroup;
  struct rusage ru {};
  int r = sys::waitid_raw(P_PIDFD, static_cast<id_t>(child_.pidfd.get()), &si,
                          WEXITED | WNOHANG | (pin ? WNOWAIT : 0), pin ? nullptr : &ru);
  if (r == 0 && si.si_pid != 0) {
    main_si_ = si;
    main_exited_ = true;
    if (!pin) {
      main_reaped_ = true;
      reaped_cpu_usec_ += sys::usec_of(ru);
    }
  }
}

// Orphans of the call that were reparented to us and died. The main process
// stays unreaped on purpose (see note_main_exit).
void Runner::reap_orphans() {
  if (!opts_.own_all_children) return;
  const pid_t self = ::getpid();
  for (;;) {
    siginfo_t si{};
    if (sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, nullptr) != 0 || si.si_pid == 0)
      return;
    if (si.si_pid != child_.pid) {
      struct rusage ru {};
      if (sys::waitid_raw(P_PID, static_cast<id_t>(si.si_pid), &si, WEXITED | WNOHANG, &ru) == 0)
        reaped_cpu_usec_ += sys::usec_of(ru);
      continue;
    }
    // The kernel offered the main zombie first. Where it is not pinned it is
    // collected now (its pidfd and this SIGCHLD usually wake us together), so
    // the next waitid offers the others; a pinned one hides them, so they are
    // found by name.
    if (b_->kind() != ConfineKind::pgroup) {
      note_main_exit();
      if (main_reaped_) continue;
    }
    bool any = false;
    for (const sys::ProcStat& p : sys::scan_processes()) {
      if (p.ppid != self || p.pid == child_.pid || !p.dead()) continue;
      struct rusage ru {};
      if (sys::waitid_raw(P_PID, static_cast<id_t>(p.pid), &si, WEXITED | WNOHANG, &ru) == 0) {
        any = true;
        reaped_cpu_usec_ += sys::usec_of(ru);
      }
    }
    if (!any) return;
  }
}

// After the boundary is confirmed empty, processes of the call may still be
// between leaving their cgroup and becoming zombies: give those a moment and
// reap them. A live child that stays is an escapee (reported), never waited.
void Runner::finish_reaping() {
  if (!opts_.own_all_children) return;
  const int64_t deadline = sys::monotonic_ns() + 100'000'000;
  // A process that left the boundary a moment ago may not have handed its
  // own zombies to us yet: let the known ones finish exiting first.
  leftovers_.wait_exited(deadline);
  for (;;) {
    reap_orphans();
    // No child at all (ECHILD) is the common case and needs no /proc scan:
    // every descendant of ours would be below some child of ours.
    siginfo_t si{};
    int r = sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, nullptr);
    if (r != 0) return;
    if (si.si_pid != 0 && sys::monotonic_ns() < deadline) continue;  // a new zombie
    if (!res_.cleanup_verified || !b_->contains_escapes() || sys::monotonic_ns() >= deadline)
      return;
    pollfd p{opts_.signal_fd, POLLIN, 0};
    (void)::poll(&p, opts_.signal_fd >= 0 ? 1 : 0, 5);
    if (opts_.signal_fd >= 0) {
      bool cancelled = false;
      drain_signals(&cancelled);
    }
  }
}

void Runner::stop(const std::string& reason) {
  res_.stop.reason = reason;
  StopContext ctx;
  stop_context(ctx);
  trace("stopping the tree (" + reason + "): " + signal_name(opts_.stop.steps.empty() ? SIGKILL : opts_.stop.steps.front().signal) +
        ", then SIGKILL");
  res_.cleanup_verified = execute_stop(ctx, res_.stop);
  trace(res_.cleanup_verified ? "boundary confirmed empty" : "boundary NOT confirmed empty");
}

void Runner::stop_context(StopContext& ctx) {
  if (leftovers_.empty()) {
    leftovers_.snapshot(*b_, child_.pid);
    // Taken for this stop: its listing is the first signal pass's too.
    if (leftovers_.last_listing()) ctx.listed = &*leftovers_.last_listing();
  }
  ctx.boundary = b_.get();
  ctx.plan = &opts_.stop;
  ctx.waiter = this;
  ctx.leftovers = &leftovers_;
  ctx.main_pidfd = main_exited_ ? -1 : child_.pidfd.get();
  ctx.main_pid = main_exited_ ? 0 : child_.pid;
  ctx.t0_ns = t0_;
  ctx.skip_grace = escalate_;
}

// --wait-tree: waits until `b` is empty; false when the deadline or a
// cancel came first (*reason says which; the caller stops the rest).
bool Runner::wait_until_empty(Boundary& b, std::string* reason) {
  for (;;) {
    if (b.empty().value_or(false)) return true;
    Watch w = b.watch();
    Wake wake = wait(deadline_, false, &w);
    // (A watch that stays ready must not outlast the deadline.)
    if (wake == Wake::deadline || (deadline_ != kForever && sys::monotonic_ns() >= deadline_)) {
      *reason = "timeout";
      res_.timed_out = true;
      return false;
    }
    if (wake == Wake::cancel) {
      *reason = "cancel";
      return false;
    }
  }
}

// Once the boundary is empty, live descendants of ours may remain outside
// it: a weak boundary's escapees (pgroup: a setsid daemon) or a call that
// moved itself out of its cgroup. pmon is their subreaper, so they are
// still the call's and still ours to end: waited for under --wait-tree,
// else stopped by the same plan (verified pidfds, grace, SIGKILL) until
// none is left. The call is verified clean only if that succeeds.
void Runner::stop_escapes(std::string* reason) {
  if (!opts_.own_all_children) return;
  // No child at all: nothing can be below us (the common case, no scan).
  siginfo_t any{};
  if (sys::waitid_raw(P_ALL, 0, &any, WEXITED | WNOHANG | WNOWAIT, nullptr) != 0) return;
  // Everything below us but pmon's own helpers, each addressed by a pidfd
  // checked against its scanned start time: the subreaper backend's walk.
  auto backend = open_subreaper_backend();
  Result<std::unique_ptr<Boundary>> below =
      backend ? (*backend)->open_boundary() : Result<std::unique_ptr<Boundary>>(fail(EPERM));
  if (!below) {
    // Cannot happen once PR_SET_CHILD_SUBREAPER worked; if it does, say
    // what is alive rather than call the call clean.
    for (const sys::ProcStat& p : sys::descendants_of(sys::scan_processes(), ::getpid()))
      if (!p.dead() && p.pid != child_.pid && p.pid != backend_.helper_pid())
        escaped_.push_back({p.pid, p.start_time, sys::read_cmdline(p.pid), "survived"});
    if (!escaped_.empty()) res_.cleanup_verified = false;
    return;
  }
  Boundary& b = **below;
  LeftoverTracker found;
  found.snapshot(b, child_.pid);
  if (found.empty()) return;
  trace(count_of(found.size(), "process", "processes") + " outside the " + std::string(to_string(b_->kind())) +
        " boundary " + (found.size() == 1 ? "is" : "are") + " still running below pmon");

  bool verified = false;
  if (opts_.wait_tree && reason->empty() && wait_until_empty(b, reason)) {
    found.label_rest("waited");
    verified = true;
    res_.stop.empty_confirmed_ms = since_start_ms();
  }
  if (!verified) {
    StopContext ctx;
    ctx.boundary = &b;
    ctx.plan = &opts_.stop;
    ctx.waiter = this;
    ctx.leftovers = &found;
    ctx.t0_ns = t0_;
    ctx.skip_grace = escalate_;
    StopRecord rec;
    trace("stopping what escaped the boundary");
    verified = execute_stop(ctx, rec);
    // One record for the call: the first signal and kill pmon sent, and
    // when everything was confirmed gone (never, if this failed).
    if (res_.stop.reason.empty()) {
      res_.stop = rec;
      res_.stop.reason = reason->empty() ? "escaped" : *reason;
    } else {
      if (!res_.stop.signal_sent_ms) res_.stop.signal_sent_ms = rec.signal_sent_ms;
      if (!res_.stop.kill_sent_ms) res_.stop.kill_sent_ms = rec.kill_sent_ms;
      res_.stop.empty_confirmed_ms = rec.empty_confirmed_ms;
    }
    trace(verified ? "nothing is left below pmon" : "processes below pmon could NOT be stopped");
  }
  if (!verified) res_.cleanup_verified = false;
  escaped_ = found.take();
  finish_reaping();
}

std::expected<RunResult, SpawnError> Runner::run() {
  if (auto s = start(); !s) return std::unexpected(s.error());
  return finish(wait_for_end());
}

std::expected<void, SpawnError> Runner::start() {
  t0_ = sys::monotonic_ns();
  res_.started_at = std::chrono::system_clock::now();
  res_.command = opts_.spawn.argv;
  res_.confinement = backend_.kind();
  res_.limits = opts_.limits;

  Result<std::unique_ptr<Boundary>> b = fail(EOPNOTSUPP);
  if (!opts_.inside_cgroup.empty()) b = backend_.open_boundary_inside(opts_.inside_cgroup);
  if (!b) b = backend_.open_boundary();
  if (!b)
    return std::unexpected(SpawnError{125, b.error().value(),
                                      "cannot open a " + std::string(to_string(backend_.kind())) +
                                          " boundary: " + b.error().message()});
  b_ = std::move(*b);

  if (opts_.capture != nullptr)
    for (int i = 0; i < 3; ++i)
      if (opts_.capture->child_fd(i) >= 0) opts_.spawn.stdio[i] = opts_.capture->child_fd(i);
  auto child = spawn_in(opts_.spawn, backend_, b_, opts_.limits);
  if (opts_.capture != nullptr) opts_.capture->close_child_ends();
  if (!child) {
    b_->release(b_->empty().value_or(false));
    return std::unexpected(child.error());
  }
  child_ = std::move(*child);
  res_.cgroup = b_->cgroup_path();  // spawn_in may have changed the leaf
  b_->set_main(child_.pid);
  if (opts_.own_all_children) b_->set_sole_owner();
  res_.pid = child_.report_pid != 0 ? child_.report_pid : child_.pid;
  trace("started pid " + std::to_string(child_.pid) + " under " +
        std::string(to_string(backend_.kind())) + (res_.cgroup ? " in " + *res_.cgroup : ""));

  deadline_ = opts_.timeout ? t0_ + opts_.timeout->count() : kForever;
  started_ = true;
  return {};
}

std::string Runner::wait_for_end() {
  for (;;) {
    Wake wake = wait(deadline_, true, nullptr);
    if (wake == Wake::main_exit) return "";
    if (wake == Wake::deadline) return "timeout";
    if (wake == Wake::cancel) return "cancel";
  }
}

// What the end of the call needs: "" (nothing left, verified), "wait-tree"
// (leftovers to wait for), or the reason the tree must be stopped.
std::string Runner::settle(std::string reason) {
  if (reason == "timeout") res_.timed_out = true;
  if (reason == "cancel") cancelled_ = true;
  if (!reason.empty()) return reason;
  auto e = b_->empty();
  if (e && *e) {
    res_.cleanup_verified = true;
    res_.stop.empty_confirmed_ms = since_start_ms();
    return "";
  }
  leftovers_.snapshot(*b_, child_.pid);
  trace(count_of(leftovers_.size(), "process", "processes") + " still running after the main process exited");
  return opts_.wait_tree ? "wait-tree" : "leftovers";
}

RunResult Runner::finish(std::string reason) {
  reason = settle(reason);
  if (reason == "wait-tree") {
    reason.clear();
    if (wait_until_empty(*b_, &reason)) {
      leftovers_.label_rest("waited");
      res_.cleanup_verified = true;
      res_.stop.empty_confirmed_ms = since_start_ms();
    }
  }
  if (!reason.empty()) stop(reason);

  // The main process is dead or dying now; collect it for good.
  if (!main_exited_) {
    // Stopped with the boundary: its pidfd turns readable promptly.
    pollfd p{child_.pidfd.get(), POLLIN, 0};
    (void)retry_eintr([&] { return ::poll(&p, 1, 5000); });
    note_main_exit();
  }
  return complete(reason);
}

// After the stop (or none): reap, drain, and say what happened.
RunResult Runner::complete(std::string reason) {
  struct rusage ru {};
  siginfo_t si{};
  if (!main_reaped_ &&
      sys::waitid_raw(P_PIDFD, static_cast<id_t>(child_.pidfd.get()), &si, WEXITED | WNOHANG, &ru) == 0 &&
      si.si_pid != 0) {
    if (!main_exited_) {
      main_si_ = si;
      main_exited_ = true;
    }
    reaped_cpu_usec_ += sys::usec_of(ru);
  }
  finish_reaping();
  // The boundary's own verdict decides what becomes of it (a leaf that
  // held something unconfirmed is kept for gc), whatever escaped it.
  const bool boundary_empty = res_.cleanup_verified;
  stop_escapes(&reason);
  // Every writer is dead now (or outside a weak boundary): what is left in
  // the pipes is read to EOF, or to what is there.
  if (opts_.capture != nullptr) opts_.capture->drain();

  if (main_exited_) {
    sys::ExitStatus st = sys::exit_status_from(main_si_);
    if (st.signaled) {
      res_.signal = st.code;
      res_.core_dumped = st.core_dumped;
      res_.outcome = Outcome::signaled;
    } else {
      res_.exit_code = st.code;
      res_.outcome = Outcome::exited;
    }
  } else {
    res_.cleanup_verified = false;
  }
  if (res_.timed_out) res_.outcome = Outcome::timeout;
  if (reason == "cancel") {
    res_.outcome = Outcome::cancelled;
    res_.cancel_signal = cancel_sig_ != 0 ? cancel_sig_ : SIGTERM;
  }

  res_.leftovers = leftovers_.take();
  res_.escaped = std::move(escaped_);
  merge_escaped(res_.leftovers, res_.escaped);

  res_.cpu_usec = b_->cpu_usec();
  if (!res_.cpu_usec && b_->kind() != ConfineKind::cgroup) res_.cpu_usec = reaped_cpu_usec_;
  res_.memory_peak_bytes = b_->memory_peak_bytes();
  if (opts_.limits.any()) {
    res_.oom_killed = b_->oom_killed();
    res_.pids_max_hit = b_->pids_max_hit();
  }
  b_->release(boundary_empty && main_exited_);
  res_.duration_ms = since_start_ms();
  return std::move(res_);
}

bool Runner::async_begin(std::string reason) {
  reason = settle(reason);
  if (reason == "wait-tree") {
    reason_.clear();
    phase_ = Phase::waiting_tree;
    return async_resume(false);
  }
  reason_ = reason;
  if (reason_.empty()) return async_after_stop();
  res_.stop.reason = reason_;
  StopContext ctx;
  stop_context(ctx);
  ctx.waiter = nullptr;  // the caller's event loop waits
  machine_ = std::make_unique<StopMachine>(ctx, res_.stop);
  phase_ = Phase::stopping;
  machine_->start();
  return machine_->done() ? async_after_stop() : false;
}

// The stop is over (or there was none): the main process is collected
// without blocking, then the call completes.
bool Runner::async_after_stop() {
  if (machine_) res_.cleanup_verified = machine_->verified();
  machine_.reset();
  if (!main_exited_) note_main_exit();
  if (!main_exited_) {
    if (phase_ != Phase::collecting_main) {
      phase_ = Phase::collecting_main;
      collect_deadline_ = sys::monotonic_ns() + 5'000'000'000;
      return false;
    }
    if (sys::monotonic_ns() < collect_deadline_) return false;
  }
  result_ = complete(reason_);
  finished_ = true;
  phase_ = Phase::done;
  return true;
}

bool Runner::async_resume(bool escalate) {
  switch (phase_) {
    case Phase::waiting_tree: {
      if (b_->empty().value_or(false)) {
        leftovers_.label_rest("waited");
        res_.cleanup_verified = true;
        res_.stop.empty_confirmed_ms = since_start_ms();
        return async_after_stop();
      }
      if (deadline_ != kForever && sys::monotonic_ns() >= deadline_) {
        res_.timed_out = true;
        phase_ = Phase::none;
        return async_begin("timeout");
      }
      if (escalate) {
        phase_ = Phase::none;
        return async_begin("cancel");
      }
      return false;
    }
    case Phase::stopping: {
      StopWake wake = escalate ? StopWake::escalate
                      : sys::monotonic_ns() >= machine_->deadline() ? StopWake::deadline
                                                                    : StopWake::changed;
      machine_->on_wake(wake);
      return machine_->done() ? async_after_stop() : false;
    }
    case Phase::collecting_main: return async_after_stop();
    case Phase::done: return true;
    case Phase::none: return false;
  }
  return false;
}

Watch Runner::async_watch() {
  switch (phase_) {
    case Phase::waiting_tree: return b_->watch();
    case Phase::stopping: return machine_->watch();
    case Phase::collecting_main: {
      Watch w;
      w.fds.push_back({child_.pidfd.get(), POLLIN, 0});
      return w;
    }
    default: return {};
  }
}

int64_t Runner::async_deadline() const {
  switch (phase_) {
    case Phase::waiting_tree: return deadline_;
    case Phase::stopping: return machine_->deadline();
    case Phase::collecting_main: return collect_deadline_;
    default: return kForever;
  }
}

std::expected<RunResult, SpawnError> run_call(Backend& backend, const RunOptions& opts) {
  Runner r(backend, opts);
  return r.run();
}

Call::Call(Backend& backend, RunOptions opts)
    : r_(std::make_unique<Runner>(backend, std::move(opts))) {}

Call::~Call() {
  // Never leave a tree behind because a handle was dropped.
  if (r_ && r_->started_ && !finished()) (void)finish(End::cancel);
}

std::expected<void, SpawnError> Call::start() { return r_->start(); }

int Call::pidfd() const noexcept { return r_->child_.pidfd.get(); }

pid_t Call::pid() const noexcept { return r_->child_.pid; }

pid_t Call::command_pid() const noexcept {
  const pid_t shown = r_->finished_ ? r_->result_.pid : r_->res_.pid;
  return shown != 0 ? shown : r_->child_.pid;
}

bool Call::main_exited() {
  if (!r_->main_exited_) r_->note_main_exit();
  return r_->main_exited_;
}

bool Call::wait_main(int timeout_ms) {
  if (main_exited()) return true;
  const int64_t deadline =
      timeout_ms < 0 ? kForever : sys::monotonic_ns() + int64_t{timeout_ms} * 1'000'000;
  for (;;) {
    Wake wake = r_->wait(deadline, true, nullptr);
    if (wake == Wake::main_exit) return true;
    if (wake == Wake::deadline || wake == Wake::cancel) return main_exited();
  }
}

Call::End Call::wait_for_end() {
  std::string reason = r_->wait_for_end();
  return reason == "timeout" ? End::timeout : reason == "cancel" ? End::cancel : End::main_exited;
}

bool Call::finish_may_block() {
  if (finished()) return false;
  if (!main_exited()) return true;
  auto e = r_->b_->empty();
  return !(e && *e);
}

std::vector<sys::ProcStat> Call::members() {
  if (finished() || !r_->b_) return {};
  return r_->b_->members();
}

void Call::set_stop_plan(StopPlan plan) { r_->opts_.stop = std::move(plan); }

const RunResult& Call::finish(End why) {
  // A finish begun without blocking is driven to its end here.
  while (finishing()) {
    Watch w = r_->async_watch();
    (void)r_->wait(r_->async_deadline(), false, &w);
    (void)r_->async_resume(false);
  }
  if (r_->started_ && !r_->finished_) {
    std::string reason = why == End::timeout ? "timeout" : why == End::cancel ? "cancel" : "";
    // A main process that already exited ended the call, whatever the
    // caller heard first (its timer and the pidfd can fire together).
    if (why == End::timeout && main_exited()) reason.clear();
    r_->result_ = r_->finish(reason);
    r_->finished_ = true;
  }
  return r_->result_;
}

bool Call::finished() const noexcept { return r_->finished_; }

bool Call::begin_finish(End why) {
  if (!r_->started_ || r_->finished_) return true;
  if (r_->phase_ != Runner::Phase::none) return false;
  std::string reason = why == End::timeout ? "timeout" : why == End::cancel ? "cancel" : "";
  if (why == End::timeout && main_exited()) reason.clear();
  return r_->async_begin(reason);
}

bool Call::finishing() const noexcept {
  return r_->phase_ != Runner::Phase::none && r_->phase_ != Runner::Phase::done;
}

bool Call::waiting_for_tree() const noexcept { return r_->phase_ == Runner::Phase::waiting_tree; }

std::optional<uint64_t> Call::cpu_usec() {
  if (finished() || !r_->b_) return finished() ? r_->result_.cpu_usec : std::nullopt;
  return r_->b_->cpu_usec();
}

std::optional<uint64_t> Call::memory_peak_bytes() {
  if (finished() || !r_->b_) return finished() ? r_->result_.memory_peak_bytes : std::nullopt;
  return r_->b_->memory_peak_bytes();
}

bool Call::resume_finish(bool escalate) {
  if (r_->finished_) return true;
  return r_->async_resume(escalate);
}

Watch Call::finish_watch() { return r_->async_watch(); }

int64_t Call::finish_deadline() const { return r_->async_deadline(); }

const RunResult& Call::result() const noexcept { return r_->result_; }

const std::optional<std::string>& Call::cgroup() const noexcept { return r_->res_.cgroup; }

}  // namespace pmon
