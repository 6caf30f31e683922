// SPDX-License-Identifier: Apache-2.0
// pmon init: the PID-1 / subreaper shim, tree-wide. Starts one command, reaps
// every zombie that lands on this process (adopted orphans included),
// forwards signals to the command's whole boundary, and when the command
// exits stops whatever it left behind (or waits for it) and hands back the
// command's status. tini's and catatonit's job, without their blind spots:
// orphans that outlive the command, and daemons that left the process group.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "confine/boundary.h"
#include "core/call_options.h"
#include "core/spawn.h"
#include "sys/reap.h"
#include "core/stop.h"
#include "sys/syscalls.h"

namespace pmon {

// Where a signal sent to pmon init goes: the command only, its process group
// (dumb-init's default), or every process of the boundary (pmon's default).
enum class ForwardMode { child, group, tree };
std::optional<ForwardMode> parse_forward_mode(std::string_view s) noexcept;

struct InitOptions {
  // The command, its stop plan, and whether to wait for the boundary to
  // empty (wait_tree: --wait-all) instead of stopping it. Its limits are
  // the caller's to set on the boundary it passes in.
  CallSpec call;
  ForwardMode forward = ForwardMode::tree;
  // A signalfd the caller owns, for every signal it blocked: SIGCHLD means
  // "reap", any other signal is forwarded.
  int signal_fd = -1;
  // Once the command runs nothing is fatal: problems are reported here and
  // the loop carries on. Library code never prints.
  std::function<void(const std::string&)> warn;
  std::function<void(const std::string&)> trace;
};

struct InitResult {
  pid_t pid = 0;
  sys::ExitStatus main;       // the command's own status
  bool cleanup_verified = false;
  uint64_t reaped = 0;        // processes reaped, the command included
  // Still running when the command exited; nullopt when pmon could not
  // count them (PID 1 under a /proc that cannot show its namespace).
  std::optional<size_t> leftovers = 0;
  // The command's code, 128+N for signal N, 125 when what it left behind
  // could not be confirmed gone.
  int status() const noexcept;
};

// Runs the command under `boundary` and returns when it and everything it
// left are gone. This process owns every child it has: `reaper` collects
// them all, which is what PID 1 and a subreaper must do. The call owns
// `boundary` and releases it once it is over.
// Errors are returned only from before the command started.
std::expected<InitResult, Error> run_init(std::unique_ptr<Boundary> boundary, sys::Reaper& reaper,
                                               const InitOptions& opts);

}  // namespace pmon
