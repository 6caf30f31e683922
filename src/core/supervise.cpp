// SPDX-License-Identifier: Apache-2.0
#include "core/supervise.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "core/driver.h"
#include "sys/proc.h"
#include "sys/reap.h"
#include "sys/syscalls.h"

namespace pmon {

std::string_view to_string(Engine e) noexcept {
  switch (e) {
    case Engine::pidfd: return "pidfd";
    case Engine::sigchld: return "sigchld";
  }
  return "?";
}

std::optional<Engine> parse_engine(std::string_view s) noexcept {
  if (s == "pidfd") return Engine::pidfd;
  if (s == "sigchld") return Engine::sigchld;
  return std::nullopt;
}

std::string format_event(const SuperviseEvent& e) {
  const std::string child = "child=" + std::to_string(e.pid);
  switch (e.kind) {
    case SuperviseEvent::Kind::started:
      if (e.engine == Engine::pidfd)
        return "pmon: engine=pidfd " + child + " pidfd=" + std::to_string(e.pidfd);
      return "pmon: engine=sigchld " + child;
    case SuperviseEvent::Kind::exited:
      if (e.status.signaled)
        return "pmon: " + child + " killed signal=" + std::to_string(e.status.code);
      return "pmon: " + child + " exited status=" + std::to_string(e.status.code);
    case SuperviseEvent::Kind::restarting:
      return "pmon: restart " + std::to_string(e.restart) + "/" + std::to_string(e.max_restarts);
    case SuperviseEvent::Kind::giving_up:
      return "pmon: giving up after " + std::to_string(e.max_restarts) + " restarts";
    case SuperviseEvent::Kind::exiting:
      return e.end == SuperviseEnd::signal ? "pmon: exiting (signal)" : "pmon: exiting (timeout)";
  }
  return "pmon: ?";
}

int SuperviseResult::status() const noexcept {
  switch (end) {
    case SuperviseEnd::clean_exit: return 0;
    case SuperviseEnd::gave_up: return 1;
    case SuperviseEnd::timeout: return 124;
    case SuperviseEnd::signal: return 128 + stop_signal;
    case SuperviseEnd::spawn_failed: return spawn_error ? exit_status(*spawn_error) : 125;
    case SuperviseEnd::cleanup_failed: return 125;
  }
  return 125;
}

namespace {

using sys::kForever;
// How long orphans in transit may take to become our zombies at the end.
constexpr int64_t kFinalReapNs = 200'000'000;

// The restart loop: each child is a Call (its own boundary, the stop plan,
// verification, what escaped it stopped too), waited for by one driver
// whose signal policy is the loop's: the first stop signal ends
// supervision, a later one skips the grace period.
class Supervisor {
 public:
  Supervisor(Backend& backend, const SuperviseOptions& opts)
      : backend_(backend),
        opts_(opts),
        driver_(opts.signal_fd, SignalPolicy{[this](int sig) { on_signal(sig); }, [this] { reaper_.reap(); }}) {}

  SuperviseResult run();

 private:
  void emit(const SuperviseEvent& e) const {
    if (opts_.on_event) opts_.on_event(e);
  }
  void on_signal(int sig);
  bool restart_delay();
  void final_reap();
  SuperviseResult finish(SuperviseEnd end);
  void emit_exited(pid_t pid);
  std::string cleanup_error(const RunResult& r, pid_t pid) const;

  Backend& backend_;
  const SuperviseOptions& opts_;
  sys::Reaper reaper_;
  Driver driver_;
  std::unique_ptr<Call> call_;
  int64_t deadline_ = kForever;
  int stop_signal_ = 0;
  bool timed_out_ = false;
  bool escalate_ = false;
  SuperviseResult res_;
};

// The first stop signal (or one after the deadline) is a stop request; any
// later one skips the grace period of the stop under way.
void Supervisor::on_signal(int sig) {
  if (stop_signal_ != 0 || timed_out_) {
    escalate_ = true;
    if (call_) call_->escalate();
    return;
  }
  stop_signal_ = sig;
  if (call_ && !call_->finishing() && !call_->finished()) call_->end(Call::End::cancel, sig);
}

// The optional backoff between two children; false when the deadline or a
// stop signal ended it.
bool Supervisor::restart_delay() {
  if (opts_.restart_delay.count() > 0) {
    const int64_t start = sys::monotonic_ns();
    const int64_t until = std::min(deadline_, start + opts_.restart_delay.count());
    while (sys::monotonic_ns() < until && stop_signal_ == 0) (void)driver_.wait_once(nullptr, until);
    if (stop_signal_ != 0) return false;
  }
  if (deadline_ != kForever && sys::monotonic_ns() >= deadline_) {
    timed_out_ = true;
    return false;
  }
  return true;
}

// Orphans may still be between leaving their boundary and becoming zombies
// of ours: give them a moment and reap them, so nothing is left unreaped.
// What stays alive below us escaped a weak boundary and could not be
// stopped: it is reported.
void Supervisor::final_reap() {
  const pid_t self = ::getpid();
  const pid_t guard = guard_pid(&backend_);
  reap_stragglers(driver_, reaper_, kFinalReapNs, backend_.kind() != ConfineKind::pgroup, guard);
  std::vector<sys::ProcStat> table = sys::scan_processes();
  for (const sys::ProcStat& p : sys::descendants_of(table, self))
    if (!p.dead() && p.pid != guard) res_.escaped.push_back(p);
}

SuperviseResult Supervisor::finish(SuperviseEnd end) {
  res_.end = end;
  if (end == SuperviseEnd::signal) res_.stop_signal = stop_signal_;
  if (end == SuperviseEnd::timeout || end == SuperviseEnd::signal) {
    SuperviseEvent e;
    e.kind = SuperviseEvent::Kind::exiting;
    e.end = end;
    emit(e);
  }
  driver_.detach();
  call_.reset();
  final_reap();
  return std::move(res_);
}

void Supervisor::emit_exited(pid_t pid) {
  res_.last_status = sys::exit_status_from(reaper_.main_info());
  SuperviseEvent e;
  e.kind = SuperviseEvent::Kind::exited;
  e.engine = opts_.engine;
  e.pid = pid;
  e.status = *res_.last_status;
  emit(e);
}

std::string Supervisor::cleanup_error(const RunResult& r, pid_t pid) const {
  std::string list;
  size_t n = 0;
  for (const std::vector<Leftover>* v : {&r.leftovers, &r.escaped})
    for (const Leftover& l : *v)
      if (l.fate.kind == Fate::Kind::survived && n++ < 5)
        list += (list.empty() ? "" : ", ") + std::to_string(l.pid) + " (" + l.cmdline.substr(0, 60) + ")";
  return "could not confirm child=" + std::to_string(pid) + "'s tree is gone" + (list.empty() ? "" : "; still running: " + list);
}

SuperviseResult Supervisor::run() {
  if (opts_.timeout) deadline_ = sys::monotonic_ns() + opts_.timeout->count();

  for (;;) {
    RunOptions ro;
    ro.call = opts_.call;
    ro.signal_fd = opts_.signal_fd;
    ro.own_all_children = true;
    ro.reaper = &reaper_;
    ro.main_by_pidfd = opts_.engine == Engine::pidfd;
    ro.trace = opts_.trace;
    // The supervision's deadline is each child's timeout.
    if (deadline_ != kForever) ro.call.timeout = Nanos(std::max<int64_t>(1, deadline_ - sys::monotonic_ns()));
    call_ = std::make_unique<Call>(backend_, std::move(ro));
    if (auto s = call_->start(); !s) {
      res_.spawn_error = s.error();
      return finish(SuperviseEnd::spawn_failed);
    }
    const pid_t pid = call_->pid();
    ++res_.spawns;
    SuperviseEvent started;
    started.kind = SuperviseEvent::Kind::started;
    started.engine = opts_.engine;
    started.pid = pid;
    started.pidfd = call_->pidfd();
    emit(started);
    if (auto cg = call_->cgroup(); cg && opts_.trace) opts_.trace("child=" + std::to_string(pid) + " in " + *cg);

    driver_.attach(*call_);
    Call::End why = driver_.wait_for_end(kForever);
    // (A call ended by a stop signal reads as ended: the signal says which.)
    if (why != Call::End::main_exited) {
      if (stop_signal_ != 0) why = Call::End::cancel;
      else timed_out_ = true;
    }
    // The child exited: a restart must never leave its tree behind. Else
    // (the deadline, a stop signal) the whole tree is stopped, then how the
    // child ended is said.
    const RunResult& r = driver_.finish(why);
    const bool collected = reaper_.main_reaped();
    if (collected) emit_exited(pid);
    bool verified = r.cleanup_verified;
    if (!verified) res_.cleanup_error = cleanup_error(r, pid);
    if (opts_.after_child && !opts_.after_child() && verified) {
      verified = false;
      res_.cleanup_error = "could not confirm the jobs a service started for child=" + std::to_string(pid) + " are gone";
    }
    if (why != Call::End::main_exited) {
      if (!collected && res_.cleanup_error.empty())
        res_.cleanup_error = "child=" + std::to_string(pid) + " could not be collected";
      if (!verified || !collected) return finish(SuperviseEnd::cleanup_failed);
      return finish(timed_out_ ? SuperviseEnd::timeout : SuperviseEnd::signal);
    }
    if (!verified) return finish(SuperviseEnd::cleanup_failed);
    if (stop_signal_ != 0) return finish(SuperviseEnd::signal);
    if (!res_.last_status->signaled && res_.last_status->code == 0) return finish(SuperviseEnd::clean_exit);
    if (res_.restarts >= opts_.max_restarts) {
      SuperviseEvent e;
      e.kind = SuperviseEvent::Kind::giving_up;
      e.max_restarts = opts_.max_restarts;
      emit(e);
      return finish(SuperviseEnd::gave_up);
    }
    if (timed_out_ || (deadline_ != kForever && sys::monotonic_ns() >= deadline_)) {
      timed_out_ = true;
      return finish(SuperviseEnd::timeout);
    }
    ++res_.restarts;
    SuperviseEvent e;
    e.kind = SuperviseEvent::Kind::restarting;
    e.restart = res_.restarts;
    e.max_restarts = opts_.max_restarts;
    emit(e);
    driver_.detach();
    call_.reset();
    if (!restart_delay()) return finish(timed_out_ ? SuperviseEnd::timeout : SuperviseEnd::signal);
  }
}

}  // namespace

SuperviseResult supervise(Backend& backend, const SuperviseOptions& opts) {
  Supervisor s(backend, opts);
  return s.run();
}

}  // namespace pmon
