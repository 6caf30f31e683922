// SPDX-License-Identifier: Apache-2.0
// pmon run [options] -- CMD [ARG...]
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
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
#include "cli/pty_relay.h"
#include "confine/boundary.h"
#include "core/report.h"
#include "core/run.h"
#include "core/units.h"
#include "jobs/call_records.h"
#include "serve/harness.h"
#include "serve/recorded_jobs.h"
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

// --die-with-parent: a pidfd of the process that started pmon (ppid, read
// as pmon started), which the driver polls with the rest of the call.
//
// Why a pidfd rather than PR_SET_PDEATHSIG: the parent-death signal is sent
// when the *thread* that forked pmon exits, so a harness that starts
// commands from a worker thread would stop a call that its process still
// waits for; a pidfd of the parent process becomes readable only once the
// whole process has exited. And it is identity-checked: the parent is named
// before, and getppid() asked after the pidfd is opened. If the parent died
// in between, pmon was reparented already and getppid() differs (the pidfd
// might name a stranger that got the number); if it still says ppid, the
// pidfd is of the parent. Kernels without pidfd_open (before 5.3) get the
// parent-death signal instead (SIGHUP, which cancels the call like one
// sent by hand), with the same check after it is armed.
//
// Returns the pidfd (or an empty Fd when the signal was armed); dies when
// the parent has already exited or cannot be watched.
Fd watch_parent(pid_t ppid) {
  if (ppid <= 0) die("run: --die-with-parent: the program that started pmon is outside its PID namespace; it cannot be watched");
  auto pfd = sys::pidfd_open(ppid);
  const int err = pfd ? 0 : pfd.error().value();
  if (err == ENOSYS) {
    if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(SIGHUP), 0UL, 0UL, 0UL) != 0)
      die(std::string("run: --die-with-parent: prctl: ") + std::strerror(errno));
  } else if (err != 0 && err != ESRCH) {
    die("run: --die-with-parent: cannot watch the parent process: " + pfd.error().message());
  }
  // ESRCH: the parent is gone already (and pmon was reparented first).
  if (::getppid() != ppid || err == ESRCH)
    die("run: --die-with-parent: the program that started pmon has already exited; the command was not started");
  return pfd ? std::move(*pfd) : Fd();
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
  std::string timeout_s, report_path;
  StopFlags stop;
  ConfineFlags confine;
  LimitFlags limits;
  bool wait_tree = false;
  int verbose = 0;
  bool quiet = false;
  bool pty = false;
  std::string pdeathsig_s = "none";
  bool die_with_parent = false;
  bool timeout_given = false;
  std::vector<std::string> command;
  // The option table is built only for a line the plain reading below does
  // not take: the limits' parse() looks at its options, so it lives on.
  std::optional<CLI::App> table;
  if (!read_plain_line(args, confine, quiet, die_with_parent, command)) {
    CLI::App& app = table.emplace("Run CMD so that nothing it starts outlives it.", "pmon run");
    app.footer(std::string(kRunFooter) + kDurationWords + kSizeWords + kSignalWords + kBackendWords);
    app.prefix_command();
    CLI::Option* timeout_opt =
        app.add_option("--timeout", timeout_s, "stop CMD and everything it started after DURATION (exit 124); 0: no timeout")
            ->type_name("DURATION");
    stop.add_to(app, /*with_signal=*/true);
    confine.add_to(app);
    confine.add_session_to(app, front.shell ? ConfineFlags::SessionUse::shell : ConfineFlags::SessionUse::run);
    limits.add_to(app);
    app.add_flag("--wait-tree", wait_tree, "when CMD exits, wait for what it left running instead of stopping it");
    app.add_flag("--pty", pty,
                 "run CMD on a new pseudo-terminal (its controlling terminal), sized like pmon's own or 24x80; "
                 "its output goes to pmon's stdout, pmon's stdin to it");
    app.add_option("--report", report_path, "write the JSON report to FILE (atomically), or - for stdout")
        ->type_name("FILE|-");
    app.add_option("--pdeathsig", pdeathsig_s,
                   "a signal CMD gets if pmon itself dies, or none (the default)")
        ->type_name("SIGNAL");
    app.add_flag("--die-with-parent", die_with_parent,
                 "when the program that started pmon exits or is killed, stop CMD and everything it started "
                 "(the same as PMON_DIE_WITH_PARENT=1 in the environment)");
    app.add_flag("-v,--verbose", verbose, "say what pmon does, on stderr");
    app.add_flag("-q,--quiet", quiet, "print nothing of pmon's own but errors");

    auto parsed = parse_command_line(app, args, "run");
    if (!parsed) return 0;
    command = std::move(*parsed);
    timeout_given = timeout_opt->count() > 0;
  } else {
    confine.session_use = front.shell ? ConfineFlags::SessionUse::shell : ConfineFlags::SessionUse::run;
  }

  RunOptions opts;
  opts.call.spawn.argv = command;
  if (timeout_given) {
    auto d = parse_duration(timeout_s);
    if (!d) die("run: --timeout: " + describe_duration_error(timeout_s, d.error()));
    if (d->count() > 0) opts.call.timeout = *d;  // 0: no timeout, as timeout(1)
  }
  opts.call.stop = stop.parse("run");
  if (pdeathsig_s != "none") {
    auto pd = parse_signal(pdeathsig_s);
    if (!pd) die("run: --pdeathsig: '" + pdeathsig_s + "' is not a signal (use e.g. TERM, KILL, 9, or none)");
    opts.call.spawn.pdeathsig = *pd;
  }
  opts.call.wait_tree = wait_tree;
  opts.call.limits = limits.parse("run");
  if (const char* env = std::getenv("PMON_DIE_WITH_PARENT")) {
    auto on = parse_switch(env);
    if (!on)
      die(std::string("run: PMON_DIE_WITH_PARENT: '") + env +
          "' is neither on (1, true, yes, on) nor off (0, false, no, off, or empty)");
    die_with_parent = die_with_parent || *on;
  }
  if (front.shell) die_with_parent = true;

  // A report that cannot be written is a bad option: say so before the
  // command runs, not after its side effects (and 125 at the end).
  if (!report_path.empty() && report_path != "-") {
    size_t slash = report_path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : report_path.substr(0, slash + 1);
    struct stat st;
    if (::stat(report_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      die("run: --report: '" + report_path + "' is a directory");
    if (::access(dir.c_str(), W_OK) != 0)
      die("run: --report: cannot write the report to " + report_path + ": " + std::strerror(errno));
  }

  // Before the call is accepted: a parent gone already means no call.
  Fd parent_fd;
  if (die_with_parent) parent_fd = watch_parent(ppid);

  // Signals arrive as data on a signalfd; the child gets its mask reset.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) die(std::string("sigprocmask: ") + std::strerror(errno));
  Fd sigfd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd) die(std::string("signalfd: ") + std::strerror(errno));

  // Orphans of the call come to us, whatever the backend, so they are reaped.
  (void)::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);

  // From here on the call is accepted: whatever happens, the report says
  // what did (a command that never ran is "not_started").
  const auto started_at = std::chrono::system_clock::now();
  auto write_report = [&](const RunResult& r, const ReportContext& ctx) -> bool {
    if (report_path.empty()) return true;
    std::string text = report_json(r, ctx);
    if (report_path == "-") {
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
      return true;
    }
    if (auto w = write_atomically(report_path, text); !w) {
      std::fprintf(stderr, "pmon: cannot write the report to %s: %s\n", report_path.c_str(),
                   w.error().message().c_str());
      return false;
    }
    return true;
  };
  auto not_started_call = [&](ConfineKind kind, const Error& err, const ReportContext& ctx) {
    std::fprintf(stderr, "pmon: %s\n", render(err).c_str());
    RunResult r = not_started(command, kind, err, started_at);
    r.limits = opts.call.limits;
    if (!write_report(r, ctx)) return 125;
    return exit_status(err);
  };

  auto sel = confine.try_select("run");
  if (!sel)
    return not_started_call(confine.tried(), prefixed("confinement unavailable: ", std::move(sel.error())), {});
  report_passed_over(*sel, verbose > 0, quiet || front.shell);
  if (verbose) std::fprintf(stderr, "pmon: confinement %s\n", sel->backend->describe().c_str());

  sel->backend->single_call();
  opts.signal_fd = sigfd.get();
  opts.parent_fd = parent_fd.get();
  // pmon-shell: a harness that wraps each command in a shell of its own
  // is not pmon's parent, and that shell may outlive it; but the pipe (or
  // terminal) the output goes back through ends with the harness.
  if (front.shell) {
    struct stat out {};
    if (::fstat(STDOUT_FILENO, &out) == 0 && (S_ISFIFO(out.st_mode) || S_ISSOCK(out.st_mode) || ::isatty(STDOUT_FILENO)))
      opts.reader_fd = STDOUT_FILENO;
  }
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
  if (res && res->cleanup_verified) sel->backend->dismiss_helpers();
  if (relay) relay->finish();  // the command's last output before any line of ours
  // Jobs a service started for this call that its boundary does not hold
  // (see jobs/call_records.h): stopped through their service now, with
  // the call, and listed with what the call left.
  if (res) {
    std::vector<serve::CallRecord> records = serve::take_call_records();
    if (!records.empty()) {
      if (verbose)
        std::fprintf(stderr, "pmon: stopping %s a service started for this call\n",
                     count_of(records.size(), "job", "jobs").c_str());
      bool verified = true;
      for (Leftover& l : serve::stop_recorded_jobs(records, &verified)) res->leftovers.push_back(std::move(l));
      if (!verified) res->cleanup_verified = false;
    }
  }
  if (!res) return not_started_call(sel->backend->kind(), res.error(), ctx);
  // The parent's end of our stderr may be gone with it: a line of ours
  // must not end pmon before its report is written.
  if (die_with_parent) ::signal(SIGPIPE, SIG_IGN);
  const bool parent_exited = res->end == CallEnd::parent_exited;
  // The output's reader quit while the program that started pmon lives
  // (`pmon-shell LINE | head -1`): the status a shell gives for the SIGPIPE
  // the next write would have met, not the hang-up of a parent that died.
  if (parent_exited && opts.reader_fd >= 0) {
    pollfd p{parent_fd.get(), POLLIN, 0};
    if (!parent_fd || (::poll(&p, 1, 0) == 0)) res->cancel_signal = SIGPIPE;
  }

  // What the command left running and was stopped; what got out of the
  // backend's hold (found below pmon, and stopped or waited for).
  const std::vector<Leftover>& left = res->leftovers;
  auto say_left = [&] {
    std::fprintf(stderr, "pmon: the command exited and left %s running; stopped %s%s\n",
                 count_of(left.size(), "process", "processes").c_str(), left.size() == 1 ? "it" : "them",
                 kill_note(left).c_str());
  };
  auto say_escaped = [&] {
    if (res->escaped.empty()) return;
    std::fprintf(stderr, "pmon: warning: %s got out of the %s backend's hold; found below pmon, %s %s: %s\n",
                 count_of(res->escaped.size(), "process", "processes").c_str(),
                 std::string(to_string(res->confinement)).c_str(),
                 !res->cleanup_verified ? "tried to stop"
                 : wait_tree            ? "waited for"
                                        : "stopped",
                 res->escaped.size() == 1 ? "it" : "them", list_procs(res->escaped).c_str());
  };
  // pmon-shell tells only what the line left running (and what got out).
  if (front.shell && !quiet) {
    if (!left.empty() && !wait_tree && !parent_exited && res->outcome != Outcome::cancelled) say_left();
    say_escaped();
  } else if (!quiet) {
    const std::string others = left.empty()      ? ""
                               : left.size() == 1 ? " and the process it started"
                                                  : " and the " + std::to_string(left.size()) + " processes it started";
    if (res->timed_out)
      std::fprintf(stderr, "pmon: timed out after %s; stopped the command%s%s\n", timeout_s.c_str(), others.c_str(),
                   kill_note(left).c_str());
    else if (parent_exited)
      std::fprintf(stderr, "pmon: the program that started pmon exited; stopped the tree\n");
    else if (res->outcome == Outcome::cancelled)
      std::fprintf(stderr, "pmon: cancelled by %s; stopped the tree\n", signal_name(res->cancel_signal).c_str());
    else if (!left.empty() && !wait_tree)
      say_left();
    say_escaped();
  }
  if (!res->cleanup_verified) {
    std::vector<Leftover> survivors;
    for (const std::vector<Leftover>* v : {&res->leftovers, &res->escaped})
      for (const Leftover& l : *v)
        if (l.fate.kind == Fate::Kind::survived) survivors.push_back(l);
    std::fprintf(stderr, "pmon: could not confirm the tree is gone%s%s\n",
                 survivors.empty() ? "" : "; still running: ", list_procs(survivors).c_str());
  }

  if (!write_report(*res, ctx)) return 125;
  return res->status();
}

}  // namespace pmon::cli
