// SPDX-License-Identifier: Apache-2.0
// The options every subcommand that starts calls shares, each declared once
// and added to each: how the processes are held together (--confine,
// --cgroup-root, --isolate), what a call may use (--memory-max, --pids-max,
// --cpu-max), how it is stopped (--grace, --signal), and the rest of what
// the call is (CallFlags: --timeout, --wait-tree, --pdeathsig, -v, -q),
// read into the one description of a call (CallSpec).
#pragma once

#include <string>

#include <optional>
#include <vector>

#include "confine/boundary.h"
#include "core/call_options.h"
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

// -v and -q, declared here only; a subcommand whose -v or -q says more
// gives its own words.
void add_verbose_flag(CLI::App& app, int& verbose, const std::string& help = "say what pmon does, on stderr");
void add_quiet_flag(CLI::App& app, bool& quiet, const std::string& help = "print nothing of pmon's own but errors");

// What a call is, as the command line says it: each subcommand adds the
// flags it offers, where its help lists them, and read() turns what was
// given into the call (the flags not added keep their defaults).
struct CallFlags {
  std::string timeout;
  StopFlags stop;
  LimitFlags limits;
  bool wait_tree = false;
  std::string pdeathsig = "none";
  int verbose = 0;
  bool quiet = false;

  // --timeout: "stop WHAT and everything it started after DURATION" and
  // then `more`.
  void add_timeout(CLI::App& app, const std::string& what, const std::string& more = "");
  // --wait-tree, or the name and words a subcommand has for it (init's
  // --wait-all).
  void add_wait_tree(CLI::App& app, const std::string& name = "--wait-tree",
                     const std::string& help = "when CMD exits, wait for what it left running instead of stopping it");
  // --pdeathsig: "a signal CMD gets if WHO dies, or none (the default)".
  void add_pdeathsig(CLI::App& app, const std::string& who);
  // -v (with `verbose_help`) and, with_quiet, -q.
  void add_verbosity(CLI::App& app, bool with_quiet, const std::string& verbose_help = "say what pmon does, on stderr");

  // --timeout as given (nullopt: not given); a bad value ends with die().
  std::optional<Nanos> given_timeout(const std::string& sub) const;
  // The call: `command` with what the flags say (a --timeout of 0 is
  // none). Bad values end with die(), naming `sub`, and the flag or the
  // variable each value came from.
  CallSpec read(const std::string& sub, std::vector<std::string> command, const std::string& grace_from = "--grace",
                const std::string& pdeathsig_from = "--pdeathsig") const;

 private:
  CLI::Option* timeout_opt_ = nullptr;
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
