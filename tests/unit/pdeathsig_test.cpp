// SPDX-License-Identifier: Apache-2.0
// The timing cases of seed 001 for spawn()'s parent-death signal, each with
// explicit synchronization points (a socket or pipe, never a sleep). The
// test process is a subreaper, so it outlives every "parent" it forks,
// adopts the orphaned child and reads its real status: proof by waitid,
// not by a printed message.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <thread>

#include "confine/boundary.h"
#include "core/spawn.h"
#include "sys/syscalls.h"

namespace pmon {
namespace {

std::string helper(const char* name) {
  if (const char* h = std::getenv("PMON_HELPERS")) return std::string(h) + "/" + name;
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return name;
  std::string exe(buf, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/')) + "/helpers/" + name;
}

std::string read_line(int fd) {
  std::string s;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

class Pdeathsig : public ::testing::Test {
 protected:
  void SetUp() override {
    probe_ = helper("pdeathsig_probe");
    // Built with the tests: missing means a broken build, not a reason to skip.
    if (::access(probe_.c_str(), X_OK) != 0) GTEST_FAIL() << "helper " << probe_ << " missing";
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL), 0);
    auto be = open_pgroup_backend();
    ASSERT_TRUE(be.has_value());
    backend_ = std::move(*be);
    auto b = backend_->open_boundary();
    ASSERT_TRUE(b.has_value());
    boundary_ = std::move(*b);
    char dir[] = "/tmp/pmon-pdeathsig.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      (void)::unlink((dir_ + "/mark").c_str());
      (void)::rmdir(dir_.c_str());
    }
    (void)::prctl(PR_SET_CHILD_SUBREAPER, 0UL, 0UL, 0UL, 0UL);
  }

  // Reaps `pid` (blocking) and returns its siginfo.
  static siginfo_t reap(pid_t pid) {
    siginfo_t si{};
    EXPECT_EQ(sys::waitid_raw(P_PID, static_cast<id_t>(pid), &si, WEXITED, nullptr), 0);
    return si;
  }

  std::string probe_, dir_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Boundary> boundary_;
};

// Parent P dies after the clone but before the child arms: the child must
// notice (getppid is no longer P) and stop before doing any of its work.
TEST_F(Pdeathsig, ParentExitsBeforeArmingChildStopsBeforeWork) {
  int sp[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
  const std::string mark = dir_ + "/mark";
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    SpawnSpec s;
    s.argv = {probe_, "--mark", mark};
    s.pdeathsig = SIGKILL;
    s.test_arm_gate_fd = sp[1];
    (void)spawn(s, *boundary_);  // never returns: we are killed meanwhile
    ::_exit(3);
  }
  ::close(sp[1]);
  char c = 0;
  ASSERT_EQ(::read(sp[0], &c, 1), 1);  // the child exists and has not armed
  ASSERT_EQ(::kill(parent, SIGKILL), 0);
  siginfo_t ps = reap(parent);  // P's exit has reparented the child to us
  EXPECT_EQ(ps.si_code, CLD_KILLED);
  // The only child we have left is the gated one.
  ASSERT_EQ(::write(sp[0], "g", 1), 1);
  siginfo_t si{};
  ASSERT_EQ(sys::waitid_raw(P_ALL, 0, &si, WEXITED, nullptr), 0);
  ::close(sp[0]);
  EXPECT_EQ(si.si_code, CLD_EXITED);
  EXPECT_EQ(si.si_status, 125);
  EXPECT_NE(::access(mark.c_str(), F_OK), 0) << "the child did its work for a dead parent";
}

// Parent P dies after the child armed: the child gets the signal.
TEST_F(Pdeathsig, ParentExitsAfterArmingChildGetsSignal) {
  int in[2], out[2], ctl[2], die[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(ctl, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(die, O_CLOEXEC), 0);
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::close(die[1]);  // or the read below never sees EOF
    SpawnSpec s;
    s.argv = {probe_, "--wait"};
    s.pdeathsig = SIGTERM;
    s.stdio = {in[0], out[1], -1};
    auto c = spawn(s, *boundary_);
    pid_t pid = c ? c->pid : 0;
    (void)!::write(ctl[1], &pid, sizeof pid);
    char x;
    (void)!::read(die[0], &x, 1);  // until the test says "exit now"
    ::_exit(0);
  }
  ::close(out[1]);
  ::close(ctl[1]);
  ::close(die[0]);
  pid_t child = 0;
  ASSERT_EQ(::read(ctl[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ASSERT_GT(child, 0);
  EXPECT_EQ(read_line(out[0]), "pdeathsig=15");  // exec'd and armed
  ::close(die[1]);  // P exits normally now
  EXPECT_EQ(reap(parent).si_code, CLD_EXITED);
  siginfo_t si = reap(child);  // adopted by us; stdin still open, so only
  EXPECT_EQ(si.si_code, CLD_KILLED);  // the signal can have ended it
  EXPECT_EQ(si.si_status, SIGTERM);
  for (int fd : {in[0], in[1], out[0], ctl[0]}) ::close(fd);
}

// Normal completion while the parent lives: no signal, the child's own
// status, and the arming was visible to the exec'd image.
TEST_F(Pdeathsig, NormalCompletionNoSignal) {
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  SpawnSpec s;
  s.argv = {probe_};
  s.pdeathsig = SIGTERM;
  s.stdio = {-1, out[1], -1};
  auto c = spawn(s, *boundary_);
  ASSERT_TRUE(c.has_value()) << c.error().text;
  ::close(out[1]);
  EXPECT_EQ(read_line(out[0]), "pdeathsig=15");
  ::close(out[0]);
  siginfo_t si = reap(c->pid);
  EXPECT_EQ(si.si_code, CLD_EXITED);
  EXPECT_EQ(si.si_status, 0);
}

// PR_SET_PDEATHSIG survives an ordinary execve; without it nothing is armed.
TEST_F(Pdeathsig, ArmingSurvivesExec) {
  for (int sig : {SIGKILL, 0}) {
    int out[2];
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    SpawnSpec s;
    s.argv = {probe_};
    s.pdeathsig = sig;
    s.stdio = {-1, out[1], -1};
    auto c = spawn(s, *boundary_);
    ASSERT_TRUE(c.has_value()) << c.error().text;
    ::close(out[1]);
    EXPECT_EQ(read_line(out[0]), "pdeathsig=" + std::to_string(sig));
    ::close(out[0]);
    EXPECT_EQ(reap(c->pid).si_status, 0);
  }
}

// A caller's thread that spawns and exits must not take the child with it:
// the clone happened on the launcher thread (golang/go#27505).
TEST_F(Pdeathsig, CallingThreadExitDoesNotKillChild) {
  int in[2], out[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  Child child;
  pid_t tid = 0;
  std::string err;
  std::thread t([&] {
    tid = ::gettid();
    SpawnSpec s;
    s.argv = {probe_, "--wait"};
    s.pdeathsig = SIGKILL;
    s.stdio = {in[0], out[1], -1};
    auto c = spawn(s, *boundary_);  // returns after the exec: armed by now
    if (c) child = std::move(*c);
    else err = c.error().text;
  });
  t.join();
  ASSERT_TRUE(err.empty()) << err;
  ::close(in[0]);
  ::close(out[1]);
  EXPECT_EQ(read_line(out[0]), "pdeathsig=9");
  // join() returns before the kernel is done with the thread; its exit
  // sends the parent-death signals before /proc/self/task/<tid> goes away.
  const std::string task = "/proc/self/task/" + std::to_string(tid);
  for (int i = 0; i < 5000 && ::access(task.c_str(), F_OK) == 0; ++i) ::usleep(1000);
  ASSERT_NE(::access(task.c_str(), F_OK), 0);
  // Still alive and answering.
  pollfd p{child.pidfd.get(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 200), 0) << "the child died with the thread that asked for it";
  ASSERT_EQ(::write(in[1], "x\n", 2), 2);
  EXPECT_EQ(read_line(out[0]), "alive");
  ::close(in[1]);  // EOF: the probe exits 0
  siginfo_t si = reap(child.pid);
  EXPECT_EQ(si.si_code, CLD_EXITED);
  EXPECT_EQ(si.si_status, 0);
  ::close(out[0]);
}

}  // namespace
}  // namespace pmon
