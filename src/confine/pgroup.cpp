// SPDX-License-Identifier: Apache-2.0
// pgroup: setsid + killpg, nothing more. Weak by design — a descendant that
// calls setsid()/setpgid() is outside it — and reported as such.
#include <signal.h>

#include "confine/boundary.h"
#include "confine/scan.h"

namespace pmon {

namespace {

class PgroupBoundary final : public Boundary {
 public:
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
    if (auto r = signal_group(SIGKILL); !r) return std::unexpected(r.error());
    return {};
  }

  Result<bool> empty() override { return members().empty(); }

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

  pid_t pgid_ = 0;
  confine::PidfdWatch watch_;
};

class PgroupBackend final : public Backend {
 public:
  ConfineKind kind() const noexcept override { return ConfineKind::pgroup; }
  Result<std::unique_ptr<Boundary>> open_boundary() override {
    return std::make_unique<PgroupBoundary>();
  }
  std::string describe() const override {
    return "pgroup: setsid + killpg only (weak: setsid/setpgid escapes it)";
  }
};

}  // namespace

std::expected<std::unique_ptr<Backend>, Error> open_pgroup_backend() {
  return std::make_unique<PgroupBackend>();
}

}  // namespace pmon
