// SPDX-License-Identifier: Apache-2.0
// The stop protocol as data: a list of steps, each an action on the whole
// boundary and how long to wait for it to empty. run, supervise, init and the
// binding all execute the same plan.
#pragma once

#include <signal.h>

#include <chrono>
#include <vector>

#include "core/units.h"

namespace pmon {

struct StopStep {
  enum class Action { signal, kill };
  Action action = Action::signal;
  int signal = SIGTERM;  // for Action::signal
  bool with_cont = true; // SIGCONT after it, so stopped processes see it (E8)
  Nanos wait{0};         // how long to wait for the boundary to empty
};

struct StopPlan {
  std::vector<StopStep> steps;

  // first_signal + SIGCONT, wait `grace`; then SIGKILL (cgroup.kill where
  // there is one), wait up to `verify` for the boundary to be confirmed empty.
  // A grace of 0 is SIGKILL at once: a first signal followed by SIGKILL in
  // the same instant gives no handler time to act, and its pass over the
  // tree (a freeze, a pidfd per process) would only delay the kill.
  static StopPlan standard(int first_signal, Nanos grace,
                           Nanos verify = std::chrono::seconds(5)) {
    StopPlan p;
    if (grace.count() > 0) p.steps.push_back({StopStep::Action::signal, first_signal, true, grace});
    p.steps.push_back({StopStep::Action::kill, SIGKILL, false, verify});
    return p;
  }
};

}  // namespace pmon
