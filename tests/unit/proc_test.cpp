// SPDX-License-Identifier: Apache-2.0
// sys::read_stat on real processes (a comm with spaces and ')'),
// sys::descendants_of on hand-made process tables, the children-file walk
// and the zombie list with what they are told to leave out; where the
// cgroup2 mount is.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "confine/cgroup_fs.h"
#include "sys/proc.h"

namespace pmon::sys {
namespace {

TEST(ReadStat, Self) {
  auto st = read_stat(::getpid());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, ::getpid());
  EXPECT_EQ(st->ppid, ::getppid());
  EXPECT_EQ(st->pgrp, ::getpgrp());
  EXPECT_EQ(st->session, ::getsid(0));
  EXPECT_EQ(st->state, 'R');
  EXPECT_GT(st->start_time, 0u);
}

TEST(ReadStat, GoneProcessIsAnError) {
  auto st = read_stat(99999999);  // above any pid_max
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().value(), ENOENT);
}

// A child that renames itself (comm is what an attacker controls) and waits.
class NamedChild {
 public:
  explicit NamedChild(const char* comm) {
    int p[2];
    if (::pipe(p) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[0]);
      (void)::prctl(PR_SET_NAME, comm, 0UL, 0UL, 0UL);
      char c = 'x';
      (void)!::write(p[1], &c, 1);
      for (;;) ::pause();
    }
    ::close(p[1]);
    char c;
    if (pid_ > 0 && ::read(p[0], &c, 1) != 1) pid_ = -1;
    ::close(p[0]);
  }
  ~NamedChild() { finish(); }
  void finish() {
    if (pid_ <= 0) return;
    (void)::kill(pid_, SIGKILL);
    (void)::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST(ReadStat, CommWithSpacesAndParens) {
  for (const char* comm : {"a b) c", ") (", "x) S 1 2 3 (y", "))"}) {
    NamedChild child(comm);
    ASSERT_GT(child.pid(), 0);
    auto st = read_stat(child.pid());
    ASSERT_TRUE(st.has_value()) << comm;
    EXPECT_EQ(st->comm, comm);
    EXPECT_EQ(st->pid, child.pid());
    EXPECT_EQ(st->ppid, ::getpid()) << comm;
    EXPECT_EQ(st->pgrp, ::getpgrp()) << comm;
    EXPECT_TRUE(st->state == 'S' || st->state == 'R') << st->state;
    auto self = read_stat(::getpid());
    ASSERT_TRUE(self.has_value());
    EXPECT_GE(st->start_time, self->start_time) << comm;
  }
}

TEST(ReadStat, Zombie) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(0);
  siginfo_t si{};
  // Wait without reaping, so the zombie is there to read.
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOWAIT), 0);
  auto st = read_stat(pid);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->state, 'Z');
  (void)::waitpid(pid, nullptr, 0);
}

ProcStat proc(pid_t pid, pid_t ppid) {
  ProcStat p;
  p.pid = pid;
  p.ppid = ppid;
  p.start_time = static_cast<uint64_t>(pid) * 10;
  return p;
}

std::set<pid_t> pids_of(const std::vector<ProcStat>& v) {
  std::set<pid_t> out;
  for (const ProcStat& p : v) out.insert(p.pid);
  return out;
}

// Breadth first: every process comes after its parent (or the root).
bool parents_first(const std::vector<ProcStat>& v, pid_t root) {
  std::set<pid_t> seen{root};
  for (const ProcStat& p : v) {
    if (!seen.contains(p.ppid)) return false;
    seen.insert(p.pid);
  }
  return true;
}

// 1 -> {10, 20}; 10 -> {11, 12}; 12 -> {13}; 20 -> {21}; 30 -> {31} apart.
std::vector<ProcStat> sample_table() {
  return {proc(13, 12), proc(1, 0),   proc(31, 30), proc(21, 20), proc(12, 10),
          proc(10, 1),  proc(30, 0),  proc(20, 1),  proc(11, 10)};
}

// NSpid: the pid in each namespace from /proc's own down to the process's.
TEST(ParseNspid, Levels) {
  EXPECT_EQ(parse_nspid("Name:\tsh\nNSpid:\t4242\n"), std::vector<pid_t>{4242});
  EXPECT_EQ(parse_nspid("Name:\tsh\nTgid:\t9\nNSpid:\t4242\t17\t1\nNSpgid:\t1\n"),
            (std::vector<pid_t>{4242, 17, 1}));
  EXPECT_EQ(parse_nspid("NSpid:\t5 1\n"), (std::vector<pid_t>{5, 1}));
  EXPECT_TRUE(parse_nspid("Name:\tsh\nPid:\t5\n").empty());
  EXPECT_TRUE(parse_nspid("NSpid:\t5\tx\n").empty());
  // Not a prefix of another field's name.
  EXPECT_TRUE(parse_nspid("XNSpid:\t5\n").empty());
}

TEST(ParseNspid, SelfMatchesProcSelf) {
  auto v = read_nspid(::getpid());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->back(), ::getpid());
  auto self = pid_in_proc();
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(*self, v->front());
}

TEST(DescendantsOf, Subtrees) {
  auto table = sample_table();
  auto d = descendants_of(table, 10);
  EXPECT_EQ(pids_of(d), (std::set<pid_t>{11, 12, 13}));
  EXPECT_EQ(d.size(), 3u);
  EXPECT_TRUE(parents_first(d, 10));

  d = descendants_of(table, 1);
  EXPECT_EQ(pids_of(d), (std::set<pid_t>{10, 11, 12, 13, 20, 21}));
  EXPECT_EQ(d.size(), 6u);
  EXPECT_TRUE(parents_first(d, 1));

  EXPECT_EQ(pids_of(descendants_of(table, 30)), std::set<pid_t>{31});
}

TEST(DescendantsOf, KeepsTheWholeRecord) {
  auto d = descendants_of(sample_table(), 12);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].pid, 13);
  EXPECT_EQ(d[0].ppid, 12);
  EXPECT_EQ(d[0].start_time, 130u);
}

TEST(DescendantsOf, LeafUnknownAndEmpty) {
  auto table = sample_table();
  EXPECT_TRUE(descendants_of(table, 13).empty());
  EXPECT_TRUE(descendants_of(table, 4711).empty());
  EXPECT_TRUE(descendants_of({}, 1).empty());
}

// /proc is not read atomically: a scan can see pid reuse as a loop. The walk
// must still end and never list the root as its own descendant.
TEST(DescendantsOf, LoopsInATornSnapshotTerminate) {
  std::vector<ProcStat> table = {proc(5, 5), proc(6, 5), proc(7, 6), proc(5, 7)};
  auto d = descendants_of(table, 5);
  EXPECT_EQ(pids_of(d), (std::set<pid_t>{6, 7}));
  std::vector<ProcStat> two = {proc(2, 3), proc(3, 2), proc(4, 1)};
  EXPECT_EQ(pids_of(descendants_of(two, 2)), std::set<pid_t>{3});
  EXPECT_EQ(pids_of(descendants_of(two, 1)), std::set<pid_t>{4});
}

TEST(DescendantsOf, RealChildren) {
  NamedChild a("pmon-unit-a");
  NamedChild b("pmon-unit-b");
  ASSERT_GT(a.pid(), 0);
  ASSERT_GT(b.pid(), 0);
  auto d = descendants_of(scan_processes(), ::getpid());
  std::set<pid_t> got = pids_of(d);
  EXPECT_TRUE(got.contains(a.pid()));
  EXPECT_TRUE(got.contains(b.pid()));
  std::map<pid_t, std::string> comm;
  for (const ProcStat& p : d) comm[p.pid] = p.comm;
  EXPECT_EQ(comm[a.pid()], "pmon-unit-a");
  EXPECT_EQ(comm[b.pid()], "pmon-unit-b");
}

// A child of ours with a child of its own, both waiting.
class ChildWithGrandchild {
 public:
  ChildWithGrandchild() {
    int p[2];
    if (::pipe(p) != 0) return;
    child_ = ::fork();
    if (child_ == 0) {
      ::close(p[0]);
      pid_t g = ::fork();
      if (g == 0)
        for (;;) ::pause();
      (void)!::write(p[1], &g, sizeof g);
      for (;;) ::pause();
    }
    ::close(p[1]);
    if (child_ > 0 && ::read(p[0], &grandchild_, sizeof grandchild_) != sizeof grandchild_) grandchild_ = -1;
    ::close(p[0]);
  }
  ~ChildWithGrandchild() {
    if (grandchild_ > 0) (void)::kill(grandchild_, SIGKILL);
    if (child_ > 0) {
      (void)::kill(child_, SIGKILL);
      (void)::waitpid(child_, nullptr, 0);
    }
  }
  pid_t child() const { return child_; }
  pid_t grandchild() const { return grandchild_; }

 private:
  pid_t child_ = -1, grandchild_ = -1;
};

TEST(DescendantsByChildren, LeavesOutWhatIsAskedAndWhatIsBelowIt) {
  ChildWithGrandchild kept, left;
  NamedChild other("pmon-unit-c");
  ASSERT_GT(kept.grandchild(), 0);
  ASSERT_GT(left.grandchild(), 0);
  ASSERT_GT(other.pid(), 0);
  std::set<pid_t> all = pids_of(descendants_by_children(::getpid()));
  for (pid_t p : {kept.child(), kept.grandchild(), left.child(), left.grandchild(), other.pid()})
    EXPECT_TRUE(all.contains(p)) << p;
  int asked = 0;
  std::set<pid_t> got = pids_of(descendants_by_children(::getpid(), [&](pid_t p) {
    ++asked;
    return p == left.child();
  }));
  EXPECT_GT(asked, 0);
  EXPECT_TRUE(got.contains(kept.child()));
  EXPECT_TRUE(got.contains(kept.grandchild()));
  EXPECT_TRUE(got.contains(other.pid()));
  EXPECT_FALSE(got.contains(left.child()));
  EXPECT_FALSE(got.contains(left.grandchild()));
}

TEST(ZombieChildren, LeavesOutWhatIsAsked) {
  NamedChild a("pmon-unit-za");
  NamedChild b("pmon-unit-zb");
  ASSERT_GT(a.pid(), 0);
  ASSERT_GT(b.pid(), 0);
  (void)::kill(a.pid(), SIGKILL);
  (void)::kill(b.pid(), SIGKILL);
  // (each a zombie once its exit shows in /proc)
  for (int i = 0; i < 500; ++i) {
    auto sa = read_stat(a.pid()), sb = read_stat(b.pid());
    if (sa && sb && sa->dead() && sb->dead()) break;
    ::usleep(2000);
  }
  std::vector<pid_t> all = zombie_children();
  EXPECT_NE(std::find(all.begin(), all.end(), a.pid()), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), b.pid()), all.end());
  std::vector<pid_t> some = zombie_children([&](pid_t p) { return p == a.pid(); });
  EXPECT_EQ(std::find(some.begin(), some.end(), a.pid()), some.end());
  EXPECT_NE(std::find(some.begin(), some.end(), b.pid()), some.end());
}

}  // namespace
}  // namespace pmon::sys

namespace pmon {
namespace {

// The statfs shortcut and mountinfo agree on where this process sits: the
// same cgroup directory (by device and inode), whichever mount each picks.
TEST(LocateCgroup2, ShortcutAgreesWithMountinfo) {
  auto quick = confine::locate_cgroup2();
  auto full = confine::locate_cgroup2_by_mountinfo();
  if (!full) GTEST_SKIP() << "no cgroup2 here: " << full.error().text;
  ASSERT_TRUE(quick) << quick.error().text;
  struct stat a {}, b {};
  ASSERT_EQ(::stat(quick->own_path.c_str(), &a), 0) << quick->own_path;
  ASSERT_EQ(::stat(full->own_path.c_str(), &b), 0) << full->own_path;
  EXPECT_EQ(a.st_dev, b.st_dev);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(quick->own, full->own);
}

}  // namespace
}  // namespace pmon

namespace pmon::sys {
namespace {

void* sleep_forever(void*) {
  for (;;) ::pause();
}

// A process whose main thread has exited while another runs shows state Z
// with two threads: alive. A real zombie (one thread) is dead.
TEST(ReadStat, ExitedMainThreadIsAliveAZombieIsNot) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pthread_t t;
    if (pthread_create(&t, nullptr, sleep_forever, nullptr) != 0) ::_exit(1);
    // The main thread alone ends (pthread_exit would unwind into gtest).
    for (;;) ::syscall(SYS_exit, 0);
  }
  Result<ProcStat> st;
  for (int i = 0; i < 2000; ++i) {
    st = read_stat(child);
    if (st && st->state == 'Z') break;
    ::usleep(1000);
  }
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->state, 'Z');
  EXPECT_EQ(st->num_threads, 2);
  EXPECT_FALSE(st->dead());
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  siginfo_t si{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &si, WEXITED | WNOWAIT), 0);
  auto z = read_stat(child);
  ASSERT_TRUE(z.has_value());
  EXPECT_EQ(z->state, 'Z');
  EXPECT_TRUE(z->dead());
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
}

}  // namespace
}  // namespace pmon::sys
