#include "core/init.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "core/stopper.h"
#include "core/units.h"
#include "sys/proc.h"

namespace pmon {

std::optional<ForwardMode> parse_forward_mode(std::string_view s) noexcept {
  if (s == "child") return ForwardMode::child;
  if (s == "group") return ForwardMode::group;
  if (s == "tree") return ForwardMode::tree;
  return std::nullopt;
}

int InitResult::status() const noexcept {
  if (!cleanup_verified) return 125;
  return main.signaled ? 128 + main.code : main.code;
}

bool proc_matches_pid_ns() noexcept {
  char buf[32];
  ssize_t n = ::readlink("/proc/self", buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  return std::to_string(::getpid()) == buf;
}

void Reaper::reap_all() noexcept {
  for (;;) {
    siginfo_t si{};
    int r = sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG, nullptr);
    if (r != 0 || si.si_pid == 0) return;  // ECHILD, or only live children
    ++reaped_;
    if (main_pid_ != 0 && si.si_pid == main_pid_ && !main_exited_) {
      main_si_ = si;
      main_exited_ = true;
    }
  }
}

namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

class Pid1Boundary final : public Boundary {
 public:
  explicit Pid1Boundary(std::function<void()> reap)
      : reap_(std::move(reap)), proc_ok_(proc_matches_pid_ns()) {}

  ConfineKind kind() const noexcept override { return ConfineKind::pidns; }
  void set_main(pid_t) noexcept override {}

  std::expected<void, std::string> set_limits(const Limits& limits) override {
    return std::unexpected(no_cgroup_for_limits(limits, "a PID namespace whose init is pmon (without --confine cgroup)"));
  }

  // For the record only (the stop does not need it), by pids of this
  // namespace; empty when the mounted /proc cannot show them.
  std::vector<sys::ProcStat> members() override {
    std::vector<sys::ProcStat> out;
    if (!proc_ok_) return foreign_members();
    const pid_t self = ::getpid();
    for (sys::ProcStat& p : sys::scan_processes())
      if (p.pid != self && !p.dead()) out.push_back(std::move(p));
    return out;
  }

  // kill(-1) from a namespace's init reaches every other process of the
  // namespace, each addressed by membership, never by a number.
  Result<int> signal_all(int sig) override {
    if (::kill(-1, sig) != 0) {
      if (errno == ESRCH) return 0;
      return fail_errno();
    }
    return 1;
  }

  Result<void> kill_all() override {
    if (::kill(-1, SIGKILL) != 0 && errno != ESRCH) return fail_errno();
    return {};
  }

  // Every live process of the namespace has a live ancestor chain up to us,
  // so once the zombies are reaped, "no children" is "nobody left".
  Result<bool> empty() override {
    if (reap_) reap_();
    siginfo_t si{};
    int r = sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, nullptr);
    if (r == -ECHILD) return true;
    if (r != 0) return fail(-r);
    return false;
  }

  // Deaths arrive as SIGCHLD on the caller's signalfd; the rescan is a
  // backstop only.
  Watch watch() override { return Watch{{}, 100}; }

  bool contains_escapes() const noexcept override { return true; }
  void release(bool) noexcept override {}

 private:
  // A /proc of an ancestor namespace (unshare --pid --fork without
  // --mount-proc) numbers everything as that namespace does, this process
  // included (/proc/self leads to it). The processes of our namespace are
  // our descendants there (an orphan is reparented to us), and the NSpid
  // entry at our depth is each one's pid here.
  std::vector<sys::ProcStat> foreign_members() {
    std::vector<sys::ProcStat> out;
    auto self = sys::pid_in_proc();
    if (!self) return out;
    auto mine = sys::read_nspid(*self);
    if (!mine || mine->back() != ::getpid()) return out;
    const size_t depth = mine->size() - 1;
    std::unordered_map<pid_t, pid_t> here{{*self, ::getpid()}};
    for (sys::ProcStat& p : sys::descendants_of(sys::scan_processes(), *self)) {
      if (p.dead()) continue;
      auto ns = sys::read_nspid(p.pid);
      if (!ns || ns->size() <= depth) continue;  // gone, or not below us after all
      here.emplace(p.pid, (*ns)[depth]);
      p.pid = (*ns)[depth];
      out.push_back(std::move(p));
    }
    for (sys::ProcStat& p : out)
      if (auto it = here.find(p.ppid); it != here.end()) p.ppid = it->second;
    return out;
  }

  std::function<void()> reap_;
  bool proc_ok_;
};

enum class Wake { signal, deadline, watch, escalate };

class Initer final : public StopWaiter {
 public:
  Initer(Boundary& b, Reaper& reaper, const InitOptions& opts)
      : b_(b), reaper_(reaper), opts_(opts) {}

  std::expected<InitResult, SpawnError> run();

  StopWake wait(int64_t deadline, const Watch& w) override {
    Wake wake = pump(deadline, &w, true);
    if (wake == Wake::deadline) return StopWake::deadline;
    if (wake == Wake::escalate) return StopWake::escalate;
    return StopWake::changed;
  }

 private:
  void warn(const std::string& s) const {
    if (opts_.warn) opts_.warn(s);
  }
  void trace(const std::string& s) const {
    if (opts_.trace) opts_.trace(s);
  }
  Wake pump(int64_t deadline, const Watch* w, bool stopping);
  bool drain_signals(bool stopping);
  void forward(int sig);
  void finish_reaping();

  Boundary& b_;
  Reaper& reaper_;
  const InitOptions& opts_;
  Child child_;
  bool warned_poll_ = false;
};

// Waits for a signal, a watched fd, or the deadline. SIGCHLD reaps; other
// signals are forwarded, except that while stopping, a terminating signal
// asks to skip the grace period.
Wake Initer::pump(int64_t deadline, const Watch* w, bool stopping) {
  for (;;) {
    std::vector<pollfd> fds;
    fds.reserve(1 + (w != nullptr ? w->fds.size() : 0));
    if (opts_.signal_fd >= 0) fds.push_back({opts_.signal_fd, POLLIN, 0});
    size_t watch_from = fds.size();
    if (w != nullptr)
      for (const pollfd& p : w->fds) fds.push_back(p);
    int timeout_ms = -1;
    if (deadline != kForever) {
      int64_t now = sys::monotonic_ns();
      if (now >= deadline) return Wake::deadline;
      timeout_ms = static_cast<int>(std::min<int64_t>((deadline - now + 999'999) / 1'000'000, INT_MAX));
    }
    if (w != nullptr && w->rescan_ms >= 0 && (timeout_ms < 0 || w->rescan_ms < timeout_ms))
      timeout_ms = w->rescan_ms;
    // Without a signalfd nothing tells us a child died: look every 100ms.
    if (opts_.signal_fd < 0 && (timeout_ms < 0 || timeout_ms > 100)) timeout_ms = 100;

    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (!warned_poll_) warn(std::string("poll: ") + std::strerror(errno) + "; carrying on");
      warned_poll_ = true;
      reaper_.reap_all();
      return Wake::signal;
    }
    if (opts_.signal_fd < 0) reaper_.reap_all();
    if (!fds.empty() && opts_.signal_fd >= 0 && (fds[0].revents & POLLIN)) {
      if (drain_signals(stopping)) return Wake::escalate;
      return Wake::signal;
    }
    for (size_t i = watch_from; i < fds.size(); ++i)
      if (fds[i].revents != 0) return Wake::watch;
    if (n == 0) return deadline != kForever && sys::monotonic_ns() >= deadline ? Wake::deadline : Wake::watch;
  }
}

bool Initer::drain_signals(bool stopping) {
  bool chld = false, escalate = false;
  for (;;) {
    signalfd_siginfo info;
    ssize_t n = ::read(opts_.signal_fd, &info, sizeof info);
    if (n != static_cast<ssize_t>(sizeof info)) {
      if (n < 0 && errno != EAGAIN && errno != EINTR)
        warn(std::string("reading the signalfd: ") + std::strerror(errno) + "; carrying on");
      break;
    }
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      chld = true;
      continue;
    }
    if (stopping && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)) {
      trace("got " + signal_name(sig) + " while stopping: skipping the grace period");
      escalate = true;
      continue;
    }
    forward(sig);
  }
  // Reap after forwarding: as long as the command is unreaped its pid (and
  // process group id) cannot name anybody else.
  if (chld) reaper_.reap_all();
  return escalate;
}

void Initer::forward(int sig) {
  switch (opts_.forward) {
    case ForwardMode::child:
      if (!reaper_.main_exited()) (void)sys::pidfd_send_signal(child_.pidfd.get(), sig);
      break;
    case ForwardMode::group:
      // The command leads its own session, so its group id is its pid, which
      // stays reserved until we reap it.
      if (!reaper_.main_exited() && ::kill(-child_.pid, sig) != 0 && errno != ESRCH)
        warn("forwarding " + signal_name(sig) + " to the process group: " + std::strerror(errno));
      break;
    case ForwardMode::tree: {
      // The boundary holds the command too: one signal each, no duplicates.
      auto r = b_.signal_all(sig);
      if (!r) warn("forwarding " + signal_name(sig) + " to the tree: " + r.error().message());
      break;
    }
  }
  trace("forwarded " + signal_name(sig));
}

// Processes of the call may be between leaving the boundary and becoming our
// zombies: give them a moment (bounded) and reap them.
void Initer::finish_reaping() {
  const int64_t deadline = sys::monotonic_ns() + 100'000'000;
  const pid_t self = ::getpid();
  bool proc_ok = proc_matches_pid_ns();
  for (;;) {
    reaper_.reap_all();
    if (!proc_ok) return;
    bool zombie = false;
    for (const sys::ProcStat& p : sys::scan_processes())
      if (p.ppid == self && p.dead()) zombie = true;
    if (!zombie || sys::monotonic_ns() >= deadline) return;
    (void)pump(sys::monotonic_ns() + 5'000'000, nullptr, false);
  }
}

std::expected<InitResult, SpawnError> Initer::run() {
  auto child = spawn(opts_.spawn, b_);
  if (!child) return std::unexpected(child.error());
  child_ = std::move(*child);
  b_.set_main(child_.pid);
  reaper_.set_main(child_.pid);
  InitResult res;
  res.pid = child_.pid;
  trace("started pid " + std::to_string(child_.pid) + " under " + std::string(to_string(b_.kind())));

  // From here on nothing is fatal (catatonit's rule): warn and carry on.
  // A command that died before we set_main is found by its pidfd.
  for (;;) {
    if (!reaper_.main_exited() && !sys::pidfd_alive(child_.pidfd.get())) reaper_.reap_all();
    if (reaper_.main_exited()) break;
    (void)pump(kForever, nullptr, false);
  }
  res.main = sys::exit_status_from(reaper_.main_info());
  trace("the command exited (" +
        (res.main.signaled ? signal_name(res.main.code) : "status " + std::to_string(res.main.code)) + ")");

  // What the command left running, counted from this namespace's view. A
  // tracker verifies each process by reading /proc under the pid it has
  // here, so it needs this namespace's /proc; without one only the count
  // is known (or nothing, when /proc cannot show us at all).
  const bool proc_ok = b_.kind() != ConfineKind::pidns || proc_matches_pid_ns();
  LeftoverTracker leftovers;
  auto e = b_.empty();
  if (e && *e) {
    res.cleanup_verified = true;
    res.leftovers = 0;
  } else if (proc_ok) {
    leftovers.snapshot(b_, child_.pid);
    res.leftovers = leftovers.size();
  } else if (sys::pid_in_proc()) {
    res.leftovers = b_.members().size();
  } else {
    res.leftovers.reset();
  }
  const std::string left =
      res.leftovers ? count_of(*res.leftovers, "process", "processes") + " the command left running"
                    : "what the command left running (pmon cannot count it: the /proc here does not show "
                      "this PID namespace)";
  if (res.cleanup_verified) {
    // Nothing left: nothing to wait for or stop.
  } else if (opts_.wait_all) {
    trace("waiting for " + left + " (--wait-all)");
    for (;;) {
      auto now_empty = b_.empty();
      if (now_empty && *now_empty) break;
      if (!now_empty) warn("cannot tell whether the boundary is empty: " + now_empty.error().message());
      Watch w = b_.watch();
      (void)pump(kForever, &w, false);
    }
    res.cleanup_verified = true;
  } else {
    trace("stopping " + left);
    StopContext ctx;
    ctx.boundary = &b_;
    ctx.plan = &opts_.stop;
    ctx.waiter = this;
    ctx.leftovers = proc_ok ? &leftovers : nullptr;
    ctx.t0_ns = sys::monotonic_ns();
    StopRecord record;
    res.cleanup_verified = execute_stop(ctx, record);
    if (!res.cleanup_verified) warn("could not confirm that everything the command started is gone");
  }
  finish_reaping();
  res.reaped = reaper_.reaped();
  return res;
}

}  // namespace

std::unique_ptr<Boundary> make_pid1_boundary(std::function<void()> reap) {
  return std::make_unique<Pid1Boundary>(std::move(reap));
}

std::expected<InitResult, SpawnError> run_init(Boundary& boundary, Reaper& reaper,
                                               const InitOptions& opts) {
  Initer in(boundary, reaper, opts);
  return in.run();
}

namespace {
void noop_handler(int) {}
}  // namespace

bool block_init_signals(sigset_t* set) noexcept {
  sigemptyset(set);
  struct sigaction sa = {};
  sa.sa_handler = noop_handler;
  sa.sa_flags = SA_RESTART;
  sigfillset(&sa.sa_mask);
  for (int s = 1; s < SIGRTMIN; ++s) {
    switch (s) {
      case SIGKILL: case SIGSTOP:  // cannot be caught
      case SIGFPE: case SIGILL: case SIGSEGV: case SIGBUS: case SIGABRT:
      case SIGTRAP: case SIGSYS:   // faults are about the init itself
        continue;
      default:
        break;
    }
    sigaddset(set, s);
    (void)::sigaction(s, &sa, nullptr);
  }
  return ::sigprocmask(SIG_BLOCK, set, nullptr) == 0;
}

}  // namespace pmon
