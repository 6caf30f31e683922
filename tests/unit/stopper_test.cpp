// SPDX-License-Identifier: Apache-2.0
// The stop executor's account of what ended each leftover.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <cstdint>
#include <map>
#include <vector>

#include "core/stopper.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {
namespace {

// A boundary that lists one real process and reads empty from the start, as
// a cgroup does once its last process has left it but has not yet finished
// exiting (cgroup.events says "populated 0" before the pidfd is readable).
class LeavingBoundary final : public Boundary {
 public:
  explicit LeavingBoundary(pid_t pid) : pids_{pid} {}
  explicit LeavingBoundary(std::vector<pid_t> pids) : pids_(std::move(pids)) {}
  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }
  void set_main(pid_t, Children) noexcept override {}
  std::vector<sys::ProcStat> members() override { return {}; }
  std::optional<std::vector<pid_t>> listed_pids() override { return pids_; }
  Result<int> signal_all(int, const SignalPass&) override {
    if (on_signal >= 0) {
      ::close(on_signal);
      on_signal = -1;
    }
    return 0;
  }
  Result<void> kill_all() override {
    killed = true;
    return {};
  }
  Result<bool> empty() override { return true; }
  Watch watch() override { return {}; }
  bool contains_escapes() const noexcept override { return true; }
  void release(bool) noexcept override {}
  bool killed = false;
  // A pipe's write end closed by the first signal step: a child reading the
  // other end ends then, as if the signal had ended it.
  int on_signal = -1;

 private:
  std::vector<pid_t> pids_;
};

TEST(Stopper, AProcessStillExitingWhenTheBoundaryReadsEmptyEndedInThatStep) {
  // The child ends 40 ms after the stop's first signal step has run: it is
  // still there when the boundary reads empty, however slow the machine (a
  // delay counted from the fork would not do: under an emulated CPU the
  // fork and the snapshot alone may take longer).
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[1]);
    char c;
    while (::read(fds[0], &c, 1) > 0) {
    }
    timespec ts{0, 40'000'000};
    ::nanosleep(&ts, nullptr);
    ::_exit(0);
  }
  ::close(fds[0]);
  LeavingBoundary b(child);
  b.on_signal = fds[1];
  LeftoverTracker tracker;
  tracker.snapshot(b, 0);
  ASSERT_EQ(tracker.size(), 1u);

  StopPlan plan = StopPlan::standard(SIGTERM, std::chrono::seconds(2));
  PollWaiter waiter;
  StopContext ctx;
  ctx.boundary = &b;
  ctx.plan = &plan;
  ctx.waiter = &waiter;
  ctx.leftovers = &tracker;
  ctx.t0_ns = sys::monotonic_ns();
  StopRecord record;
  EXPECT_TRUE(execute_stop(ctx, record));
  EXPECT_FALSE(b.killed) << "empty after the first signal: no SIGKILL step";
  std::vector<Leftover> left = tracker.take();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].fate, Fate::signalled_by(SIGTERM));
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
}

// A large tree: every listed process is tracked once, in listing order,
// with its own start time; the excluded one (the main process) and one that
// is gone are not. The look is not bounded in time here (a slow or busy
// machine, or an emulated CPU, would leave some unlooked at); with no time
// at all, the first few are looked at still.
TEST(Stopper, SnapshotOfManyProcessesTracksEachOnce) {
  constexpr int kN = 300;
  std::vector<pid_t> kids;
  for (int i = 0; i < kN; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  pid_t gone = ::fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);

  std::vector<pid_t> listed = kids;
  listed.insert(listed.begin() + kN / 3, gone);
  std::sort(listed.begin(), listed.end());
  LeavingBoundary b(listed);
  LeftoverTracker tracker(INT64_MAX);
  tracker.snapshot(b, kids[7]);
  LeftoverTracker hurried(0);
  hurried.snapshot(b, kids[7]);
  std::map<pid_t, uint64_t> started;
  for (pid_t k : kids)
    if (auto st = sys::read_stat(k)) started[k] = st->start_time;
  for (pid_t k : kids) ::kill(k, SIGKILL);
  for (pid_t k : kids) ::waitpid(k, nullptr, 0);

  std::vector<Leftover> left = tracker.take();
  ASSERT_EQ(left.size(), static_cast<size_t>(kN - 1));
  std::vector<pid_t> want;
  for (pid_t p : listed)
    if (p != kids[7] && p != gone) want.push_back(p);
  for (size_t i = 0; i < left.size(); ++i) {
    EXPECT_EQ(left[i].pid, want[i]);
    EXPECT_EQ(left[i].start_time, started[want[i]]);
    EXPECT_FALSE(left[i].cmdline.empty());
  }
  // (the gone one is looked at too, and not tracked)
  std::vector<pid_t> looked;
  for (pid_t p : listed)
    if (p != kids[7] && looked.size() < LeftoverTracker::kAlwaysLooked) looked.push_back(p);
  std::erase(looked, gone);
  std::vector<Leftover> first = hurried.take();
  ASSERT_EQ(first.size(), looked.size());
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].pid, looked[i]);
}

// A command line that does not come (a read of /proc/PID/cmdline waits
// for the process's memory map, which a process in the middle of a fork
// holds): the snapshot does not wait for it past its time. The process
// is tracked, and, dead before its command line came, named by its
// process name. The held read gives up after 10 s by itself: a snapshot
// that waited for it returns only then, and the test fails.
std::mutex g_held_mu;
std::condition_variable g_held_cv;
bool g_held_released = false, g_held_gave_up = false;
std::string held_read(pid_t) {
  std::unique_lock lock(g_held_mu);
  if (!g_held_cv.wait_for(lock, std::chrono::seconds(10), [] { return g_held_released; })) g_held_gave_up = true;
  return "held";
}

TEST(Stopper, ASnapshotDoesNotWaitForACommandLineThatDoesNotCome) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) ::pause();
  }
  auto st = sys::read_stat(child);
  ASSERT_TRUE(st);
  LeavingBoundary b(child);
  LeftoverTracker tracker(20'000'000, held_read);
  tracker.snapshot(b, 0);
  {
    std::lock_guard lock(g_held_mu);
    EXPECT_FALSE(g_held_gave_up) << "the snapshot waited for the command line";
  }
  ASSERT_EQ(tracker.size(), 1u);
  ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  {
    std::lock_guard lock(g_held_mu);
    g_held_released = true;
  }
  g_held_cv.notify_all();
  std::vector<Leftover> left = tracker.take();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].pid, child);
  EXPECT_EQ(left[0].cmdline, "[" + st->comm + "]");
}

// A command line that comes in time is the one the report gives.
std::string quick_read(pid_t) { return "quick one"; }

TEST(Stopper, ACommandLineThatComesInTimeNamesTheProcess) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) ::pause();
  }
  LeavingBoundary b(child);
  LeftoverTracker tracker(INT64_MAX, quick_read);
  tracker.snapshot(b, 0);
  ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  std::vector<Leftover> left = tracker.take();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].cmdline, "quick one");
}

// A boundary whose processes the test changes between two snapshots: by
// listing (a cgroup's) or, with `by_listing` false, as members read from
// /proc (the other backends).
class ChangingBoundary final : public Boundary {
 public:
  explicit ChangingBoundary(bool by_listing) : by_listing_(by_listing) {}
  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }
  void set_main(pid_t, Children) noexcept override {}
  std::vector<sys::ProcStat> members() override {
    std::vector<sys::ProcStat> out;
    for (pid_t p : pids)
      if (auto st = sys::read_stat(p); st && !st->dead()) out.push_back(*st);
    return out;
  }
  std::optional<std::vector<pid_t>> listed_pids() override {
    if (!by_listing_) return std::nullopt;
    std::vector<pid_t> sorted = pids;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }
  Result<int> signal_all(int, const SignalPass&) override { return 0; }
  Result<void> kill_all() override { return {}; }
  Result<bool> empty() override { return pids.empty(); }
  Watch watch() override { return {}; }
  bool contains_escapes() const noexcept override { return true; }
  void release(bool) noexcept override {}
  std::vector<pid_t> pids;

 private:
  bool by_listing_;
};

pid_t pausing_child() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// A snapshot taken ahead of a timeout, then the stop's own: the process
// that ended in between is not a leftover, the one started in between is,
// and the one there all along is kept as it was first read (its pidfd and
// start time), whichever way the boundary finds its processes.
TEST(Stopper, ASnapshotTakenAheadIsRefreshedByTheStopsOwn) {
  for (bool by_listing : {true, false}) {
    SCOPED_TRACE(by_listing ? "listed" : "members");
    const pid_t main = pausing_child(), stays = pausing_child(), ends = pausing_child();
    ASSERT_GT(main, 0);
    ASSERT_GT(stays, 0);
    ASSERT_GT(ends, 0);
    ChangingBoundary b(by_listing);
    b.pids = {main, stays, ends};
    LeftoverTracker tracker;
    tracker.snapshot_ahead(b, main);
    EXPECT_TRUE(tracker.taken_ahead());
    EXPECT_EQ(tracker.size(), 2u);

    ::kill(ends, SIGKILL);
    ASSERT_EQ(::waitpid(ends, nullptr, 0), ends);
    const pid_t late = pausing_child();
    ASSERT_GT(late, 0);
    b.pids = {main, stays, ends, late};  // `ends` as a listing read a moment late

    tracker.snapshot(b, main);
    EXPECT_FALSE(tracker.taken_ahead());
    const uint64_t stays_start = sys::read_stat(stays)->start_time;
    const uint64_t late_start = sys::read_stat(late)->start_time;
    for (pid_t p : {main, stays, late}) ::kill(p, SIGKILL);
    for (pid_t p : {main, stays, late}) ::waitpid(p, nullptr, 0);

    std::vector<Leftover> left = tracker.take();
    ASSERT_EQ(left.size(), 2u);
    std::sort(left.begin(), left.end(), [](const Leftover& x, const Leftover& y) { return x.pid < y.pid; });
    std::vector<std::pair<pid_t, uint64_t>> want{{stays, stays_start}, {late, late_start}};
    std::sort(want.begin(), want.end());
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(left[i].pid, want[i].first);
      EXPECT_EQ(left[i].start_time, want[i].second);
      EXPECT_FALSE(left[i].cmdline.empty());
    }
  }
}

}  // namespace
}  // namespace pmon

namespace pmon {
namespace {

// Never empty, and its waiter wakes at once every time (an fd that stays
// ready): each step must still end at its deadline.
class StuckBoundary final : public Boundary {
 public:
  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }
  void set_main(pid_t, Children) noexcept override {}
  std::vector<sys::ProcStat> members() override { return {}; }
  Result<int> signal_all(int, const SignalPass&) override { return 0; }
  Result<void> kill_all() override {
    ++kills;
    return {};
  }
  Result<bool> empty() override { return false; }
  Watch watch() override { return {}; }
  bool contains_escapes() const noexcept override { return true; }
  void release(bool) noexcept override {}
  int kills = 0;
};

class RestlessWaiter final : public StopWaiter {
 public:
  StopWake wait(int64_t, const Watch&) override { return StopWake::changed; }
};

// A command line read that waits (a process forking holds its memory map)
// while the thread of an earlier snapshot is still at it: the stop's own
// snapshot reads first the process that no snapshot asked for yet, so that
// one is named, not held up behind the read that waits.
std::mutex g_gate_mu;
std::condition_variable g_gate_cv;
pid_t g_gated = 0;
bool g_gate_open = false;
std::map<pid_t, int> g_reads;
std::string gated_read(pid_t pid) {
  std::unique_lock lock(g_gate_mu);
  ++g_reads[pid];
  g_gate_cv.notify_all();
  if (pid == g_gated) g_gate_cv.wait_for(lock, std::chrono::seconds(120), [] { return g_gate_open; });
  return "read " + std::to_string(pid);
}

TEST(Stopper, ALaterSnapshotNamesANewProcessFirst) {
  const pid_t first = pausing_child(), second = pausing_child();
  ASSERT_GT(first, 0);
  ASSERT_GT(second, 0);
  ChangingBoundary b(true);
  b.pids = {first, second};
  {
    std::lock_guard lock(g_gate_mu);
    g_gated = std::min(first, second);  // the listing's first: read first
  }
  LeftoverTracker tracker(20'000'000, gated_read);
  tracker.snapshot_ahead(b, 0);
  const pid_t late = pausing_child();
  ASSERT_GT(late, 0);
  b.pids = {first, second, late};
  tracker.snapshot(b, 0);
  bool late_read;
  {
    std::unique_lock lock(g_gate_mu);
    // Read, and its result kept: the same thread has gone on to the held one.
    late_read = g_gate_cv.wait_for(lock, std::chrono::seconds(15),
                                   [&] { return g_reads[late] > 0 && g_reads[g_gated] >= 2; });
    EXPECT_TRUE(late_read) << "the new process's command line waited behind the one held";
    g_gate_open = true;
  }
  g_gate_cv.notify_all();
  std::vector<Leftover> left = tracker.take();
  for (pid_t p : {first, second, late}) ::kill(p, SIGKILL);
  for (pid_t p : {first, second, late}) ::waitpid(p, nullptr, 0);
  ASSERT_EQ(left.size(), 3u);
  auto named = std::find_if(left.begin(), left.end(), [&](const Leftover& l) { return l.pid == late; });
  ASSERT_NE(named, left.end());
  EXPECT_EQ(named->cmdline, "read " + std::to_string(late));
}

TEST(Stopper, AWaiterThatNeverSleepsStillEndsEachStepAtItsDeadline) {
  StuckBoundary b;
  RestlessWaiter waiter;
  StopPlan plan = StopPlan::standard(SIGTERM, std::chrono::milliseconds(30), std::chrono::milliseconds(30));
  StopContext ctx;
  ctx.boundary = &b;
  ctx.plan = &plan;
  ctx.waiter = &waiter;
  ctx.t0_ns = sys::monotonic_ns();
  StopRecord record;
  EXPECT_FALSE(execute_stop(ctx, record));
  EXPECT_TRUE(record.kill_sent_ms.has_value()) << "the grace step never ended: no SIGKILL";
  EXPECT_GE(b.kills, 1);
}

}  // namespace
}  // namespace pmon
