// SPDX-License-Identifier: Apache-2.0
#include "cli/call_flags.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "cli/cli.h"
#include "core/units.h"
#include "jobs/options.h"

namespace pmon::cli {

void ConfineFlags::add_to(CLI::App& app, bool with_isolate) {
  app.add_option("--confine", confine, "how the processes are held together: auto, cgroup, pidns, subreaper or pgroup "
                 "(default auto; see BACKEND below)")
      ->type_name("BACKEND");
  app.add_option("--cgroup-root", cgroup_root,
                 "a cgroup v2 directory delegated to you: each call gets a cgroup of its own below it "
                 "(default: below pmon's own cgroup)")
      ->type_name("DIR");
  if (with_isolate)
    app.add_flag("--isolate", isolate,
               "a cgroup of its own inside new PID, cgroup, mount and user namespaces: even a hostile command "
               "cannot get out");
}

void ConfineFlags::add_session_to(CLI::App& app, SessionUse use) {
  session_use = use;
  if (use == SessionUse::shell) return;  // a harness's prefix: the environment and the config file say it
  const std::string who = use == SessionUse::service ? "every job of this service" : "every call of the session";
  if (use == SessionUse::run)
    app.add_option("--session", session_name,
                   "run the call in the session NAME: one cgroup shared by every call of that name, with the "
                   "session's envelope (default: $PMON_SESSION)")
        ->type_name("NAME");
  app.add_option("--session-profile", envelope.profile,
                 "the session's envelope from a profile: small, standard, large, or one of the config file "
                 "(none: no envelope; default: $PMON_SESSION_PROFILE, then the config file's [session])")
      ->type_name("NAME");
  app.add_option("--session-memory-max", envelope.memory_max,
                 "most memory " + who + " may use together (memory.max of the session's cgroup)")
      ->type_name("SIZE");
  app.add_option("--session-memory-high", envelope.memory_high,
                 "memory past which the session is slowed down and reclaimed (default: 3/4 of "
                 "--session-memory-max)")
      ->type_name("SIZE");
  app.add_option("--session-pids-max", envelope.pids_max, "most processes and threads of the session at once")
      ->type_name("N");
  app.add_option("--session-cpu-max", envelope.cpu_max, "CPU time of the whole session, in CPUs")->type_name("CORES");
}

Selection ConfineFlags::select(const std::string& sub, bool verbose, bool quiet) const {
  auto sel = try_select(sub);
  if (!sel) die("confinement unavailable: " + render(sel.error()));
  report_passed_over(*sel, verbose, quiet);
  return std::move(*sel);
}

ConfineKind ConfineFlags::tried() const {
  if (isolate) return ConfineKind::pidns;
  return parse_confine_kind(confine).value_or(ConfineKind::cgroup);
}

std::expected<Selection, Error> ConfineFlags::try_select(const std::string& sub) const {
  ConfineRequest req;
  req.cgroup_root = cgroup_root;
  if (confine != "auto") {
    auto k = parse_confine_kind(confine);
    if (!k) die(sub + ": --confine: unknown backend '" + confine + "' (use auto, cgroup, pidns, subreaper or pgroup)");
    req.kind = *k;
  }
  if (isolate && req.kind && *req.kind != ConfineKind::pidns)
    die(sub + ": --isolate is the cgroup and pidns backends together; it cannot be combined with --confine " +
        confine);
  // --isolate: a cgroup leaf inside PID, cgroup, mount and user namespaces.
  // Without the cgroup backend it fails closed: a PID namespace alone does
  // not stop a call from moving itself to another cgroup.
  req.isolate = isolate;
  if (session_use != SessionUse::none) {
    std::string name = session_name;
    if (name.empty() && session_use != SessionUse::service)
      if (const char* n = std::getenv("PMON_SESSION"); n != nullptr) name = n;
    // pmon run in no named session takes no configured default: unless its
    // flags or environment ask for an envelope (which may name a profile of
    // the file), the file is not read (nor can a broken one stop the call).
    auto env = resolve_envelope(envelope, nullptr, false);
    if (session_use != SessionUse::run || !name.empty() || !env || *env) env = resolve_envelope(envelope);
    if (!env) die(sub + ": " + render(env.error()));
    std::optional<SessionKey> key;
    if (!name.empty()) {
      auto k = SessionKey::named_(name);
      if (!k) die(sub + ": " + (session_name.empty() ? "PMON_SESSION" : "--session") + ": " + render(k.error()));
      key = *k;
    } else if (session_use == SessionUse::shell) {
      key = SessionKey::of_harness(::getppid());
    } else if (session_use == SessionUse::service || (*env && (*env)->asked)) {
      key = SessionKey::of_this_process();
    }
    // pmon run alone is no session: the configured default applies to a
    // named one, a service and a harness's calls.
    if (key) {
      req.session = key;
      req.envelope = env->value_or(Envelope{});
      if (!*env) req.envelope->asked = false, req.envelope->set_by = "the session";
    }
    // A session named but given no envelope is only a shared cgroup; none
    // at all for a service with nothing configured.
    if (key && !*env && key->kind != SessionKey::Kind::named) {
      req.session.reset();
      req.envelope.reset();
    }
  }
  auto sel = select_backend(req);
  if (!sel && isolate) return std::unexpected(prefixed("--isolate: ", std::move(sel.error())));
  return sel;
}

void LimitFlags::add_to(CLI::App& app, bool default_pids, const std::string& w) {
  memory_opt_ = app.add_option("--memory-max", memory_max,
                 "most memory the " + w + " may use (memory.max); past it every process of the " + w +
                 " is killed (exit 137)")
      ->type_name("SIZE");
  high_opt_ = app.add_option("--memory-high", memory_high,
                 "memory past which the " + w + " is slowed down and its memory reclaimed (memory.high), not "
                 "killed; below --memory-max when both are given")
      ->type_name("SIZE");
  const std::string pids = "most processes and threads the " + w + " may have at once (pids.max); forks past it fail";
  pids_opt_ = app.add_option("--pids-max", pids_max,
                 default_pids ? pids + ". Default 4096 where the host has the pids controller; 0 for no limit" : pids)
      ->type_name("N");
  cpu_opt_ = app.add_option("--cpu-max", cpu_max,
                 "CPU time the " + w + " may use, in CPUs (cpu.max): 0.5 is half of one. A limit needs the cgroup "
                 "backend with that controller; where it is missing pmon exits 125 before CMD runs")
      ->type_name("CORES");
}

Limits LimitFlags::parse(const std::string& sub) const {
  Limits l;
  if (memory_opt_ != nullptr && memory_opt_->count() > 0) {
    auto v = parse_size(memory_max);
    if (!v) die(sub + ": --memory-max: " + describe(v.error()));
    l.memory_max = *v;
  }
  if (high_opt_ != nullptr && high_opt_->count() > 0) {
    auto v = parse_size(memory_high);
    if (!v) die(sub + ": --memory-high: " + describe(v.error()));
    l.memory_high = *v;
  }
  if (l.memory_max && l.memory_high && *l.memory_high >= *l.memory_max)
    die(sub + ": --memory-high must be below --memory-max (past --memory-max the call is killed before it "
              "could be slowed down)");
  if (pids_opt_ != nullptr && pids_opt_->count() > 0) {
    auto v = parse_pids(pids_max);
    if (!v) die(sub + ": --pids-max: " + describe(v.error()));
    l.pids_max = *v;
  }
  if (cpu_opt_ != nullptr && cpu_opt_->count() > 0) {
    auto v = parse_cores(cpu_max);
    if (!v) die(sub + ": --cpu-max: " + describe(v.error()));
    l.cpu_max = *v;
  }
  return l;
}

void StopFlags::add_to(CLI::App& app, bool with_signal) {
  app.add_option("--grace", grace, "how long the first signal gets before SIGKILL (default 2s; 0: SIGKILL at once)")->type_name("DURATION");
  if (with_signal)
    app.add_option("--signal", signal, "the first signal of a stop (default TERM)")->type_name("SIGNAL");
}

StopPlan StopFlags::parse(const std::string& sub, const std::string& grace_from) const {
  auto g = parse_duration(grace);
  if (!g) die(sub + ": " + grace_from + ": " + describe_duration_error(grace, g.error()));
  auto sig = parse_signal(signal);
  if (!sig || *sig == SIGKILL || *sig == SIGSTOP)
    die(sub + ": --signal: '" + signal + "' is not a signal pmon can stop with (use e.g. TERM, INT, HUP, 15)");
  return StopPlan::standard(*sig, *g);
}

void add_verbose_flag(CLI::App& app, int& verbose, const std::string& help) {
  app.add_flag("-v,--verbose", verbose, help);
}

void add_quiet_flag(CLI::App& app, bool& quiet, const std::string& help) { app.add_flag("-q,--quiet", quiet, help); }

void CallFlags::add_timeout(CLI::App& app, const std::string& what, const std::string& more) {
  timeout_opt_ = app.add_option("--timeout", timeout, "stop " + what + " and everything it started after DURATION" + more)
                     ->type_name("DURATION");
}

void CallFlags::add_wait_tree(CLI::App& app, const std::string& name, const std::string& help) {
  app.add_flag(name, wait_tree, help);
}

void CallFlags::add_pdeathsig(CLI::App& app, const std::string& who) {
  app.add_option("--pdeathsig", pdeathsig, "a signal CMD gets if " + who + " dies, or none (the default)")
      ->type_name("SIGNAL");
}

void CallFlags::add_verbosity(CLI::App& app, bool with_quiet, const std::string& verbose_help) {
  add_verbose_flag(app, verbose, verbose_help);
  if (with_quiet) add_quiet_flag(app, quiet);
}

std::optional<Nanos> CallFlags::given_timeout(const std::string& sub) const {
  if (timeout_opt_ == nullptr || timeout_opt_->count() == 0) return std::nullopt;
  auto d = parse_duration(timeout);
  if (!d) die(sub + ": --timeout: " + describe_duration_error(timeout, d.error()));
  return *d;
}

CallSpec CallFlags::read(const std::string& sub, std::vector<std::string> command, const std::string& grace_from,
                         const std::string& pdeathsig_from) const {
  CallSpec c;
  c.spawn.argv = std::move(command);
  if (auto d = given_timeout(sub); d && d->count() > 0) c.timeout = *d;  // 0: no timeout, as timeout(1)
  c.stop = stop.parse(sub, grace_from);
  if (pdeathsig != "none") {
    auto pd = parse_signal(pdeathsig);
    if (!pd)
      die(sub + ": " + pdeathsig_from + ": '" + pdeathsig + "' is not a signal (use e.g. TERM, KILL, 9, or none)");
    c.spawn.pdeathsig = *pd;
  }
  c.wait_tree = wait_tree;
  c.limits = limits.parse(sub);
  return c;
}

void JobFlags::add_to(CLI::App& app) {
  confine.add_to(app);
  confine.add_session_to(app, ConfineFlags::SessionUse::service);
  app.add_option("--max-jobs", max_jobs,
                 "most jobs at once, running or ended but not yet removed (pmon rm) (default 1024)")
      ->type_name("N");
  stop.add_to(app, /*with_signal=*/false);
  app.add_option("--memory-budget", memory_budget,
                 "memory for the jobs' output and what clients make the service hold, e.g. 512M "
                 "(default 256M, at least 16M)")
      ->type_name("SIZE");
  app.add_option("--spool-limit", spool_limit,
                 "bytes of a job's whole output kept on disk before its file is rotated (one older file "
                 "is kept), e.g. 16M (default 64M; 0: no spool files); a job may ask for less, never more")
      ->type_name("SIZE");
}

namespace {

// A job under a pmon of its own (ServeOptions::job_wrapper): that pmon
// stops the job's processes itself when it gets TERM (the first signal,
// --grace, SIGKILL, confirmed gone, then it exits), and a second stop
// signal skips its grace: INT, not TERM again, as two of one signal sent
// close together can arrive as one. The service's SIGKILL is only for a
// pmon that did neither (it would leave the job's processes to the system).
StopPlan wrapped_stop(Nanos grace, bool at_once) {
  StopPlan p;
  p.steps.push_back({StopStep::Action::signal, SIGTERM, false, at_once ? Nanos{0} : grace + std::chrono::seconds(2)});
  p.steps.push_back({StopStep::Action::signal, SIGINT, false, std::chrono::seconds(5)});
  p.steps.push_back({StopStep::Action::kill, SIGKILL, false, std::chrono::seconds(5)});
  return p;
}

}  // namespace

Selection JobFlags::apply(const std::string& sub, bool quiet, serve::ServeOptions& opts,
                          const std::string& own_pmon) const {
  if (max_jobs == 0) die(sub + ": --max-jobs must be at least 1");
  auto budget = parse_size(memory_budget);
  if (!budget) die(sub + ": --memory-budget: " + describe(budget.error()));
  if (*budget < serve::ServeOptions::kMinMemoryBudget) die(sub + ": --memory-budget must be at least 16M");
  if (*budget > std::numeric_limits<size_t>::max() / 2) die(sub + ": --memory-budget is too large");
  Selection sel = confine.select(sub, false, quiet);
  opts.stop = stop.parse(sub);
  // A subreaper boundary is everything reparented to this process: with
  // many jobs in one process it cannot tell whose orphan is whose. So each
  // job gets a pmon of its own, the subreaper of the job's processes, which
  // the service holds by its process group.
  if (sel.backend->kind() == ConfineKind::subreaper) {
    if (own_pmon.empty())
      die(sub + ": the subreaper backend cannot keep jobs apart in one service; use --confine cgroup, pidns or pgroup");
    auto held = open_pgroup_backend(true);
    if (!held) die(sub + ": confinement unavailable: " + render(held.error()));
    sel.backend = std::move(*held);
    // (--die-with-parent: if the service dies, each job's pmon stops its job)
    opts.job_wrapper = {own_pmon, "run", "--confine", "subreaper", "--die-with-parent", "-q",
                        "--grace", stop.grace, "--signal", stop.signal};
    const Nanos grace = parse_duration(stop.grace).value_or(Nanos{0});
    opts.stop = wrapped_stop(grace, grace.count() == 0);
    opts.stop_at_once = wrapped_stop(grace, true);
  }
  opts.max_jobs = max_jobs;
  opts.memory_budget = static_cast<size_t>(*budget);
  if (spool_limit == "0") {
    opts.spool_limit = 0;  // no spool files
  } else {
    auto spool = parse_size(spool_limit);
    if (!spool) die(sub + ": --spool-limit: " + describe(spool.error()));
    opts.spool_limit = *spool;
  }
  opts.passed_over = sel.passed_over;
  return sel;
}

}  // namespace pmon::cli
