#include "core/init.h"

#include "confine/pid1.h"

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

namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

enum class Wake { signal, deadline, watch, escalate };

class Initer final : public StopWaiter {
 public:
  Initer(Boundary& b, sys::Reaper& reaper, const InitOptions& opts)
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
  sys::Reaper& reaper_;
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

std::expected<InitResult, SpawnError> run_init(Boundary& boundary, sys::Reaper& reaper,
                                               const InitOptions& opts) {
  Initer in(boundary, reaper, opts);
  return in.run();
}

}  // namespace pmon
