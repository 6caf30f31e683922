// SPDX-License-Identifier: Apache-2.0
// The launch of a PID namespace call (PidnsBoundary::launch): pmon's own
// init as PID 1, the command as its child, and the status relay.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "confine/pidns.h"
#include "sys/child.h"
#include "sys/launcher.h"
#include "sys/clone_spawn.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

extern char** environ;

namespace pmon {

namespace {

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

}  // namespace

// A PID namespace call: pmon -> init (PID 1, `pmon __nsinit`) -> command,
// plus the status relay, pmon's direct child that exits the way the command
// did. The init is cloned on the launcher thread: its PR_SET_PDEATHSIG
// (SIGKILL, always) follows the thread that cloned it (seed 001).
std::expected<Child, Error> PidnsBoundary::launch(const SpawnSpec& spec) {
  PidnsBoundary& nb = *this;
  const NsSetup& setup = setup_;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return std::unexpected(Error::system(errno, "pipe2"));
  Fd report_r(p[0]), report_w(p[1]);
  if (::pipe2(p, O_CLOEXEC) != 0) return std::unexpected(Error::system(errno, "pipe2"));
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

  sys::NsChildPlan ns;
  ns.sync_r = setup.sync_r;
  ns.sync_w = setup.sync_w;
  ns.exe_fd = setup.exe_fd;
  ns.cgroup2_mount = setup.cgroup_ns ? setup.cgroup2_mount.c_str() : nullptr;
  ns.keep_fds[0] = report_w.get();
  ns.keep_fds[1] = status_w.get();
  ns.keep_fds[2] = setup.sync_r;
  ns.init_argv = init_argv.data();

  sys::ChildPlan plan;
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
  plan.nice = sys::unraised_nice();
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
    if (cr && cr->pid == 0) sys::run_child(plan);
  };
  if (std::error_code ec = sys::run_on_launcher(do_clone))
    return std::unexpected(Error::failed(ec.value(), "cannot start the launcher thread: " + ec.message()));
  if (!cr) {
    int e = cr.error().value();
    return std::unexpected(Error::failed(e, std::string("cannot create the call's namespaces (clone3: ") +
                                                  std::strerror(e) + ")"));
  }
  pid_t init_pid = cr->pid;
  Fd init_pidfd = std::move(cr->pidfd);
  auto abandon = [&](Error err) {
    (void)sys::pidfd_send_signal(init_pidfd.get(), SIGKILL);
    siginfo_t si;
    (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(init_pidfd.get()), &si, WEXITED, nullptr);
    return std::unexpected(std::move(err));
  };
  report_w.reset();
  status_w.reset();
  if (setup.user_ns)
    if (std::error_code ec = write_id_maps(init_pid); ec)
      return abandon(Error::failed(ec.value(), "cannot map the call's uid/gid into its user namespace: " + ec.message()));
  char go = 'g';
  if (retry_eintr([&] { return ::write(setup.sync_w, &go, 1); }) != 1)
    return abandon(Error::system(errno, "cannot start the namespace init"));

  sys::ChildFailure f;
  ssize_t n = retry_eintr([&] { return ::read(report_r.get(), &f, sizeof f); });
  if (n == static_cast<ssize_t>(sizeof f)) {
    siginfo_t si;
    (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(init_pidfd.get()), &si, WEXITED, nullptr);
    return std::unexpected(describe_failure(f, spec));
  }
  if (n != 0) return abandon(Error::system(n < 0 ? errno : EIO, "reading the namespace init's report"));
  // The init waits for our "ack" before it reaps anything, so the command
  // is still its child (maybe a zombie) and listed there by host pid.
  pid_t command_pid = command_host_pid(init_pid);
  char ack = 'a';
  if (retry_eintr([&] { return ::write(setup.sync_w, &ack, 1); }) != 1)
    return abandon(Error::system(errno, "cannot start the namespace init"));
  nb.adopt_init(init_pid, std::move(init_pidfd), command_pid);

  // The relay, cloned only now: the init's parent check is long over, so a
  // copy of the sync pipe's write end here can hide nothing.
  sys::RelayPlan relay;
  relay.status_r = status_r.get();
  relay.init_pidfd = -1;
  relay.expected_parent = ::getpid();
  Fd init_pidfd_dup(::fcntl(nb.init_pidfd(), F_DUPFD_CLOEXEC, 3));
  relay.init_pidfd = init_pidfd_dup.get();
  Result<sys::CloneResult> rr = fail(EAGAIN);
  auto do_relay = [&] {
    rr = sys::clone3_fork(sys::CloneRequest{});
    if (rr && rr->pid == 0) sys::run_status_relay(relay);
  };
  std::error_code ec = init_pidfd_dup ? sys::run_on_launcher(do_relay) : last_error();
  if (ec || !rr) {
    int e = ec ? ec.value() : rr.error().value();
    (void)nb.kill_all();
    return std::unexpected(Error::system(e, "cannot start the status relay"));
  }
  Child child;
  child.pid = rr->pid;
  child.report_pid = command_pid;
  child.pidfd = std::move(rr->pidfd);
  return child;
}

}  // namespace pmon
