// SPDX-License-Identifier: Apache-2.0
// subreaper: the supervisor is PR_SET_CHILD_SUBREAPER, so every orphan of the
// call is reparented to it and stays findable as a descendant. Stopping is a
// walk-signal-reap drain loop: a walk is a snapshot, so the caller repeats
// until a scan comes back empty (a fork storm converges because every pass
// kills what the last one missed).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <set>

#include "confine/boundary.h"
#include "confine/scan.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {

// Main processes of the live calls of this process, so that concurrent calls
// (the library) do not count each other's trees as their own.
std::mutex g_mains_mu;
std::set<pid_t> g_mains;

class SubreaperBoundary final : public Boundary {
 public:
  ~SubreaperBoundary() override { release(false); }

  ConfineKind kind() const noexcept override { return ConfineKind::subreaper; }

  void set_main(pid_t pid, Children children) noexcept override {
    main_ = pid;
    sole_owner_ = children == Children::all_the_calls;
    std::lock_guard lock(g_mains_mu);
    g_mains.insert(pid);
  }

  // Everything below us that is not another call's subtree (nor a helper's).
  // Orphans of this call were reparented to us, so they show up as our
  // children. A walk of the children files: its cost is this call's tree,
  // not every process of the host.
  std::vector<sys::ProcStat> members() override {
    std::set<pid_t> others;
    {
      std::lock_guard lock(g_mains_mu);
      for (pid_t m : g_mains)
        if (m != main_) others.insert(m);
    }
    return confine::live_only(sys::descendants_by_children(
        ::getpid(), [&](pid_t pid) { return others.contains(pid) || confine::is_helper(pid); }));
  }

  Result<int> signal_all(int sig, const SignalPass& pass) override {
    return signal_in_turn(sig, pass, [this](int s) { return confine::signal_listed(members(), s); });
  }

  Result<void> kill_all() override {
    (void)confine::signal_listed(members(), SIGKILL);
    return {};
  }

  // No child at all, not even a zombie or a clone child (ECHILD): nothing
  // can be below us (every process below us descends from a child of ours:
  // an orphan is handed to us before its parent turns zombie), so no walk
  // is needed; the common end of a call. When every child of ours is this
  // call's (Children::all_the_calls), that is the only way to be empty: any child,
  // alive or not yet reaped, means the call is not over. A walk can
  // miss a fork storm's short-lived processes twice in a row; the kernel's
  // own count of our children cannot. Otherwise (calls side by side in one
  // process) two empty walks in a row: a process forked below one whose
  // children the walk had already read is seen by the second.
  Result<bool> empty() override {
    siginfo_t si{};
    if (sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL, nullptr) == -ECHILD) return true;
    if (sole_owner_) return false;
    return members().empty() && members().empty();
  }

  Watch watch() override { return watch_.refresh(members()); }

  bool contains_escapes() const noexcept override { return true; }

  void release(bool) noexcept override {
    if (main_ <= 0) return;
    std::lock_guard lock(g_mains_mu);
    g_mains.erase(main_);
    main_ = 0;
  }

 private:
  pid_t main_ = 0;
  bool sole_owner_ = false;
  confine::PidfdWatch watch_;
};

class SubreaperBackend final : public Backend {
 public:
  ConfineKind kind() const noexcept override { return ConfineKind::subreaper; }
  Result<std::unique_ptr<Boundary>> open_boundary() override {
    return std::make_unique<SubreaperBoundary>();
  }
  std::string describe() const override {
    return "subreaper: PR_SET_CHILD_SUBREAPER on pmon, drain loop over its descendants";
  }
};

}  // namespace

std::expected<std::unique_ptr<Backend>, Error> open_subreaper_backend() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL) != 0)
    return unsupported(std::string("prctl(PR_SET_CHILD_SUBREAPER) failed: ") +
                           std::strerror(errno));
  return std::make_unique<SubreaperBackend>();
}

}  // namespace pmon
