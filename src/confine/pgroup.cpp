// SPDX-License-Identifier: Apache-2.0
// pgroup: setsid + killpg, nothing more. Weak by design — a descendant that
// calls setsid()/setpgid() is outside it — and reported as such.
#include <signal.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "confine/boundary.h"
#include "confine/scan.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {

class PgroupBoundary final : public Boundary {
 public:
  explicit PgroupBoundary(bool holds_pmon) : holds_pmon_(holds_pmon) {}
  ConfineKind kind() const noexcept override { return ConfineKind::pgroup; }

  void set_main(pid_t pid, Children) noexcept override { pgid_ = pid; }

  std::vector<sys::ProcStat> members() override {
    std::vector<sys::ProcStat> out;
    for (sys::ProcStat& p : sys::scan_processes())
      if (p.pgrp == pgid_) out.push_back(std::move(p));
    return confine::live_only(std::move(out));
  }

  // killpg is safe against reuse here only because the caller keeps the main
  // process unreaped until the stop is over: its zombie pins the group id.
  Result<int> signal_all(int sig, const SignalPass& pass) override {
    return signal_in_turn(sig, pass, [this](int s) { return signal_group(s); });
  }

  Result<void> kill_all() override {
    if (holds_pmon_) kill_below();
    if (auto r = signal_group(SIGKILL); !r) return std::unexpected(r.error());
    return {};
  }

  Result<bool> empty() override {
    if (!members().empty()) return false;
    if (std::ranges::any_of(below_, [](const auto& b) { return sys::pidfd_alive(b.second.get()); })) return false;
    // All gone, that pmon too: each was handed to this process (a subreaper)
    // as its parent went, and is reaped here (one handed elsewhere is not
    // ours to reap: ECHILD).
    for (const auto& b : below_) {
      siginfo_t si{};
      (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(b.second.get()), &si, WEXITED | WNOHANG, nullptr);
    }
    below_.clear();
    return true;
  }

  Watch watch() override { return watch_.refresh(members()); }

  bool contains_escapes() const noexcept override { return false; }

  void release(bool) noexcept override {}

 private:
  Result<int> signal_group(int sig) {
    if (::kill(-pgid_, sig) != 0) {
      if (errno == ESRCH) return 0;
      return fail_errno();
    }
    return 1;
  }

  // The group's leader is a pmon of the job's own (a service's job on the
  // subreaper backend), the subreaper of the command's processes, which
  // are in sessions of their own. A kill of the group that pmon did not
  // answer by stopping them (it was stopped, it hung) would leave them,
  // orphans no walk from it finds once it is gone: so they are found now,
  // while it holds them, and killed each by a pidfd checked against its
  // start time; the boundary is empty only once they are gone too.
  void kill_below() {
    for (const sys::ProcStat& p : sys::descendants_by_children(pgid_)) {
      if (std::ranges::any_of(below_, [&](const auto& b) { return b.first == p.pid; })) continue;
      auto fd = sys::open_identified(p.pid, p.start_time);
      if (!fd) continue;
      (void)sys::pidfd_send_signal(fd->get(), SIGKILL);
      below_.emplace_back(p.pid, std::move(*fd));
    }
  }

  bool holds_pmon_ = false;
  pid_t pgid_ = 0;
  std::vector<std::pair<pid_t, Fd>> below_;  // killed by kill_below, until gone
  confine::PidfdWatch watch_;
};

class PgroupBackend final : public Backend {
 public:
  explicit PgroupBackend(bool holds_pmon) : holds_pmon_(holds_pmon) {}
  ConfineKind kind() const noexcept override { return ConfineKind::pgroup; }
  Result<std::unique_ptr<Boundary>> open_boundary() override {
    return std::make_unique<PgroupBoundary>(holds_pmon_);
  }
  std::string describe() const override {
    return "pgroup: setsid + killpg only (weak: setsid/setpgid escapes it)";
  }

 private:
  bool holds_pmon_ = false;
};

}  // namespace

std::expected<std::unique_ptr<Backend>, Error> open_pgroup_backend(bool holds_pmon) {
  return std::make_unique<PgroupBackend>(holds_pmon);
}

}  // namespace pmon
