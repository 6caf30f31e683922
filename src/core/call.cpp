#include "core/call.h"

#include <poll.h>

#include <algorithm>
#include <limits>

#include "core/spawn.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

std::string_view to_string(StopReason r) noexcept {
  switch (r) {
    case StopReason::none: return "";
    case StopReason::leftovers: return "leftovers";
    case StopReason::timeout: return "timeout";
    case StopReason::cancel: return "cancel";
    case StopReason::escaped: return "escaped";
  }
  return "?";
}

namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
// How long the main process may take to be collectable once its tree was
// stopped; how long processes that just left the boundary may take to
// become our zombies; how often to look meanwhile.
constexpr int64_t kCollectNs = 5'000'000'000;
constexpr int64_t kSettleNs = 100'000'000;
constexpr int64_t kSettlePollNs = 5'000'000;

enum class Phase {
  created,
  running,          // until the main process exits, the timeout or a cancel
  waiting_tree,     // wait_tree: the main process is gone, the rest waited for
  stopping,         // the stop plan on the boundary
  collecting_main,  // the stop is over; the main process is collected
  settling,         // zombies of the call still on their way to us
  escapes_waiting,  // wait_tree: what escaped the boundary, waited for
  escapes_stopping, // the stop plan on what escaped the boundary
  done,
};

}  // namespace

struct Call::State {
  State(Backend* b, RunOptions o)
      : backend(b), opts(std::move(o)), own_reaper(opts.own_all_children),
        reaper(opts.reaper != nullptr ? opts.reaper : &own_reaper) {}

  Backend* backend;  // null: the boundary was given
  RunOptions opts;
  sys::Reaper own_reaper;
  sys::Reaper* reaper;
  int64_t t0 = 0;
  int64_t timeout_at = kForever;
  std::unique_ptr<Boundary> b;
  Child child;
  RunResult res;
  RunResult result;
  bool main_exited = false;
  uint64_t cpu_before = 0;  // the reaper's count when the call began
  int cancel_sig = 0;
  bool cancelled = false;
  bool escalated = false;
  StopReason reason = StopReason::none;
  LeftoverTracker leftovers;
  Phase phase = Phase::created;
  std::unique_ptr<StopMachine> machine;
  int64_t phase_deadline = kForever;
  bool boundary_empty = false;  // the boundary's own verdict, for its release
  // Settling: waiting first for the tracked processes to finish exiting;
  // the round after the escapes' stop is the last.
  bool settle_exiting = false;
  bool settled_once = false;
  int64_t settle_until = 0;
  // What escaped the boundary: everything below this process, by the
  // subreaper backend's walk.
  std::unique_ptr<Backend> below_backend;
  std::unique_ptr<Boundary> below;
  LeftoverTracker found;
  std::vector<Leftover> escaped;
  StopRecord escape_record;

  double since_start_ms() const { return (sys::monotonic_ns() - t0) / 1e6; }
  void trace(const std::string& line) const {
    if (opts.trace) opts.trace(line);
  }

  void note_main_exit();
  void begin_end(End why);
  void start_stop(StopReason why);
  void stop_context(StopContext& ctx);
  void check_tree();
  void after_stop();
  void collect_main();
  void start_settling();
  void settle();
  void start_escapes();
  void check_escapes();
  void start_escape_stop(StopReason why);
  void end_escape_stop();
  void end_escapes(bool verified);
  void wrap_up();
  void take_step();
};

void Call::State::note_main_exit() {
  if (main_exited) return;
  reaper->reap();
  main_exited = reaper->main_exited();
}

// What the end of the call needs: nothing (nothing left, verified), the
// tree to be waited for, or a stop.
void Call::State::begin_end(End why) {
  if (why == End::timeout) {
    res.timed_out = true;
    return start_stop(StopReason::timeout);
  }
  if (why == End::cancel) {
    cancelled = true;
    return start_stop(StopReason::cancel);
  }
  auto e = b->empty();
  if (e && *e) {
    res.cleanup_verified = true;
    res.stop.empty_confirmed_ms = since_start_ms();
    return after_stop();
  }
  if (opts.track_leftovers) {
    leftovers.snapshot(*b, child.pid);
    trace(count_of(leftovers.size(), "process", "processes") + " still running after the main process exited");
  }
  if (!opts.wait_tree) return start_stop(StopReason::leftovers);
  phase = Phase::waiting_tree;
  check_tree();
}

void Call::State::stop_context(StopContext& ctx) {
  if (leftovers.empty() && opts.track_leftovers) {
    leftovers.snapshot(*b, child.pid);
    // Taken for this stop: its listing is the first signal pass's too.
    if (leftovers.last_listing()) ctx.listed = &*leftovers.last_listing();
  }
  ctx.boundary = b.get();
  ctx.plan = &opts.stop;
  ctx.leftovers = opts.track_leftovers ? &leftovers : nullptr;
  ctx.main_pidfd = main_exited ? -1 : child.pidfd.get();
  ctx.main_pid = main_exited ? 0 : child.pid;
  ctx.t0_ns = t0;
  ctx.skip_grace = escalated;
}

void Call::State::start_stop(StopReason why) {
  reason = why;
  res.stop.reason = std::string(to_string(why));
  StopContext ctx;
  stop_context(ctx);
  trace("stopping the tree (" + res.stop.reason + "): " +
        signal_name(opts.stop.steps.empty() ? SIGKILL : opts.stop.steps.front().signal) + ", then SIGKILL");
  machine = std::make_unique<StopMachine>(ctx, res.stop);
  phase = Phase::stopping;
  machine->start();
  if (machine->done()) after_stop();
}

// wait_tree: the tree is waited for until it is empty, the timeout or a
// cancel (then stopped).
void Call::State::check_tree() {
  if (b->empty().value_or(false)) {
    leftovers.label_rest("waited");
    res.cleanup_verified = true;
    res.stop.empty_confirmed_ms = since_start_ms();
    return after_stop();
  }
  if (timeout_at != kForever && sys::monotonic_ns() >= timeout_at) {
    res.timed_out = true;
    start_stop(StopReason::timeout);
  }
}

// The stop is over (or there was none): the main process is collected,
// waiting a while for it where it was stopped with the tree.
void Call::State::after_stop() {
  if (machine) {
    res.cleanup_verified = machine->verified();
    trace(res.cleanup_verified ? "boundary confirmed empty" : "boundary NOT confirmed empty");
  }
  machine.reset();
  // A main zombie kept to pin its pid (pgroup) is not needed any more.
  reaper->unpin();
  note_main_exit();
  if (!main_exited) {
    phase = Phase::collecting_main;
    phase_deadline = sys::monotonic_ns() + kCollectNs;
    return;
  }
  collect_main();
}

void Call::State::collect_main() {
  reaper->reap();
  main_exited = reaper->main_exited();
  // The boundary's own verdict decides what becomes of it (a leaf that held
  // something unconfirmed is kept for gc), whatever escaped it.
  boundary_empty = res.cleanup_verified;
  start_settling();
}

// After the boundary is confirmed empty, processes of the call may still be
// between leaving their cgroup and becoming zombies of ours: give those a
// moment and reap them. A live child that stays is an escapee, never waited.
void Call::State::start_settling() {
  if (!opts.own_all_children) return wrap_up();
  phase = Phase::settling;
  settle_until = sys::monotonic_ns() + kSettleNs;
  // A process that left the boundary a moment ago may not have handed its
  // own zombies to us yet: the known ones finish exiting first.
  settle_exiting = true;
  settle();
}

void Call::State::settle() {
  const int64_t now = sys::monotonic_ns();
  if (settle_exiting) {
    if (!leftovers.all_exited() && now < settle_until) {
      phase_deadline = settle_until;
      return;
    }
    settle_exiting = false;
  }
  for (;;) {
    reaper->reap();
    // No child at all (ECHILD) is the common case and needs no /proc scan:
    // every descendant of ours would be below some child of ours.
    siginfo_t si{};
    int r = sys::waitid_raw(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT, nullptr);
    if (r != 0) break;
    if (si.si_pid != 0 && sys::monotonic_ns() < settle_until) continue;  // a new zombie
    if (!res.cleanup_verified || !b->contains_escapes() || sys::monotonic_ns() >= settle_until) break;
    phase_deadline = std::min(settle_until, sys::monotonic_ns() + kSettlePollNs);
    return;
  }
  phase_deadline = kForever;
  if (!settled_once) {
    settled_once = true;
    return start_escapes();
  }
  wrap_up();
}

// Once the boundary is empty, live descendants of ours may remain outside
// it: a weak boundary's escapees (pgroup: a setsid daemon) or a call that
// moved itself out of its cgroup. This process is their subreaper, so they
// are still the call's and still ours to end: waited for under wait_tree,
// else stopped by the same plan (verified pidfds, grace, SIGKILL) until
// none is left. The call is verified clean only if that succeeds.
void Call::State::start_escapes() {
  siginfo_t any{};
  if (sys::waitid_raw(P_ALL, 0, &any, WEXITED | WNOHANG | WNOWAIT, nullptr) != 0) return wrap_up();
  // Everything below us but pmon's own helpers, each addressed by a pidfd
  // checked against its scanned start time: the subreaper backend's walk.
  auto sub = open_subreaper_backend();
  Result<std::unique_ptr<Boundary>> opened =
      sub ? (*sub)->open_boundary() : Result<std::unique_ptr<Boundary>>(fail(EPERM));
  if (!opened) {
    // Cannot happen once PR_SET_CHILD_SUBREAPER worked; if it does, say
    // what is alive rather than call the call clean.
    for (const sys::ProcStat& p : sys::descendants_of(sys::scan_processes(), ::getpid()))
      if (!p.dead() && p.pid != child.pid && (backend == nullptr || p.pid != backend->helper_pid()))
        escaped.push_back({p.pid, p.start_time, sys::read_cmdline(p.pid), "survived"});
    if (!escaped.empty()) res.cleanup_verified = false;
    return wrap_up();
  }
  below_backend = std::move(*sub);
  below = std::move(*opened);
  found.snapshot(*below, child.pid);
  if (found.empty()) return wrap_up();
  trace(count_of(found.size(), "process", "processes") + " outside the " + std::string(to_string(b->kind())) +
        " boundary " + (found.size() == 1 ? "is" : "are") + " still running below pmon");
  if (opts.wait_tree && reason == StopReason::none) {
    phase = Phase::escapes_waiting;
    return check_escapes();
  }
  start_escape_stop(reason == StopReason::none ? StopReason::escaped : reason);
}

void Call::State::check_escapes() {
  if (below->empty().value_or(false)) {
    found.label_rest("waited");
    res.stop.empty_confirmed_ms = since_start_ms();
    return end_escapes(true);
  }
  if (timeout_at != kForever && sys::monotonic_ns() >= timeout_at) {
    res.timed_out = true;
    reason = StopReason::timeout;
    start_escape_stop(reason);
  }
}

void Call::State::start_escape_stop(StopReason why) {
  if (why != StopReason::escaped) reason = why;
  StopContext ctx;
  ctx.boundary = below.get();
  ctx.plan = &opts.stop;
  ctx.leftovers = &found;
  ctx.t0_ns = t0;
  ctx.skip_grace = escalated;
  escape_record = {};
  trace("stopping what escaped the boundary");
  machine = std::make_unique<StopMachine>(ctx, escape_record);
  phase = Phase::escapes_stopping;
  machine->start();
  if (machine->done()) end_escape_stop();
}

void Call::State::end_escape_stop() {
  const bool verified = machine->verified();
  machine.reset();
  // One record for the call: the first signal and kill pmon sent, and when
  // everything was confirmed gone (never, if this failed).
  if (res.stop.reason.empty()) {
    res.stop = escape_record;
    res.stop.reason = std::string(to_string(reason == StopReason::none ? StopReason::escaped : reason));
  } else {
    if (!res.stop.signal_sent_ms) res.stop.signal_sent_ms = escape_record.signal_sent_ms;
    if (!res.stop.kill_sent_ms) res.stop.kill_sent_ms = escape_record.kill_sent_ms;
    res.stop.empty_confirmed_ms = escape_record.empty_confirmed_ms;
  }
  trace(verified ? "nothing is left below pmon" : "processes below pmon could NOT be stopped");
  end_escapes(verified);
}

void Call::State::end_escapes(bool verified) {
  if (!verified) res.cleanup_verified = false;
  escaped = found.take();
  below.reset();
  below_backend.reset();
  phase = Phase::settling;
  settle_until = sys::monotonic_ns() + kSettleNs;
  settle_exiting = false;
  settle();
}

// Every writer is dead now (or outside a weak boundary): the pipes are read
// to their end, and the call says what happened.
void Call::State::wrap_up() {
  if (opts.capture != nullptr) opts.capture->drain();
  if (main_exited) {
    sys::ExitStatus st = sys::exit_status_from(reaper->main_info());
    if (st.signaled) {
      res.signal = st.code;
      res.core_dumped = st.core_dumped;
      res.outcome = Outcome::signaled;
    } else {
      res.exit_code = st.code;
      res.outcome = Outcome::exited;
    }
  } else {
    res.cleanup_verified = false;
  }
  if (res.timed_out) res.outcome = Outcome::timeout;
  if (reason == StopReason::cancel) {
    res.outcome = Outcome::cancelled;
    res.cancel_signal = cancel_sig != 0 ? cancel_sig : SIGTERM;
  }
  res.leftovers = leftovers.take();
  res.escaped = std::move(escaped);
  merge_escaped(res.leftovers, res.escaped);
  res.cpu_usec = b->cpu_usec();
  if (!res.cpu_usec && b->kind() != ConfineKind::cgroup) res.cpu_usec = reaper->cpu_usec() - cpu_before;
  res.memory_peak_bytes = b->memory_peak_bytes();
  if (opts.limits.any()) {
    res.oom_killed = b->oom_killed();
    res.pids_max_hit = b->pids_max_hit();
  }
  b->release(boundary_empty && main_exited);
  res.duration_ms = since_start_ms();
  result = std::move(res);
  phase = Phase::done;
}

void Call::State::take_step() {
  const int64_t now = sys::monotonic_ns();
  switch (phase) {
    case Phase::created:
    case Phase::done: return;
    case Phase::running:
      note_main_exit();
      // The call's own timeout; a main process that exited already ended
      // the call, whichever the caller hears first.
      if (!main_exited && timeout_at != kForever && now >= timeout_at) begin_end(End::timeout);
      return;
    case Phase::waiting_tree: reaper->reap(); return check_tree();
    case Phase::stopping:
    case Phase::escapes_stopping: {
      reaper->reap();
      machine->on_wake(now >= machine->deadline() ? StopWake::deadline : StopWake::changed);
      if (!machine->done()) return;
      return phase == Phase::stopping ? after_stop() : end_escape_stop();
    }
    case Phase::collecting_main:
      note_main_exit();
      if (main_exited || now >= phase_deadline) collect_main();
      return;
    case Phase::settling: return settle();
    case Phase::escapes_waiting: reaper->reap(); return check_escapes();
  }
}

Call::Call(Backend& backend, RunOptions opts) : s_(std::make_unique<State>(&backend, std::move(opts))) {}

Call::Call(std::unique_ptr<Boundary> boundary, RunOptions opts)
    : s_(std::make_unique<State>(nullptr, std::move(opts))) {
  s_->b = std::move(boundary);
}

Call::~Call() {
  // Never leave a tree running because a handle was dropped.
  if (s_ && started() && !finished() && s_->b) (void)s_->b->kill_all();
}

std::expected<void, SpawnError> Call::start() {
  State& s = *s_;
  s.t0 = sys::monotonic_ns();
  s.res.started_at = std::chrono::system_clock::now();
  s.res.command = s.opts.spawn.argv;
  s.res.confinement = s.backend ? s.backend->kind() : s.b->kind();
  s.res.limits = s.opts.limits;

  if (s.backend) {
    Result<std::unique_ptr<Boundary>> b = fail(EOPNOTSUPP);
    if (!s.opts.inside_cgroup.empty()) b = s.backend->open_boundary_inside(s.opts.inside_cgroup);
    if (!b) b = s.backend->open_boundary();
    if (!b)
      return std::unexpected(SpawnError{125, b.error().value(),
                                        "cannot open a " + std::string(to_string(s.backend->kind())) +
                                            " boundary: " + b.error().message()});
    s.b = std::move(*b);
  }

  if (s.opts.capture != nullptr)
    for (int i = 0; i < 3; ++i)
      if (s.opts.capture->child_fd(i) >= 0) s.opts.spawn.stdio[i] = s.opts.capture->child_fd(i);
  auto child = s.backend ? spawn_in(s.opts.spawn, *s.backend, s.b, s.opts.limits) : spawn(s.opts.spawn, *s.b);
  if (s.opts.capture != nullptr) s.opts.capture->close_child_ends();
  if (!child) {
    s.b->release(s.b->empty().value_or(false));
    return std::unexpected(child.error());
  }
  s.child = std::move(*child);
  s.res.cgroup = s.b->cgroup_path();  // spawn_in may have changed the leaf
  s.b->set_main(s.child.pid);
  if (s.opts.own_all_children) s.b->set_sole_owner();
  s.res.pid = s.child.report_pid != 0 ? s.child.report_pid : s.child.pid;
  s.cpu_before = s.reaper->cpu_usec();
  // pgroup signals by group id, so there the zombie is kept (pinned): it
  // pins the pid and the group id until the stop is over, and nothing
  // signalled later can be a stranger that inherited the number. Every
  // other backend addresses processes by pidfd or cgroup only, so the main
  // process is reaped at once.
  s.reaper->set_main(s.child.pid, s.opts.main_by_pidfd ? s.child.pidfd.get() : -1,
                     s.b->kind() == ConfineKind::pgroup && s.opts.main_by_pidfd);
  s.trace("started pid " + std::to_string(s.child.pid) + " under " + std::string(to_string(s.res.confinement)) +
          (s.res.cgroup ? " in " + *s.res.cgroup : ""));
  s.timeout_at = s.opts.timeout ? s.t0 + s.opts.timeout->count() : kForever;
  s.phase = Phase::running;
  return {};
}

Watch Call::watch() {
  State& s = *s_;
  switch (s.phase) {
    case Phase::running:
    case Phase::collecting_main: {
      // (A main process collected by number is heard of by SIGCHLD.)
      Watch w;
      if (s.opts.main_by_pidfd) w.fds.push_back({s.child.pidfd.get(), POLLIN, 0});
      return w;
    }
    case Phase::waiting_tree: return s.b->watch();
    case Phase::stopping:
    case Phase::escapes_stopping: return s.machine->watch();
    case Phase::escapes_waiting: return s.below->watch();
    case Phase::settling: return s.settle_exiting ? s.leftovers.watch() : Watch{};
    default: return {};
  }
}

int64_t Call::deadline() const noexcept {
  const State& s = *s_;
  switch (s.phase) {
    case Phase::running:
    case Phase::waiting_tree:
    case Phase::escapes_waiting: return s.timeout_at;
    case Phase::stopping:
    case Phase::escapes_stopping: return s.machine->deadline();
    case Phase::collecting_main:
    case Phase::settling: return s.phase_deadline;
    default: return kForever;
  }
}

void Call::step() { s_->take_step(); }

void Call::reap() {
  State& s = *s_;
  if (s.phase == Phase::created || s.phase == Phase::done) return;
  s.reaper->reap();
  if (s.phase == Phase::running || s.phase == Phase::collecting_main || s.phase == Phase::settling) s.take_step();
}

void Call::end(End why, int signal) {
  State& s = *s_;
  if (why == End::cancel && s.cancel_sig == 0) s.cancel_sig = signal;
  switch (s.phase) {
    case Phase::running:
      s.note_main_exit();
      // A main process that already exited ended the call, whatever the
      // caller heard first (its timer and the pidfd can fire together).
      if (why == End::timeout && s.main_exited) why = End::main_exited;
      return s.begin_end(why);
    case Phase::waiting_tree:
      if (why == End::main_exited) return;
      if (why == End::timeout) s.res.timed_out = true;
      else s.cancelled = true;
      return s.start_stop(why == End::timeout ? StopReason::timeout : StopReason::cancel);
    case Phase::escapes_waiting:
      if (why == End::main_exited) return;
      if (why == End::timeout) s.res.timed_out = true;
      return s.start_escape_stop(why == End::timeout ? StopReason::timeout : StopReason::cancel);
    default: return;
  }
}

void Call::escalate() {
  State& s = *s_;
  const bool was = s.escalated;
  s.escalated = true;
  switch (s.phase) {
    case Phase::waiting_tree:
    case Phase::escapes_waiting: return end(End::cancel);
    case Phase::stopping:
      if (was) return;
      s.machine->on_wake(StopWake::escalate);
      if (s.machine->done()) s.after_stop();
      return;
    case Phase::escapes_stopping:
      if (was) return;
      s.machine->on_wake(StopWake::escalate);
      if (s.machine->done()) s.end_escape_stop();
      return;
    default: return;
  }
}

bool Call::started() const noexcept { return s_->phase != Phase::created; }
bool Call::finished() const noexcept { return s_->phase == Phase::done; }
bool Call::finishing() const noexcept { return s_->phase != Phase::created && s_->phase != Phase::running && s_->phase != Phase::done; }
bool Call::waiting_for_tree() const noexcept { return s_->phase == Phase::waiting_tree; }
const RunResult& Call::result() const noexcept { return s_->result; }
int Call::pidfd() const noexcept { return s_->child.pidfd.get(); }
pid_t Call::pid() const noexcept { return s_->child.pid; }

pid_t Call::command_pid() const noexcept {
  const pid_t shown = finished() ? s_->result.pid : s_->res.pid;
  return shown != 0 ? shown : s_->child.pid;
}

bool Call::main_exited() {
  if (s_->phase == Phase::created) return false;
  s_->note_main_exit();
  return s_->main_exited;
}

std::vector<sys::ProcStat> Call::members() {
  if (finished() || !s_->b) return {};
  return s_->b->members();
}

std::optional<uint64_t> Call::cpu_usec() {
  if (finished() || !s_->b) return finished() ? s_->result.cpu_usec : std::nullopt;
  return s_->b->cpu_usec();
}

std::optional<uint64_t> Call::memory_peak_bytes() {
  if (finished() || !s_->b) return finished() ? s_->result.memory_peak_bytes : std::nullopt;
  return s_->b->memory_peak_bytes();
}

const std::optional<std::string>& Call::cgroup() const noexcept { return s_->res.cgroup; }
const RunOptions& Call::options() const noexcept { return s_->opts; }

Result<int> Call::signal_tree(int sig) {
  if (!s_->b || finished()) return 0;
  return s_->b->signal_all(sig);
}
void Call::set_stop_plan(StopPlan plan) { s_->opts.stop = std::move(plan); }

bool Call::finish_may_block() {
  if (finished()) return false;
  if (!main_exited()) return true;
  auto e = s_->b->empty();
  return !(e && *e);
}

}  // namespace pmon
