// SPDX-License-Identifier: Apache-2.0
// A call's report takes its figures from its boundary, read once as the call
// wraps up: CPU time and peak memory always where the caller shows them, and
// what the limits met only where the call set a limit.
#include <gtest/gtest.h>

#include <memory>

#include "confine/boundary.h"
#include "core/run.h"

namespace pmon {
namespace {

// A boundary that holds only its main process (a real `true`), empty from
// the start, and knows every figure; it keeps which ones were asked for.
class FiguresBoundary final : public Boundary {
 public:
  explicit FiguresBoundary(std::vector<FiguresWanted>& asked) : asked_(asked) {}
  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }
  void set_main(pid_t, Children) noexcept override {}
  std::vector<sys::ProcStat> members() override { return {}; }
  Result<int> signal_all(int, const SignalPass&) override { return 0; }
  Result<void> kill_all() override { return {}; }
  Result<bool> empty() override { return true; }
  Watch watch() override { return {}; }
  bool contains_escapes() const noexcept override { return true; }
  std::expected<void, Error> set_limits(const Limits&, LimitsFrom) override { return {}; }
  Figures figures(FiguresWanted wanted) override {
    asked_.push_back(wanted);
    Figures f;
    if (wanted.usage) f.cpu_usec = 7, f.memory_peak_bytes = 9;
    if (wanted.limit_hits) f.oom_killed = true, f.pids_max_hit = false, f.memory_high_hit = true;
    return f;
  }
  void release(bool) noexcept override {}

 private:
  std::vector<FiguresWanted>& asked_;
};

class FiguresBackend final : public Backend {
 public:
  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }
  Result<std::unique_ptr<Boundary>> open_boundary() override { return std::make_unique<FiguresBoundary>(asked); }
  std::string describe() const override { return "figures"; }
  std::vector<FiguresWanted> asked;
};

RunOptions true_call() {
  RunOptions o;
  o.call.spawn.argv = {"/bin/true"};
  return o;
}

TEST(CallFigures, ReadOnceAndAllReachTheReport) {
  FiguresBackend backend;
  RunOptions o = true_call();
  o.call.limits.memory_max = uint64_t{1} << 30;
  auto r = run_call(backend, o);
  ASSERT_TRUE(r) << r.error().text;
  ASSERT_EQ(backend.asked.size(), 1u);
  EXPECT_TRUE(backend.asked[0].usage);
  EXPECT_TRUE(backend.asked[0].limit_hits);
  EXPECT_EQ(r->cpu_usec, 7u);
  EXPECT_EQ(r->memory_peak_bytes, 9u);
  EXPECT_EQ(r->oom_killed, true);
  EXPECT_EQ(r->pids_max_hit, false);
  EXPECT_EQ(r->memory_high_hit, true);
}

TEST(CallFigures, WhatTheLimitsMetOnlyWhereALimitWasSet) {
  FiguresBackend backend;
  RunOptions o = true_call();
  o.call.limits.pids_max = 0;  // none, not even the default
  auto r = run_call(backend, o);
  ASSERT_TRUE(r) << r.error().text;
  ASSERT_EQ(backend.asked.size(), 1u);
  EXPECT_FALSE(backend.asked[0].limit_hits);
  EXPECT_EQ(r->cpu_usec, 7u);
  EXPECT_FALSE(r->oom_killed);
  EXPECT_FALSE(r->pids_max_hit);
  EXPECT_FALSE(r->memory_high_hit);
}

TEST(CallFigures, ACgroupsUsageOnlyForACallerThatShowsIt) {
  FiguresBackend backend;
  RunOptions o = true_call();
  o.call.limits.pids_max = 0;
  o.session_figures = false;
  auto r = run_call(backend, o);
  ASSERT_TRUE(r) << r.error().text;
  EXPECT_TRUE(backend.asked.empty());
  EXPECT_FALSE(r->cpu_usec);
  EXPECT_FALSE(r->memory_peak_bytes);
}

}  // namespace
}  // namespace pmon
