// SPDX-License-Identifier: Apache-2.0
// spawn()'s hot-path options for a service that starts many children: the
// dispositions it names are reset (and no others), and a child started
// during a stop takes the caller's unraised priority. Each child reads its
// own /proc/self/status or stat, which the kernel writes: no printed claim.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "confine/boundary.h"
#include "core/spawn.h"
#include "sys/priority.h"
#include "sys/syscalls.h"

namespace pmon {
namespace {

void on_usr1(int) {}

// The line of the child's /proc/self/status that starts with `key`, e.g.
// "SigIgn:\t0000000000001000".
std::string child_status_line(SpawnSpec s, Boundary& boundary, const std::string& key);

// What `script` (run by /bin/sh in the child) prints, without its last
// newlines.
std::string child_says(SpawnSpec s, Boundary& boundary, const std::string& script) {
  int out[2];
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  s.argv = {"/bin/sh", "-c", script};
  s.stdio = {-1, out[1], -1};
  auto c = spawn(s, boundary);
  ::close(out[1]);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().text);
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  if (c) {
    siginfo_t si{};
    EXPECT_EQ(sys::waitid_raw(P_PIDFD, static_cast<id_t>(c->pidfd.get()), &si, WEXITED, nullptr), 0);
    EXPECT_EQ(si.si_code, CLD_EXITED);
    EXPECT_EQ(si.si_status, 0);
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string child_status_line(SpawnSpec s, Boundary& boundary, const std::string& key) {
  return child_says(std::move(s), boundary, "grep '^" + key + "' /proc/self/status");
}

// One bit of a /proc status signal mask ("SigIgn:\t<hex>").
bool mask_has(const std::string& line, int sig) {
  unsigned long long m = std::stoull(line.substr(line.find(':') + 1), nullptr, 16);
  return (m >> (sig - 1)) & 1ULL;
}

class SpawnStart : public ::testing::Test {
 protected:
  void SetUp() override {
    auto be = open_pgroup_backend();
    ASSERT_TRUE(be.has_value());
    backend_ = std::move(*be);
    auto b = backend_->open_boundary();
    ASSERT_TRUE(b.has_value());
    boundary_ = std::move(*b);
    ASSERT_EQ(::sigaction(SIGUSR2, nullptr, &old_usr2_), 0);
    ASSERT_EQ(::sigaction(SIGURG, nullptr, &old_urg_), 0);
    ASSERT_EQ(::sigaction(SIGUSR1, nullptr, &old_usr1_), 0);
  }
  void TearDown() override {
    (void)::sigaction(SIGUSR2, &old_usr2_, nullptr);
    (void)::sigaction(SIGURG, &old_urg_, nullptr);
    (void)::sigaction(SIGUSR1, &old_usr1_, nullptr);
  }
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Boundary> boundary_;
  struct sigaction old_usr2_ {}, old_urg_ {}, old_usr1_ {};
};

TEST_F(SpawnStart, NonDefaultDispositionsNamesHandlersAndIgnoredOnly) {
  struct sigaction h = {};
  h.sa_handler = on_usr1;
  ASSERT_EQ(::sigaction(SIGUSR1, &h, nullptr), 0);
  ASSERT_NE(::signal(SIGUSR2, SIG_IGN), SIG_ERR);
  ASSERT_NE(::signal(SIGURG, SIG_DFL), SIG_ERR);
  sigset_t set = sys::non_default_dispositions();
  EXPECT_EQ(::sigismember(&set, SIGUSR1), 1);
  EXPECT_EQ(::sigismember(&set, SIGUSR2), 1);
  EXPECT_EQ(::sigismember(&set, SIGURG), 0);
  EXPECT_EQ(::sigismember(&set, SIGKILL), 0);
  EXPECT_EQ(::sigismember(&set, SIGSTOP), 0);
}

// Ignored in the parent and named: the command sees it default again. The
// set is the caller's word: a signal it leaves out keeps what it inherits
// (which is why only a caller that never changes them may pass one).
TEST_F(SpawnStart, OnlyTheNamedDispositionsAreReset) {
  ASSERT_NE(::signal(SIGUSR2, SIG_IGN), SIG_ERR);
  ASSERT_NE(::signal(SIGURG, SIG_IGN), SIG_ERR);
  sigset_t named;
  ::sigemptyset(&named);
  ::sigaddset(&named, SIGUSR2);
  SpawnSpec s;
  s.changed_signals = &named;
  std::string ign = child_status_line(s, *boundary_, "SigIgn");
  ASSERT_FALSE(ign.empty());
  EXPECT_FALSE(mask_has(ign, SIGUSR2)) << ign;
  EXPECT_TRUE(mask_has(ign, SIGURG)) << ign;

  // Without a set, every one is reset.
  std::string all = child_status_line(SpawnSpec{}, *boundary_, "SigIgn");
  EXPECT_FALSE(mask_has(all, SIGUSR2)) << all;
  EXPECT_FALSE(mask_has(all, SIGURG)) << all;
}

// A stop raises the thread's priority (sys/priority.h); a child it starts
// meanwhile (another job of the service) starts at the thread's own value.
// The child's nice value is field 19 of its /proc/self/stat.
TEST_F(SpawnStart, AChildStartedDuringAStopTakesTheUnraisedPriority) {
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  const std::string nice_of_child = "set -- $(cat /proc/self/stat); shift 18; echo $1";
  {
    sys::StopPriority outer, inner;
    outer.take();
    inner.take();
    const int raised = ::getpriority(PRIO_PROCESS, 0);
    if (raised == before) GTEST_SKIP() << "this user may not raise its priority (CAP_SYS_NICE, RLIMIT_NICE)";
    EXPECT_EQ(raised, std::max(before - sys::kStopBoost, -20));
    EXPECT_EQ(sys::unraised_nice(), before);
    EXPECT_EQ(child_says(SpawnSpec{}, *boundary_, nice_of_child), std::to_string(before));
    outer.release();
    EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), raised) << "the inner stop still holds the raise";
  }
  EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), before);
  EXPECT_EQ(sys::unraised_nice(), sys::kKeepNice);
  EXPECT_EQ(child_says(SpawnSpec{}, *boundary_, nice_of_child), std::to_string(before));
}

// A stop that walks /proc runs its thread under SCHED_RR; a child it
// starts meanwhile runs under SCHED_OTHER at the thread's own nice value
// (the policy is field 41 of /proc/PID/stat, the nice value 19).
TEST_F(SpawnStart, AChildStartedDuringARealTimeStopRunsUnderTheOrdinaryPolicy) {
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  const std::string policy_and_nice = "set -- $(cat /proc/self/stat); shift 18; n=$1; shift 22; echo $1 $n";
  {
    sys::StopPriority stop;
    stop.take(true);
    const int policy = ::sched_getscheduler(0);
    if (policy == SCHED_OTHER) GTEST_SKIP() << "this user may not run a thread under SCHED_RR (CAP_SYS_NICE)";
    EXPECT_EQ(policy, SCHED_RR | SCHED_RESET_ON_FORK);
    EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), before) << "real time instead of nice levels, not both";
    EXPECT_EQ(sys::unraised_nice(), before);
    EXPECT_EQ(child_says(SpawnSpec{}, *boundary_, policy_and_nice), "0 " + std::to_string(before));
  }
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);
  EXPECT_EQ(::getpriority(PRIO_PROCESS, 0), before);
  EXPECT_EQ(sys::unraised_nice(), sys::kKeepNice);
}

}  // namespace
}  // namespace pmon
