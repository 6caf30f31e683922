// SPDX-License-Identifier: Apache-2.0
// cgroup: a fresh cgroup v2 leaf per call, entered at clone time
// (CLONE_INTO_CGROUP), emptied with one write to cgroup.kill, and confirmed
// empty from cgroup.events (pollable: POLLPRI on change, no sleep loop).
// Leaves are named pmon-<owner pid>-<owner start time>-<seq>, so a leaf left
// by a crashed pmon names its dead owner. Empty leaves are reused, so the
// hot path costs no mkdir/rmdir.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "confine/boundary.h"
#include "confine/cgroup_base.h"
#include "confine/cgroup_freeze.h"
#include "confine/cgroup_fs.h"
#include "confine/cgroup_guard.h"
#include "confine/cgroup_kill.h"
#include "confine/cgroup_leaf.h"
#include "confine/cgroup_limits.h"
#include "confine/error.h"
#include "confine/systemd.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace pmon {

using confine::child_cgroup_count;
using confine::remove_cgroup_tree;

namespace {

using Leaf = confine::CgroupLeaf;

// Leaf numbers are unique in the process, not per backend: the Python
// package holds one backend per confine= value, and two cgroup backends of
// one process share the name prefix pmon-<pid>-<start time>-.
uint64_t next_leaf_number() noexcept {
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::string strerr(int e) { return std::strerror(e); }

class CgroupBackend;

class CgroupBoundary final : public Boundary {
 public:
  CgroupBoundary(CgroupBackend& owner, Leaf leaf, std::string rel,
                 std::string path)
      : owner_(owner), leaf_(std::move(leaf)), rel_(std::move(rel)),
        path_(std::move(path)), cpu_base_(leaf_.cpu_seen) {}
  ~CgroupBoundary() override { release(false); }

  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }
  int clone_cgroup_fd() const noexcept override { return leaf_.dir.get(); }
  void set_main(pid_t, Children) noexcept override {}

  std::vector<sys::ProcStat> members() override {
    std::vector<sys::ProcStat> out;
    for (pid_t pid : pids())
      if (auto st = sys::read_stat(pid); st && !st->dead()) out.push_back(*st);
    return out;
  }

  std::optional<std::vector<pid_t>> listed_pids() override {
    std::vector<pid_t> v = pids();
    std::sort(v.begin(), v.end());
    return v;
  }

  // There is no cgroup.signal: sig goes to each member through a pidfd. A
  // pid read from cgroup.procs may be recycled before its pidfd is opened,
  // so the pidfds are opened first and only those whose pid the leaf still
  // lists afterwards are used (see listed_pids): two reads of cgroup.procs
  // instead of a /proc read per process.
  //
  // The pass runs with the leaf frozen (FrozenPass): a process that forks
  // between the listing and its signal would leave a child that got
  // nothing, and a fork storm could outrun the grace period that way. Frozen,
  // the listing is complete and stays so until the thaw, and every member
  // acts on the signal at once. Where freezing is not possible the pass is
  // made unfrozen, as before.
  Result<int> signal_all(int sig, const SignalPass& how) override {
    const pid_t signalled = how.signalled;
    const int then_sig = how.then_sig;
    const std::vector<pid_t>* listed = how.listed;
    // The main process alone (the common case: one process, or a tree that
    // has ended but for it) has had its signal already: nothing to freeze.
    // A fork it was making when the signal came fails and is restarted
    // after the signal is handled, so no child of it can have missed the
    // signal; and its pid is its own until it is reaped, by us.
    if (signalled > 0) {
      std::vector<pid_t> now = pids();
      if (now.empty() || (now.size() == 1 && now[0] == signalled)) return 0;
    }
    confine::FrozenPass frozen(leaf_.dir.get(), leaf_.events.get());
    if (frozen.nothing_there()) return 0;
    // A listing read before the freeze may lack what was forked since.
    if (frozen.held()) listed = nullptr;
    std::vector<pid_t> done;  // signalled in this pass, sorted
    int sent = 0;
    auto pass = [&](const std::vector<pid_t>& candidates) {
      std::vector<std::pair<pid_t, Fd>> fds;
      for (pid_t pid : candidates)
        if ((pid != signalled || signalled <= 0) && !std::binary_search(done.begin(), done.end(), pid))
          if (auto fd = sys::pidfd_open(pid)) fds.emplace_back(pid, std::move(*fd));
      if (fds.empty()) return;
      std::vector<pid_t> still = *listed_pids();
      const size_t before = done.size();
      for (auto& [pid, fd] : fds)
        if (std::binary_search(still.begin(), still.end(), pid) && sys::pidfd_send_signal(fd.get(), sig) == 0) {
          ++sent;
          done.push_back(pid);
          if (then_sig != 0) (void)sys::pidfd_send_signal(fd.get(), then_sig);
        }
      std::sort(done.begin() + static_cast<ptrdiff_t>(before), done.end());
      std::inplace_merge(done.begin(), done.begin() + static_cast<ptrdiff_t>(before), done.end());
    };
    pass(listed ? *listed : pids());
    frozen.catch_up([&] { pass(pids()); });
    return sent;
  }

  // cgroup.kill; from the second time on (a wake, at most kRekillMs later)
  // also SIGKILL by pidfd to whatever the leaf still lists: a process whose
  // main thread has exited survives cgroup.kill (cgroup_kill.h). Not while
  // the list shrinks: its members are dying of the kill, and a pidfd for
  // each of a thousand of them took the CPU they needed to exit.
  Result<void> kill_all() override {
    bool pass = std::exchange(killed_, true);
    if (pass) {
      auto text = confine::read_listing(leaf_);
      const size_t n = text ? static_cast<size_t>(std::ranges::count(*text, '\n')) : SIZE_MAX;
      pass = n >= listed_at_kill_;
      listed_at_kill_ = n;
    }
    if (int e = pass ? confine::kill_cgroup(leaf_.dir.get()) : confine::kill_cgroup_at_once(leaf_.dir.get()); e != 0)
      return fail(e);
    return {};
  }

  Result<bool> empty() override {
    // Read through the polled fd: reading re-arms POLLPRI for the next change.
    char buf[256];
    ssize_t n = retry_eintr(
        [&] { return ::pread(leaf_.events.get(), buf, sizeof buf - 1, 0); });
    // Removed (ENODEV): the kernel removes only an empty cgroup. A leaf made
    // inside another call's leaf goes when that call removes its own.
    if (n < 0 && (errno == ENODEV || errno == ENOENT)) return true;
    if (n < 0) return fail_errno();
    buf[n] = '\0';
    const char* p = std::strstr(buf, "populated ");
    if (!p) return fail(EIO);
    return p[10] == '0';
  }

  // Once killed, the stop calls kill_all again on every wake: a survivor of
  // the first pass may still fork, and that changes nothing in
  // cgroup.events, so it is also woken on a short timer.
  Watch watch() override { return Watch{{{leaf_.events.get(), POLLPRI, 0}}, killed_ ? kRekillMs : -1, killed_}; }

  bool contains_escapes() const noexcept override { return true; }

  std::optional<std::string> cgroup_path() const override { return path_; }

  Figures figures(FiguresWanted wanted) override {
    Figures f;
    if (wanted.usage) {
      f.cpu_usec = cpu_usec();
      f.memory_peak_bytes = memory_peak_bytes();
    }
    if (wanted.limit_hits) {
      f.oom_killed = counted(limits_.memory_max.has_value(), "memory.events", "oom_kill");
      f.pids_max_hit = counted(limits_.has_pids_max() || leaf_.pids_default, "pids.events", "max");
      f.memory_high_hit = counted(limits_.memory_high.has_value(), "memory.events", "high");
    }
    return f;
  }

  std::expected<void, Error> set_limits(const Limits& limits, LimitsFrom from) override {
    return from == LimitsFrom::call ? set_call_limits(limits) : set_default_pids_max(limits.pids_max);
  }

  void release(bool verified_empty) noexcept override;

 private:
  // usage_usec only grows, and nothing runs in a pooled leaf: what the call
  // used is the growth since the leaf was last given back.
  std::optional<uint64_t> cpu_usec() {
    auto now = confine::read_keyed(leaf_.dir.get(), leaf_.cpu_stat, "cpu.stat", "usage_usec");
    if (!now) return std::nullopt;
    cpu_read_ = true;
    leaf_.cpu_seen = *now;
    return *now - std::min(*now, cpu_base_);
  }

  std::optional<uint64_t> memory_peak_bytes() {
    if (!leaf_.memory) return std::nullopt;
    auto text = sys::read_file_at(leaf_.dir.get(), "memory.peak");
    if (!text) return std::nullopt;
    return std::strtoull(text->c_str(), nullptr, 10);
  }

  std::expected<void, Error> set_call_limits(const Limits& limits);
  std::expected<void, Error> set_default_pids_max(std::optional<uint64_t> n);

  // Whether `key` of the leaf's `file` (memory.events, pids.events) has
  // counted anything; nothing where the limit it counts was not set.
  std::optional<bool> counted(bool limited, const char* file, const char* key) {
    if (!limited) return std::nullopt;
    Fd fd;
    auto n = confine::read_keyed(leaf_.dir.get(), fd, file, key);
    return n ? std::optional<bool>(*n > 0) : std::nullopt;
  }

  // Members of the leaf and of any cgroup the call created below it.
  // The leaf's cgroup.procs through its open directory, and the cgroups
  // below it only when its link count says it has some (one fstat instead
  // of a directory read per listing).
  std::vector<pid_t> pids() {
    std::vector<pid_t> out;
    if (auto text = confine::read_listing(leaf_)) confine::parse_pid_list(*text, out);
    if (child_cgroup_count(leaf_.dir.get()) != 0)
      for (const std::string& sub : confine::child_cgroups(path_)) confine::cgroup_tree_pids(path_ + "/" + sub, out, 1);
    return out;
  }

  CgroupBackend& owner_;
  Leaf leaf_;
  std::string rel_;
  std::string path_;
  uint64_t cpu_base_ = 0;
  bool cpu_read_ = false;  // leaf_.cpu_seen is current
  Limits limits_;
  bool released_ = false;
  // Linux 6.18 SIGKILLs every process later cloned into a leaf that once
  // had cgroup.kill written (CLONE_INTO_CGROUP reads the kill sequence of
  // the parent's cgroup, not the leaf's), so a killed leaf is never reused.
  bool killed_ = false;
  size_t listed_at_kill_ = SIZE_MAX;  // members the last kill_all listed
  static constexpr int kRekillMs = 10;
};

class CgroupBackend final : public Backend, public CrashGuard {
 public:
  CgroupBackend(confine::CgroupLocation loc, std::string base_rel, Fd base)
      : loc_(std::move(loc)), base_rel_(std::move(base_rel)), base_(std::move(base)) {
    // Named after this pmon as its own PID namespace numbers it, and that
    // namespace: pmon gc elsewhere (a container's, the host's) must not
    // judge by a pid that means another process there.
    auto start = sys::self_start_time();
    auto ns = sys::self_pid_namespace();
    prefix_ = "pmon-" + std::to_string(::getpid()) + "-" + std::to_string(start ? *start : 0) + "-" +
              std::to_string(ns ? *ns : 0) + "-";
  }

  ~CgroupBackend() override {
    for (Leaf& l : pool_) remove_leaf(l);
    for (Leaf& l : retired_) remove_leaf(l);
  }

  void use(const BackendUse& how) noexcept override {
    if (how.defer_cleanup) defer_ = true;
    if (how.single_call) single_ = true;
    if (how.helpers_apart) keep_guard_apart();
  }
  void leaves_in_memory_session() noexcept { in_session_memory_ = true; }
  // The base is this process's own session: the guard removes it too.
  void guard_removes_base(std::string name) { session_base_ = std::move(name); }
  bool single() const noexcept { return single_; }

  void keep_guard_apart() noexcept {
    if (!guard_ || guard_->apart()) return;
    guard_.reset();  // told to go, and reaped
    auto g = confine::CgroupGuard::start(base_.get(), prefix_, confine::CgroupGuard::Memory::own, session_base_);
    if (g) guard_ = std::move(*g);
    else guard_error_ = g.error().message();
  }

  CrashGuard* guard() noexcept override { return this; }

  int pidfd() const noexcept override { return guard_ ? guard_->pidfd() : -1; }

  std::expected<void, Error> restart() noexcept override {
    const auto memory = guard_ && !guard_->apart() ? confine::CgroupGuard::Memory::shared
                                                    : confine::CgroupGuard::Memory::own;
    guard_.reset();  // reaped
    // It finds the leaves by their names: every running call's is covered.
    auto g = confine::CgroupGuard::start(base_.get(), prefix_, memory, session_base_);
    if (!g) {
      guard_error_ = g.error().message();
      return std::unexpected(Error::failed(g.error().value(), guard_error_));
    }
    guard_ = std::move(*g);
    return {};
  }

  std::string warning() const override {
    const int e = guard_ ? guard_->oom_errno() : 0;
    if (e == 0 || ((e == EACCES || e == EPERM) && ::geteuid() != 0)) return {};
    return confine::oom_shield_words(e);
  }

  bool tidy(size_t max) noexcept override {
    for (size_t i = 0; i < max; ++i) {
      Leaf l;
      {
        std::lock_guard lock(mu_);
        if (retired_.empty()) return false;
        l = std::move(retired_.back());
        retired_.pop_back();
      }
      remove_leaf(l);
    }
    std::lock_guard lock(mu_);
    return !retired_.empty();
  }

  ConfineKind kind() const noexcept override { return ConfineKind::cgroup; }

  pid_t pid() const noexcept override { return guard_ ? guard_->pid() : 0; }

  void dismiss() noexcept override {
    if (guard_) guard_->dismiss();
  }

  std::string describe() const override {
    return "cgroup: cgroup2 at " + loc_.mount + ", leaves under " + base_path() +
           (guard_ ? ", crash guard pid " + std::to_string(guard_->pid()) + " (stops the calls if pmon is killed)"
                   : ", no crash guard (" + guard_error_ + "; if pmon is killed, 'pmon gc' cleans up)") +
           note_;
  }

  // Appended to describe() ("; ...").
  void set_note(std::string note) { note_ = std::move(note); }

  // E11: a process of ours that stops our leaves if we die (cgroup_guard.h).
  // Without it the call still runs; `pmon gc` is then the only cleanup.
  void start_guard() noexcept {
    auto g = confine::CgroupGuard::start(base_.get(), prefix_, confine::CgroupGuard::Memory::shared, session_base_);
    if (g) guard_ = std::move(*g);
    else guard_error_ = g.error().message();
  }

  int base_fd() const noexcept { return base_.get(); }

  std::string base_path() const {
    return base_rel_ == "/" ? loc_.mount : loc_.mount + base_rel_;
  }

  Result<std::unique_ptr<Boundary>> open_boundary() override {
    auto leaf = take_leaf();
    if (!leaf) return std::unexpected(leaf.error());
    std::string rel = (base_rel_ == "/" ? "" : base_rel_) + "/" + leaf->name;
    std::string path = base_path() + "/" + leaf->name;
    return std::make_unique<CgroupBoundary>(*this, std::move(*leaf), rel, path);
  }

  Result<std::unique_ptr<Boundary>> open_boundary_inside(const std::string& dir) override {
    if (dir.size() <= loc_.mount.size() || !dir.starts_with(loc_.mount + "/")) return fail(EXDEV);
    Fd parent(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!parent) return fail_errno();
    auto leaf = make_leaf(parent.get());
    if (!leaf) return std::unexpected(leaf.error());
    leaf->parent = std::move(parent);
    std::string path = dir + "/" + leaf->name;
    std::string rel = path.substr(loc_.mount.size());
    return std::make_unique<CgroupBoundary>(*this, std::move(*leaf), rel, path);
  }

  Result<Leaf> take_leaf() {
    {
      std::lock_guard lock(mu_);
      if (!pool_.empty()) {
        Leaf l = std::move(pool_.back());
        pool_.pop_back();
        return l;
      }
    }
    return make_leaf();
  }

  // In the base, or in `parent` (a directory fd the caller keeps open).
  Result<Leaf> make_leaf(int parent = -1) {
    Leaf l;
    {
      std::lock_guard lock(mu_);
      l.name = prefix_ + std::to_string(next_leaf_number());
    }
    const int in = parent >= 0 ? parent : base_.get();
    if (::mkdirat(in, l.name.c_str(), 0755) != 0) return fail_errno();
    l.dir = Fd(::openat(in, l.name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (l.dir) l.events = Fd(::openat(l.dir.get(), "cgroup.events", O_RDONLY | O_CLOEXEC));
    if (!l.dir || !l.events) {
      int e = errno;
      l.events.reset();
      l.dir.reset();
      remove_cgroup_tree(in, l.name.c_str(), true);
      return fail(e);
    }
    l.memory = ::faccessat(l.dir.get(), "memory.peak", F_OK, 0) == 0;
    // In a session with a memory envelope, an out-of-memory kill there
    // takes one call whole (this leaf), never the session's other calls.
    if (in_session_memory_) (void)sys::write_file_at(l.dir.get(), "memory.oom.group", "1");
    // Opened with the leaf, not on the first read: a caller that watches its
    // fd numbers (supervise's pidfd across restarts) sees the same ones
    // every call.
    l.cpu_stat = Fd(::openat(l.dir.get(), "cpu.stat", O_RDONLY | O_CLOEXEC));
    return l;
  }

  // Whether a leaf given back now could be kept for another call.
  bool pool_has_room() const {
    std::lock_guard lock(mu_);
    return pool_.size() < kMaxPooled;
  }

  void give_back(Leaf leaf, bool verified_empty) noexcept {
    if (single_) {
      // Removed first: should we die before the end, the guard has nothing
      // left to do, and its exit overlaps the rest of ours.
      remove_leaf(leaf);
      if (verified_empty) dismiss();
      return;
    }
    // memory.peak cannot be reset on older kernels, so a leaf that accounts
    // memory is not reused; an unverified leaf is never reused, nor one the
    // call made cgroups in. One the call enabled controllers in (it moved
    // itself below, enabled them, and removed its cgroups again) refuses
    // processes: spawn_in() notices that (EBUSY) and drops it.
    // (Looked at only when the pool has room: 1000 jobs ending at once
    // leave all but a few to be removed anyway.)
    bool room;
    {
      std::lock_guard lock(mu_);
      room = pool_.size() < kMaxPooled;
    }
    if (room && verified_empty && !leaf.memory)
      leaf.memory = ::faccessat(leaf.dir.get(), "memory.peak", F_OK, 0) == 0;
    bool reusable = room && verified_empty && !leaf.memory && !leaf.limited && !leaf.parent &&
                    child_cgroup_count(leaf.dir.get()) == 0;
    // A leaf whose call met its default pids.max counts that in pids.events:
    // a later call would read it as its own.
    if (reusable && leaf.pids_default) {
      Fd fd;
      auto hit = confine::read_keyed(leaf.dir.get(), fd, "pids.events", "max");
      reusable = hit && *hit == 0;
    }
    {
      std::lock_guard lock(mu_);
      if (reusable && pool_.size() < kMaxPooled) {
        pool_.push_back(std::move(leaf));
        return;
      }
      if (defer_) {
        retired_.push_back(std::move(leaf));
        return;
      }
    }
    remove_leaf(leaf);
  }

  // Where the leaves' controllers come from (cgroup_limits.h).
  confine::ControllerSite controller_site() {
    return {base_.get(), base_path(), loc_.own == base_rel_, &controller_mu_};
  }

  // A leaf just made, that no call has used yet.
  void pool_fresh(Leaf leaf) {
    std::lock_guard lock(mu_);
    pool_.push_back(std::move(leaf));
  }

  void remove_leaf(Leaf& l) noexcept {
    const bool childless = l.dir && child_cgroup_count(l.dir.get()) == 0;
    l.events.reset();
    l.cpu_stat.reset();
    l.procs.reset();
    l.dir.reset();
    // (One made inside another call's leaf may be gone already: that
    // call removes its leaf with everything below it.)
    remove_cgroup_tree(l.parent ? l.parent.get() : base_.get(), l.name.c_str(), childless);
    l.parent.reset();
  }

 private:
  static constexpr size_t kMaxPooled = 16;
  confine::CgroupLocation loc_;
  std::string base_rel_;
  Fd base_;
  std::string prefix_;
  mutable std::mutex mu_;
  std::mutex controller_mu_;
  std::vector<Leaf> pool_;
  bool defer_ = false;
  bool single_ = false;
  bool in_session_memory_ = false;
  std::string session_base_;
  std::vector<Leaf> retired_;  // to be removed by tidy()
  // Destroyed after ~CgroupBackend has removed the leaves: it tells the
  // guard to go without touching anything.
  std::unique_ptr<confine::CgroupGuard> guard_;
  std::string guard_error_;
  std::string note_;
};

void CgroupBoundary::release(bool verified_empty) noexcept {
  if (released_) return;
  released_ = true;
  bool reuse = verified_empty && !killed_;
  // The next call's starting point, read only where the leaf may be kept
  // for one (1000 jobs ending at once leave all but a few to be removed);
  // one whose usage_usec cannot be read is not kept (the next call would
  // count this one's CPU time as its own). None after pmon run's call.
  if (reuse && !cpu_read_ && !owner_.single()) reuse = owner_.pool_has_room() && cpu_usec().has_value();
  owner_.give_back(std::move(leaf_), reuse);
}

std::expected<void, Error> CgroupBoundary::set_default_pids_max(std::optional<uint64_t> n) {
  const int dir = leaf_.dir.get();
  if (!n) {
    // No pids limit at all: a pooled leaf's default goes.
    if (!leaf_.pids_default) return {};
    leaf_.pids_default = false;
    if (auto w = sys::write_file_at(dir, "pids.max", "max"); !w) {
      leaf_.limited = true;  // never pooled again with a limit nobody asked for
      return std::unexpected(Error::failed(w.error().value(), "cannot clear pids.max in " + path_ + ": " +
                                                                   w.error().message()));
    }
    return {};
  }
  if (leaf_.pids_default) return {};  // a pooled leaf that has it already
  const auto now = std::chrono::steady_clock::now();  // (then asked again: it may have been enabled)
  if (leaf_.pids_refused && now - leaf_.pids_refused_at < std::chrono::seconds(1))
    return std::unexpected(*leaf_.pids_refused);
  auto w = confine::write_default_pids(owner_.controller_site(), dir, path_, *n);
  leaf_.pids_refused.reset();
  if (w) leaf_.pids_default = true;
  else if (w.error().code == Errc::unsupported) leaf_.pids_refused = w.error(), leaf_.pids_refused_at = now;
  return w;
}

std::expected<void, Error> CgroupBoundary::set_call_limits(const Limits& limits) {
  // Marked first: a leaf with any limit written is never pooled again.
  leaf_.limited = true;
  limits_ = limits;
  if (auto refused = confine::write_limits(owner_.controller_site(), leaf_.dir.get(), path_, limits, &leaf_.memory))
    return std::unexpected(Error::line(confine::limit_words(*refused), Errc::confinement));
  return {};
}

}  // namespace

std::expected<std::unique_ptr<Backend>, Error> open_cgroup_backend(const std::string& cgroup_root) {
  auto where = confine::choose_leaf_base(cgroup_root);
  if (!where) return std::unexpected(where.error());
  const std::string& base_path = where->base_path;
  const std::string& systemd_note = where->systemd_note;
  auto backend = std::make_unique<CgroupBackend>(where->loc, where->base_rel, std::move(where->base));
  // The base is a session's cgroup that accounts memory (confine/session.h).
  if (where->base_rel.find("/pmon-session-") != std::string::npos &&
      ::faccessat(backend->base_fd(), "cgroup.subtree_control", F_OK, 0) == 0) {
    auto ctl = sys::read_file_at(backend->base_fd(), "cgroup.subtree_control");
    if (ctl && ctl->find("memory") != std::string::npos) backend->leaves_in_memory_session();
    const std::string name = where->base_rel.substr(where->base_rel.rfind('/') + 1);
    if (auto key = SessionKey::parse(name);
        key && key->kind == SessionKey::Kind::process && key->pid == ::getpid())
      backend->guard_removes_base(name);
  }
  // Make the first leaf now: it proves we may create cgroups here, and the
  // kernel has cgroup.kill (5.14+).
  auto leaf = backend->make_leaf();
  if (!leaf)
    return unsupported("cannot create a cgroup under " + base_path + ": " + leaf.error().message() +
                       "; run pmon inside a delegated cgroup subtree (systemd Delegate=yes, or a chowned one) or set " +
                       setting_token(Setting::cgroup_root) + systemd_note);
  if (::faccessat(leaf->dir.get(), "cgroup.kill", W_OK, 0) != 0) {
    int e = errno;
    backend->remove_leaf(*leaf);
    return unsupported("cgroup.kill is not usable in " + base_path + " (" + strerr(e) +
                       "); it needs Linux 5.14 or newer");
  }
  // Below a threaded cgroup a new child is "domain invalid": mkdir works but
  // no process may enter it (CLONE_INTO_CGROUP fails with EOPNOTSUPP later).
  auto type = sys::read_file_at(leaf->dir.get(), "cgroup.type");
  if (type && type->rfind("domain invalid", 0) == 0) {
    backend->remove_leaf(*leaf);
    return unsupported("cannot run processes in a cgroup under " + base_path + ": it is a threaded subtree " +
                       "(cgroup.type); set " + setting_token(Setting::cgroup_root) + " to a domain cgroup");
  }
  backend->pool_fresh(std::move(*leaf));
  backend->start_guard();
  backend->set_note(where->fallback_note);
  return backend;
}

}  // namespace pmon
