// The stop executor's account of what ended each leftover.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/stopper.h"
#include "sys/syscalls.h"

namespace pmon {
namespace {

// A boundary that lists one real process and reads empty from the start, as
// a cgroup does once its last process has left it but has not yet finished
// exiting (cgroup.events says "populated 0" before the pidfd is readable).
class LeavingBoundary final : public Boundary {
 public:
  explicit LeavingBoundary(pid_t pid) : pid_(pid) {}
  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }
  void set_main(pid_t) noexcept override {}
  std::vector<sys::ProcStat> members() override { return {}; }
  std::optional<std::vector<pid_t>> listed_pids() override { return std::vector<pid_t>{pid_}; }
  Result<int> signal_all(int) override { return 0; }
  Result<void> kill_all() override {
    killed = true;
    return {};
  }
  Result<bool> empty() override { return true; }
  Watch watch() override { return {}; }
  bool contains_escapes() const noexcept override { return true; }
  void release(bool) noexcept override {}
  bool killed = false;

 private:
  pid_t pid_;
};

TEST(Stopper, AProcessStillExitingWhenTheBoundaryReadsEmptyEndedInThatStep) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    timespec ts{0, 40'000'000};  // "still exiting" for 40 ms
    ::nanosleep(&ts, nullptr);
    ::_exit(0);
  }
  LeavingBoundary b(child);
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
  EXPECT_EQ(left[0].action, "SIGTERM");
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
}

}  // namespace
}  // namespace pmon
