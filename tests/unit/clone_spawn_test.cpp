// SPDX-License-Identifier: Apache-2.0
// clone3_spawn: the vfork-style child runs on its own stack, sees our memory
// until it execs, and leaves the caller's signal mask and stack intact.
#include "sys/clone_spawn.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace {

using pmon::sys::CloneRequest;
using pmon::sys::clone3_spawn;
using pmon::sys::waitid_raw;

int wait_exit_code(int pidfd) {
  siginfo_t si{};
  EXPECT_EQ(waitid_raw(P_PIDFD, static_cast<id_t>(pidfd), &si, WEXITED, nullptr), 0);
  return si.si_code == CLD_EXITED ? si.si_status : -si.si_status;
}

TEST(CloneSpawn, ChildRunsTheFunctionAndItsExitCodeIsSeen) {
  auto r = clone3_spawn(CloneRequest{}, [](void*) { ::_exit(42); }, nullptr);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_GT(r->pid, 0);
  ASSERT_TRUE(r->pidfd.valid());
  EXPECT_EQ(wait_exit_code(r->pidfd.get()), 42);
}

TEST(CloneSpawn, AReturningFunctionEndsTheChildWith127) {
  auto r = clone3_spawn(CloneRequest{}, [](void*) {}, nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(wait_exit_code(r->pidfd.get()), 127);
}

TEST(CloneSpawn, TheArgumentArrivesAndExecWorks) {
  static const char* const argv[] = {"/bin/sh", "-c", "exit 7", nullptr};
  auto r = clone3_spawn(
      CloneRequest{},
      [](void* a) {
        ::execv("/bin/sh", const_cast<char* const*>(static_cast<const char* const*>(a)));
        ::_exit(99);
      },
      const_cast<char**>(argv));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(wait_exit_code(r->pidfd.get()), 7);
}

TEST(CloneSpawn, CallerStackAndSignalMaskSurvive) {
  sigset_t before, after;
  sigemptyset(&before);
  sigaddset(&before, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &before, nullptr), 0);
  volatile char canary[256];
  for (size_t i = 0; i < sizeof canary; ++i) canary[i] = static_cast<char>(i);
  // The child scribbles over a large local array of its own: on a stack of
  // its own that must not reach ours.
  auto r = clone3_spawn(
      CloneRequest{},
      [](void*) {
        volatile char junk[8192];
        for (size_t i = 0; i < sizeof junk; ++i) junk[i] = 0x5a;
        ::_exit(junk[100] == 0x5a ? 0 : 1);
      },
      nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(wait_exit_code(r->pidfd.get()), 0);
  for (size_t i = 0; i < sizeof canary; ++i) ASSERT_EQ(canary[i], static_cast<char>(i));
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &after), 0);
  EXPECT_TRUE(sigismember(&after, SIGUSR2));
  EXPECT_FALSE(sigismember(&after, SIGTERM));
  sigemptyset(&before);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &before, nullptr), 0);
}

TEST(CloneSpawn, ManyInARowFromOneThread) {
  for (int i = 0; i < 200; ++i) {
    auto r = clone3_spawn(CloneRequest{}, [](void*) { ::_exit(3); }, nullptr);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(wait_exit_code(r->pidfd.get()), 3);
  }
}

}  // namespace
