// SPDX-License-Identifier: Apache-2.0
#include "core/call.h"

#include "core/call_machine.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <limits>

#include "core/end_words.h"
#include "core/spawn.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

using namespace call_detail;

namespace {

// How long before a timeout the processes it will stop are looked at.
constexpr int64_t kLookAheadNs = 100'000'000;

// The session's figures at the end of a call. The call's leaf may be the
// envelope's victim: an out-of-memory kill in the session, a fork refused at
// its pids.max, are the call's when its own cgroup counted them.
RunResult::InSession read_session(const confine::SessionCgroup& s, const std::optional<std::string>& leaf,
                                  const CgroupUsage& before, RunResult* res) {
  RunResult::InSession in{s.key().describe(), s.path(), s.envelope(), s.usage(), {}};
  if (leaf) {
    Fd dir(::open(leaf->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir) in.call = read_usage(dir.get());
  }
  if (in.call.oom_kill && *in.call.oom_kill > 0) res->oom_killed = true;
  else if (in.envelope.limits.memory_max && !res->oom_killed) res->oom_killed = false;
  auto grew = [](const std::optional<uint64_t>& now, const std::optional<uint64_t>& then) {
    return now && *now > then.value_or(0);
  };
  // The session was throttled, or refused a fork, while the call ran: the
  // call met the envelope (or another call of the session did, at the same
  // time; the session's figures say how often).
  if (in.envelope.limits.memory_high || in.envelope.limits.memory_max)
    res->memory_high_hit = grew(in.call.memory_high_events, std::nullopt) ||
                           grew(in.session.memory_high_events, before.memory_high_events);
  if (in.envelope.limits.has_pids_max())
    res->pids_max_hit = grew(in.call.pids_max_events, std::nullopt) || grew(in.session.pids_max_events, before.pids_max_events);
  return in;
}

}  // namespace

void CallMachine::note_main_exit() {
  if (main_exited) return;
  reaper->reap();
  main_exited = reaper->main_exited();
}

// What the end of the call needs: nothing (nothing left, verified), the
// tree to be waited for, or a stop.
void CallMachine::begin_end(End why) {
  if (why != End::main_exited) return stop_for(why);
  auto e = b->empty();
  if (e && *e) {
    res.cleanup_verified = true;
    res.stop.empty_confirmed_ms = since_start_ms();
    return after_stop();
  }
  // (A tree waited for may run a long while yet: its stop, if one comes,
  // raises the priority then.)
  if (!opts.call.wait_tree) raise_priority();
  if (opts.track_leftovers) {
    leftovers.snapshot(*b, child.pid);
    trace(count_of(leftovers.size(), "process", "processes") + " still running after the main process exited");
  }
  if (!opts.call.wait_tree) return start_stop(StopReason::leftovers);
  phase = Phase::waiting_tree;
  check_tree();
}

// A tree of a thousand processes takes some 40 ms to look at.
void CallMachine::look_ahead(int64_t now) {
  if (now < ahead_at || main_exited) return;
  ahead_at = kForever;
  raise_priority();
  leftovers.snapshot_ahead(*b, child.pid);
}

void CallMachine::stop_context(StopContext& ctx) {
  if ((leftovers.empty() || leftovers.taken_ahead()) && opts.track_leftovers) {
    leftovers.snapshot(*b, child.pid);
    // Taken for this stop: its listing is the first signal pass's too.
    if (leftovers.last_listing()) ctx.listed = &*leftovers.last_listing();
  }
  ctx.boundary = b.get();
  ctx.plan = &opts.call.stop;
  ctx.leftovers = opts.track_leftovers ? &leftovers : nullptr;
  ctx.main_pidfd = main_exited ? -1 : child.pidfd.get();
  ctx.main_pid = main_exited ? 0 : child.pid;
  ctx.group_pidfd = child.pidfd.get();
  ctx.t0_ns = t0;
  ctx.skip_grace = escalated;
}

void CallMachine::stop_for(End why) {
  res.end = why;
  start_stop(StopReason::ended);
}

void CallMachine::start_stop(StopReason why) {
  reason = why;
  res.stop.reason = why;
  raise_priority();
  StopContext ctx;
  stop_context(ctx);
  const bool graceful = !opts.call.stop.steps.empty() && opts.call.stop.steps.front().action == StopStep::Action::signal;
  trace("stopping the tree (" + std::string(stop_reason_word(why, res.end)) + "): " +
        (graceful ? signal_name(opts.call.stop.steps.front().signal) + ", then SIGKILL" : std::string("SIGKILL (no grace period)")));
  machine = std::make_unique<StopMachine>(ctx, res.stop);
  phase = Phase::stopping;
  machine->start();
  if (machine->done()) after_stop();
}

// wait_tree: the tree is waited for until it is empty, the timeout or a
// cancel (then stopped).
void CallMachine::check_tree() {
  if (b->empty().value_or(false)) {
    leftovers.label_rest(Fate::waited());
    res.cleanup_verified = true;
    res.stop.empty_confirmed_ms = since_start_ms();
    return after_stop();
  }
  if (auto due = due_end(sys::monotonic_ns())) stop_for(*due);
}

// The stop is over (or there was none): the main process is collected,
// waiting a while for it where it was stopped with the tree.
void CallMachine::after_stop() {
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

void CallMachine::collect_main() {
  reaper->reap();
  main_exited = reaper->main_exited();
  // The boundary's own verdict decides what becomes of it (a leaf that held
  // something unconfirmed is kept for gc), whatever escaped it.
  boundary_empty = res.cleanup_verified;
  start_settling();
}

// Every writer is dead now (or outside a weak boundary): the pipes are read
// to their end, and the call says what happened.
void CallMachine::wrap_up() {
  if (opts.capture != nullptr) opts.capture->drain();
  if (main_exited) {
    sys::ExitStatus st = sys::exit_status_from(reaper->main_info());
    if (st.signaled) {
      res.signal = st.code;
      res.core_dumped = st.core_dumped;
    } else {
      res.exit_code = st.code;
    }
  } else {
    res.cleanup_verified = false;
  }
  res.outcome = outcome_of(res.end, res.signal.has_value());
  res.timed_out = is_time_up(res.end);
  // The parent's exit asked for no signal: cancel_signal stays unknown (0,
  // null).
  if (is_cancel(res.end) && res.end != End::parent_exited) res.cancel_signal = cancel_sig != 0 ? cancel_sig : SIGTERM;
  res.leftovers = leftovers.take();
  res.escaped = std::move(escaped);
  merge_escaped(res.leftovers, res.escaped);
  // (A cgroup's figures are files to read: only for a caller that shows them.)
  const FiguresWanted wanted{opts.session_figures || b->kind() != ConfineKind::cgroup,
                             opts.call.limits.any() || res.limits.has_pids_max()};
  if (wanted.usage || wanted.limit_hits) {
    Figures f = b->figures(wanted);
    res.cpu_usec = f.cpu_usec;
    res.memory_peak_bytes = f.memory_peak_bytes;
    res.oom_killed = f.oom_killed;
    res.pids_max_hit = f.pids_max_hit;
    res.memory_high_hit = f.memory_high_hit;
  }
  if (!res.cpu_usec && b->kind() != ConfineKind::cgroup) res.cpu_usec = reaper->cpu_usec() - cpu_before;
  if (const confine::SessionCgroup* session = backend ? backend->session() : nullptr; session && opts.session_figures)
    res.session = read_session(*session, res.cgroup, session_before, &res);
  b->release(boundary_empty && main_exited);
  res.duration_ms = since_start_ms();
  result = std::move(res);
  phase = Phase::done;
  priority.release();
}

void CallMachine::take_step() {
  const int64_t now = sys::monotonic_ns();
  switch (phase) {
    case Phase::created:
    case Phase::done: return;
    case Phase::running:
      note_main_exit();
      look_ahead(now);
      // The call's own timeout; a main process that exited already ended
      // the call, whichever the caller hears first.
      if (auto due = due_end(now); !main_exited && due) begin_end(*due);
      return;
    case Phase::waiting_tree: reaper->reap(); return check_tree();
    case Phase::stopping:
    case Phase::escapes_stopping: {
      // A boundary that says by itself when it is empty is looked at
      // before its dead are collected (its emptiness is theirs to have
      // exited, not to be reaped); the others count a zombie as a member.
      const bool reap_later = machine->watch().reap_later;
      if (!reap_later) reaper->reap();
      machine->on_wake(now >= machine->deadline() ? StopWake::deadline : StopWake::changed);
      if (reap_later) reaper->reap();
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

Call::Call(Backend& backend, RunOptions opts) : s_(std::make_unique<CallMachine>(&backend, std::move(opts))) {}

Call::Call(std::unique_ptr<Boundary> boundary, RunOptions opts)
    : s_(std::make_unique<CallMachine>(nullptr, std::move(opts))) {
  s_->b = std::move(boundary);
}

Call::~Call() {
  // Never leave a tree running because a handle was dropped.
  if (s_ && started() && !finished() && s_->b) (void)s_->b->kill_all();
}

std::expected<void, Error> Call::start() {
  CallMachine& s = *s_;
  s.t0 = sys::monotonic_ns();
  s.res.started_at = std::chrono::system_clock::now();
  s.res.command = s.opts.call.spawn.argv;
  s.res.confinement = s.backend ? s.backend->kind() : s.b->kind();
  s.res.limits = s.opts.call.limits;

  if (s.backend) {
    Result<std::unique_ptr<Boundary>> b = fail(EOPNOTSUPP);
    if (!s.opts.inside_cgroup.empty()) b = s.backend->open_boundary_inside(s.opts.inside_cgroup);
    if (!b) b = s.backend->open_boundary();
    if (!b)
      return std::unexpected(Error::failed(b.error().value(),
                                        "cannot open a " + std::string(to_string(s.backend->kind())) +
                                            " boundary: " + b.error().message()));
    s.b = std::move(*b);
  }

  if (s.opts.capture != nullptr)
    for (int i = 0; i < 3; ++i)
      if (s.opts.capture->child_fd(i) >= 0) s.opts.call.spawn.stdio[i] = s.opts.capture->child_fd(i);
  std::optional<Error> default_skipped;
  const CallSpec& spec = s.opts.call;
  auto child = s.backend ? spawn_in(spec.spawn, *s.backend, s.b, spec.limits, spec.default_pids_max, &default_skipped)
                         : spawn(spec.spawn, *s.b);
  if (s.opts.capture != nullptr) s.opts.capture->close_child_ends();
  if (!child) {
    s.b->release(s.b->empty().value_or(false));
    return std::unexpected(child.error());
  }
  s.child = std::move(*child);
  if (s.backend && s.opts.call.limits.wants_default_pids() && s.opts.call.default_pids_max) {
    if (default_skipped)
      s.res.limits_note = prefixed("the default pids_max (" + std::to_string(*s.opts.call.default_pids_max) + ") is not set: ",
                                   std::move(*default_skipped));
    else
      s.res.limits.pids_max = s.opts.call.default_pids_max;
  }
  s.res.cgroup = s.b->cgroup_path();  // spawn_in may have changed the leaf
  s.b->set_main(s.child.pid, s.opts.own_all_children ? Children::all_the_calls : Children::shared);
  s.res.pid = s.child.report_pid != 0 ? s.child.report_pid : s.child.pid;
  s.cpu_before = s.reaper->cpu_usec();
  if (const confine::SessionCgroup* session = s.backend ? s.backend->session() : nullptr;
      session && s.opts.session_figures)
    s.session_before = session->events();
  // pgroup signals by group id, so there the zombie is kept (pinned): it
  // pins the pid and the group id until the stop is over, and nothing
  // signalled later can be a stranger that inherited the number. Every
  // other backend addresses processes by pidfd or cgroup only, so the main
  // process is reaped at once.
  s.reaper->set_main(s.child.pid, s.opts.main_by_pidfd ? s.child.pidfd.get() : -1,
                     s.b->kind() == ConfineKind::pgroup && s.opts.main_by_pidfd);
  s.trace("started pid " + std::to_string(s.child.pid) + " under " + std::string(to_string(s.res.confinement)) +
          (s.res.cgroup ? " in " + *s.res.cgroup : ""));
  s.timeout_at = s.opts.call.timeout ? s.t0 + s.opts.call.timeout->count() : kForever;
  if (s.opts.track_leftovers && s.opts.call.timeout && s.opts.call.timeout->count() > 2 * kLookAheadNs)
    s.ahead_at = s.timeout_at - kLookAheadNs;
  s.idle_at = s.opts.call.idle_timeout ? s.t0 + s.opts.call.idle_timeout->count() : kForever;
  // A deadline to keep, on a thread of its own: raised from now on. Under
  // a tree that keeps every CPU busy even the wake-up at the deadline, or
  // 0.1 s before it, may otherwise come seconds late.
  if (s.opts.realtime_stop && (s.opts.call.timeout || s.opts.call.idle_timeout)) s.raise_priority();
  s.phase = Phase::running;
  return {};
}

Watch Call::watch() {
  CallMachine& s = *s_;
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
  const CallMachine& s = *s_;
  switch (s.phase) {
    case Phase::running: return std::min(s.next_end_at(), s.ahead_at);
    case Phase::waiting_tree:
    case Phase::escapes_waiting: return s.next_end_at();
    case Phase::stopping:
    case Phase::escapes_stopping: return s.machine->deadline();
    case Phase::collecting_main:
    case Phase::settling: return s.phase_deadline;
    default: return kForever;
  }
}

int64_t Call::timeout_at() const noexcept { return s_->next_end_at(); }

std::optional<CallEnd> Call::due_end(int64_t now) const noexcept { return s_->due_end(now); }

void Call::note_output() {
  CallMachine& s = *s_;
  if (!s.opts.call.idle_timeout || s.idle_held) return;
  s.idle_at = sys::monotonic_ns() + s.opts.call.idle_timeout->count();
}

void Call::hold_idle(bool held) {
  CallMachine& s = *s_;
  if (!s.opts.call.idle_timeout || s.idle_held == held) return;
  s.idle_held = held;
  s.idle_at = held ? kForever : sys::monotonic_ns() + s.opts.call.idle_timeout->count();
}

void Call::step() { s_->take_step(); }

void Call::reap() {
  CallMachine& s = *s_;
  if (s.phase == Phase::created || s.phase == Phase::done) return;
  s.reaper->reap();
  if (s.phase == Phase::running || s.phase == Phase::collecting_main || s.phase == Phase::settling) s.take_step();
}

void Call::end(End why, int signal) {
  CallMachine& s = *s_;
  if (why == End::cancel && s.cancel_sig == 0) s.cancel_sig = signal;
  switch (s.phase) {
    case Phase::running:
      s.note_main_exit();
      // A main process that already exited ended the call, whatever the
      // caller heard first (its timer and the pidfd can fire together).
      if (is_time_up(why) && s.main_exited) why = End::main_exited;
      return s.begin_end(why);
    case Phase::waiting_tree:
      if (why == End::main_exited) return;
      return s.stop_for(why);
    case Phase::escapes_waiting:
      if (why == End::main_exited) return;
      s.res.end = why;
      return s.start_escape_stop(StopReason::ended);
    default: return;
  }
}

void Call::escalate(End why) {
  CallMachine& s = *s_;
  const bool was = s.escalated;
  s.escalated = true;
  switch (s.phase) {
    case Phase::waiting_tree:
    case Phase::escapes_waiting: return end(why);
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
Call::End Call::end_cause() const noexcept { return finished() ? s_->result.end : s_->res.end; }
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

std::optional<std::vector<pid_t>> Call::listed_pids() {
  if (finished() || !s_->b) return std::vector<pid_t>();
  return s_->b->listed_pids();
}

Figures Call::usage() {
  Figures f;
  if (finished()) {
    f.cpu_usec = s_->result.cpu_usec;
    f.memory_peak_bytes = s_->result.memory_peak_bytes;
  } else if (s_->b) {
    f = s_->b->figures(FiguresWanted{true, false});
  }
  return f;
}

const std::optional<std::string>& Call::cgroup() const noexcept { return s_->res.cgroup; }
const RunOptions& Call::options() const noexcept { return s_->opts; }

Result<int> Call::signal_tree(int sig) {
  if (!s_->b || finished()) return 0;
  return s_->b->signal_all(sig);
}
void Call::set_stop_plan(StopPlan plan) { s_->opts.call.stop = std::move(plan); }

void Call::without_details() {
  s_->opts.session_figures = false;
  s_->opts.track_leftovers = false;
}

bool Call::finish_may_block() {
  if (finished()) return false;
  if (!main_exited()) return true;
  auto e = s_->b->empty();
  return !(e && *e);
}

}  // namespace pmon
