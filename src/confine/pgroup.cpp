// SPDX-License-Identifier: Apache-2.0
// pgroup: setsid + killpg, nothing more. Weak by design — a descendant that
// calls setsid()/setpgid() is outside it — and reported as such.
#include <signal.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "confine/boundary.h"
#include "confine/scan.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {

// The own pmons a service's boundaries hold, while each is the job's: any
// other child of the service is an orphan one of them left when it died.
struct HeldPmons {
  std::mutex mu;  // held from the clone of one until it is listed, and by each look for orphans
  std::unordered_set<pid_t> leaders;
};

class PgroupBoundary final : public Boundary {
 public:
  explicit PgroupBoundary(std::shared_ptr<HeldPmons> held) : held_(std::move(held)) {}
  ~PgroupBoundary() override { forget_leader(); }
  ConfineKind kind() const noexcept override { return ConfineKind::pgroup; }

  std::expected<Child, Error> launch(const SpawnSpec& spec) override {
    if (!held_) return Boundary::launch(spec);
    std::lock_guard lock(held_->mu);
    auto child = Boundary::launch(spec);
    if (child) held_->leaders.insert(child->pid);
    return child;
  }

  void set_main(pid_t pid, Children) noexcept override {
    pgid_ = pid;
    // Our child, not yet reaped: its pidfd is its own.
    if (held_)
      if (auto fd = sys::pidfd_open(pid)) leader_ = std::move(*fd);
  }

  std::vector<sys::ProcStat> members() override {
    std::vector<sys::ProcStat> out;
    if (held_) {
      // That pmon leads a session of its own: whatever joined its group is
      // below it, or, once it is dead, an orphan it left. No scan of /proc.
      out = below();
      // (alive, it is our unreaped child: the number is still its own)
      if (leader_alive())
        if (auto leader = sys::read_stat(pgid_)) out.push_back(std::move(*leader));
      return confine::live_only(std::move(out));
    }
    for (sys::ProcStat& p : sys::scan_processes())
      if (p.pgrp == pgid_) out.push_back(std::move(p));
    return confine::live_only(std::move(out));
  }

  // killpg is safe against reuse here only because the caller keeps the main
  // process unreaped until the stop is over: its zombie pins the group id.
  // Once a held pmon is dead, what it left (now ours) is signalled too.
  Result<int> signal_all(int sig, const SignalPass& pass) override {
    return signal_in_turn(sig, pass, [this](int s) -> Result<int> {
      auto r = signal_group(s);
      if (r && held_ && !leader_alive()) *r += signal_below(s);
      return r;
    });
  }

  Result<void> kill_all() override {
    if (held_) signal_below(SIGKILL);
    if (auto r = signal_group(SIGKILL); !r) return std::unexpected(r.error());
    return {};
  }

  Result<bool> empty() override {
    if (!members().empty()) return false;
    if (std::ranges::any_of(below_, [](const auto& b) { return sys::pidfd_alive(b.second.get()); })) return false;
    // All gone: what is ours of them is reaped before the call says so.
    if (held_) reap_orphans();
    below_.clear();
    return true;
  }

  Watch watch() override { return watch_.refresh(members()); }

  bool contains_escapes() const noexcept override { return false; }

  void release(bool) noexcept override { forget_leader(); }

 private:
  Result<int> signal_group(int sig) {
    if (::kill(-pgid_, sig) != 0) {
      if (errno == ESRCH) return 0;
      return fail_errno();
    }
    return 1;
  }

  bool leader_alive() const noexcept { return leader_ && sys::pidfd_alive(leader_.get()); }

  // The group's leader is a pmon of the job's own (a service's job on the
  // subreaper backend), the subreaper of the command's processes, which
  // are in sessions of their own: those are found below it while it lives.
  // Once it is dead they are this process's (a subreaper too), orphans no
  // walk from it finds: every child of ours that is no held pmon's (and no
  // helper) is one, and what is below it. A kill of the group that pmon
  // did not answer by stopping them (it was stopped, it hung) or a pmon
  // killed from outside would leave them running: the boundary is empty
  // only once they are gone too.
  std::vector<sys::ProcStat> below() {
    if (leader_alive()) return sys::descendants_by_children(pgid_);
    std::lock_guard lock(held_->mu);
    return sys::descendants_by_children(::getpid(), [this](pid_t pid) { return held(pid); });
  }

  // Each by a pidfd checked against its start time, kept until it is gone.
  int signal_below(int sig) {
    int sent = 0;
    for (const sys::ProcStat& p : below()) {
      if (p.dead()) continue;
      auto known = below_.find(p.pid);
      if (known == below_.end()) {
        auto fd = sys::open_identified(p.pid, p.start_time);
        if (!fd) continue;
        known = below_.emplace(p.pid, std::move(*fd)).first;
      }
      if (sys::pidfd_send_signal(known->second.get(), sig) == 0) ++sent;
    }
    return sent;
  }

  // What that pmon left is ours to reap once it ends: the children of ours
  // that are zombies and no held pmon's (each held one's call reaps it).
  void reap_orphans() {
    std::lock_guard lock(held_->mu);
    for (pid_t pid : sys::zombie_children([this](pid_t pid) { return held(pid); })) {
      siginfo_t si{};
      (void)sys::waitid_raw(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG, nullptr);
    }
  }

  // (with held_->mu)
  bool held(pid_t pid) const { return held_->leaders.contains(pid) || confine::is_helper(pid); }

  void forget_leader() noexcept {
    if (!held_ || pgid_ == 0) return;
    std::lock_guard lock(held_->mu);
    held_->leaders.erase(pgid_);
  }

  std::shared_ptr<HeldPmons> held_;  // null: no pmon held
  pid_t pgid_ = 0;
  Fd leader_;
  std::unordered_map<pid_t, Fd> below_;  // signalled one by one, until gone
  confine::PidfdWatch watch_;
};

class PgroupBackend final : public Backend {
 public:
  explicit PgroupBackend(bool holds_pmon) {
    if (holds_pmon) held_ = std::make_shared<HeldPmons>();
  }
  ConfineKind kind() const noexcept override { return ConfineKind::pgroup; }
  Result<std::unique_ptr<Boundary>> open_boundary() override { return std::make_unique<PgroupBoundary>(held_); }
  std::string describe() const override {
    return "pgroup: setsid + killpg only (weak: setsid/setpgid escapes it)";
  }

 private:
  std::shared_ptr<HeldPmons> held_;
};

}  // namespace

std::expected<std::unique_ptr<Backend>, Error> open_pgroup_backend(bool holds_pmon) {
  return std::make_unique<PgroupBackend>(holds_pmon);
}

}  // namespace pmon
