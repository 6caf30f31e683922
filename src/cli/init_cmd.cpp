// SPDX-License-Identifier: Apache-2.0
// pmon init [options] -- CMD [ARG...]
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/cli.h"
#include "cli/call_flags.h"
#include "cli/call_host.h"
#include "confine/boundary.h"
#include "confine/pid1.h"
#include "core/init.h"
#include "core/units.h"
#include "sys/fd.h"

namespace pmon::cli {

namespace {

constexpr const char* kInitFooter = R"(
As PID 1 of a PID namespace (a container, 'unshare --pid --fork') pmon init
reaps for the whole namespace, and everything in it counts as CMD's; otherwise
it makes itself a subreaper (orphans of CMD's processes come to it, not to the
system's init) and holds CMD's processes with the strongest BACKEND. Either
way it reaps every process that exits below it, and forwards every signal it
can catch (not KILL or STOP, nor the fault signals). When CMD exits,
whatever it left running is stopped (TERM, --grace, KILL, confirmed gone)
unless --wait-all is given.

Exit status:
  the command's own exit code when it exited
  128+N  the command died by signal N
  125    pmon itself failed: bad option, confinement unavailable, or what
         the command left behind could not be confirmed gone
  126    the command was found but could not be executed
  127    the command was not found

As a container's init: 'pmon -- CMD [ARG...]' is 'pmon init -- CMD [ARG...]',
the form 'docker run --init' and 'podman run --init' pass their init (options
may come before the --: 'pmon -v -- CMD'). The environment sets what an
option would (an option given wins):
  PMON_INIT_FORWARD=child|group|tree   --forward
  PMON_INIT_GRACE=DURATION             --grace
  PMON_INIT_WAIT_ALL=1                 --wait-all (0 or 1)
  PMON_INIT_CONFINE=BACKEND            --confine
  PMON_INIT_PDEATHSIG=SIGNAL           --pdeathsig
  PMON_INIT_VERBOSITY=0|1|2            0 is --quiet, 1 the default, 2 --verbose
Coming from tini: TINI_SUBREAPER needs no counterpart (pmon init is a
subreaper whenever it is not PID 1); TINI_KILL_PROCESS_GROUP is
PMON_INIT_FORWARD=group, though the default, tree, reaches the group and
every daemon that left it; TINI_VERBOSITY=0 is PMON_INIT_VERBOSITY=0.
pmon does not read the TINI_ variables.

Values:
)";

const char* env_value(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// An option not given on the command line takes its PMON_INIT_* variable, if
// set. Returns what to name when the value is bad: the option or the variable.
std::string from_env(const CLI::App& app, const char* option, const char* variable, std::string& value) {
  if (app.count(option) > 0) return option;
  const char* v = env_value(variable);
  if (v == nullptr) return option;
  value = v;
  return variable;
}

}  // namespace

int init_main(const std::vector<std::string>& args) {
  CLI::App app{"Run CMD as a container's first process (PID 1) or as a subreaper: reap every process, forward "
               "signals, leave nothing running.",
               "pmon init"};
  app.footer(std::string(kInitFooter) + kDurationWords + kSizeWords + kSignalWords + kBackendWords);
  app.prefix_command();

  std::string forward_s = "tree", confine_s = "auto";
  CallFlags flags;
  app.add_option("--forward", forward_s,
                 "where signals sent to pmon go: child (CMD only), group (CMD's process group) or tree (every "
                 "process CMD started; default)")
      ->type_name("MODE");
  flags.stop.add_to(app, /*with_signal=*/false);
  flags.add_wait_tree(app, "--wait-all", "when CMD exits, wait for everything it left instead of stopping it");
  app.add_option("--confine", confine_s, "when not PID 1: auto, cgroup, subreaper or pgroup (default auto)")
      ->type_name("BACKEND");
  flags.add_pdeathsig(app, "pmon init");
  flags.limits.add_to(app, /*default_pids=*/false);
  flags.add_verbosity(app, /*with_quiet=*/true);

  auto parsed = parse_command_line(app, args, "init");
  if (!parsed) return 0;
  const std::string forward_from = from_env(app, "--forward", "PMON_INIT_FORWARD", forward_s);
  const std::string grace_from = from_env(app, "--grace", "PMON_INIT_GRACE", flags.stop.grace);
  const std::string confine_from = from_env(app, "--confine", "PMON_INIT_CONFINE", confine_s);
  const std::string pdeathsig_from = from_env(app, "--pdeathsig", "PMON_INIT_PDEATHSIG", flags.pdeathsig);
  if (app.count("--wait-all") == 0)
    if (const char* v = env_value("PMON_INIT_WAIT_ALL")) {
      if (std::string(v) != "0" && std::string(v) != "1")
        die("init: PMON_INIT_WAIT_ALL: '" + std::string(v) + "' is neither 0 nor 1");
      flags.wait_tree = std::string(v) == "1";
    }
  if (app.count("--verbose") == 0 && app.count("--quiet") == 0)
    if (const char* v = env_value("PMON_INIT_VERBOSITY")) {
      std::string level = v;
      if (level != "0" && level != "1" && level != "2")
        die("init: PMON_INIT_VERBOSITY: '" + level + "' is not 0, 1 or 2");
      flags.quiet = level == "0";
      flags.verbose = level == "2" ? 1 : 0;
    }
  const int verbose = flags.verbose;
  const bool quiet = flags.quiet;

  InitOptions opts;
  auto fwd = parse_forward_mode(forward_s);
  if (!fwd) die("init: " + forward_from + ": unknown mode '" + forward_s + "' (use child, group or tree)");
  opts.forward = *fwd;
  // (a bad limit is told before a bad --pdeathsig, as it always was)
  (void)flags.stop.parse("init", grace_from);
  (void)flags.limits.parse("init");
  opts.call = flags.read("init", std::move(*parsed), grace_from, pdeathsig_from);
  ConfineRequest req;
  if (confine_s != "auto") {
    auto k = parse_confine_kind(confine_s);
    if (!k || *k == ConfineKind::pidns)
      die("init: " + confine_from + ": '" + confine_s + "' is not a backend init can use (use auto, cgroup, subreaper or pgroup)");
    req.kind = *k;
  }

  const bool pid1 = ::getpid() == 1;
  // The scan-based code reads /proc by pid: under a /proc of another PID
  // namespace every number would name somebody else.
  if ((!pid1 || req.kind) && !proc_matches_pid_ns())
    die("init: the /proc mounted here belongs to another PID namespace; mount this namespace's "
        "(e.g. unshare --pid --fork --mount-proc)" +
        std::string(pid1 ? ", or leave --confine at auto" : ""));

  // Every signal but the fault ones is blocked and read from the host's
  // signalfd; the command gets every disposition reset before exec.
  CallHost host(CallHost::Signals::all);
  opts.signal_fd = host.signal_fd();

  sys::Reaper reaper;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Boundary> boundary;
  if (pid1 && !req.kind) {
    boundary = make_pid1_boundary([&reaper] { reaper.reap_all(); });
    if (verbose) std::fprintf(stderr, "pmon: init: PID 1 of its namespace: everything in it is the command's\n");
  } else {
    // Orphans of the command come to us, whatever the backend, to be reaped.
    if (!pid1) host.become_subreaper(/*required=*/true);
    auto sel = select_backend(req);
    if (!sel) die("confinement unavailable: " + render(sel.error()));
    report_passed_over(*sel, verbose > 0, quiet);
    backend = std::move(sel->backend);
    if (verbose) std::fprintf(stderr, "pmon: confinement %s\n", backend->describe().c_str());
    auto b = backend->open_boundary();
    if (!b) die("cannot open a " + std::string(to_string(backend->kind())) + " boundary: " + b.error().message());
    boundary = std::move(*b);
  }
  // Set before the command starts; a limit that cannot be set fails closed.
  if (opts.call.limits.any())
    if (auto set = boundary->set_limits(opts.call.limits, LimitsFrom::call); !set) {
      boundary->release(boundary->empty().value_or(false));
      die(render(set.error()));
    }

  opts.warn = [](const std::string& line) { std::fprintf(stderr, "pmon: warning: %s\n", line.c_str()); };
  if (verbose) opts.trace = [](const std::string& line) { std::fprintf(stderr, "pmon: %s\n", line.c_str()); };

  // The call releases the boundary once it is over (or could not start).
  auto res = run_init(std::move(boundary), reaper, opts);
  // Jobs a service started for the command, outside its boundary: stopped
  // and confirmed gone, as pmon run does (none as PID 1 of a namespace: the
  // service records them for the pmon that made it).
  std::vector<Leftover> jobs_left;
  if (!CallHost::stop_recorded_jobs(jobs_left, verbose > 0) && res) res->cleanup_verified = false;
  if (!res) {
    std::fprintf(stderr, "pmon: %s\n", render(res.error()).c_str());
    return exit_status(res.error());
  }
  if (verbose)
    std::fprintf(stderr, "pmon: init: reaped %s; %s left running %s %s\n",
                 count_of(res->reaped, "process", "processes").c_str(),
                 res->leftovers ? count_of(*res->leftovers, "process", "processes").c_str()
                                : "an unknown number of processes (pmon cannot count them under this /proc)",
                 res->leftovers == 1 ? "was" : "were", opts.call.wait_tree ? "waited for" : "stopped");
  return res->status();
}

}  // namespace pmon::cli
