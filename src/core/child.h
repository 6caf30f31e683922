// The code that runs in the child between clone and exec. It is treated as
// signal-handler code: no allocation, no locks, no stdio — everything it
// needs is computed by the parent before the clone.
#pragma once

#include <sys/types.h>

namespace pmon {

struct ChildPlan {
  const char* const* candidates = nullptr;  // NULL-terminated exec paths
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // may be null
  int stdio[3] = {-1, -1, -1};
  int report_fd = -1;         // write end of the CLOEXEC error pipe
  int pdeathsig = 0;
  pid_t expected_parent = 0;  // for the pdeathsig identity check
  int arm_gate_fd = -1;       // SpawnSpec::test_arm_gate_fd
  bool new_session = true;
};

// What the child writes on the error pipe before _exit.
struct ChildFailure {
  enum Stage : int { kSetup = 1, kChdir = 2, kExec = 3, kParentGone = 4 };
  int stage = 0;
  int err = 0;
};

[[noreturn]] void run_child(const ChildPlan& plan) noexcept;

}  // namespace pmon
