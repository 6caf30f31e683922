// SPDX-License-Identifier: Apache-2.0
// What a call ended with: the result every front end reports (the JSON
// report, the CLI's lines and exit status, serve's terminal/report, the
// Python and Node results).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confine/boundary.h"

namespace pmon {

// What became of a process the call left behind.
struct Fate {
  enum class Kind : uint8_t {
    unknown,    // not decided yet
    signalled,  // ended by the stop's first signal (`signal`)
    killed,     // ended by SIGKILL
    waited,     // ended by itself while the call waited for the tree
    survived,   // still there after the stop: a failure
  };
  Kind kind = Kind::unknown;
  int signal = 0;  // for signalled

  static Fate signalled_by(int sig) noexcept { return sig == SIGKILL ? Fate{Kind::killed, SIGKILL} : Fate{Kind::signalled, sig}; }
  static Fate killed() noexcept { return {Kind::killed, SIGKILL}; }
  static Fate waited() noexcept { return {Kind::waited, 0}; }
  static Fate survived() noexcept { return {Kind::survived, 0}; }
  bool decided() const noexcept { return kind != Kind::unknown; }
  bool operator==(const Fate&) const = default;
};

// The report's word for it: the signal's name ("SIGTERM", "SIGKILL"),
// "waited", "survived", or "" while undecided.
std::string to_string(const Fate& f);
// A report's word read back (a call's record of a job); unknown for any
// other word.
Fate fate_from_string(std::string_view s);

struct Leftover {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string cmdline;
  Fate fate;
};

// Why a call ended: its main process exited by itself (what it left is
// then stopped or waited for), its time ran out, or it was cancelled: by a
// signal to pmon, by the exit of the process that started pmon, or by the
// job service on a client's behalf (the rest, each named by who asked).
// The call's machine sets it once (RunResult::end); every front end's
// words for it come from one table (core/end_words.h).
enum class CallEnd : uint8_t {
  main_exited,
  timeout,
  idle_timeout,
  cancel,
  parent_exited,
  kill,               // a client stopped the job (terminal/kill, pmon stop)
  release,            // a client released it (terminal/release)
  replaced,           // a job started under its name with replace
  owner_ended,        // the pmon call it was started from ended
  not_ready,          // its readiness check timed out, with stopOnTimeout
  session_closed,     // session/close
  request_cancelled,  // the request that ran it was cancelled
  connection_closed,  // the client that owned it went away
  service_stopped,    // the service itself stopped
};
inline constexpr int kCallEnds = static_cast<int>(CallEnd::service_stopped) + 1;

// Why a stop began: what the stop found after the main process exited
// (leftovers; processes that escaped the boundary), or the call's end
// (RunResult::end), whose word the report gives.
enum class StopReason { none, leftovers, escaped, ended };

struct StopRecord {
  StopReason reason = StopReason::none;
  int first_signal = SIGTERM;
  std::optional<double> signal_sent_ms;  // since the call started
  std::optional<double> kill_sent_ms;
  std::optional<double> empty_confirmed_ms;
};

// not_started: the command never ran (confinement failed, not found, not
// executable); the report still says so.
enum class Outcome { exited, signaled, timeout, cancelled, not_started };
// The report's word for it (core/end_words.cpp, beside the ends' words).
std::string_view to_string(Outcome o) noexcept;

struct RunResult {
  std::vector<std::string> command;
  pid_t pid = 0;
  ConfineKind confinement = ConfineKind::cgroup;
  std::optional<std::string> cgroup;
  std::chrono::system_clock::time_point started_at;
  double duration_ms = 0;
  CallEnd end = CallEnd::main_exited;  // why it ended; outcome and timed_out follow from it
  Outcome outcome = Outcome::exited;
  std::optional<int> exit_code;   // when the main process exited
  std::optional<int> signal;      // when it died by a signal
  bool core_dumped = false;
  bool timed_out = false;
  int cancel_signal = 0;          // the signal that cancelled, if any
  std::vector<Leftover> leftovers;
  // Live descendants found outside the boundary once it was empty (a weak
  // boundary's setsid daemons, a call that moved itself out of its cgroup),
  // with what ended them; never one of `leftovers`.
  std::vector<Leftover> escaped;
  StopRecord stop;
  bool cleanup_verified = false;
  std::optional<uint64_t> cpu_usec;
  std::optional<uint64_t> memory_peak_bytes;
  Limits limits;  // what was asked for (and set, unless not_started)
  // Known where the matching limit was set: the kernel killed a process of
  // the call for memory (memory.events oom_kill), refused a fork at
  // pids.max (pids.events max).
  std::optional<bool> oom_killed;
  std::optional<bool> pids_max_hit;
  // Known where memory.high was set: the call went past it and was
  // throttled (memory.events high).
  std::optional<bool> memory_high_hit;
  // The default pids limit was not set, and why (the call ran without it).
  std::optional<Error> limits_note;
  // The call ran in a session (confine/session.h): its envelope, and what
  // the session and the call used, read from their cgroups as it ended.
  struct InSession {
    std::string name;    // "harness 1234", "name build-7", "pmon 99"
    std::string cgroup;  // the session's
    Envelope envelope;
    CgroupUsage session;
    CgroupUsage call;
  };
  std::optional<InSession> session;
  // Outcome::not_started: why (its status: 125 confinement, 126 not
  // executable, 127 not found).
  std::optional<Error> error;

  // The timeout(1)-compatible status: child's code, 128+N, 124, and 125
  // when the boundary could not be verified empty.
  int status() const noexcept;
};

// The result of a call whose command never ran: nothing of it is alive,
// nothing is known of an exit.
RunResult not_started(std::vector<std::string> command, ConfineKind confinement, const Error& err,
                      std::chrono::system_clock::time_point started_at);

// A process found outside the boundary (escaped) may be one the boundary
// held when the stop began and that left it since (pgroup: setsid during
// the stop): it stays in `leftovers`, with what finally ended it, and is
// dropped from `escaped`. Same process: same pid and start time.
void merge_escaped(std::vector<Leftover>& leftovers, std::vector<Leftover>& escaped);

}  // namespace pmon
