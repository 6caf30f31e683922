// SPDX-License-Identifier: Apache-2.0
// pmon run [options] -- CMD [ARG...]
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "cli/cli.h"
#include "cli/call_flags.h"
#include "cli/call_host.h"
#include "cli/pty_relay.h"
#include "confine/boundary.h"
#include "core/report.h"
#include "core/run.h"
#include "core/units.h"
#include "serve/harness.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace pmon::cli {

void die(const std::string& line) {
  std::fprintf(stderr, "pmon: %s\n", line.c_str());
  std::exit(125);
}

namespace {

constexpr const char* kRunFooter = R"(
When CMD exits, whatever it started that still runs is stopped (SIGNAL, then
SIGKILL after --grace) and confirmed gone, unless --wait-tree is given; either
way the report lists it. SIGTERM, SIGINT or SIGHUP to pmon stop the whole
tree before pmon exits; a second one skips the grace period. With
--die-with-parent (or PMON_DIE_WITH_PARENT=1 in the environment), the exit
or death of the program that started pmon does the same.

Exit status (as coreutils timeout):
  the command's own exit code when it exited
  128+N  the command died by signal N, or pmon was cancelled by signal N
  129    --die-with-parent: the program that started pmon exited
  141    pmon-shell: the reader of its output quit (as SIGPIPE would)
  124    --timeout fired (the whole tree was stopped)
  125    pmon itself failed: bad option, confinement unavailable, or the
         tree could not be confirmed gone
  126    the command was found but could not be executed
  127    the command was not found

Values:
)";

// How the stop ended the leftovers: "", ", with SIGKILL" (the one), ", all
// with SIGKILL", ", 1 of them with SIGKILL".
std::string kill_note(const std::vector<Leftover>& v) {
  size_t kill = std::count_if(v.begin(), v.end(), [](const Leftover& l) { return l.fate.kind == Fate::Kind::killed; });
  if (kill == 0) return "";
  if (kill == v.size()) return v.size() == 1 ? ", with SIGKILL" : ", all with SIGKILL";
  return ", " + std::to_string(kill) + " of them with SIGKILL";
}

std::string list_procs(const std::vector<Leftover>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 5; ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i].pid) + " (" + v[i].cmdline.substr(0, 60) + ")";
  }
  if (v.size() > 5) s += ", ...";
  return s;
}

// A report that cannot be written is a bad option: say so before the
// command runs, not after its side effects (and 125 at the end).
void check_report_path(const std::string& path) {
  if (path.empty() || path == "-") return;
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) die("run: --report: '" + path + "' is a directory");
  if (::access(dir.c_str(), W_OK) != 0)
    die("run: --report: cannot write the report to " + path + ": " + std::strerror(errno));
}

// --report: to FILE (atomically), to stdout (-), or nowhere (""); false
// when it could not be written (said on stderr).
bool write_report(const std::string& path, const RunResult& r, const ReportContext& ctx) {
  if (path.empty()) return true;
  std::string text = report_json(r, ctx);
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return true;
  }
  if (auto w = write_atomically(path, text); !w) {
    std::fprintf(stderr, "pmon: cannot write the report to %s: %s\n", path.c_str(), w.error().message().c_str());
    return false;
  }
  return true;
}

// pmon-shell: a harness that wraps each command in a shell of its own is
// not pmon's parent, and that shell may outlive it; but the pipe (or
// terminal) the output goes back through ends with the harness. Its fd, or
// -1 when stdout is neither.
int output_reader_fd() {
  struct stat out {};
  if (::fstat(STDOUT_FILENO, &out) == 0 && (S_ISFIFO(out.st_mode) || S_ISSOCK(out.st_mode) || ::isatty(STDOUT_FILENO)))
    return STDOUT_FILENO;
  return -1;
}

// The lines on stderr that say how the call ended (pmon-shell's fewer),
// `timeout_text` being --timeout as given.
void say_how_it_ended(const RunResult& res, bool shell, bool quiet, bool wait_tree, const std::string& timeout_text) {
  const bool parent_exited = res.end == CallEnd::parent_exited;
  // What the command left running and was stopped; what got out of the
  // backend's hold (found below pmon, and stopped or waited for).
  const std::vector<Leftover>& left = res.leftovers;
  auto say_left = [&] {
    std::fprintf(stderr, "pmon: the command exited and left %s running; stopped %s%s\n",
                 count_of(left.size(), "process", "processes").c_str(), left.size() == 1 ? "it" : "them",
                 kill_note(left).c_str());
  };
  auto say_escaped = [&] {
    if (res.escaped.empty()) return;
    std::fprintf(stderr, "pmon: warning: %s got out of the %s backend's hold; found below pmon, %s %s: %s\n",
                 count_of(res.escaped.size(), "process", "processes").c_str(),
                 std::string(to_string(res.confinement)).c_str(),
                 !res.cleanup_verified ? "tried to stop" : wait_tree ? "waited for" : "stopped",
                 res.escaped.size() == 1 ? "it" : "them", list_procs(res.escaped).c_str());
  };
  // pmon-shell tells only what the line left running (and what got out).
  if (shell && !quiet) {
    if (!left.empty() && !wait_tree && !parent_exited && res.outcome != Outcome::cancelled) say_left();
    say_escaped();
  } else if (!quiet) {
    const std::string others = left.empty()      ? ""
                               : left.size() == 1 ? " and the process it started"
                                                  : " and the " + std::to_string(left.size()) + " processes it started";
    if (res.timed_out)
      std::fprintf(stderr, "pmon: timed out after %s; stopped the command%s%s\n", timeout_text.c_str(), others.c_str(),
                   kill_note(left).c_str());
    else if (parent_exited)
      std::fprintf(stderr, "pmon: the program that started pmon exited; stopped the tree\n");
    else if (res.outcome == Outcome::cancelled)
      std::fprintf(stderr, "pmon: cancelled by %s; stopped the tree\n", signal_name(res.cancel_signal).c_str());
    else if (!left.empty() && !wait_tree)
      say_left();
    say_escaped();
  }
  if (!res.cleanup_verified) {
    std::vector<Leftover> survivors;
    for (const std::vector<Leftover>* v : {&res.leftovers, &res.escaped})
      for (const Leftover& l : *v)
        if (l.fate.kind == Fate::Kind::survived) survivors.push_back(l);
    std::fprintf(stderr, "pmon: could not confirm the tree is gone%s%s\n",
                 survivors.empty() ? "" : "; still running: ", list_procs(survivors).c_str());
  }
}

// The common line, "[--confine BACKEND] [-q] [--die-with-parent] -- CMD
// [ARG...]", read without building the option table (a few dozen options,
// each with its help text: a tenth of a millisecond of every start). Each
// option at most once and CMD not starting with '-': whatever else, even
// what means the same, goes through the table, which says what is wrong
// and answers --help. Sets what the table would set; false: not such a line
// (nothing set).
bool read_plain_line(const std::vector<std::string>& args, ConfineFlags& confine, bool& quiet,
                     bool& die_with_parent, std::vector<std::string>& command) {
  std::string_view backend;
  bool q = false, dwp = false;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string_view a = args[i];
    if (a == "-q" || a == "--quiet") {
      if (q) return false;
      q = true;
    } else if (a == "--die-with-parent") {
      if (dwp) return false;
      dwp = true;
    } else if (a == "--confine" || a.starts_with("--confine=")) {
      if (!backend.empty()) return false;
      if (a == "--confine") {
        if (++i == args.size()) return false;
        backend = args[i];
      } else {
        backend = a.substr(std::string_view("--confine=").size());
      }
      // A name the table would refuse goes to the table, which says so.
      if (backend != "auto" && !parse_confine_kind(backend)) return false;
    } else {
      return false;
    }
  }
  if (i + 1 >= args.size() || (args[i + 1].size() > 1 && args[i + 1][0] == '-')) return false;
  if (!backend.empty()) confine.confine = std::string(backend);
  quiet = q;
  die_with_parent = dwp;
  command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  return true;
}

}  // namespace

int run_main(const std::vector<std::string>& args, const RunFront& front) {
  // The parent as pmon started: the one --die-with-parent watches.
  const pid_t ppid = ::getppid();
  std::string report_path;
  CallFlags flags;
  ConfineFlags confine;
  bool pty = false;
  bool die_with_parent = false;
  std::vector<std::string> command;
  // The option table is built only for a line the plain reading below does
  // not take: the flags' read() looks at its options, so it lives on.
  std::optional<CLI::App> table;
  if (!read_plain_line(args, confine, flags.quiet, die_with_parent, command)) {
    CLI::App& app = table.emplace("Run CMD so that nothing it starts outlives it.", "pmon run");
    app.footer(std::string(kRunFooter) + kDurationWords + kSizeWords + kSignalWords + kBackendWords);
    app.prefix_command();
    flags.add_timeout(app, "CMD", " (exit 124); 0: no timeout");
    flags.stop.add_to(app, /*with_signal=*/true);
    confine.add_to(app);
    confine.add_session_to(app, front.shell ? ConfineFlags::SessionUse::shell : ConfineFlags::SessionUse::run);
    flags.limits.add_to(app);
    flags.add_wait_tree(app);
    app.add_flag("--pty", pty,
                 "run CMD on a new pseudo-terminal (its controlling terminal), sized like pmon's own or 24x80; "
                 "its output goes to pmon's stdout, pmon's stdin to it");
    app.add_option("--report", report_path, "write the JSON report to FILE (atomically), or - for stdout")
        ->type_name("FILE|-");
    flags.add_pdeathsig(app, "pmon itself");
    app.add_flag("--die-with-parent", die_with_parent,
                 "when the program that started pmon exits or is killed, stop CMD and everything it started "
                 "(the same as PMON_DIE_WITH_PARENT=1 in the environment)");
    flags.add_verbosity(app, /*with_quiet=*/true);

    auto parsed = parse_command_line(app, args, "run");
    if (!parsed) return 0;
    command = std::move(*parsed);
  } else {
    confine.session_use = front.shell ? ConfineFlags::SessionUse::shell : ConfineFlags::SessionUse::run;
  }
  const int verbose = flags.verbose;
  const bool quiet = flags.quiet;

  RunOptions opts;
  opts.call = flags.read("run", command);
  if (const char* env = std::getenv("PMON_DIE_WITH_PARENT")) {
    auto on = parse_switch(env);
    if (!on)
      die(std::string("run: PMON_DIE_WITH_PARENT: '") + env +
          "' is neither on (1, true, yes, on) nor off (0, false, no, off, or empty)");
    die_with_parent = die_with_parent || *on;
  }
  if (front.shell) die_with_parent = true;

  check_report_path(report_path);

  // Before the call is accepted: a parent gone already means no call.
  // Signals arrive as data on the host's signalfd; orphans of the call come
  // to it, whatever the backend, so they are reaped.
  CallHost host;
  if (die_with_parent) host.watch_parent(ppid, "run");
  host.become_subreaper();

  // From here on the call is accepted: whatever happens, the report says
  // what did (a command that never ran is "not_started").
  const auto started_at = std::chrono::system_clock::now();
  auto not_started_call = [&](ConfineKind kind, const Error& err, const ReportContext& ctx) {
    std::fprintf(stderr, "pmon: %s\n", render(err).c_str());
    RunResult r = not_started(command, kind, err, started_at);
    r.limits = opts.call.limits;
    if (!write_report(report_path, r, ctx)) return 125;
    return exit_status(err);
  };

  auto sel = confine.try_select("run");
  if (!sel)
    return not_started_call(confine.tried(), prefixed("confinement unavailable: ", std::move(sel.error())), {});
  report_passed_over(*sel, verbose > 0, quiet || front.shell);
  if (verbose) std::fprintf(stderr, "pmon: confinement %s\n", sel->backend->describe().c_str());

  BackendUse use;
  use.single_call = true;
  sel->backend->use(use);
  opts.signal_fd = host.signal_fd();
  opts.parent_fd = host.parent_fd();
  if (front.shell) opts.reader_fd = output_reader_fd();
  opts.own_all_children = true;
  opts.session_figures = !report_path.empty();
  // pmon run changes no disposition while the call runs (SIGPIPE is ignored
  // only after it): the child resets just those that are not SIG_DFL now,
  // what the caller ignored included, rather than each of the 64.
  const sigset_t changed = sys::non_default_dispositions();
  opts.call.spawn.changed_signals = &changed;
  if (verbose) opts.trace = [](const std::string& line) { std::fprintf(stderr, "pmon: %s\n", line.c_str()); };

  ReportContext ctx;
  ctx.passed_over = sel->passed_over;
  ctx.weak = sel->backend->kind() == ConfineKind::pgroup;

  std::unique_ptr<PtyRelay> relay;
  if (pty) {
    auto r = PtyRelay::start();
    if (!r)
      return not_started_call(sel->backend->kind(),
                              Error::failed(r.error().value(), "cannot open a pseudo-terminal: " + r.error().message()),
                              ctx);
    relay = std::move(*r);
    opts.call.spawn.pty_slave = relay->slave_fd();
  }
  auto res = run_call(*sel->backend, opts);
  // pmon run makes one call: once it is over and its tree verified gone,
  // the crash guard has nothing left to guard. Sent away now, it is gone by
  // the time we reap it, after the lines and the report below.
  if (CrashGuard* guard = sel->backend->guard(); guard && res && res->cleanup_verified) guard->dismiss();
  if (relay) relay->finish();  // the command's last output before any line of ours
  // Jobs a service started for this call that its boundary does not hold
  // (see jobs/call_records.h): stopped through their service now, with
  // the call, and listed with what the call left.
  if (res && !CallHost::stop_recorded_jobs(res->leftovers, verbose > 0)) res->cleanup_verified = false;
  if (!res) return not_started_call(sel->backend->kind(), res.error(), ctx);
  // The parent's end of our stderr may be gone with it: a line of ours
  // must not end pmon before its report is written.
  if (die_with_parent) ::signal(SIGPIPE, SIG_IGN);
  const bool parent_exited = res->end == CallEnd::parent_exited;
  // The output's reader quit while the program that started pmon lives
  // (`pmon-shell LINE | head -1`): the status a shell gives for the SIGPIPE
  // the next write would have met, not the hang-up of a parent that died.
  if (parent_exited && opts.reader_fd >= 0 && !host.parent_exited()) res->cancel_signal = SIGPIPE;

  say_how_it_ended(*res, front.shell, quiet, opts.call.wait_tree, flags.timeout);

  if (!write_report(report_path, *res, ctx)) return 125;
  return res->status();
}

}  // namespace pmon::cli
