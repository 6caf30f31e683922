// SPDX-License-Identifier: Apache-2.0
#include "confine/pid1.h"

#include <signal.h>
#include <unistd.h>

#include <unordered_map>

#include "confine/error.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

bool proc_matches_pid_ns() noexcept {
  char buf[32];
  ssize_t n = ::readlink("/proc/self", buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = '\0';
  return std::to_string(::getpid()) == buf;
}

namespace {

class Pid1Boundary final : public Boundary {
 public:
  explicit Pid1Boundary(std::function<void()> reap)
      : reap_(std::move(reap)), proc_ok_(proc_matches_pid_ns()) {}

  ConfineKind kind() const noexcept override { return ConfineKind::pidns; }
  void set_main(pid_t, Children) noexcept override {}

  std::expected<void, Error> set_limits(const Limits& limits, LimitsFrom from) override {
    if (from != LimitsFrom::call) return Boundary::set_limits(limits, from);
    return std::unexpected(no_cgroup_for_limits(
        limits, "a PID namespace whose init is pmon (without " + setting_token(Setting::confine_cgroup) + ")"));
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
  Result<int> signal_all(int sig, const SignalPass& pass) override {
    return signal_in_turn(sig, pass, [](int s) -> Result<int> {
      if (::kill(-1, s) != 0) {
        if (errno == ESRCH) return 0;
        return fail_errno();
      }
      return 1;
    });
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

}  // namespace

std::unique_ptr<Boundary> make_pid1_boundary(std::function<void()> reap) {
  return std::make_unique<Pid1Boundary>(std::move(reap));
}

}  // namespace pmon
