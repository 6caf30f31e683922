// SPDX-License-Identifier: Apache-2.0
// The options every subcommand that starts calls shares, each declared once
// and added to each: how the processes are held together (--confine,
// --cgroup-root, --isolate), what a call may use (--memory-max, --pids-max,
// --cpu-max), and how it is stopped (--grace, --signal).
#pragma once

#include <string>

#include "confine/boundary.h"
#include "core/session_config.h"
#include "core/stop.h"

namespace CLI {
class App;
class Option;
}

namespace pmon::serve {
struct ServeOptions;
}

namespace pmon::cli {

struct ConfineFlags {
  std::string confine = "auto";
  std::string cgroup_root;
  bool isolate = false;
  // The session the calls belong to, and its envelope (confine/session.h):
  // a service is one session (its own); pmon run is in one when it is
  // named (--session, PMON_SESSION) or given an envelope; pmon-shell's
  // calls share their harness's (the process that started pmon-shell).
  enum class SessionUse { none, service, run, shell };
  SessionUse session_use = SessionUse::none;
  EnvelopeAsk envelope;
  std::string session_name;

  // with_isolate: false for a subcommand that offers no --isolate.
  void add_to(CLI::App& app, bool with_isolate = true);
  // The --session-* flags (and, for run, --session NAME).
  void add_session_to(CLI::App& app, SessionUse use);
  // The backend they ask for; bad flags or an unavailable backend end with
  // die(), naming the subcommand. Says on stderr why stronger backends were
  // passed over as report_passed_over() does.
  Selection select(const std::string& sub, bool verbose, bool quiet) const;
  // The same, but an unavailable backend is returned (for a caller that
  // reports it), not fatal, and nothing is said of what was passed over;
  // bad flags still end with die().
  std::expected<Selection, Error> try_select(const std::string& sub) const;
  // The backend asked for (auto: cgroup), for a report of a call that
  // could not start.
  ConfineKind tried() const;
};

// The limits of each call (--memory-max, --memory-high, --pids-max, --cpu-max), shared the
// same way: set on the call's cgroup leaf, failing closed where they cannot be.
struct LimitFlags {
  std::string memory_max, memory_high, pids_max, cpu_max;

  // default_pids: the call gets pmon's default pids limit when it asks none;
  // what: the help's word for what is limited ("call", "job").
  void add_to(CLI::App& app, bool default_pids = true, const std::string& what = "call");
  // What they ask for; a bad value ends with die(), naming the subcommand.
  Limits parse(const std::string& sub) const;

 private:
  CLI::Option* memory_opt_ = nullptr;
  CLI::Option* high_opt_ = nullptr;
  CLI::Option* pids_opt_ = nullptr;
  CLI::Option* cpu_opt_ = nullptr;
};

// How a call is stopped: --grace (between the first signal and SIGKILL),
// and --signal (the first signal) where a subcommand lets one be chosen.
struct StopFlags {
  std::string grace = "2s";
  std::string signal = "TERM";

  void add_to(CLI::App& app, bool with_signal);
  // The plan they ask for; a bad value ends with die(), naming the
  // subcommand and `grace_from` (the flag, or the variable it came from).
  StopPlan parse(const std::string& sub, const std::string& grace_from = "--grace") const;
};

// What the job services share (serve, mcp, sandboxd): the confinement, how
// many jobs, the grace, the memory budget, the spool limit.
struct JobFlags {
  StopFlags stop;
  size_t max_jobs = 1024;
  std::string memory_budget = "256M";
  std::string spool_limit = "64M";
  ConfineFlags confine;

  void add_to(CLI::App& app);
  // After parsing: bad values end with die(), naming `sub`; the backend
  // chosen (kept by the caller while the service runs) and `opts` filled.
  // Where the subreaper backend is what there is, each job runs under a
  // pmon of its own, `own_pmon` (a path to exec); without one that backend
  // is refused.
  Selection apply(const std::string& sub, bool quiet, serve::ServeOptions& opts,
                  const std::string& own_pmon = "/proc/self/exe") const;
};

}  // namespace pmon::cli
