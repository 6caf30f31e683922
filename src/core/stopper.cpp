// SPDX-License-Identifier: Apache-2.0
#include "core/stopper.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {
// At most this many processes tracked. The time a snapshot looks goes on
// the stop's first signal: past the first few it is bounded (look_ns_),
// and a small tree is named whole however slow the machine.
constexpr size_t kMaxTracked = 4096;
}  // namespace

StopWake PollWaiter::wait(int64_t deadline, const Watch& w) {
  std::vector<pollfd> fds = w.fds;
  for (;;) {
    int64_t now = sys::monotonic_ns();
    if (now >= deadline) return StopWake::deadline;
    int timeout_ms = static_cast<int>(std::min<int64_t>((deadline - now + 999'999) / 1'000'000, 1 << 30));
    if (w.rescan_ms >= 0) timeout_ms = std::min(timeout_ms, w.rescan_ms);
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    return StopWake::changed;
  }
}

// Until when a snapshot whose looks began at `from` waits for names.
int64_t LeftoverTracker::names_by(int64_t from) const {
  return look_ns_ > INT64_MAX - from ? INT64_MAX : from + look_ns_;
}

// Whether a snapshot has looked enough: `looked` processes since `from`.
bool LeftoverTracker::enough(size_t looked, int64_t from) const {
  return tracked_.size() >= kMaxTracked || (looked >= kAlwaysLooked && sys::monotonic_ns() - from > look_ns_);
}

bool LeftoverTracker::track(pid_t pid) {
  auto fd = sys::pidfd_open(pid);
  if (!fd) return false;
  auto st = sys::read_stat(pid);
  if (!st || st->dead()) return false;
  Tracked t;
  t.info.pid = pid;
  t.info.start_time = st->start_time;
  t.comm = std::move(st->comm);
  // Alive after the read: it was this pidfd's process.
  if (!sys::pidfd_alive(fd->get())) return false;
  t.pidfd = std::move(*fd);
  tracked_.push_back(std::move(t));
  return true;
}

// Command lines read on a thread of their own: reading /proc/PID/cmdline
// waits for the process's memory map, which a process holds while it
// forks, so a read can wait as long as a fork takes a process starved of
// CPU (seconds, in a storm on a slow machine) and the stop must not wait
// with it. Shared by the tracker and the thread; `ones` is fixed before
// the thread starts, their results are set and read under `mu`.
struct LeftoverTracker::Names {
  struct One {
    pid_t pid = 0;
    uint64_t start_time = 0;
    Fd pidfd;  // a copy of the tracker's: the thread's own, closed by it
    std::shared_ptr<std::atomic<bool>> done;  // the tracked process's (Tracked::done)
    std::string cmdline;
    bool read = false;  // (and not taken yet)
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<One> ones;
  size_t left = 0;
  std::string (*read)(pid_t) = sys::read_cmdline;

  // Reads each in turn, but for one an earlier snapshot's thread has read
  // meanwhile. A command line read while its process is alive (by its
  // pidfd, after the read) is that process's.
  static void read_all(const std::shared_ptr<Names>& n) {
    for (One& o : n->ones) {
      const bool skip = o.done->load();
      std::string line = skip ? std::string() : n->read(o.pid);
      const bool alive = !skip && sys::pidfd_alive(o.pidfd.get());
      o.pidfd.reset();
      if (alive) o.done->store(true);
      std::lock_guard lock(n->mu);
      if (alive) {
        o.cmdline = std::move(line);
        o.read = true;
      }
      --n->left;
      n->cv.notify_all();
    }
  }
};

void LeftoverTracker::read_names(int64_t deadline) {
  auto n = std::make_shared<Names>();
  if (read_cmdline_ != nullptr) n->read = read_cmdline_;
  // Those never asked for first; then those an earlier snapshot's thread
  // has not read yet (it may be waiting on one of them: a second try, after
  // the rest).
  for (const bool asked : {false, true}) {
    for (Tracked& t : tracked_) {
      if (t.named || (t.done != nullptr) != asked || (asked && t.done->load())) continue;
      Names::One o;
      o.pid = t.info.pid;
      o.start_time = t.info.start_time;
      o.pidfd.reset(::fcntl(t.pidfd.get(), F_DUPFD_CLOEXEC, 0));
      if (!o.pidfd) continue;  // (named by its process name)
      if (!t.done) t.done = std::make_shared<std::atomic<bool>>(false);
      o.done = t.done;
      n->ones.push_back(std::move(o));
    }
  }
  if (n->ones.empty()) return;
  n->left = n->ones.size();
  // The thread takes no signal: those are for the caller's threads.
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  bool started = true;
  try {
    std::thread([n] { Names::read_all(n); }).detach();
  } catch (const std::system_error&) {
    started = false;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!started) {
    Names::read_all(n);  // (no thread to be had: read here, as they come)
  } else {
    std::unique_lock lock(n->mu);
    while (n->left > 0) {
      const int64_t now = sys::monotonic_ns();
      if (now >= deadline) break;
      if (deadline == INT64_MAX) n->cv.wait(lock);
      else n->cv.wait_for(lock, std::chrono::nanoseconds(deadline - now));
    }
  }
  names_.push_back(std::move(n));
  take_names();
}

void LeftoverTracker::take_names() {
  if (names_.empty()) return;
  std::unordered_map<pid_t, Tracked*> by_pid;
  for (Tracked& t : tracked_)
    if (!t.named) by_pid.emplace(t.info.pid, &t);
  for (const std::shared_ptr<Names>& n : names_) {
    std::lock_guard lock(n->mu);
    for (Names::One& o : n->ones) {
      if (!o.read) continue;
      auto it = by_pid.find(o.pid);
      if (it == by_pid.end() || it->second->info.start_time != o.start_time) continue;
      it->second->info.cmdline = std::move(o.cmdline);
      it->second->named = true;
      o.read = false;
      by_pid.erase(it);
    }
  }
  std::erase_if(names_, [](const std::shared_ptr<Names>& n) {
    std::lock_guard lock(n->mu);
    return n->left == 0;
  });
}

std::vector<pid_t> LeftoverTracker::keep_listed(const std::vector<pid_t>& listed) {
  std::erase_if(tracked_, [&](const Tracked& t) {
    return !std::binary_search(listed.begin(), listed.end(), t.info.pid) || !sys::pidfd_alive(t.pidfd.get());
  });
  return tracked_pids();
}

std::vector<pid_t> LeftoverTracker::tracked_pids() const {
  std::vector<pid_t> pids;
  for (const Tracked& t : tracked_) pids.push_back(t.info.pid);
  std::sort(pids.begin(), pids.end());
  return pids;
}

void LeftoverTracker::snapshot_ahead(Boundary& b, pid_t exclude_pid) {
  snapshot(b, exclude_pid);
  ahead_ = true;
}

void LeftoverTracker::snapshot(Boundary& b, pid_t exclude_pid) {
  listing_.reset();
  const bool refresh = std::exchange(ahead_, false);
  size_t looked = 0;
  if (auto listed = b.listed_pids()) {
    // One /proc read per process for what the report says of it, the
    // pidfd opened before it; membership confirmed by a second listing.
    // (A tracked pid still listed while its pidfd says alive is the same
    // process: its number cannot have been given to another.)
    std::vector<pid_t> sorted = *listed;
    std::sort(sorted.begin(), sorted.end());
    const std::vector<pid_t> kept = refresh ? keep_listed(sorted) : std::vector<pid_t>{};
    const int64_t from = sys::monotonic_ns();
    for (pid_t pid : *listed) {
      if (pid == exclude_pid || std::binary_search(kept.begin(), kept.end(), pid)) continue;
      if (enough(looked++, from)) break;
      (void)track(pid);
    }
    if (tracked_.empty()) {  // (the main process alone: nothing to confirm)
      listing_ = std::move(listed);
      return;
    }
    auto again = b.listed_pids();
    std::erase_if(tracked_, [&](const Tracked& t) {
      return again && !std::binary_search(again->begin(), again->end(), t.info.pid) &&
             sys::pidfd_alive(t.pidfd.get());
    });
    listing_ = std::move(again);
    read_names(names_by(from));
    return;
  }
  std::vector<sys::ProcStat> members = b.members();
  if (refresh) {
    // Kept: the same process (pid and start time) still a member, alive.
    std::vector<std::pair<pid_t, uint64_t>> now;
    for (const sys::ProcStat& p : members) now.emplace_back(p.pid, p.start_time);
    std::sort(now.begin(), now.end());
    std::erase_if(tracked_, [&](const Tracked& t) {
      return !std::binary_search(now.begin(), now.end(), std::pair{t.info.pid, t.info.start_time}) ||
             !sys::pidfd_alive(t.pidfd.get());
    });
  }
  const std::vector<pid_t> kept = tracked_pids();
  const int64_t from = sys::monotonic_ns();
  for (const sys::ProcStat& p : members) {
    if (p.pid == exclude_pid || std::binary_search(kept.begin(), kept.end(), p.pid)) continue;
    if (enough(looked++, from)) break;
    auto fd = sys::open_identified(p.pid, p.start_time);
    if (!fd) continue;
    Tracked t;
    t.info.pid = p.pid;
    t.info.start_time = p.start_time;
    t.comm = p.comm;
    t.pidfd = std::move(*fd);
    tracked_.push_back(std::move(t));
  }
  read_names(names_by(from));
}

void LeftoverTracker::label_dead(Fate fate) {
  for (Tracked& t : tracked_)
    if (!t.info.fate.decided() && !sys::pidfd_alive(t.pidfd.get())) t.info.fate = fate;
}

void LeftoverTracker::label_rest(Fate fate) {
  for (Tracked& t : tracked_)
    if (!t.info.fate.decided()) t.info.fate = fate;
}

void LeftoverTracker::wait_exited(int64_t deadline) const {
  std::vector<pollfd> fds;
  for (const Tracked& t : tracked_) fds.push_back({t.pidfd.get(), POLLIN, 0});
  while (!fds.empty()) {
    int64_t now = sys::monotonic_ns();
    if (now >= deadline) return;
    int n = ::poll(fds.data(), fds.size(), static_cast<int>((deadline - now) / 1'000'000 + 1));
    if (n < 0 && errno != EINTR) return;
    std::erase_if(fds, [](const pollfd& p) { return p.revents != 0; });
  }
}

std::vector<Leftover> LeftoverTracker::take() {
  take_names();
  std::vector<Leftover> out;
  for (Tracked& t : tracked_) {
    if (!t.named) t.info.cmdline = sys::unnamed_cmdline(t.comm);
    out.push_back(std::move(t.info));
  }
  tracked_.clear();
  names_.clear();  // (a thread still reading keeps its own)
  return out;
}

bool LeftoverTracker::all_exited() const {
  return std::all_of(tracked_.begin(), tracked_.end(), [](const Tracked& t) { return !sys::pidfd_alive(t.pidfd.get()); });
}

Watch LeftoverTracker::watch() const {
  Watch w;
  for (const Tracked& t : tracked_) w.fds.push_back({t.pidfd.get(), POLLIN, 0});
  return w;
}

double StopMachine::since_ms() const { return (sys::monotonic_ns() - ctx_.t0_ns) / 1e6; }

bool StopMachine::step_is_kill() const {
  return ctx_.plan->steps[i_].action == StopStep::Action::kill;
}

// (Before Linux 6.9 the kernel refuses the group flag: the boundary's
// passes are then all there is.)
void StopMachine::kill_group() {
  if (ctx_.group_pidfd >= 0) (void)sys::pidfd_signal_group(ctx_.group_pidfd, SIGKILL);
}

void StopMachine::start() {
  skip_grace_ = ctx_.skip_grace;
  i_ = 0;
  run_steps();
}

void StopMachine::run_steps() {
  Boundary& b = *ctx_.boundary;
  // A listing is fresh for the first pass only.
  const std::vector<pid_t>* listed = ctx_.listed;
  ctx_.listed = nullptr;
  for (; i_ < ctx_.plan->steps.size(); ++i_) {
    const StopStep& step = ctx_.plan->steps[i_];
    const bool kill = step.action == StopStep::Action::kill;
    if (!kill && skip_grace_) continue;
    int64_t step_start = sys::monotonic_ns();
    if (!kill) {
      record_.first_signal = step.signal;
      record_.signal_sent_ms = since_ms();
      // The main process is signalled through its own pidfd; the boundary's
      // pass may then leave it out.
      const bool main = ctx_.main_pidfd >= 0;
      const pid_t skip = main ? ctx_.main_pid : 0;
      // SIGCONT follows the signal to each process (a stopped one acts on
      // it then); one that appears after the pass got neither.
      if (main) {
        (void)sys::pidfd_send_signal(ctx_.main_pidfd, step.signal);
        if (step.with_cont) (void)sys::pidfd_send_signal(ctx_.main_pidfd, SIGCONT);
      }
      (void)b.signal_all(step.signal, SignalPass{skip, step.with_cont ? SIGCONT : 0, listed});
      listed = nullptr;
    } else {
      record_.kill_sent_ms = since_ms();
      kill_group();
      (void)b.kill_all();
      if (ctx_.main_pidfd >= 0) (void)sys::pidfd_send_signal(ctx_.main_pidfd, SIGKILL);
    }
    deadline_ = step_start + step.wait.count();
    auto e = b.empty();
    if (e && *e) {
      end_step(true);
      return;
    }
    return;  // wait for a wake
  }
  finish(false);
}

void StopMachine::on_wake(StopWake wake) {
  if (done_) return;
  Boundary& b = *ctx_.boundary;
  // A wake that comes after the step's deadline is the deadline's.
  if (wake == StopWake::changed && sys::monotonic_ns() >= deadline_) wake = StopWake::deadline;
  if (wake == StopWake::changed) {
    // A scan is a snapshot: kill again whatever was forked since the last.
    if (step_is_kill()) {
      kill_group();
      (void)b.kill_all();
    }
    auto e = b.empty();
    if (e && *e) end_step(true);
    return;
  }
  bool emptied = b.empty().value_or(false);
  end_step(emptied);
  if (done_) return;
  if (wake == StopWake::escalate) skip_grace_ = true;
  ++i_;
  run_steps();
}

void StopMachine::end_step(bool emptied) {
  if (emptied) record_.empty_confirmed_ms = since_ms();
  if (ctx_.leftovers) {
    // A cgroup reads empty as its last process leaves it, a moment before
    // that process has finished exiting (its pidfd turns readable then):
    // those went in this step too, not in a later one.
    if (emptied) ctx_.leftovers->wait_exited(sys::monotonic_ns() + 100'000'000);
    const StopStep& step = ctx_.plan->steps[i_];
    ctx_.leftovers->label_dead(step_is_kill() ? Fate::killed() : Fate::signalled_by(step.signal));
  }
  if (emptied) finish(true);
}

void StopMachine::finish(bool verified) {
  if (ctx_.leftovers) ctx_.leftovers->label_rest(verified ? Fate::killed() : Fate::survived());
  verified_ = verified;
  done_ = true;
}

bool execute_stop(const StopContext& ctx, StopRecord& record) {
  StopMachine m(ctx, record);
  m.start();
  while (!m.done()) m.on_wake(ctx.waiter->wait(m.deadline(), m.watch()));
  return m.verified();
}

}  // namespace pmon
