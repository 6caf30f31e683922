// SPDX-License-Identifier: Apache-2.0
// RunOptions::parent_fd: once it is readable (the parent's pidfd, here a
// pipe standing in for it) the driver stops the call, whose report says why:
// stop reason parent_exited, outcome cancelled with no cancelling signal.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "confine/boundary.h"
#include "core/run.h"

namespace pmon {
namespace {

TEST(ParentExit, StopsTheCallAndSaysWhy) {
  auto be = open_pgroup_backend();
  ASSERT_TRUE(be.has_value());
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ASSERT_EQ(::write(p[1], "x", 1), 1);  // the parent is gone before the call waits
  RunOptions opts;
  opts.call.spawn.argv = {"/bin/sleep", "100"};
  opts.parent_fd = p[0];
  auto r = run_call(**be, opts);
  ::close(p[0]);
  ::close(p[1]);
  ASSERT_TRUE(r.has_value()) << r.error().text;
  EXPECT_EQ(r->end, CallEnd::parent_exited);
  EXPECT_EQ(r->stop.reason, StopReason::ended);
  EXPECT_EQ(r->outcome, Outcome::cancelled);
  EXPECT_EQ(r->cancel_signal, 0);
  EXPECT_TRUE(r->cleanup_verified);
  EXPECT_EQ(r->status(), 129);
  EXPECT_EQ(r->signal, SIGTERM);  // the sleep died by the stop's first signal
}

TEST(ParentExit, ACallThatEndsFirstIsNotStopped) {
  auto be = open_pgroup_backend();
  ASSERT_TRUE(be.has_value());
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  RunOptions opts;
  opts.call.spawn.argv = {"/bin/sh", "-c", "exit 3"};
  opts.parent_fd = p[0];
  auto r = run_call(**be, opts);
  ::close(p[0]);
  ::close(p[1]);
  ASSERT_TRUE(r.has_value()) << r.error().text;
  EXPECT_EQ(r->stop.reason, StopReason::none);
  EXPECT_EQ(r->outcome, Outcome::exited);
  EXPECT_EQ(r->status(), 3);
}

}  // namespace
}  // namespace pmon
