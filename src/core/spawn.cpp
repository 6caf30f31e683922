#include "core/spawn.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/child.h"
#include "core/launcher.h"
#include "sys/proc.h"
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

// The paths execvp would try, computed before the clone so the child does
// not allocate.
std::vector<std::string> exec_candidates(const std::string& file, const std::vector<std::string>* env) {
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

SpawnError describe_failure(const ChildFailure& f, const SpawnSpec& spec) {
  SpawnError e;
  e.err = f.err;
  const std::string& cmd = spec.argv[0];
  switch (f.stage) {
    case ChildFailure::kExec: {
      e.exit_code = (f.err == ENOENT || f.err == ENOTDIR) ? 127 : 126;
      struct stat st;
      bool has_slash = cmd.find('/') != std::string::npos;
      if (e.exit_code == 127 && !has_slash)
        e.message = "cannot run '" + cmd + "': command not found in PATH";
      else if (has_slash && ::stat(cmd.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        e.message = "cannot run '" + cmd + "': is a directory";
      else
        e.message = "cannot run '" + cmd + "': " + std::strerror(f.err);
      break;
    }
    case ChildFailure::kChdir:
      e.message = "cannot change directory to '" + spec.cwd + "': " + std::strerror(f.err);
      break;
    case ChildFailure::kParentGone:
      e.message = "the parent exited before the child was armed; not started";
      break;
    default:
      e.message = std::string("child setup failed: ") + std::strerror(f.err);
  }
  return e;
}

}  // namespace

std::expected<Child, SpawnError> spawn(const SpawnSpec& spec, const Boundary& boundary) {
  if (spec.argv.empty()) return std::unexpected(SpawnError{125, EINVAL, "no command given"});

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

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    return std::unexpected(SpawnError{125, errno, std::string("pipe2: ") + std::strerror(errno)});
  Fd report_r(pipefd[0]), report_w(pipefd[1]);

  ChildPlan plan;
  plan.candidates = cand_ptrs.data();
  plan.argv = argv.data();
  plan.envp = spec.env ? envp.data() : environ;
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  for (int i = 0; i < 3; ++i) plan.stdio[i] = spec.stdio[i];
  plan.report_fd = report_w.get();
  plan.pdeathsig = spec.pdeathsig;
  plan.expected_parent = ::getpid();
  plan.arm_gate_fd = spec.test_arm_gate_fd;
  plan.new_session = spec.new_session;

  sys::CloneRequest req;
  req.cgroup_fd = boundary.clone_cgroup_fd();
  req.into_cgroup = req.cgroup_fd >= 0;
  Result<sys::CloneResult> cr = fail(EAGAIN);
  auto do_clone = [&] {
    cr = sys::clone3_fork(req);
    if (cr && cr->pid == 0) run_child(plan);
  };
  if (spec.pdeathsig != 0) {
    // The child's parent-death signal follows the thread that clones it:
    // that must be the launcher, which outlives every child (seed 001).
    if (std::error_code ec = run_on_launcher(do_clone))
      return std::unexpected(SpawnError{125, ec.value(), "cannot start the launcher thread: " + ec.message()});
  } else {
    do_clone();
  }
  if (!cr) {
    int e = cr.error().value();
    std::string msg = std::string("clone3: ") + std::strerror(e);
    if (req.into_cgroup) msg = std::string("cannot start the command inside its cgroup (clone3 CLONE_INTO_CGROUP: ") + std::strerror(e) + ")";
    return std::unexpected(SpawnError{125, e, msg});
  }
  report_w.reset();
  Child child;
  child.pid = cr->pid;
  child.pidfd = std::move(cr->pidfd);
  // The child is ours and unreaped, so its pid cannot be recycled yet.
  if (auto st = sys::read_stat(child.pid)) child.start_time = st->start_time;

  ChildFailure f;
  ssize_t n = retry_eintr([&] { return ::read(report_r.get(), &f, sizeof f); });
  if (n == static_cast<ssize_t>(sizeof f)) {
    // The child has _exit()ed or is about to; collect it before returning.
    siginfo_t si;
    (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(child.pidfd.get()), &si, WEXITED, nullptr);
    return std::unexpected(describe_failure(f, spec));
  }
  return child;
}

}  // namespace pmon
