// SPDX-License-Identifier: Apache-2.0
// The end of a call after its stop: processes of the call still on their
// way to become our zombies, and what escaped the boundary (core/call.h).
#include <algorithm>

#include "core/call_machine.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

using namespace call_detail;

// After the boundary is confirmed empty, processes of the call may still be
// between leaving their cgroup and becoming zombies of ours: give those a
// moment and reap them. A live child that stays is an escapee, never waited.
void CallMachine::start_settling() {
  if (!opts.own_all_children) return wrap_up();
  phase = Phase::settling;
  settle_until = sys::monotonic_ns() + kSettleNs;
  // A process that left the boundary a moment ago may not have handed its
  // own zombies to us yet: the known ones finish exiting first.
  settle_exiting = true;
  settle();
}

void CallMachine::settle() {
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
void CallMachine::start_escapes() {
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
      if (!p.dead() && p.pid != child.pid && p.pid != guard_pid(backend))
        escaped.push_back({p.pid, p.start_time, sys::read_cmdline(p.pid), Fate::survived()});
    if (!escaped.empty()) res.cleanup_verified = false;
    return wrap_up();
  }
  below_backend = std::move(*sub);
  below = std::move(*opened);
  found.snapshot(*below, child.pid);
  if (found.empty()) return wrap_up();
  trace(count_of(found.size(), "process", "processes") + " outside the " + std::string(to_string(b->kind())) +
        " boundary " + (found.size() == 1 ? "is" : "are") + " still running below pmon");
  if (opts.call.wait_tree && reason == StopReason::none) {
    phase = Phase::escapes_waiting;
    return check_escapes();
  }
  start_escape_stop(reason == StopReason::none ? StopReason::escaped : reason);
}

void CallMachine::check_escapes() {
  if (below->empty().value_or(false)) {
    found.label_rest(Fate::waited());
    res.stop.empty_confirmed_ms = since_start_ms();
    return end_escapes(true);
  }
  if (auto due = due_end(sys::monotonic_ns())) {
    res.end = *due;
    start_escape_stop(StopReason::ended);
  }
}

void CallMachine::start_escape_stop(StopReason why) {
  if (why != StopReason::escaped) reason = why;
  StopContext ctx;
  ctx.boundary = below.get();
  ctx.plan = &opts.call.stop;
  ctx.leftovers = &found;
  ctx.t0_ns = t0;
  ctx.skip_grace = escalated;
  escape_record = {};
  priority.take(true);  // (the subreaper's walk)
  trace("stopping what escaped the boundary");
  machine = std::make_unique<StopMachine>(ctx, escape_record);
  phase = Phase::escapes_stopping;
  machine->start();
  if (machine->done()) end_escape_stop();
}

void CallMachine::end_escape_stop() {
  const bool verified = machine->verified();
  machine.reset();
  // One record for the call: the first signal and kill pmon sent, and when
  // everything was confirmed gone (never, if this failed).
  if (res.stop.reason == StopReason::none) {
    res.stop = escape_record;
    res.stop.reason = reason == StopReason::none ? StopReason::escaped : reason;
  } else {
    if (!res.stop.signal_sent_ms) res.stop.signal_sent_ms = escape_record.signal_sent_ms;
    if (!res.stop.kill_sent_ms) res.stop.kill_sent_ms = escape_record.kill_sent_ms;
    res.stop.empty_confirmed_ms = escape_record.empty_confirmed_ms;
  }
  trace(verified ? "nothing is left below pmon" : "processes below pmon could NOT be stopped");
  end_escapes(verified);
}

void CallMachine::end_escapes(bool verified) {
  if (!verified) res.cleanup_verified = false;
  escaped = found.take();
  below.reset();
  below_backend.reset();
  phase = Phase::settling;
  settle_until = sys::monotonic_ns() + kSettleNs;
  settle_exiting = false;
  settle();
}

}  // namespace pmon
