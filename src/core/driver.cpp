// SPDX-License-Identifier: Apache-2.0
#include "core/driver.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {
using sys::kForever;
}  // namespace

Driver::Driver(Call& call, SignalPolicy policy) : call_(nullptr), policy_(std::move(policy)) { attach(call); }

Driver::Driver(int signal_fd, SignalPolicy policy)
    : call_(nullptr), policy_(std::move(policy)), signal_fd_(signal_fd), cancel_fd_(-1), capture_(nullptr) {}

void Driver::attach(Call& call) {
  call_ = &call;
  signal_fd_ = call.options().signal_fd;
  cancel_fd_ = call.options().cancel_fd;
  parent_fd_ = call.options().parent_fd;
  reader_fd_ = call.options().reader_fd;
  capture_ = call.options().capture;
}

void Driver::drain_signals(Call* call) {
  signalfd_siginfo info;
  bool chld = false;
  for (;;) {
    ssize_t n = ::read(signal_fd_, &info, sizeof info);
    if (n != static_cast<ssize_t>(sizeof info)) break;
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      chld = true;
      continue;
    }
    if (policy_.on_signal) {
      policy_.on_signal(sig);
      continue;
    }
    // The first stop signal cancels a running call; once it is cancelled,
    // every later one skips the grace period.
    if (cancelled_) {
      if (call) call->escalate();
      continue;
    }
    cancelled_ = true;
    first_signal_ = sig;
    if (call && !call->finishing() && !call->finished()) {
      call->end(Call::End::cancel, sig);
      cancelled_now_ = true;
    }
  }
  if (chld && call) call->reap();
  else if (chld && policy_.on_chld) policy_.on_chld();
}

void Driver::on_cancel_fd(Call* call) {
  uint64_t v;
  ssize_t r = ::read(cancel_fd_, &v, sizeof v);
  // A closed pipe stays readable: it cancels once, never escalates.
  if (r == 0) cancel_done_ = true;
  if (!cancelled_) {
    cancelled_ = true;
    cancelled_now_ = true;
    return;
  }
  if (r > 0 && call) call->escalate();
}

// The parent's pidfd became readable: it has exited. Heard once (a pidfd
// stays readable); the call is ended as a cancel no signal asked for, and a
// call that already ends goes on as it was.
void Driver::on_parent_exit(Call* call) {
  parent_exited_ = true;
  if (cancelled_) return;
  cancelled_ = true;
  if (call && !call->finished()) {
    call->end(Call::End::parent_exited);
    cancelled_now_ = true;
  }
}

bool Driver::wait_once(Call* call, int64_t until) {
  cancelled_now_ = false;
  const Watch w = call ? call->watch() : Watch{};
  const int64_t call_deadline = call ? call->deadline() : kForever;
  // Fixed on entry: capture traffic must not keep postponing a rescan.
  const int64_t rescan_at = w.rescan_ms >= 0 ? sys::monotonic_ns() + int64_t{w.rescan_ms} * 1'000'000 : kForever;
  const int64_t wake_at = std::min({until, call_deadline, rescan_at});
  // Once the wake is due, one more poll that does not block: the signals
  // (and reaping on SIGCHLD) are read between back-to-back rescans.
  bool due_polled = false;
  for (;;) {
    std::vector<pollfd> fds;
    int sig_i = -1, cancel_i = -1, parent_i = -1;
    // (While a killed boundary empties, the signals wait for its next wake:
    // a thousand dying processes are a thousand SIGCHLDs, and each wake
    // here took the CPU they needed to exit, and restarted the rekill's
    // interval.)
    if (signal_fd_ >= 0 && !w.reap_later) {
      sig_i = static_cast<int>(fds.size());
      fds.push_back({signal_fd_, POLLIN, 0});
    }
    if (cancel_fd_ >= 0 && !cancel_done_) {
      cancel_i = static_cast<int>(fds.size());
      fds.push_back({cancel_fd_, POLLIN, 0});
    }
    if (parent_fd_ >= 0 && !parent_exited_) {
      parent_i = static_cast<int>(fds.size());
      fds.push_back({parent_fd_, POLLIN, 0});
    }
    int reader_i = -1;
    if (reader_fd_ >= 0 && !parent_exited_) {
      reader_i = static_cast<int>(fds.size());
      fds.push_back({reader_fd_, 0, 0});  // POLLERR, POLLHUP: always reported
    }
    // The pipes are read whenever we wait, so a writer never blocks on a
    // full pipe while we wait for it to exit.
    const size_t capture_from = fds.size();
    if (capture_ != nullptr && call != nullptr && !call->finished()) {
      std::vector<pollfd> c = capture_->pollfds();
      fds.insert(fds.end(), c.begin(), c.end());
    }
    const size_t watch_from = fds.size();
    fds.insert(fds.end(), w.fds.begin(), w.fds.end());

    const int64_t now = sys::monotonic_ns();
    int timeout_ms = -1;
    if (wake_at != kForever && now >= wake_at) {
      if (due_polled) {
        if (call) call->step();
        return false;
      }
      due_polled = true;
      timeout_ms = 0;
    } else if (wake_at != kForever) {
      timeout_ms = static_cast<int>(std::min<int64_t>((wake_at - now + 999'999) / 1'000'000, 1 << 30));
    }
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (call) call->step();
      return false;
    }
    for (size_t i = capture_from; i < watch_from; ++i) {
      if (fds[i].revents == 0) continue;
      const uint64_t before = capture_->bytes_read();
      (void)capture_->pump();
      capture_->close_finished();
      if (call != nullptr && capture_->bytes_read() != before) call->note_output();  // (an idle timeout starts again)
      break;
    }
    bool woke = false;
    if (sig_i >= 0 && (fds[sig_i].revents & POLLIN)) {
      drain_signals(call);
      woke = true;
    }
    if (cancel_i >= 0 && fds[cancel_i].revents != 0) {
      on_cancel_fd(call);
      woke = true;
    }
    if (parent_i >= 0 && fds[parent_i].revents != 0) {
      on_parent_exit(call);
      woke = true;
    }
    if (reader_i >= 0 && (fds[reader_i].revents & (POLLERR | POLLHUP | POLLNVAL))) {
      on_parent_exit(call);
      woke = true;
    }
    if (cancelled_now_) return true;
    for (size_t i = watch_from; i < fds.size(); ++i)
      if (fds[i].revents != 0) {
        if (call) call->step();
        return false;
      }
    // A deadline that came meanwhile is stepped now: a flood of SIGCHLD (a
    // storm's exits) must not keep a due stop waiting.
    if (woke) {
      if (call && sys::monotonic_ns() >= wake_at) call->step();
      return false;
    }
    if (n == 0 && !due_polled) continue;
  }
}

Driver::~Driver() {
  if (call_ != nullptr && call_->started() && !call_->finished()) (void)finish(Call::End::cancel);
}

Call::End Driver::wait_for_end(int64_t until) {
  for (;;) {
    // Ended already: by its own timeout (a cancel returns below).
    if (call_->finishing() || call_->finished()) return Call::End::timeout;
    if (call_->main_exited()) return Call::End::main_exited;
    if (wait_once(call_, until)) return Call::End::cancel;
    if (until != kForever && sys::monotonic_ns() >= until) return Call::End::main_exited;
  }
}

bool Driver::wait_main(int timeout_ms) {
  if (call_->main_exited()) return true;
  const int64_t until = timeout_ms < 0 ? kForever : sys::monotonic_ns() + int64_t{timeout_ms} * 1'000'000;
  (void)wait_for_end(until);
  return call_->main_exited();
}

const RunResult& Driver::finish(Call::End why) {
  if (call_->started() && !call_->finished()) {
    // A cancel asked for here makes the next one skip the grace period.
    if (why == Call::End::cancel) cancelled_ = true;
    call_->end(why, first_signal_);
    run_to_end();
  }
  return call_->result();
}

void Driver::run_to_end() {
  while (!call_->finished()) (void)wait_once(call_, kForever);
}

void reap_stragglers(Driver& driver, sys::Reaper& reaper, int64_t bound_ns, bool wait_live, pid_t helper) {
  const pid_t self = ::getpid();
  const int64_t bound = sys::monotonic_ns() + bound_ns;
  for (;;) {
    reaper.reap();
    bool zombie = false, live = false;
    for (const sys::ProcStat& p : sys::scan_processes()) {
      if (p.ppid != self || p.pid == helper) continue;
      (p.dead() ? zombie : live) = true;
    }
    if (!zombie && (!live || !wait_live)) return;
    if (sys::monotonic_ns() >= bound) return;
    (void)driver.wait_once(nullptr, sys::monotonic_ns() + 5'000'000);
  }
}

}  // namespace pmon
