#include "core/spawn.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "confine/pidns.h"
#include "core/child.h"
#include "core/launcher.h"
#include "sys/clone_spawn.h"
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

SpawnError describe_failure(const ChildFailure& f, const SpawnSpec& spec) {
  SpawnError e;
  e.err = f.err;
  const std::string& cmd = spec.argv[0];
  switch (f.stage) {
    case ChildFailure::kExec: {
      e.exit_code = (f.err == ENOENT || f.err == ENOTDIR) ? 127 : 126;
      struct stat st;
      bool has_slash = cmd.find('/') != std::string::npos;
      if (cmd.empty())
        e.message = "cannot run '': the command name is empty";
      else if (e.exit_code == 127 && !has_slash)
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
    case ChildFailure::kNsMount:
      e.message = std::string("cannot mount /proc in the call's namespaces: ") + std::strerror(f.err);
      break;
    case ChildFailure::kNsInit:
      e.message = std::string("cannot start pmon's namespace init: ") + std::strerror(f.err);
      break;
    default:
      e.message = std::string("child setup failed: ") + std::strerror(f.err);
  }
  return e;
}

SpawnError spawn_error(int e, const std::string& what) {
  return SpawnError{125, e, what + ": " + std::strerror(e)};
}

// The uid/gid maps of a fresh user namespace, written from outside (the
// child cannot map itself to anything). Each id maps to itself, so files
// the call creates belong to the caller, and `id` says what it said before.
std::error_code write_id_maps(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/";
  auto put = [&](const char* name, const std::string& text) -> std::error_code {
    Fd fd(::open((dir + name).c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return last_error();
    if (retry_eintr([&] { return ::write(fd.get(), text.data(), text.size()); }) !=
        static_cast<ssize_t>(text.size()))
      return last_error();
    return {};
  };
  // Unprivileged, the kernel wants setgroups denied before a gid_map.
  if (::geteuid() != 0)
    if (std::error_code ec = put("setgroups", "deny"); ec) return ec;
  if (std::error_code ec = put("gid_map", std::to_string(::getgid()) + " " + std::to_string(::getgid()) + " 1\n"); ec)
    return ec;
  return put("uid_map", std::to_string(::getuid()) + " " + std::to_string(::getuid()) + " 1\n");
}

// The host pid of the init's one child (the command), from the children
// files of all its threads (a child cloned by its launcher thread is
// listed under that thread). 0 if there is none.
pid_t command_host_pid(pid_t init_pid) {
  const std::string tasks = "/proc/" + std::to_string(init_pid) + "/task";
  Fd dir(::open(tasks.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return 0;
  DIR* d = ::fdopendir(dir.release());
  if (d == nullptr) return 0;
  pid_t found = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    auto text = sys::read_file(tasks + "/" + e->d_name + "/children");
    if (text && !text->empty()) {
      found = static_cast<pid_t>(std::atoi(text->c_str()));
      break;
    }
  }
  ::closedir(d);
  return found;
}

// A PID namespace call: pmon -> init (PID 1, `pmon __nsinit`) -> command,
// plus the status relay, pmon's direct child that exits the way the command
// did. The init is cloned on the launcher thread: its PR_SET_PDEATHSIG
// (SIGKILL, always) follows the thread that cloned it (seed 001).
std::expected<Child, SpawnError> spawn_in_pidns(const SpawnSpec& spec, PidnsBoundary& nb) {
  const NsSetup& setup = nb.setup();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return std::unexpected(spawn_error(errno, "pipe2"));
  Fd report_r(p[0]), report_w(p[1]);
  if (::pipe2(p, O_CLOEXEC) != 0) return std::unexpected(spawn_error(errno, "pipe2"));
  Fd status_r(p[0]), status_w(p[1]);

  std::vector<std::string> init_args = {"pmon",
                                        "__nsinit",
                                        std::to_string(report_w.get()),
                                        std::to_string(status_w.get()),
                                        std::to_string(setup.sync_r),
                                        std::to_string(spec.pdeathsig),
                                        spec.new_session ? "1" : "0",
                                        spec.pty_slave >= 0 ? "1" : "0",
                                        "--"};
  init_args.insert(init_args.end(), spec.argv.begin(), spec.argv.end());
  std::vector<char*> init_argv;
  for (const std::string& a : init_args) init_argv.push_back(const_cast<char*>(a.c_str()));
  init_argv.push_back(nullptr);
  std::vector<char*> envp;
  if (spec.env) {
    for (const std::string& kv : *spec.env) envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
  }
  const char* no_candidates[] = {nullptr};

  NsChildPlan ns;
  ns.sync_r = setup.sync_r;
  ns.sync_w = setup.sync_w;
  ns.exe_fd = setup.exe_fd;
  ns.cgroup2_mount = setup.cgroup_ns ? setup.cgroup2_mount.c_str() : nullptr;
  ns.keep_fds[0] = report_w.get();
  ns.keep_fds[1] = status_w.get();
  ns.keep_fds[2] = setup.sync_r;
  ns.init_argv = init_argv.data();

  ChildPlan plan;
  plan.candidates = no_candidates;
  plan.argv = init_argv.data();
  plan.envp = spec.env ? envp.data() : environ;
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  // The init holds the pty as its stdio and hands it on; the command (not
  // the init) takes it as its controlling terminal.
  for (int i = 0; i < 3; ++i) plan.stdio[i] = spec.pty_slave >= 0 ? spec.pty_slave : spec.stdio[i];
  plan.report_fd = report_w.get();
  plan.arm_gate_fd = spec.test_arm_gate_fd;
  plan.new_session = spec.new_session;
  plan.close_other_fds = spec.close_other_fds;
  plan.nofile = spec.nofile;
  plan.ns = &ns;

  sys::CloneRequest req;
  req.cgroup_fd = nb.clone_cgroup_fd();
  req.into_cgroup = req.cgroup_fd >= 0;
  req.new_pid_ns = true;
  req.new_mount_ns = true;
  req.new_user_ns = setup.user_ns;
  Result<sys::CloneResult> cr = fail(EAGAIN);
  auto do_clone = [&] {
    cr = sys::clone3_fork(req);
    if (cr && cr->pid == 0) run_child(plan);
  };
  if (std::error_code ec = run_on_launcher(do_clone))
    return std::unexpected(SpawnError{125, ec.value(), "cannot start the launcher thread: " + ec.message()});
  if (!cr) {
    int e = cr.error().value();
    return std::unexpected(SpawnError{125, e, std::string("cannot create the call's namespaces (clone3: ") +
                                                  std::strerror(e) + ")"});
  }
  pid_t init_pid = cr->pid;
  Fd init_pidfd = std::move(cr->pidfd);
  auto abandon = [&](SpawnError err) {
    (void)sys::pidfd_send_signal(init_pidfd.get(), SIGKILL);
    siginfo_t si;
    (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(init_pidfd.get()), &si, WEXITED, nullptr);
    return std::unexpected(std::move(err));
  };
  report_w.reset();
  status_w.reset();
  if (setup.user_ns)
    if (std::error_code ec = write_id_maps(init_pid); ec)
      return abandon(SpawnError{125, ec.value(), "cannot map the call's uid/gid into its user namespace: " + ec.message()});
  char go = 'g';
  if (retry_eintr([&] { return ::write(setup.sync_w, &go, 1); }) != 1)
    return abandon(spawn_error(errno, "cannot start the namespace init"));

  ChildFailure f;
  ssize_t n = retry_eintr([&] { return ::read(report_r.get(), &f, sizeof f); });
  if (n == static_cast<ssize_t>(sizeof f)) {
    siginfo_t si;
    (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(init_pidfd.get()), &si, WEXITED, nullptr);
    return std::unexpected(describe_failure(f, spec));
  }
  if (n != 0) return abandon(spawn_error(n < 0 ? errno : EIO, "reading the namespace init's report"));
  // The init waits for our "ack" before it reaps anything, so the command
  // is still its child (maybe a zombie) and listed there by host pid.
  pid_t command_pid = command_host_pid(init_pid);
  char ack = 'a';
  if (retry_eintr([&] { return ::write(setup.sync_w, &ack, 1); }) != 1)
    return abandon(spawn_error(errno, "cannot start the namespace init"));
  nb.adopt_init(init_pid, std::move(init_pidfd), command_pid);

  // The relay, cloned only now: the init's parent check is long over, so a
  // copy of the sync pipe's write end here can hide nothing.
  RelayPlan relay;
  relay.status_r = status_r.get();
  relay.init_pidfd = -1;
  relay.expected_parent = ::getpid();
  Fd init_pidfd_dup(::fcntl(nb.init_pidfd(), F_DUPFD_CLOEXEC, 3));
  relay.init_pidfd = init_pidfd_dup.get();
  Result<sys::CloneResult> rr = fail(EAGAIN);
  auto do_relay = [&] {
    rr = sys::clone3_fork(sys::CloneRequest{});
    if (rr && rr->pid == 0) run_status_relay(relay);
  };
  std::error_code ec = init_pidfd_dup ? run_on_launcher(do_relay) : last_error();
  if (ec || !rr) {
    int e = ec ? ec.value() : rr.error().value();
    (void)nb.kill_all();
    return std::unexpected(spawn_error(e, "cannot start the status relay"));
  }
  Child child;
  child.pid = rr->pid;
  child.report_pid = command_pid;
  child.pidfd = std::move(rr->pidfd);
  return child;
}

}  // namespace

std::expected<Child, SpawnError> spawn_in(const SpawnSpec& spec, Backend& backend,
                                          std::unique_ptr<Boundary>& boundary, const Limits& limits) {
  for (int attempt = 0;; ++attempt) {
    // Nothing to do (not a syscall) on the hot path without limits.
    if (limits.any())
      if (auto set = boundary->set_limits(limits); !set) return std::unexpected(SpawnError{125, EINVAL, set.error(), true});
    auto child = spawn(spec, *boundary);
    if (child || child.error().err != EBUSY || boundary->kind() != ConfineKind::cgroup || attempt >= 32)
      return child;
    boundary->release(false);
    auto fresh = backend.open_boundary();
    if (!fresh) return child;
    boundary = std::move(*fresh);
  }
}

std::expected<Child, SpawnError> spawn(const SpawnSpec& spec, const Boundary& boundary) {
  if (spec.argv.empty()) return std::unexpected(SpawnError{125, EINVAL, "no command given"});
  if (spec.pty_slave >= 0 && !spec.new_session)
    return std::unexpected(SpawnError{125, EINVAL, "a command on a pty needs a session of its own"});
  // A PID namespace boundary starts its own init; spawn records it there.
  if (const auto* nb = dynamic_cast<const PidnsBoundary*>(&boundary))
    return spawn_in_pidns(spec, const_cast<PidnsBoundary&>(*nb));

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
  req.cgroup_fd = boundary.clone_cgroup_fd();
  req.into_cgroup = req.cgroup_fd >= 0;

  // A child that shares our memory (the hot path, no parent-death signal)
  // reports a failure in memory: we run again only once it has exec'd or
  // _exit'ed. Any other child reports on a CLOEXEC pipe.
  const bool shared = spec.pdeathsig == 0 && sys::clone3_spawn_shares_memory(req);
  ChildFailure shared_failure;
  Fd report_r, report_w;
  if (!shared) {
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0)
      return std::unexpected(SpawnError{125, errno, std::string("pipe2: ") + std::strerror(errno)});
    report_r = Fd(pipefd[0]);
    report_w = Fd(pipefd[1]);
  }

  ChildPlan plan;
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
  plan.close_other_fds = spec.close_other_fds;
  plan.changed_signals = spec.changed_signals;
  plan.nofile = spec.nofile;

  // Lend the child this thread's CPU (see SpawnSpec::start_on_this_cpu):
  // pinned here for the clone, it inherits the one-CPU mask and takes ours
  // back at once. Skipped when the mask cannot be read or has one CPU.
  cpu_set_t own_mask;
  bool lent = false;
  if (spec.start_on_this_cpu && spec.pdeathsig == 0 && shared &&
      ::sched_getaffinity(0, sizeof own_mask, &own_mask) == 0 && CPU_COUNT(&own_mask) > 1) {
    const int cpu = ::sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    if (cpu >= 0 && cpu < CPU_SETSIZE) {
      CPU_SET(cpu, &one);
      lent = ::sched_setaffinity(0, sizeof one, &one) == 0;
    }
  }
  if (lent) plan.restore_affinity = &own_mask;

  Result<sys::CloneResult> cr = fail(EAGAIN);
  auto do_clone = [&] {
    if (spec.pdeathsig == 0) {
      // The hot path: a vfork-style child that shares our memory until exec.
      cr = sys::clone3_spawn(req, [](void* p) { run_child(*static_cast<const ChildPlan*>(p)); }, &plan);
      return;
    }
    // With a parent-death signal (and its test gate) the launcher thread
    // must not be suspended while the child waits to arm: a full fork.
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
  if (lent && ::sched_setaffinity(0, sizeof own_mask, &own_mask) != 0) {
    // Our mask no longer fits our cpuset (it changed meanwhile): every CPU,
    // which the kernel cuts down to the cpuset's.
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    (void)::sched_setaffinity(0, sizeof all, &all);
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

  ChildFailure f;
  bool failed;
  if (shared) {
    f.stage = static_cast<volatile ChildFailure&>(shared_failure).stage;
    f.err = static_cast<volatile ChildFailure&>(shared_failure).err;
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
