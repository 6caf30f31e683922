// Between clone and exec: async-signal-safe calls only.
#include "core/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace pmon {

namespace {

[[noreturn]] void fail(const ChildPlan& plan, int stage, int err) noexcept {
  ChildFailure f{stage, err};
  ssize_t n;
  do {
    n = ::write(plan.report_fd, &f, sizeof f);
  } while (n < 0 && errno == EINTR);
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

}  // namespace

void run_child(const ChildPlan& plan) noexcept {
  // The supervisor blocks signals to read them from a signalfd, and the
  // caller may ignore some (SIGPIPE): a child inherits both, and a command
  // with TERM blocked could never be stopped politely.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    (void)::sigaction(sig, &dfl, nullptr);  // EINVAL for glibc's own: fine
  }
  sigset_t none;
  ::sigemptyset(&none);
  if (::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) fail(plan, ChildFailure::kSetup, errno);

  if (plan.new_session && ::setsid() < 0) fail(plan, ChildFailure::kSetup, errno);

  // Arm first, then check the parent is still the one that cloned us: if it
  // died before the arming, no signal would ever come (seed 001).
  if (plan.pdeathsig != 0) {
    if (plan.arm_gate_fd >= 0) wait_at_gate(plan.arm_gate_fd);
    if (::prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(plan.pdeathsig), 0UL, 0UL, 0UL) != 0)
      fail(plan, ChildFailure::kSetup, errno);
    // Nobody is left to read the error pipe (a write would only raise
    // SIGPIPE): stop here, before any of the command's work.
    if (::getppid() != plan.expected_parent) ::_exit(125);
  }

  // Move the requested fds out of 0..2 first so that one dup2 cannot
  // clobber the source of another.
  int moved[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    if (plan.stdio[i] < 0) continue;
    moved[i] = ::fcntl(plan.stdio[i], F_DUPFD_CLOEXEC, 3);
    if (moved[i] < 0) fail(plan, ChildFailure::kSetup, errno);
  }
  for (int i = 0; i < 3; ++i) {
    if (moved[i] < 0) continue;
    if (::dup2(moved[i], i) < 0) fail(plan, ChildFailure::kSetup, errno);
  }

  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) fail(plan, ChildFailure::kChdir, errno);

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
  fail(plan, ChildFailure::kExec, err);
}

}  // namespace pmon
