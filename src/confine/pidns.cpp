// SPDX-License-Identifier: Apache-2.0
// pidns backend: see pidns.h. The init itself is `pmon __nsinit`
// (core/nsinit.cpp); the clone and the namespace setup are in core/spawn.cpp
// and core/child.cpp.
#include "confine/pidns.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "confine/cgroup_fs.h"
#include "confine/error.h"
#include "sys/child.h"
#include "sys/priority.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

PidnsBoundary::PidnsBoundary(NsSetup setup, Fd sync_r, Fd sync_w, std::unique_ptr<Boundary> inner)
    : setup_(std::move(setup)), sync_r_(std::move(sync_r)), sync_w_(std::move(sync_w)), inner_(std::move(inner)) {
  setup_.sync_r = sync_r_.get();
  setup_.sync_w = sync_w_.get();
}

PidnsBoundary::~PidnsBoundary() { release(false); }

void PidnsBoundary::adopt_init(pid_t pid, Fd pidfd, pid_t command_pid) noexcept {
  init_pid_ = pid;
  command_pid_ = command_pid;
  init_pidfd_ = std::move(pidfd);
  // The init has passed its parent check: nobody needs the read end here.
  sync_r_.reset();
  setup_.sync_r = -1;
}

int PidnsBoundary::clone_cgroup_fd() const noexcept { return inner_ ? inner_->clone_cgroup_fd() : -1; }

void PidnsBoundary::set_main(pid_t pid, Children children) noexcept {
  if (inner_) inner_->set_main(pid, children);
}

// Every process of the namespace descends from its init (orphans reparent
// to it), so the init's descendants are the members, by host pid: found
// from the init down, at a cost per member, not per process of the host
// (a service stopping 400 jobs would otherwise walk all of /proc 400 times).
std::vector<sys::ProcStat> PidnsBoundary::members() {
  std::vector<sys::ProcStat> out;
  if (init_pid_ <= 0 || init_exited()) return out;
  for (sys::ProcStat& p : sys::descendants_by_children(init_pid_))
    if (!p.dead() && p.pid != command_pid_) out.push_back(std::move(p));
  return out;
}

// The init forwards what it gets to every process of the namespace
// (kill(-1) from PID 1), each addressed by membership, never by number.
// It runs at the stop's priority from the first signal on: a namespace
// whose every process starts a session of its own (a fork storm) would
// otherwise leave it a CPU share of one among hundreds, and the signal
// would reach the namespace after its grace period. (Alive by its pidfd,
// its pid is its own: nothing on this thread reaps it meanwhile.)
Result<int> PidnsBoundary::signal_all(int sig, const SignalPass& pass) {
  if (!init_lent_ && init_pid_ > 0 && !init_exited()) init_lent_ = sys::lend_priority(init_pid_);
  return signal_in_turn(sig, pass, [this](int s) -> Result<int> {
    if (!init_pidfd_) return 0;
    if (sys::pidfd_send_signal(init_pidfd_.get(), s) != 0) {
      if (errno == ESRCH) return 0;
      return fail_errno();
    }
    return 1;
  });
}

// SIGKILL to the init: the kernel kills the rest of the namespace and
// refuses new forks in it. Under --isolate the leaf's cgroup.kill as well.
Result<void> PidnsBoundary::kill_all() {
  Result<void> r;
  if (inner_) r = inner_->kill_all();
  if (init_pidfd_ && sys::pidfd_send_signal(init_pidfd_.get(), SIGKILL) != 0 && errno != ESRCH)
    return fail_errno();
  return r;
}

bool PidnsBoundary::init_exited() noexcept {
  return !init_pidfd_ || !sys::pidfd_alive(init_pidfd_.get());
}

// The init only turns into a zombie (its pidfd readable) after the kernel
// has killed and released every other process of its namespace
// (zap_pid_ns_processes runs in its exit path), so this is the kernel's word.
//
// Under --isolate the leaf's cgroup.events is read on every call, the init
// alive or not: watch() polls it for POLLPRI, which stays raised until the
// file is read again, so a check that skipped it would turn every wait of
// the stop into a busy loop that never reaches its deadline.
Result<bool> PidnsBoundary::empty() {
  Result<bool> leaf = inner_ ? inner_->empty() : Result<bool>(true);
  if (!init_exited()) return false;
  reap_init(false);
  return leaf;
}

Watch PidnsBoundary::watch() {
  Watch w;
  if (init_pidfd_) w.fds.push_back({init_pidfd_.get(), POLLIN, 0});
  if (inner_) {
    Watch in = inner_->watch();
    w.fds.insert(w.fds.end(), in.fds.begin(), in.fds.end());
    w.rescan_ms = in.rescan_ms;
  }
  return w;
}

std::optional<std::string> PidnsBoundary::cgroup_path() const {
  return inner_ ? inner_->cgroup_path() : std::nullopt;
}

// The init reaped everything in its namespace, so its rusage (children's
// included) is the call's CPU time. Null when somebody else reaped it (the
// CLI's orphan reaper, which then counts the same rusage itself).
Figures PidnsBoundary::figures(FiguresWanted wanted) {
  if (inner_) return inner_->figures(wanted);
  Figures f;
  if (wanted.usage) {
    reap_init(false);
    f.cpu_usec = init_cpu_usec_;
  }
  return f;
}

std::expected<void, Error> PidnsBoundary::set_limits(const Limits& limits, LimitsFrom from) {
  if (inner_) return inner_->set_limits(limits, from);
  if (from == LimitsFrom::call)
    return std::unexpected(no_cgroup_for_limits(limits, "a PID namespace without " + setting_token(Setting::isolate)));
  if (!limits.pids_max) return {};
  return std::unexpected(Error::line("a PID namespace without " + setting_token(Setting::isolate) + " has no cgroup",
                                     Errc::unsupported));
}

void PidnsBoundary::reap_init(bool block) noexcept {
  if (init_reaped_ || !init_pidfd_) return;
  siginfo_t si{};
  struct rusage ru {};
  int r = sys::waitid_raw(P_PIDFD, static_cast<id_t>(init_pidfd_.get()), &si, WEXITED | (block ? 0 : WNOHANG), &ru);
  if (r == 0 && si.si_pid != 0) {
    init_reaped_ = true;
    init_cpu_usec_ = sys::usec_of(ru);
  } else if (r == -ECHILD) {
    init_reaped_ = true;  // reaped by the caller's own reaper
  }
}

void PidnsBoundary::release(bool verified_empty) noexcept {
  if (released_) return;
  released_ = true;
  // Never leave a namespace behind: a boundary given up unverified (spawn
  // failed, an error) still takes its init, and with it everything else.
  if (init_pidfd_ && !init_exited()) {
    (void)sys::pidfd_send_signal(init_pidfd_.get(), SIGKILL);
    pollfd p{init_pidfd_.get(), POLLIN, 0};
    (void)retry_eintr([&] { return ::poll(&p, 1, 5000); });
  }
  if (!init_exited()) {
    // Still not gone after 5 s (a D-state member): leave it unreaped rather
    // than block forever; the kernel finishes the teardown.
  } else {
    reap_init(true);
  }
  sync_w_.reset();
  sync_r_.reset();
  if (inner_) inner_->release(verified_empty && init_exited());
}

namespace {

// Clones a throwaway child with the namespaces a call will get and lets it
// do the mounts the init will do; the one-line reason when it cannot.
// Under --isolate the probe runs in a leaf of its own (cgroup_fd), as the
// call will: a cgroup namespace rooted where pmon is shows the host's
// cgroup2 superblock, which is already mounted there (EBUSY).
std::optional<std::string> probe(bool user_ns, const std::string& cgroup2_mount, int cgroup_fd) {
  sys::CloneRequest req;
  req.into_cgroup = cgroup_fd >= 0;
  req.cgroup_fd = cgroup_fd;
  req.new_pid_ns = true;
  req.new_mount_ns = true;
  req.new_user_ns = user_ns;
  auto cr = sys::clone3_fork(req);
  if (!cr) {
    int e = cr.error().value();
    std::string why = std::string("cannot create a PID namespace (clone3: ") + std::strerror(e) + ")";
    if (e == EPERM || e == ENOSPC || e == EINVAL)
      why += user_ns ? "; user namespaces are disabled or exhausted here (kernel.unprivileged_userns_clone, "
                       "user.max_user_namespaces)"
                     : "";
    return why;
  }
  if (cr->pid == 0) ::_exit(sys::ns_setup_mounts(cgroup2_mount.empty() ? nullptr : cgroup2_mount.c_str()));
  siginfo_t si{};
  if (sys::waitid_raw(P_PIDFD, static_cast<id_t>(cr->pidfd.get()), &si, WEXITED, nullptr) != 0)
    return std::string("cannot wait for the namespace probe");
  if (si.si_code != CLD_EXITED || si.si_status != 0)
    return std::string("cannot mount ") + (cgroup2_mount.empty() ? "/proc" : "/proc and a cgroup2 view") +
           " in a new mount namespace: " + std::strerror(si.si_code == CLD_EXITED ? si.si_status : EINTR);
  return std::nullopt;
}

class PidnsBackend final : public Backend {
 public:
  PidnsBackend(NsSetup base, Fd exe, std::unique_ptr<Backend> cgroup)
      : base_(std::move(base)), exe_(std::move(exe)), cgroup_(std::move(cgroup)) {
    base_.exe_fd = exe_.get();
  }

  ConfineKind kind() const noexcept override { return ConfineKind::pidns; }

  // --isolate: the leaves are the cgroup backend's, removed as it removes
  // them (a service leaves them for when it has nothing else to do).
  void use(const BackendUse& how) noexcept override {
    if (!cgroup_ || !how.defer_cleanup) return;
    BackendUse leaves;
    leaves.defer_cleanup = true;
    cgroup_->use(leaves);
  }
  bool tidy(size_t max) noexcept override { return cgroup_ && cgroup_->tidy(max); }

  Result<std::unique_ptr<Boundary>> open_boundary() override {
    std::unique_ptr<Boundary> inner;
    if (cgroup_) {
      auto b = cgroup_->open_boundary();
      if (!b) return std::unexpected(b.error());
      inner = std::move(*b);
    }
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return fail_errno();
    return std::make_unique<PidnsBoundary>(base_, Fd(p[0]), Fd(p[1]), std::move(inner));
  }

  std::string describe() const override {
    std::string s = "pidns: pmon's init as PID 1 of a new PID namespace, own /proc";
    if (base_.user_ns) s += ", in a user namespace (uid/gid mapped to themselves)";
    if (cgroup_) s += "; isolated: " + cgroup_->describe() + ", cgroup namespace rooted at the leaf";
    return s;
  }

 private:
  NsSetup base_;
  Fd exe_;
  std::unique_ptr<Backend> cgroup_;
};

}  // namespace

std::expected<std::unique_ptr<Backend>, Error> open_pidns_backend(const PidnsOptions& opts) {
  Fd exe(::open(opts.init_exe.c_str(), O_PATH | O_CLOEXEC));
  if (!exe) return unsupported("cannot open pmon's own binary " + opts.init_exe + ": " + std::strerror(errno));

  NsSetup base;
  std::unique_ptr<Backend> cgroup;
  if (opts.isolate) {
    auto cg = open_cgroup_backend(opts.cgroup_root);
    if (!cg) return std::unexpected(prefixed("it needs the cgroup backend: ", cg.error()));
    cgroup = std::move(*cg);
    auto loc = confine::locate_cgroup2();
    if (!loc) return std::unexpected(std::move(loc.error()));
    base.cgroup_ns = true;
    base.cgroup2_mount = loc->mount;
    // Even as root: without a user namespace the call would keep
    // CAP_SYS_ADMIN over the host, and could setns() back out.
    base.user_ns = true;
  } else {
    base.user_ns = ::geteuid() != 0;
  }

  std::unique_ptr<Boundary> leaf;
  if (cgroup) {
    auto b = cgroup->open_boundary();
    if (!b) return std::unexpected(Error::failed(b.error().value(), "cannot make a cgroup leaf: " + b.error().message()));
    leaf = std::move(*b);
  }
  const int leaf_fd = leaf ? leaf->clone_cgroup_fd() : -1;
  auto why = probe(base.user_ns, base.cgroup2_mount, leaf_fd);
  if (leaf) leaf->release(leaf->empty().value_or(false));
  leaf.reset();
  if (why && !base.user_ns) {
    // Root without CAP_SYS_ADMIN (a container): a user namespace may work.
    if (!probe(true, base.cgroup2_mount, -1)) {
      base.user_ns = true;
      why.reset();
    }
  }
  if (why) return std::unexpected(Error::line(*why, Errc::unsupported));
  return std::make_unique<PidnsBackend>(std::move(base), std::move(exe), std::move(cgroup));
}

}  // namespace pmon
