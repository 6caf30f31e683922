// SPDX-License-Identifier: Apache-2.0
// pidns: the call runs under pmon's own init as PID 1 of a new PID namespace
// (plus a mount namespace with the namespace's /proc, and a user namespace
// when pmon is unprivileged). The init is the boundary: signalling it
// forwards to the whole namespace, and when it exits the kernel SIGKILLs
// everything left and refuses new forks (pid_namespaces(7)), so "the init's
// pidfd is readable" means "the namespace is empty". The init is armed with
// PR_SET_PDEATHSIG(SIGKILL), so a SIGKILLed pmon takes the namespace along
// (E11).
//
// --isolate is the same boundary wrapped around a cgroup leaf: the init is
// cloned into the leaf, with a cgroup namespace rooted at it and a cgroup2
// view mounted there, so a hostile call can neither name pmon (PID
// namespace) nor move itself out of the leaf (cgroup namespace + user
// namespace: the kernel refuses migrations outside the namespace root).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "confine/boundary.h"
#include "sys/fd.h"

namespace pmon {

// What the clone of a namespace init needs from its boundary.
struct NsSetup {
  bool user_ns = false;     // CLONE_NEWUSER, uid/gid mapped to themselves
  bool cgroup_ns = false;   // a cgroup namespace rooted at the leaf
  std::string cgroup2_mount;  // where to mount the leaf's cgroup2 view
  int exe_fd = -1;          // O_PATH fd of the pmon binary (execveat)
  // The parent-liveness pipe: pmon holds the write end for the whole call;
  // the init reads the "go" byte from the read end after arming its
  // pdeathsig, then checks that the write end is still open (no POLLHUP).
  int sync_r = -1;
  int sync_w = -1;
};

class PidnsBoundary final : public Boundary {
 public:
  PidnsBoundary(NsSetup setup, Fd sync_r, Fd sync_w, std::unique_ptr<Boundary> inner);
  ~PidnsBoundary() override;

  pid_t init_pid() const noexcept { return init_pid_; }
  int init_pidfd() const noexcept { return init_pidfd_.get(); }

  // pmon's init (`pmon __nsinit`) as PID 1, then the command as its child,
  // and pmon's direct child, the status relay, which exits as the command
  // did (see confine/pidns_launch.cpp).
  std::expected<Child, Error> launch(const SpawnSpec& spec) override;

  ConfineKind kind() const noexcept override { return ConfineKind::pidns; }
  int clone_cgroup_fd() const noexcept override;
  void set_main(pid_t pid, Children children) noexcept override;
  std::vector<sys::ProcStat> members() override;
  Result<int> signal_all(int sig, const SignalPass& pass) override;
  Result<void> kill_all() override;
  Result<bool> empty() override;
  Watch watch() override;
  bool contains_escapes() const noexcept override { return true; }
  std::optional<std::string> cgroup_path() const override;
  Figures figures(FiguresWanted wanted) override;
  // Set on the cgroup leaf under --isolate; without one there is nowhere.
  std::expected<void, Error> set_limits(const Limits& limits, LimitsFrom from) override;
  void release(bool verified_empty) noexcept override;

 private:
  // Set once by launch: the init, PID 1 of the namespace (host pid).
  // command_pid: the command's host pid, left out of members() as the main
  // process is everywhere else.
  void adopt_init(pid_t pid, Fd pidfd, pid_t command_pid) noexcept;
  bool init_exited() noexcept;
  void reap_init(bool block) noexcept;

  NsSetup setup_;
  Fd sync_r_, sync_w_;
  std::unique_ptr<Boundary> inner_;  // the cgroup leaf under --isolate
  pid_t init_pid_ = 0;
  pid_t command_pid_ = 0;
  Fd init_pidfd_;
  bool init_reaped_ = false;
  bool init_lent_ = false;  // the stop's priority (sys::lend_priority)
  std::optional<uint64_t> init_cpu_usec_;
  bool released_ = false;
};

struct PidnsOptions {
  bool isolate = false;        // cgroup leaf + cgroup namespace + user namespace
  std::string cgroup_root;     // for the leaf (isolate only)
  // The pmon binary the init is exec'd from; a library user names the
  // installed pmon. Default: this process's own executable.
  std::string init_exe = "/proc/self/exe";
};

std::expected<std::unique_ptr<Backend>, Error> open_pidns_backend(const PidnsOptions& opts);

}  // namespace pmon
