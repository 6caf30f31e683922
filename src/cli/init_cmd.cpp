// SPDX-License-Identifier: Apache-2.0
// pmon init [options] -- CMD [ARG...]
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/cli.h"
#include "cli/call_flags.h"
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

  std::string forward_s = "tree", confine_s = "auto", pdeathsig_s = "none";
  StopFlags stop;
  bool wait_all = false, quiet = false;
  int verbose = 0;
  app.add_option("--forward", forward_s,
                 "where signals sent to pmon go: child (CMD only), group (CMD's process group) or tree (every "
                 "process CMD started; default)")
      ->type_name("MODE");
  stop.add_to(app, /*with_signal=*/false);
  app.add_flag("--wait-all", wait_all, "when CMD exits, wait for everything it left instead of stopping it");
  app.add_option("--confine", confine_s, "when not PID 1: auto, cgroup, subreaper or pgroup (default auto)")
      ->type_name("BACKEND");
  app.add_option("--pdeathsig", pdeathsig_s, "a signal CMD gets if pmon init dies, or none (the default)")
      ->type_name("SIGNAL");
  LimitFlags limits;
  limits.add_to(app, /*default_pids=*/false);
  app.add_flag("-v,--verbose", verbose, "say what pmon does, on stderr");
  app.add_flag("-q,--quiet", quiet, "print nothing of pmon's own but errors");

  auto parsed = parse_command_line(app, args, "init");
  if (!parsed) return 0;
  std::vector<std::string> command = std::move(*parsed);
  const std::string forward_from = from_env(app, "--forward", "PMON_INIT_FORWARD", forward_s);
  const std::string grace_from = from_env(app, "--grace", "PMON_INIT_GRACE", stop.grace);
  const std::string confine_from = from_env(app, "--confine", "PMON_INIT_CONFINE", confine_s);
  const std::string pdeathsig_from = from_env(app, "--pdeathsig", "PMON_INIT_PDEATHSIG", pdeathsig_s);
  if (app.count("--wait-all") == 0)
    if (const char* v = env_value("PMON_INIT_WAIT_ALL")) {
      if (std::string(v) != "0" && std::string(v) != "1")
        die("init: PMON_INIT_WAIT_ALL: '" + std::string(v) + "' is neither 0 nor 1");
      wait_all = std::string(v) == "1";
    }
  if (app.count("--verbose") == 0 && app.count("--quiet") == 0)
    if (const char* v = env_value("PMON_INIT_VERBOSITY")) {
      std::string level = v;
      if (level != "0" && level != "1" && level != "2")
        die("init: PMON_INIT_VERBOSITY: '" + level + "' is not 0, 1 or 2");
      quiet = level == "0";
      verbose = level == "2" ? 1 : 0;
    }

  InitOptions opts;
  opts.call.spawn.argv = command;
  auto fwd = parse_forward_mode(forward_s);
  if (!fwd) die("init: " + forward_from + ": unknown mode '" + forward_s + "' (use child, group or tree)");
  opts.forward = *fwd;
  opts.call.stop = stop.parse("init", grace_from);
  opts.call.wait_tree = wait_all;
  const Limits call_limits = limits.parse("init");
  if (pdeathsig_s != "none") {
    auto pd = parse_signal(pdeathsig_s);
    if (!pd) die("init: " + pdeathsig_from + ": '" + pdeathsig_s + "' is not a signal (use e.g. TERM, KILL, 9, or none)");
    opts.call.spawn.pdeathsig = *pd;
  }
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

  // Every signal but the fault ones is blocked and read from a signalfd. As
  // PID 1 the kernel drops a signal whose action is the default, so each
  // also gets a handler; it never runs while the signal is blocked, and the
  // command gets every disposition reset before exec.
  sigset_t set;
  if (!sys::block_init_signals(&set)) die(std::string("sigprocmask: ") + std::strerror(errno));
  Fd sigfd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd) die(std::string("signalfd: ") + std::strerror(errno));
  opts.signal_fd = sigfd.get();

  sys::Reaper reaper;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Boundary> boundary;
  if (pid1 && !req.kind) {
    boundary = make_pid1_boundary([&reaper] { reaper.reap_all(); });
    if (verbose) std::fprintf(stderr, "pmon: init: PID 1 of its namespace: everything in it is the command's\n");
  } else {
    // Orphans of the command come to us, whatever the backend, to be reaped.
    if (!pid1 && ::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL) != 0)
      die(std::string("prctl(PR_SET_CHILD_SUBREAPER): ") + std::strerror(errno));
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
  if (call_limits.any())
    if (auto set = boundary->set_limits(call_limits); !set) {
      boundary->release(boundary->empty().value_or(false));
      die(render(set.error()));
    }

  opts.warn = [](const std::string& line) { std::fprintf(stderr, "pmon: warning: %s\n", line.c_str()); };
  if (verbose) opts.trace = [](const std::string& line) { std::fprintf(stderr, "pmon: %s\n", line.c_str()); };

  // The call releases the boundary once it is over (or could not start).
  auto res = run_init(std::move(boundary), reaper, opts);
  if (!res) {
    std::fprintf(stderr, "pmon: %s\n", render(res.error()).c_str());
    return exit_status(res.error());
  }
  if (verbose)
    std::fprintf(stderr, "pmon: init: reaped %s; %s left running %s %s\n",
                 count_of(res->reaped, "process", "processes").c_str(),
                 res->leftovers ? count_of(*res->leftovers, "process", "processes").c_str()
                                : "an unknown number of processes (pmon cannot count them under this /proc)",
                 res->leftovers == 1 ? "was" : "were", wait_all ? "waited for" : "stopped");
  return res->status();
}

}  // namespace pmon::cli
