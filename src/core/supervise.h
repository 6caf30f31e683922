// SPDX-License-Identifier: Apache-2.0
// The restart supervisor of seed 004: run a command, restart it when it
// fails, give up after a budget, and stop the current child's whole tree on
// the deadline or on a signal. Every child gets a fresh Boundary, and what is
// left of its tree is stopped and confirmed gone before the next spawn.
//
// Two engines wait for the child, with the same policy and the same events:
//   pidfd   — the child's pidfd and the signalfd in one poll; the child is
//             reaped with waitid(P_PIDFD), never by number.
//   sigchld — SIGCHLD read from the signalfd drives a WNOHANG waitpid(-1)
//             loop (coalesced SIGCHLDs are fine: it reaps until nobody is
//             left). It reaps every child of the process: only for a process
//             that owns all of its children (the CLI).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confine/boundary.h"
#include "core/call_options.h"
#include "core/spawn.h"
#include "core/stop.h"
#include "core/stopper.h"
#include "sys/syscalls.h"

namespace pmon {

enum class Engine { pidfd, sigchld };

std::string_view to_string(Engine e) noexcept;
std::optional<Engine> parse_engine(std::string_view s) noexcept;

// How supervision ended.
enum class SuperviseEnd {
  clean_exit,      // a child exited 0
  gave_up,         // the restart budget is spent
  timeout,         // the supervision deadline passed
  signal,          // a stop signal arrived (SIGINT, SIGTERM, SIGHUP)
  spawn_failed,    // a child could not be started (not found, ...)
  cleanup_failed,  // a child's tree could not be confirmed gone
};

// One thing the supervisor did, in order. format_event() turns it into the
// seed's stderr line; library code never prints.
struct SuperviseEvent {
  enum class Kind { started, exited, restarting, giving_up, exiting };
  Kind kind = Kind::started;
  Engine engine = Engine::pidfd;
  pid_t pid = 0;             // started, exited
  int pidfd = -1;            // started (pidfd engine): the real fd number
  sys::ExitStatus status;    // exited
  int restart = 0;           // restarting: I of I/N
  int max_restarts = 0;      // restarting, giving_up: N
  SuperviseEnd end = SuperviseEnd::timeout;  // exiting: timeout or signal
};

// "pmon: engine=pidfd child=N pidfd=N", "pmon: child=N exited status=N",
// "pmon: child=N killed signal=N", "pmon: restart I/N",
// "pmon: giving up after N restarts", "pmon: exiting (timeout|signal)";
// without the newline.
std::string format_event(const SuperviseEvent& e);

struct SuperviseOptions {
  // Each child: its command, limits (set on every child's boundary) and
  // stop plan; its timeout is the supervision's (below), not its own.
  CallSpec call;
  Engine engine = Engine::pidfd;
  int max_restarts = 3;
  std::optional<Nanos> timeout;  // bounds the whole supervision
  Nanos restart_delay{0};        // interruptible by the deadline and signals
  // A signalfd the caller owns, with SIGCHLD and the stop signals blocked
  // and routed to it (required). SIGCHLD means "reap"; SIGINT, SIGTERM and
  // SIGHUP stop supervision; a second one skips the grace period.
  int signal_fd = -1;
  std::function<void(const SuperviseEvent&)> on_event;
  // Once each child's tree is stopped, before any restart: what else was
  // the child's to stop (the CLI: the jobs a service started for it),
  // stopped; false when it could not be confirmed gone (cleanup_failed).
  std::function<bool()> after_child;
  // Progress lines for -v.
  std::function<void(const std::string&)> trace;
};

struct SuperviseResult {
  SuperviseEnd end = SuperviseEnd::clean_exit;
  int restarts = 0;               // restarts performed
  int spawns = 0;
  std::optional<sys::ExitStatus> last_status;  // of the last child reaped
  int stop_signal = 0;            // for SuperviseEnd::signal
  std::optional<Error> spawn_error;
  std::string cleanup_error;      // one line, for cleanup_failed
  // Live processes below this one, outside a weak boundary, at the end.
  std::vector<sys::ProcStat> escaped;

  // pmon's exit status: 0 after a clean exit, 1 after giving up, 124 on
  // the deadline, 128+N on signal N, the spawn error's code (126, 127, 125),
  // 125 when a tree could not be confirmed gone.
  int status() const noexcept;
};

// Runs the restart loop until one of the SuperviseEnd conditions. The
// caller should be a child subreaper so orphans of a tree come back to it
// and are reaped.
SuperviseResult supervise(Backend& backend, const SuperviseOptions& opts);

}  // namespace pmon
