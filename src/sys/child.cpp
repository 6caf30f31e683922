// SPDX-License-Identifier: Apache-2.0
// Between clone and exec: async-signal-safe calls only.
#include "sys/child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <sched.h>
#include <sys/mount.h>

namespace pmon::sys {

namespace {

[[noreturn]] void child_failed(const ChildPlan& plan, int stage, int err) noexcept {
  ChildFailure f{stage, err};
  if (plan.shared_failure != nullptr) {
    // The parent is suspended until we _exit (vfork), then reads it.
    volatile ChildFailure* out = plan.shared_failure;
    out->err = err;
    out->stage = stage;
  } else {
    ssize_t n;
    do {
      n = ::write(plan.report_fd, &f, sizeof f);
    } while (n < 0 && errno == EINTR);
  }
  int code = 125;
  if (stage == ChildFailure::kExec) code = (err == ENOENT || err == ENOTDIR) ? 127 : 126;
  ::_exit(code);
}

// The tests' synchronization point before the arming: say "here", then
// wait for "go". EOF (the test gave up) also means go.
void wait_at_gate(int fd) noexcept {
  char c = 'g';
  ssize_t n;
  do {
    n = ::write(fd, &c, 1);
  } while (n < 0 && errno == EINTR);
  do {
    n = ::read(fd, &c, 1);
  } while (n < 0 && errno == EINTR);
}

// The namespace init's parent check. getppid() is 0 across CLONE_NEWPID, so
// the identity check of seed 001 becomes a pipe check: arm first, then wait
// for the parent's "go" (written after the uid/gid maps), then make sure
// the parent's write end is still open. A parent that died before the
// arming closed it (POLLHUP, or EOF instead of "go"); one that dies after
// the arming sends the SIGKILL.
void arm_ns_init(const ChildPlan& plan) noexcept {
  const NsChildPlan& ns = *plan.ns;
  (void)::close(ns.sync_w);
  if (plan.arm_gate_fd >= 0) wait_at_gate(plan.arm_gate_fd);
  if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(SIGKILL), 0UL, 0UL, 0UL) != 0)
    child_failed(plan, ChildFailure::kSetup, errno);
  char c = 0;
  ssize_t n;
  do {
    n = ::read(ns.sync_r, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) ::_exit(125);  // nobody is left to read the error pipe
  pollfd p{ns.sync_r, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, 0);
  } while (r < 0 && errno == EINTR);
  if (r != 0 && (p.revents & POLLHUP)) ::_exit(125);
}

}  // namespace

void run_status_relay(const RelayPlan& plan) noexcept {
  // Every signal blocked: pmon's stop signals go to the namespace through
  // the init; the relay only ever dies the way the command did (or by KILL).
  sigset_t all;
  ::sigfillset(&all);
  (void)::sigprocmask(SIG_SETMASK, &all, nullptr);
  if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(SIGKILL), 0UL, 0UL, 0UL) != 0 ||
      ::getppid() != plan.expected_parent)
    ::_exit(125);
  // Hold nothing of pmon's but the two fds we need (the parent-liveness
  // pipe above all: a copy here would hide pmon's death from a new init).
  int a = plan.status_r < plan.init_pidfd ? plan.status_r : plan.init_pidfd;
  int b = plan.status_r < plan.init_pidfd ? plan.init_pidfd : plan.status_r;
  if (a > 0) (void)::close_range(0, static_cast<unsigned>(a - 1), 0);
  if (b > a + 1) (void)::close_range(static_cast<unsigned>(a + 1), static_cast<unsigned>(b - 1), 0);
  (void)::close_range(static_cast<unsigned>(b + 1), ~0U, 0);

  NsStatus st;
  size_t got = 0;
  while (got < sizeof st) {
    ssize_t n = ::read(plan.status_r, reinterpret_cast<char*>(&st) + got, sizeof st - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  const bool have = got == sizeof st;
  // Exit only after the init when the namespace was empty: pmon then finds
  // the boundary empty the moment it sees us exit.
  if (!have || st.ns_empty) {
    pollfd p{plan.init_pidfd, POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
  }
  if (have && st.code == CLD_EXITED) ::_exit(st.status & 0xff);
  int sig = have ? st.status : SIGKILL;
  // Drop the stop signals pmon sent meanwhile (ignoring discards pending
  // ones), never dump a core of our own, then die by the command's signal.
  struct sigaction ign = {};
  ign.sa_handler = SIG_IGN;
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) (void)::sigaction(s, &ign, nullptr);
  (void)::prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  (void)::sigaction(sig, &dfl, nullptr);
  sigset_t one;
  ::sigemptyset(&one);
  ::sigaddset(&one, sig);
  (void)::kill(::getpid(), sig);
  (void)::sigprocmask(SIG_UNBLOCK, &one, nullptr);
  ::_exit(128 + sig);
}

void run_child(const ChildPlan& plan) noexcept {
  // The supervisor blocks signals to read them from a signalfd, and the
  // caller may ignore some (SIGPIPE): a child inherits both, and a command
  // with TERM blocked could never be stopped politely.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    if (plan.changed_signals != nullptr && ::sigismember(plan.changed_signals, sig) != 1) continue;
    (void)::sigaction(sig, &dfl, nullptr);  // EINVAL for glibc's own: fine
  }
  sigset_t none;
  ::sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) child_failed(plan, ChildFailure::kSetup, errno);
  // (Lowering our priority back is always allowed.)
  if (plan.nice != kKeepNice && ::setpriority(PRIO_PROCESS, 0, plan.nice) != 0)
    child_failed(plan, ChildFailure::kSetup, errno);

  if (plan.new_session && ::setsid() < 0) child_failed(plan, ChildFailure::kSetup, errno);
  if (plan.new_cgroup_ns && ::unshare(CLONE_NEWCGROUP) != 0) child_failed(plan, ChildFailure::kSetup, errno);

  // Arm first, then check the parent is still the one that cloned us: if it
  // died before the arming, no signal would ever come (seed 001).
  if (plan.ns != nullptr) {
    arm_ns_init(plan);
    if (int e = ns_setup_mounts(plan.ns->cgroup2_mount); e != 0) child_failed(plan, ChildFailure::kNsMount, e);
  } else if (plan.pdeathsig != 0) {
    if (plan.arm_gate_fd >= 0) wait_at_gate(plan.arm_gate_fd);
    if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(plan.pdeathsig), 0UL, 0UL, 0UL) != 0)
      child_failed(plan, ChildFailure::kSetup, errno);
    // Nobody is left to read the error pipe (a write would only raise
    // SIGPIPE): stop here, before any of the command's work.
    if (::getppid() != plan.expected_parent) ::_exit(125);
  }

  // A requested fd in 0..2 is moved out first, so that one dup2 cannot
  // clobber the source of another (when none is, there is nothing to move).
  int moved[3] = {plan.stdio[0], plan.stdio[1], plan.stdio[2]};
  const bool low = std::any_of(moved, moved + 3, [](int fd) { return fd >= 0 && fd <= 2; });
  for (int i = 0; low && i < 3; ++i) {
    if (plan.stdio[i] < 0) continue;
    moved[i] = ::fcntl(plan.stdio[i], F_DUPFD_CLOEXEC, 3);
    if (moved[i] < 0) child_failed(plan, ChildFailure::kSetup, errno);
  }
  for (int i = 0; i < 3; ++i) {
    if (moved[i] < 0) continue;
    if (::dup2(moved[i], i) < 0) child_failed(plan, ChildFailure::kSetup, errno);
  }
  // The slave was opened O_NOCTTY by pmon, so no session has it yet; the
  // setsid above made us a session leader without a terminal.
  if (plan.controlling_tty && ::ioctl(0, TIOCSCTTY, 0) != 0) child_failed(plan, ChildFailure::kSetup, errno);
  // Marked CLOEXEC rather than closed: the error pipe must work until exec.
  if (plan.close_other_fds && ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
    child_failed(plan, ChildFailure::kSetup, errno);
  if (plan.nofile != nullptr && ::setrlimit(RLIMIT_NOFILE, plan.nofile) != 0) child_failed(plan, ChildFailure::kSetup, errno);

  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) child_failed(plan, ChildFailure::kChdir, errno);

  if (plan.ns != nullptr) {
    // pmon's init, from the binary opened before the clone (the path may
    // mean something else in here). It reports the command's exec failure
    // on the same error pipe, so that one stays open across this exec.
    for (int fd : plan.ns->keep_fds)
      if (fd >= 0 && ::fcntl(fd, F_SETFD, 0) != 0) child_failed(plan, ChildFailure::kNsInit, errno);
    ::syscall(SYS_execveat, plan.ns->exe_fd, "", plan.ns->init_argv, plan.envp, AT_EMPTY_PATH);
    child_failed(plan, ChildFailure::kNsInit, errno);
  }

  // execvp's rules: try each PATH candidate, remember EACCES over ENOENT.
  int err = ENOENT;
  bool saw_eacces = false;
  for (const char* const* c = plan.candidates; *c != nullptr; ++c) {
    ::execve(*c, plan.argv, plan.envp);
    err = errno;
    if (err == EACCES) saw_eacces = true;
    if (err == ENOEXEC) {
      // A script without a #! line: run it with the shell, as execvp does.
      const char* sh_argv[64];
      int n = 0;
      sh_argv[n++] = "/bin/sh";
      sh_argv[n++] = *c;
      for (char* const* a = plan.argv + 1; *a != nullptr && n < 63; ++a) sh_argv[n++] = *a;
      sh_argv[n] = nullptr;
      ::execve("/bin/sh", const_cast<char* const*>(sh_argv), plan.envp);
      err = errno;
      break;
    }
    if (err != ENOENT && err != ENOTDIR && err != EACCES) break;
  }
  if (saw_eacces && (err == ENOENT || err == ENOTDIR)) err = EACCES;
  child_failed(plan, ChildFailure::kExec, err);
}

int ns_setup_mounts(const char* cgroup2_mount) noexcept {
  // Our mounts must not propagate back to the host's mount namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) return errno;
  if (cgroup2_mount != nullptr) {
    // clone3's CLONE_NEWCGROUP roots the namespace at the *parent's* cgroup
    // (copy_namespaces runs before CLONE_INTO_CGROUP moves the child):
    // unshare again, now that we are in the leaf, so the leaf is the root.
    if (::unshare(CLONE_NEWCGROUP) != 0) return errno;
    // The view shares the host's cgroup2 superblock, and the kernel refuses
    // a superblock on top of itself at the same spot (EBUSY): put an empty
    // tmpfs in between.
    if (::mount("tmpfs", cgroup2_mount, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=755") != 0)
      return errno;
    if (::mount("cgroup2", cgroup2_mount, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      return errno;
  }
  return 0;
}

}  // namespace pmon::sys
