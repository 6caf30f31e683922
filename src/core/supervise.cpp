#include "core/supervise.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "sys/proc.h"

namespace pmon {

std::string_view to_string(Engine e) noexcept {
  switch (e) {
    case Engine::pidfd: return "pidfd";
    case Engine::sigchld: return "sigchld";
  }
  return "?";
}

std::optional<Engine> parse_engine(std::string_view s) noexcept {
  if (s == "pidfd") return Engine::pidfd;
  if (s == "sigchld") return Engine::sigchld;
  return std::nullopt;
}

std::string format_event(const SuperviseEvent& e) {
  const std::string child = "child=" + std::to_string(e.pid);
  switch (e.kind) {
    case SuperviseEvent::Kind::started:
      if (e.engine == Engine::pidfd)
        return "pmon: engine=pidfd " + child + " pidfd=" + std::to_string(e.pidfd);
      return "pmon: engine=sigchld " + child;
    case SuperviseEvent::Kind::exited:
      if (e.status.signaled)
        return "pmon: " + child + " killed signal=" + std::to_string(e.status.code);
      return "pmon: " + child + " exited status=" + std::to_string(e.status.code);
    case SuperviseEvent::Kind::restarting:
      return "pmon: restart " + std::to_string(e.restart) + "/" + std::to_string(e.max_restarts);
    case SuperviseEvent::Kind::giving_up:
      return "pmon: giving up after " + std::to_string(e.max_restarts) + " restarts";
    case SuperviseEvent::Kind::exiting:
      return e.end == SuperviseEnd::signal ? "pmon: exiting (signal)" : "pmon: exiting (timeout)";
  }
  return "pmon: ?";
}

int SuperviseResult::status() const noexcept {
  switch (end) {
    case SuperviseEnd::clean_exit: return 0;
    case SuperviseEnd::gave_up: return 1;
    case SuperviseEnd::timeout: return 124;
    case SuperviseEnd::signal: return 128 + stop_signal;
    case SuperviseEnd::spawn_failed: return spawn_error ? spawn_error->exit_code : 125;
    case SuperviseEnd::cleanup_failed: return 125;
  }
  return 125;
}

namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
// How long to wait for the main process to be reapable once its tree has
// been stopped, and for orphans in transit at the very end.
constexpr int64_t kCollectNs = 5'000'000'000;
constexpr int64_t kFinalReapNs = 200'000'000;

// poll(2) timeout until `deadline`, rounded up so that poll never returns
// before it; 0 once it has passed, -1 for none.
int remaining_ms(int64_t deadline) noexcept {
  if (deadline == kForever) return -1;
  int64_t now = sys::monotonic_ns();
  if (now >= deadline) return 0;
  return static_cast<int>(std::min<int64_t>((deadline - now + 999'999) / 1'000'000, 1 << 30));
}

sys::ExitStatus status_from_wait(int st) noexcept {
  sys::ExitStatus s;
  if (WIFSIGNALED(st)) {
    s.signaled = true;
    s.code = WTERMSIG(st);
    s.core_dumped = WCOREDUMP(st);
  } else {
    s.code = WEXITSTATUS(st);
  }
  return s;
}

class Supervisor final : public StopWaiter {
 public:
  Supervisor(Backend& backend, const SuperviseOptions& opts) : backend_(backend), opts_(opts) {}

  SuperviseResult run();

  // StopWaiter: while a tree is being stopped, keep reaping and hear a
  // second stop signal (which skips the grace period).
  StopWake wait(int64_t deadline, const Watch& w) override;

 private:
  enum class Wake { child_exit, timeout, signal, failed };

  void emit(const SuperviseEvent& e) const {
    if (opts_.on_event) opts_.on_event(e);
  }
  void trace(const std::string& line) const {
    if (opts_.trace) opts_.trace(line);
  }
  bool stop_requested() const noexcept { return stop_signal_ != 0 || timed_out_; }

  Wake wait_child();
  bool drain_signals();
  void reap();
  void reap_orphans_pidfd();
  void reap_waitpid_all();
  bool reap_main_pidfd(int options);
  bool collect_main();
  bool stop_tree(const std::string& why, bool main_alive);
  bool restart_delay();
  void final_reap();
  SuperviseResult finish(SuperviseEnd end);
  void emit_exited();

  Backend& backend_;
  const SuperviseOptions& opts_;
  int64_t t0_ = 0;
  int64_t deadline_ = kForever;
  std::unique_ptr<Boundary> b_;
  Child child_;
  bool main_reaped_ = false;
  std::optional<sys::ExitStatus> main_status_;
  int stop_signal_ = 0;
  bool timed_out_ = false;
  bool escalate_ = false;
  SuperviseResult res_;
};

// Reads every pending signal. SIGCHLD means "reap"; the first stop signal
// (or one after the deadline) is a stop request, any later one escalates.
// Returns true when this call produced a new stop request.
bool Supervisor::drain_signals() {
  bool chld = false, new_stop = false;
  for (;;) {
    // Poll first so a caller's blocking signalfd cannot hang us here.
    pollfd p{opts_.signal_fd, POLLIN, 0};
    if (retry_eintr([&] { return ::poll(&p, 1, 0); }) <= 0 || (p.revents & POLLIN) == 0) break;
    signalfd_siginfo info{};
    ssize_t n = retry_eintr([&] { return ::read(opts_.signal_fd, &info, sizeof info); });
    if (n != static_cast<ssize_t>(sizeof info)) break;
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      chld = true;
      continue;
    }
    if (stop_requested()) {
      escalate_ = true;
    } else {
      stop_signal_ = sig;
      new_stop = true;
    }
  }
  if (chld) reap();
  return new_stop;
}

void Supervisor::reap() {
  if (opts_.engine == Engine::sigchld)
    reap_waitpid_all();
  else
    reap_orphans_pidfd();
}

// sigchld engine: one SIGCHLD may stand for many exits, so reap until
// nobody is left; the main child is recognised by its pid, which is still
// ours until this very call frees it.
void Supervisor::reap_waitpid_all() {
  for (;;) {
    int st = 0;
    pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p <= 0) return;
    if (child_.pid != 0 && p == child_.pid && !main_reaped_) {
      main_reaped_ = true;
      main_status_ = status_from_wait(st);
    }
  }
}

// pidfd engine: orphans reparented to us (we are a subreaper) are reaped by
// pid; the main child only ever through its pidfd. WNOWAIT peeks first so
// the main child is never collected here by accident.
void Supervisor::reap_orphans_pidfd() {
  for (;;) {
    siginfo_t si{};
    if (sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, nullptr) != 0 || si.si_pid == 0)
      return;
    // The main child is dead: its pidfd is readable and it is collected
    // there; the orphans behind it are reaped right after.
    if (!main_reaped_ && si.si_pid == child_.pid) return;
    (void)sys::waitid_raw(P_PID, static_cast<id_t>(si.si_pid), &si, WEXITED | WNOHANG, nullptr);
  }
}

// waitid(P_PIDFD) collects exactly the process the fd refers to.
bool Supervisor::reap_main_pidfd(int options) {
  if (main_reaped_) return true;
  siginfo_t si{};
  if (sys::waitid_raw(P_PIDFD, static_cast<id_t>(child_.pidfd.get()), &si, WEXITED | options,
                      nullptr) != 0 ||
      si.si_pid == 0)
    return false;
  main_reaped_ = true;
  main_status_ = sys::exit_status_from(si);
  return true;
}

Supervisor::Wake Supervisor::wait_child() {
  for (;;) {
    if (main_status_) return Wake::child_exit;
    // The budget is recomputed on every pass: poll returns early on
    // SIGCHLDs of orphans and on EINTR.
    int timeout_ms = remaining_ms(deadline_);
    if (timeout_ms == 0) return Wake::timeout;
    std::array<pollfd, 2> fds{{{opts_.signal_fd, POLLIN, 0}, {child_.pidfd.get(), POLLIN, 0}}};
    nfds_t nfds = opts_.engine == Engine::pidfd ? 2 : 1;
    int n = ::poll(fds.data(), nfds, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      res_.cleanup_error = std::string("poll: ") + std::strerror(errno);
      return Wake::failed;
    }
    // The signalfd first: when a stop request and the child's exit arrive
    // together, the stop wins (the exit is still collected on its path).
    if ((fds[0].revents & POLLIN) != 0 && drain_signals()) return Wake::signal;
    if (opts_.engine == Engine::pidfd && fds[1].revents != 0) {
      if (reap_main_pidfd(0)) return Wake::child_exit;
      res_.cleanup_error = std::string("waitid(P_PIDFD): ") + std::strerror(errno);
      return Wake::failed;
    }
  }
}

StopWake Supervisor::wait(int64_t deadline, const Watch& w) {
  for (;;) {
    int timeout_ms = remaining_ms(deadline);
    if (timeout_ms == 0) return StopWake::deadline;
    if (w.rescan_ms >= 0 && (timeout_ms < 0 || w.rescan_ms < timeout_ms)) timeout_ms = w.rescan_ms;
    std::vector<pollfd> fds{{opts_.signal_fd, POLLIN, 0}};
    fds.insert(fds.end(), w.fds.begin(), w.fds.end());
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
      bool was = escalate_;
      (void)drain_signals();
      if (escalate_ && !was) return StopWake::escalate;
    }
    return StopWake::changed;
  }
}

// After the tree is stopped the main process is dead or dying: collect it
// (bounded, in case it could not be killed).
bool Supervisor::collect_main() {
  const int64_t bound = sys::monotonic_ns() + kCollectNs;
  for (;;) {
    if (opts_.engine == Engine::pidfd) {
      if (reap_main_pidfd(WNOHANG)) return true;
    } else {
      reap_waitpid_all();
      if (main_reaped_) return true;
    }
    int timeout_ms = remaining_ms(bound);
    if (timeout_ms == 0) return false;
    std::array<pollfd, 2> fds{{{opts_.signal_fd, POLLIN, 0}, {child_.pidfd.get(), POLLIN, 0}}};
    nfds_t nfds = opts_.engine == Engine::pidfd ? 2 : 1;
    if (::poll(fds.data(), nfds, timeout_ms) > 0 && (fds[0].revents & POLLIN) != 0)
      (void)drain_signals();
  }
}

// Stops whatever is left of the current child's tree with the shared stop
// protocol, and releases the boundary. False when it could not be confirmed
// empty: the caller must not start another child then.
bool Supervisor::stop_tree(const std::string& why, bool main_alive) {
  bool verified = false;
  auto e = b_->empty();
  if (e && *e && !main_alive) {
    verified = true;
  } else {
    const StopPlan& plan = opts_.stop;
    trace("stopping child=" + std::to_string(child_.pid) + "'s tree (" + why + "): " +
          signal_name(plan.steps.empty() ? SIGKILL : plan.steps.front().signal) +
          ", then SIGKILL");
    StopContext ctx;
    ctx.boundary = b_.get();
    ctx.plan = &plan;
    ctx.waiter = this;
    ctx.main_pidfd = main_reaped_ ? -1 : child_.pidfd.get();
    ctx.t0_ns = t0_;
    ctx.skip_grace = escalate_;
    StopRecord rec;
    verified = execute_stop(ctx, rec);
    trace(verified ? "child=" + std::to_string(child_.pid) + "'s tree is gone"
                   : "child=" + std::to_string(child_.pid) + "'s tree NOT confirmed gone");
  }
  if (!verified) {
    std::vector<std::string> left;
    for (const sys::ProcStat& p : b_->members())
      if (left.size() < 5) left.push_back(std::to_string(p.pid) + " (" + sys::read_cmdline(p.pid).substr(0, 60) + ")");
    std::string list;
    for (const std::string& s : left) list += (list.empty() ? "" : ", ") + s;
    res_.cleanup_error = "could not confirm child=" + std::to_string(child_.pid) +
                         "'s tree is gone" + (list.empty() ? "" : "; still running: " + list);
  }
  b_->release(verified);
  return verified;
}

// The optional backoff between two children; false when the deadline or a
// stop signal ended it.
bool Supervisor::restart_delay() {
  if (opts_.restart_delay.count() > 0) {
    const int64_t start = sys::monotonic_ns();
    const int64_t until = deadline_ == kForever
                              ? start + opts_.restart_delay.count()
                              : std::min(deadline_, start + opts_.restart_delay.count());
    for (;;) {
      int timeout_ms = remaining_ms(until);
      if (timeout_ms == 0) break;
      pollfd p{opts_.signal_fd, POLLIN, 0};
      int n = ::poll(&p, 1, timeout_ms);
      if (n < 0 && errno != EINTR) break;
      if (n > 0 && drain_signals()) return false;
    }
  }
  if (deadline_ != kForever && sys::monotonic_ns() >= deadline_) {
    timed_out_ = true;
    return false;
  }
  return true;
}

// Orphans may still be between leaving their boundary and becoming zombies
// of ours: give them a moment and reap them, so nothing is left unreaped.
// What stays alive below us escaped a weak boundary and is reported.
void Supervisor::final_reap() {
  const pid_t self = ::getpid();
  const int64_t bound = sys::monotonic_ns() + kFinalReapNs;
  for (;;) {
    reap();
    bool zombie = false, live = false;
    for (const sys::ProcStat& p : sys::scan_processes()) {
      if (p.ppid != self || p.pid == backend_.helper_pid()) continue;
      (p.dead() ? zombie : live) = true;
    }
    if ((!zombie && !live) || sys::monotonic_ns() >= bound) break;
    // Live children of a weak boundary are escapees: not waited for. Under a
    // strong one they are exiting (past their cgroup, not yet zombies).
    if (!zombie && live && b_ && !b_->contains_escapes()) break;
    pollfd p{opts_.signal_fd, POLLIN, 0};
    if (::poll(&p, 1, 5) > 0) (void)drain_signals();
  }
  std::vector<sys::ProcStat> table = sys::scan_processes();
  for (const sys::ProcStat& p : sys::descendants_of(table, self))
    if (!p.dead() && p.pid != backend_.helper_pid()) res_.escaped.push_back(p);
}

SuperviseResult Supervisor::finish(SuperviseEnd end) {
  res_.end = end;
  if (end == SuperviseEnd::signal) res_.stop_signal = stop_signal_;
  if (end == SuperviseEnd::timeout || end == SuperviseEnd::signal) {
    SuperviseEvent e;
    e.kind = SuperviseEvent::Kind::exiting;
    e.end = end;
    emit(e);
  }
  final_reap();
  b_.reset();
  return std::move(res_);
}

void Supervisor::emit_exited() {
  res_.last_status = *main_status_;
  SuperviseEvent e;
  e.kind = SuperviseEvent::Kind::exited;
  e.engine = opts_.engine;
  e.pid = child_.pid;
  e.status = *main_status_;
  emit(e);
}

SuperviseResult Supervisor::run() {
  t0_ = sys::monotonic_ns();
  if (opts_.timeout) deadline_ = t0_ + opts_.timeout->count();

  for (;;) {
    auto b = backend_.open_boundary();
    if (!b) {
      res_.spawn_error = SpawnError{125, b.error().value(),
                                    "cannot open a " + std::string(to_string(backend_.kind())) +
                                        " boundary: " + b.error().message()};
      return finish(SuperviseEnd::spawn_failed);
    }
    b_ = std::move(*b);
    auto child = spawn_in(opts_.spawn, backend_, b_, opts_.limits);
    if (!child) {
      b_->release(b_->empty().value_or(false));
      res_.spawn_error = child.error();
      return finish(SuperviseEnd::spawn_failed);
    }
    child_ = std::move(*child);
    main_reaped_ = false;
    main_status_.reset();
    b_->set_main(child_.pid);
    ++res_.spawns;
    SuperviseEvent started;
    started.kind = SuperviseEvent::Kind::started;
    started.engine = opts_.engine;
    started.pid = child_.pid;
    started.pidfd = child_.pidfd.get();
    emit(started);
    if (auto cg = b_->cgroup_path()) trace("child=" + std::to_string(child_.pid) + " in " + *cg);

    Wake wake = wait_child();
    if (wake != Wake::child_exit) {
      // Deadline, stop signal or a broken wait: stop the whole tree, then
      // report how the child ended.
      if (wake == Wake::timeout) timed_out_ = true;
      std::string why = wake == Wake::timeout  ? "timeout"
                        : wake == Wake::signal ? "signal " + signal_name(stop_signal_)
                                               : "error";
      bool verified = stop_tree(why, true);
      bool collected = collect_main();
      if (collected) emit_exited();
      if (!collected && res_.cleanup_error.empty())
        res_.cleanup_error = "child=" + std::to_string(child_.pid) + " could not be collected";
      child_.pidfd.reset();
      if (!verified || !collected || wake == Wake::failed) return finish(SuperviseEnd::cleanup_failed);
      return finish(wake == Wake::timeout ? SuperviseEnd::timeout : SuperviseEnd::signal);
    }

    emit_exited();
    // A restart must never leave the previous child's tree behind.
    bool verified = stop_tree("child exited", false);
    child_.pidfd.reset();
    reap();
    if (!verified) return finish(SuperviseEnd::cleanup_failed);
    if (stop_signal_ != 0) return finish(SuperviseEnd::signal);
    if (!main_status_->signaled && main_status_->code == 0) return finish(SuperviseEnd::clean_exit);
    if (res_.restarts >= opts_.max_restarts) {
      SuperviseEvent e;
      e.kind = SuperviseEvent::Kind::giving_up;
      e.max_restarts = opts_.max_restarts;
      emit(e);
      return finish(SuperviseEnd::gave_up);
    }
    if (timed_out_ || (deadline_ != kForever && sys::monotonic_ns() >= deadline_)) {
      timed_out_ = true;
      return finish(SuperviseEnd::timeout);
    }
    ++res_.restarts;
    SuperviseEvent e;
    e.kind = SuperviseEvent::Kind::restarting;
    e.restart = res_.restarts;
    e.max_restarts = opts_.max_restarts;
    emit(e);
    if (!restart_delay()) return finish(timed_out_ ? SuperviseEnd::timeout : SuperviseEnd::signal);
  }
}

}  // namespace

SuperviseResult supervise(Backend& backend, const SuperviseOptions& opts) {
  Supervisor s(backend, opts);
  return s.run();
}

}  // namespace pmon
