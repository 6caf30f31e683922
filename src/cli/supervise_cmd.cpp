// SPDX-License-Identifier: Apache-2.0
// pmon supervise [options] -- CMD [ARG...]: the restart supervisor of seed
// 004 (DESIGN.md section 3).
// Its stderr lines are a contract (byte for byte); anything else is -v.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "cli/cli.h"
#include "cli/call_flags.h"
#include "cli/call_host.h"
#include "confine/boundary.h"
#include "core/supervise.h"
#include "core/units.h"
#include "sys/fd.h"
#include "sys/proc.h"

namespace pmon::cli {

namespace {

constexpr const char* kSuperviseFooter = R"(
Policy: a clean exit 0 ends supervision; any other end (an exit status, or
death by a signal) burns one restart; once --max-restarts are spent pmon
gives up. Before each restart, whatever the previous child left running is
stopped (TERM, --grace, KILL) and confirmed gone. --timeout-ms bounds the
whole supervision; on the deadline, or on SIGINT/SIGTERM/SIGHUP, the current
child's whole tree is stopped (a second signal skips the grace period).

Lines on stderr:
  pmon: engine=pidfd child=N pidfd=N    (sigchld: pmon: engine=sigchld child=N)
  pmon: child=N exited status=N         pmon: child=N killed signal=N
  pmon: restart I/N                     pmon: giving up after N restarts
  pmon: exiting (timeout)               pmon: exiting (signal)

Exit status:
  0      a child exited 0 (supervision ended cleanly)
  1      gave up: the restart budget was spent
  124    --timeout-ms passed (the current child's tree was stopped)
  128+N  pmon received signal N (the current child's tree was stopped)
  125    pmon itself failed: bad option, confinement unavailable, or a
         child's tree could not be confirmed gone
  126    the command was found but could not be executed
  127    the command was not found

Values:
)";

// A whole number option, 0..max; "what" names its unit for the message.
int64_t whole_number(const std::string& name, const std::string& text, int64_t max, const std::string& what,
                     const std::string& example) {
  const std::string quoted = "'" + text + "'";
  const bool minus = !text.empty() && text[0] == '-';
  const std::string digits = minus ? text.substr(1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
    die("supervise: " + name + ": " + quoted + " is not a whole number" + what + " (e.g. " + example + ")");
  if (minus) die("supervise: " + name + ": " + quoted + " must not be negative");
  const size_t first = std::min(digits.find_first_not_of('0'), digits.size());
  const std::string limit = std::to_string(max);
  const std::string_view sig(digits.data() + first, digits.size() - first);
  if (sig.size() > limit.size() || (sig.size() == limit.size() && sig > limit))
    die("supervise: " + name + ": " + quoted + " is too " + (what.empty() ? "large (at most " + limit + ")"
                                                                           : "long (at most " + limit + " ms)"));
  return sig.empty() ? 0 : std::stoll(std::string(sig));
}

std::string list_procs(const std::vector<sys::ProcStat>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 5; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i].pid) + " (" + sys::read_cmdline(v[i].pid).substr(0, 60) + ")";
  }
  if (v.size() > 5) s += ", ...";
  return s;
}

}  // namespace

int supervise_main(const std::vector<std::string>& args) {
  CLI::App app{"Run CMD and restart it when it fails; before each restart, whatever the last run started is stopped.",
               "pmon supervise"};
  app.footer(std::string(kSuperviseFooter) + kDurationWords + kSizeWords + kBackendWords);
  app.prefix_command();

  std::string engine_s = "pidfd";
  CallFlags flags;
  ConfineFlags confine;
  std::string max_restarts_s = "3", timeout_ms_s = "0", delay_ms_s = "0";
  app.add_option("--engine", engine_s, "how pmon waits for the child: pidfd or sigchld (default pidfd; the lines "
                 "printed are the same)")
      ->type_name("ENGINE");
  app.add_option("--max-restarts", max_restarts_s, "restarts before giving up (default 3)")->type_name("N");
  app.add_option("--timeout-ms", timeout_ms_s, "end the whole supervision after N milliseconds (default 0: never)")
      ->type_name("N");
  app.add_option("--restart-delay-ms", delay_ms_s, "wait N milliseconds before each restart (default 0)")->type_name("N");
  flags.stop.add_to(app, /*with_signal=*/false);
  confine.add_to(app, /*with_isolate=*/false);
  flags.limits.add_to(app);
  flags.add_verbosity(app, /*with_quiet=*/false, "say more of what pmon does, on stderr");

  auto parsed = parse_command_line(app, args, "supervise");
  if (!parsed) return 0;
  const int verbose = flags.verbose;

  SuperviseOptions opts;
  auto engine = parse_engine(engine_s);
  if (!engine) die("supervise: --engine: unknown engine '" + engine_s + "' (use pidfd or sigchld)");
  opts.engine = *engine;
  // Milliseconds up to pmon's longest duration (about 31 years).
  const int64_t max_ms = std::chrono::duration_cast<std::chrono::milliseconds>(kMaxDuration).count();
  opts.max_restarts =
      static_cast<int>(whole_number("--max-restarts", max_restarts_s, 1'000'000'000, "", "3"));
  const int64_t timeout_ms = whole_number("--timeout-ms", timeout_ms_s, max_ms, " of milliseconds", "1500");
  if (timeout_ms > 0) opts.timeout = std::chrono::milliseconds(timeout_ms);  // 0: none
  opts.restart_delay =
      std::chrono::milliseconds(whole_number("--restart-delay-ms", delay_ms_s, max_ms, " of milliseconds", "500"));
  opts.call = flags.read("supervise", std::move(*parsed));

  // SIGCHLD and the stop signals arrive as data on the host's signalfd;
  // spawn resets the child's mask, so a supervised command stays stoppable.
  CallHost host;

  // A reader that goes away must not kill pmon with SIGPIPE mid-supervision
  // (the tree would be left running); children get SIG_DFL back at spawn.
  (void)::signal(SIGPIPE, SIG_IGN);

  // Orphans of every child's tree come back to us and are reaped.
  host.become_subreaper();

  auto sel = confine.try_select("supervise");
  if (!sel) die("confinement unavailable: " + render(sel.error()));
  // Only the contract's lines without -v: no fallback warning either.
  report_passed_over(*sel, verbose > 0, /*quiet=*/true);
  if (verbose) {
    std::fprintf(stderr, "pmon: confinement %s\n", sel->backend->describe().c_str());
    opts.trace = [](const std::string& line) { std::fprintf(stderr, "pmon: %s\n", line.c_str()); };
  }
  opts.signal_fd = host.signal_fd();
  // One fprintf is one write(2) on unbuffered stderr: lines never interleave.
  opts.on_event = [](const SuperviseEvent& e) { std::fprintf(stderr, "%s\n", format_event(e).c_str()); };

  // Jobs a service started for a child, outside its boundary: stopped and
  // confirmed gone with the rest of its tree, before any restart, as pmon
  // run does with its call's.
  opts.after_child = [verbose] {
    std::vector<Leftover> jobs_left;
    return CallHost::stop_recorded_jobs(jobs_left, verbose > 0);
  };

  SuperviseResult res = supervise(*sel->backend, opts);
  if (res.end == SuperviseEnd::spawn_failed && res.spawn_error)
    std::fprintf(stderr, "pmon: %s\n", render(*res.spawn_error).c_str());
  if (res.end == SuperviseEnd::cleanup_failed)
    std::fprintf(stderr, "pmon: %s\n", res.cleanup_error.c_str());
  if (!res.escaped.empty())
    std::fprintf(stderr, "pmon: warning: %s got out of the %s backend's hold and %s still running: %s\n",
                 count_of(res.escaped.size(), "process", "processes").c_str(),
                 std::string(to_string(sel->backend->kind())).c_str(), res.escaped.size() == 1 ? "is" : "are",
                 list_procs(res.escaped).c_str());
  return res.status();
}

}  // namespace pmon::cli
