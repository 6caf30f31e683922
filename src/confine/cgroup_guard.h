// SPDX-License-Identifier: Apache-2.0
// E11 on the cgroup backend without namespaces: a small guard process that
// outlives the supervisor and, when the supervisor dies, kills every leaf
// the supervisor owns (cgroup_kill.h), waits for them to empty and removes
// them. One guard per cgroup backend (one per process: pmon run, or a
// library user that keeps its backend), started lazily before the first call.
//
// The guard knows the supervisor's leaves by name: the base directory and
// the prefix pmon-<owner pid>-<owner start time>-, so the pool can grow and
// shrink without telling it anything.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>

#include "sys/fd.h"
#include "sys/result.h"

namespace pmon::confine {

// Sets oom_score_adj of `pid` (ours, or a child's) to -1000: never the OOM
// killer's pick. 0, or the errno of the refusal (EACCES without
// CAP_SYS_RESOURCE; some kernels and sandboxes refuse it with EIO).
int shield_from_oom(pid_t pid) noexcept;
// The words for such a refusal, naming its consequence.
std::string oom_shield_words(int err);

class CgroupGuard {
 public:
  // Starts the guard for the leaves named `prefix`* in the directory base_fd.
  // The guard is a "clone child" of this process (exit signal 0), so a
  // caller that reaps its children without __WALL never meets it; it sits
  // in this process's cgroup (never in a leaf it kills), in a session of its
  // own, with no fd of ours but the three it needs. It notices our death by
  // a pidfd of this process (POLLIN when the whole thread group has exited)
  // or by the hang-up of a pipe only we hold.
  //
  // It shares our memory (clone3_shared: no page tables copied, a tenth of
  // the cost of a fork) and keeps it alive when we die; a crash that dumps
  // core ends only our thread group (Linux 5.16+). One thing takes it with
  // us: the OOM killer kills every process that shares its victim's memory,
  // so an OOM kill of pmon itself (small; the OOM killer picks the largest)
  // is not covered by a guard that shares it.
  //
  // Memory::own, for a supervisor that runs long and may grow (pmon
  // serve): a fork instead, whose oom_score_adj is set to -1000 where that
  // is allowed (CAP_SYS_RESOURCE), so the OOM killer takes the supervisor
  // alone and the guard does its work.
  enum class Memory { shared, own };
  // `remove_base`: the base's own name, when the base is this process's
  // session (confine/session.h), which the guard then removes too, once
  // the leaves in it are gone: a crash leaves nothing.
  static Result<std::unique_ptr<CgroupGuard>> start(int base_fd, const std::string& prefix,
                                                    Memory memory = Memory::shared,
                                                    const std::string& remove_base = "") noexcept;

  // Tells the guard to exit without touching anything (the supervisor
  // removes its own leaves on a normal exit) and reaps it.
  ~CgroupGuard();

  // Ends the guard now (SIGKILL through its pidfd: it leaves at once, from
  // the kernel) without waiting; the destructor reaps it. For a caller whose
  // calls are all over and verified empty: the guard's exit then runs while
  // the caller finishes, instead of after it. Idempotent.
  void dismiss() noexcept;

  CgroupGuard(const CgroupGuard&) = delete;
  CgroupGuard& operator=(const CgroupGuard&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // POLLIN once the guard has exited (a SIGKILL of its own): the caller
  // starts another, or its calls are no longer covered.
  int pidfd() const noexcept { return pidfd_.get(); }
  bool apart() const noexcept { return apart_; }
  // Memory::own: why its oom_score_adj could not be set to -1000 (0: it is).
  int oom_errno() const noexcept { return oom_errno_; }

 private:
  // The guard's stack (it shares our memory), unmapped once it is reaped.
  class StackMapping {
   public:
    StackMapping(void* p, size_t n) noexcept : p_(p), n_(n) {}
    StackMapping(StackMapping&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(o.n_) {}
    StackMapping& operator=(StackMapping&&) = delete;
    ~StackMapping();
    void release() noexcept { p_ = nullptr; }

   private:
    void* p_;
    size_t n_;
  };

  CgroupGuard(Fd quit, Fd pidfd, pid_t pid, pid_t owner, bool apart, StackMapping stack)
      : quit_(std::move(quit)), pidfd_(std::move(pidfd)), pid_(pid), owner_(owner), apart_(apart),
        stack_(std::move(stack)) {}
  Fd quit_;
  Fd pidfd_;
  pid_t pid_ = 0;
  pid_t owner_ = 0;  // a forked copy of us must not send the guard away
  bool apart_ = false;  // Memory::own
  bool dismissed_ = false;
  int oom_errno_ = 0;
  StackMapping stack_;  // declared last: unmapped after the guard is reaped
};

}  // namespace pmon::confine
