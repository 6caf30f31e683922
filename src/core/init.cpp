// SPDX-License-Identifier: Apache-2.0
#include "core/init.h"

#include "confine/pid1.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <unordered_map>

#include "core/call.h"
#include "core/driver.h"
#include "core/stopper.h"
#include "core/units.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

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

using sys::kForever;

// An init: one call (its boundary the caller's: PID 1's namespace, or a
// leaf), and signal forwarding. While the command runs, and while what it
// left is waited for, every signal is forwarded; while what it left is
// stopped, a terminating one skips the grace period instead.
class Initer {
 public:
  Initer(std::unique_ptr<Boundary> b, sys::Reaper& reaper, const InitOptions& opts)
      : b_(std::move(b)), reaper_(reaper), opts_(opts) {}

  std::expected<InitResult, Error> run();

 private:
  void warn(const std::string& s) const {
    if (opts_.warn) opts_.warn(s);
  }
  void trace(const std::string& s) const {
    if (opts_.trace) opts_.trace(s);
  }
  void on_signal(int sig);
  void forward(int sig);

  std::unique_ptr<Boundary> b_;
  sys::Reaper& reaper_;
  const InitOptions& opts_;
  std::unique_ptr<Call> call_;
};

void Initer::on_signal(int sig) {
  const bool stopping = call_ && call_->finishing() && !call_->waiting_for_tree();
  if (stopping && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)) {
    trace("got " + signal_name(sig) + " while stopping: skipping the grace period");
    call_->escalate();
    return;
  }
  forward(sig);
}

void Initer::forward(int sig) {
  if (!call_) return;
  switch (opts_.forward) {
    case ForwardMode::child:
      if (!reaper_.main_exited()) (void)sys::pidfd_send_signal(call_->pidfd(), sig);
      break;
    case ForwardMode::group:
      // The command leads its own session, so its group id is its pid, which
      // stays reserved until we reap it.
      if (!reaper_.main_exited() && ::kill(-call_->pid(), sig) != 0 && errno != ESRCH)
        warn("forwarding " + signal_name(sig) + " to the process group: " + std::strerror(errno));
      break;
    case ForwardMode::tree: {
      // The boundary holds the command too: one signal each, no duplicates.
      auto r = call_->signal_tree(sig);
      if (!r) warn("forwarding " + signal_name(sig) + " to the tree: " + r.error().message());
      break;
    }
  }
  trace("forwarded " + signal_name(sig));
}

std::expected<InitResult, Error> Initer::run() {
  // The /proc here shows the boundary's processes under their own pids (a
  // tracker verifies each process by reading /proc under the pid it has
  // here); without one only their count is known, or nothing.
  const bool proc_ok = b_->kind() != ConfineKind::pidns || proc_matches_pid_ns();
  RunOptions ro;
  ro.call = opts_.call;
  ro.call.limits = {};  // already set on the boundary by the caller
  ro.signal_fd = opts_.signal_fd;
  ro.own_all_children = true;
  ro.reaper = &reaper_;
  ro.main_by_pidfd = false;  // PID 1 collects every child as it comes
  ro.track_leftovers = proc_ok;
  const bool is_pidns = b_->kind() == ConfineKind::pidns;
  Boundary* boundary = b_.get();
  call_ = std::make_unique<Call>(std::move(b_), std::move(ro));
  if (auto s = call_->start(); !s) return std::unexpected(s.error());
  InitResult res;
  res.pid = call_->pid();
  trace("started pid " + std::to_string(res.pid) + " under " + std::string(is_pidns ? "pidns" : to_string(boundary->kind())));

  // From here on nothing is fatal (catatonit's rule): warn and carry on.
  Driver d(*call_, SignalPolicy{[this](int sig) { on_signal(sig); }, {}});
  while (!call_->main_exited()) (void)d.wait_once(call_.get(), kForever);
  res.main = sys::exit_status_from(reaper_.main_info());
  trace("the command exited (" +
        (res.main.signaled ? signal_name(res.main.code) : "status " + std::to_string(res.main.code)) + ")");

  // What the command left running, counted from this namespace's view.
  auto e = boundary->empty();
  const bool nothing_left = e && *e;
  if (nothing_left) {
    res.leftovers = 0;
  } else if (proc_ok || sys::pid_in_proc()) {
    size_t n = 0;
    for (const sys::ProcStat& p : boundary->members())
      if (p.pid != res.pid) ++n;
    res.leftovers = n;
  } else {
    res.leftovers.reset();
  }
  if (!nothing_left) {
    const std::string left =
        res.leftovers ? count_of(*res.leftovers, "process", "processes") + " the command left running"
                      : "what the command left running (pmon cannot count it: the /proc here does not show "
                        "this PID namespace)";
    trace(opts_.call.wait_tree ? "waiting for " + left + " to exit" : "stopping " + left);
  }
  const RunResult& r = d.finish(Call::End::main_exited);
  res.cleanup_verified = r.cleanup_verified;
  if (!res.cleanup_verified) warn("could not confirm that everything the command started is gone");
  // Processes of the call may be between leaving the boundary and becoming
  // our zombies (counted by name: only under this namespace's /proc).
  if (proc_ok) reap_stragglers(d, reaper_, 100'000'000, false, 0);
  else reaper_.reap();
  res.reaped = reaper_.reaped();
  return res;
}

}  // namespace

std::expected<InitResult, Error> run_init(std::unique_ptr<Boundary> boundary, sys::Reaper& reaper,
                                               const InitOptions& opts) {
  Initer in(std::move(boundary), reaper, opts);
  return in.run();
}

}  // namespace pmon
