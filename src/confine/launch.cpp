// SPDX-License-Identifier: Apache-2.0
#include "confine/launch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "sys/child.h"
#include "sys/clone_spawn.h"
#include "sys/launcher.h"
#include "sys/syscalls.h"

extern char** environ;

namespace pmon {

namespace {

std::string path_of(const std::vector<std::string>* env) {
  if (env != nullptr) {
    for (const std::string& kv : *env)
      if (kv.rfind("PATH=", 0) == 0) return kv.substr(5);
    return "/usr/local/bin:/usr/bin:/bin";
  }
  const char* p = ::getenv("PATH");
  return p != nullptr ? p : "/usr/local/bin:/usr/bin:/bin";
}

}  // namespace

// The paths execvp would try, computed before the clone so the child does
// not allocate.
std::vector<std::string> exec_candidates(const std::string& file, const std::vector<std::string>* env) {
  // An empty name is no file at all (as glibc's execvp and coreutils say,
  // ENOENT), not each PATH directory in turn (which would say EACCES).
  if (file.empty()) return {};
  if (file.find('/') != std::string::npos) return {file};
  std::vector<std::string> out;
  std::string path = path_of(env);
  size_t pos = 0;
  for (;;) {
    size_t colon = path.find(':', pos);
    std::string dir = path.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    out.push_back((dir.empty() ? "." : dir) + "/" + file);
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return out;
}

Error describe_failure(const sys::ChildFailure& f, const SpawnSpec& spec) {
  Error e;
  e.code = Errc::system;
  e.err = f.err;
  const std::string& cmd = spec.argv[0];
  switch (f.stage) {
    case sys::ChildFailure::kExec: {
      e.code = (f.err == ENOENT || f.err == ENOTDIR) ? Errc::not_found : Errc::not_executable;
      struct stat st;
      bool has_slash = cmd.find('/') != std::string::npos;
      if (cmd.empty())
        e.text = "cannot run '': the command name is empty";
      else if (e.code == Errc::not_found && !has_slash)
        e.text = "cannot run '" + cmd + "': command not found in PATH";
      else if (has_slash && ::stat(cmd.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        e.text = "cannot run '" + cmd + "': is a directory";
      else
        e.text = "cannot run '" + cmd + "': " + std::strerror(f.err);
      break;
    }
    case sys::ChildFailure::kChdir:
      e.text = "cannot change directory to '" + spec.cwd + "': " + std::strerror(f.err);
      break;
    case sys::ChildFailure::kParentGone:
      e.text = "the parent exited before the child was armed; not started";
      break;
    case sys::ChildFailure::kNsMount:
      e.text = std::string("cannot mount /proc in the call's namespaces: ") + std::strerror(f.err);
      break;
    case sys::ChildFailure::kNsInit:
      e.text = std::string("cannot start pmon's namespace init: ") + std::strerror(f.err);
      break;
    default:
      e.text = std::string("child setup failed: ") + std::strerror(f.err);
  }
  return e;
}

std::expected<Child, Error> launch_process(const SpawnSpec& spec, int cgroup_fd) {
  // Everything the child touches is laid out here, before the clone.
  std::vector<std::string> cands = exec_candidates(spec.argv[0], spec.env ? &*spec.env : nullptr);
  std::vector<const char*> cand_ptrs;
  for (const std::string& c : cands) cand_ptrs.push_back(c.c_str());
  cand_ptrs.push_back(nullptr);
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (spec.env) {
    for (const std::string& kv : *spec.env) envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
  }

  sys::CloneRequest req;
  req.cgroup_fd = cgroup_fd;
  req.into_cgroup = req.cgroup_fd >= 0;

  // A child that shares our memory (the hot path, no parent-death signal)
  // reports a failure in memory: we run again only once it has exec'd or
  // _exit'ed. Any other child reports on a CLOEXEC pipe.
  const bool shared = spec.pdeathsig == 0 && sys::clone3_spawn_shares_memory(req);
  sys::ChildFailure shared_failure;
  Fd report_r, report_w;
  if (!shared) {
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0)
      return std::unexpected(Error::failed(errno, std::string("pipe2: ") + std::strerror(errno)));
    report_r = Fd(pipefd[0]);
    report_w = Fd(pipefd[1]);
  }

  sys::ChildPlan plan;
  plan.candidates = cand_ptrs.data();
  plan.argv = argv.data();
  plan.envp = spec.env ? envp.data() : environ;
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  for (int i = 0; i < 3; ++i) plan.stdio[i] = spec.pty_slave >= 0 ? spec.pty_slave : spec.stdio[i];
  plan.controlling_tty = spec.pty_slave >= 0;
  plan.report_fd = report_w.get();
  plan.shared_failure = shared ? &shared_failure : nullptr;
  plan.pdeathsig = spec.pdeathsig;
  plan.expected_parent = spec.pdeathsig != 0 ? ::getpid() : 0;  // (a system call: only when checked)
  plan.arm_gate_fd = spec.test_arm_gate_fd;
  plan.new_session = spec.new_session;
  plan.new_cgroup_ns = spec.own_cgroup_namespace && cgroup_fd >= 0;
  plan.close_other_fds = spec.close_other_fds;
  plan.changed_signals = spec.changed_signals;
  plan.nofile = spec.nofile;
  plan.nice = sys::unraised_nice();

  Result<sys::CloneResult> cr = fail(EAGAIN);
  auto do_clone = [&] {
    if (spec.pdeathsig == 0) {
      // The hot path: a vfork-style child that shares our memory until exec.
      cr = sys::clone3_spawn(req, [](void* p) { sys::run_child(*static_cast<const sys::ChildPlan*>(p)); }, &plan);
      return;
    }
    // With a parent-death signal (and its test gate) the launcher thread
    // must not be suspended while the child waits to arm: a full fork.
    cr = sys::clone3_fork(req);
    if (cr && cr->pid == 0) sys::run_child(plan);
  };
  if (spec.pdeathsig != 0) {
    // The child's parent-death signal follows the thread that clones it:
    // that must be the launcher, which outlives every child (seed 001).
    if (std::error_code ec = sys::run_on_launcher(do_clone))
      return std::unexpected(Error::failed(ec.value(), "cannot start the launcher thread: " + ec.message()));
  } else {
    do_clone();
  }
  if (!cr) {
    int e = cr.error().value();
    std::string msg = std::string("clone3: ") + std::strerror(e);
    if (req.into_cgroup) msg = std::string("cannot start the command inside its cgroup (clone3 CLONE_INTO_CGROUP: ") + std::strerror(e) + ")";
    return std::unexpected(Error::failed(e, msg));
  }
  report_w.reset();
  Child child;
  child.pid = cr->pid;
  child.pidfd = std::move(cr->pidfd);

  sys::ChildFailure f;
  bool failed;
  if (shared) {
    f.stage = static_cast<volatile sys::ChildFailure&>(shared_failure).stage;
    f.err = static_cast<volatile sys::ChildFailure&>(shared_failure).err;
    failed = f.stage != 0;
  } else {
    ssize_t n = retry_eintr([&] { return ::read(report_r.get(), &f, sizeof f); });
    failed = n == static_cast<ssize_t>(sizeof f);
  }
  if (failed) {
    // The child has _exit()ed or is about to; collect it before returning.
    siginfo_t si;
    (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(child.pidfd.get()), &si, WEXITED, nullptr);
    return std::unexpected(describe_failure(f, spec));
  }
  return child;
}

}  // namespace pmon
