// SPDX-License-Identifier: Apache-2.0
#include "confine/session.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "confine/cgroup_base.h"
#include "confine/cgroup_fs.h"
#include "confine/cgroup_kill.h"
#include "confine/cgroup_limits.h"
#include "confine/session_keeper.h"
#include "sys/numbers.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {

constexpr std::string_view kPrefix = "pmon-session-";

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return n != "." && n != "..";
}

std::optional<uint64_t> read_u64(int dir, const char* file) {
  auto t = sys::read_file_at(dir, file);
  if (!t) return std::nullopt;
  uint64_t v = 0;
  std::string_view s = *t;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  if (!sys::parse_whole(s, v)) return std::nullopt;
  return v;
}

// "key value" lines (memory.events, pids.events).
std::optional<uint64_t> keyed(const std::string& text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ' ') {
      uint64_t v = 0;
      if (sys::parse_whole(line.substr(key.size() + 1), v)) return v;
    }
    pos = end + 1;
  }
  return std::nullopt;
}

// avg10 of the "some" line of a PSI file.
std::optional<double> psi_avg10(int dir, const char* file) {
  auto t = sys::read_file_at(dir, file);
  if (!t || !t->starts_with("some ")) return std::nullopt;
  size_t at = t->find("avg10=");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(t->c_str() + at + 6, nullptr);
}

bool owner_gone(const SessionKey& k) {
  if (k.kind == SessionKey::Kind::named) return true;  // held only by its flocks
  auto ns = sys::self_pid_namespace();
  if (!ns || *ns != k.pid_ns) return false;  // another namespace's: never judged
  auto st = sys::read_stat(k.pid);
  return !st || st->start_time != k.start || st->dead();
}

// Nobody holds it: an exclusive flock is granted at once.
bool unheld(int dir) { return ::flock(dir, LOCK_EX | LOCK_NB) == 0; }

}  // namespace

SessionKey SessionKey::of_this_process() {
  SessionKey k;
  k.kind = Kind::process;
  k.pid = ::getpid();
  k.start = sys::self_start_time().value_or(0);
  k.pid_ns = sys::self_pid_namespace().value_or(0);
  return k;
}

std::optional<SessionKey> SessionKey::of_harness(pid_t pid) {
  auto st = sys::read_stat(pid);
  if (!st || st->dead()) return std::nullopt;
  SessionKey k;
  k.kind = Kind::harness;
  k.pid = pid;
  k.start = st->start_time;
  k.pid_ns = sys::self_pid_namespace().value_or(0);
  return k;
}

std::expected<SessionKey, Error> SessionKey::named_(std::string_view name) {
  if (!valid_name(name))
    return std::unexpected(Error::line("'" + std::string(name.substr(0, 80)) + "' is not a session name "
                                       "(use letters, digits, '.', '_' and '-', at most 64)",
                                       Errc::invalid_argument));
  SessionKey k;
  k.kind = Kind::named;
  k.name = std::string(name);
  return k;
}

std::string SessionKey::dir_name() const {
  if (kind == Kind::named) return std::string(kPrefix) + "n-" + name;
  return std::string(kPrefix) + static_cast<char>(kind) + std::to_string(pid) + "-" + std::to_string(start) + "-" +
         std::to_string(pid_ns);
}

std::optional<SessionKey> SessionKey::parse(std::string_view n) {
  if (!n.starts_with(kPrefix)) return std::nullopt;
  n.remove_prefix(kPrefix.size());
  if (n.starts_with("n-")) {
    auto k = named_(n.substr(2));
    if (!k) return std::nullopt;
    return *k;
  }
  if (n.empty() || (n[0] != 'p' && n[0] != 'h')) return std::nullopt;
  SessionKey k;
  k.kind = static_cast<Kind>(n[0]);
  n.remove_prefix(1);
  uint64_t parts[3];
  for (int i = 0; i < 3; ++i) {
    size_t dash = n.find('-');
    if ((dash == std::string_view::npos) != (i == 2)) return std::nullopt;
    if (!sys::parse_name_number(n.substr(0, dash), parts[i])) return std::nullopt;
    n.remove_prefix(dash == std::string_view::npos ? n.size() : dash + 1);
  }
  if (parts[0] == 0 || parts[0] > 4194304) return std::nullopt;
  k.pid = static_cast<pid_t>(parts[0]);
  k.start = parts[1];
  k.pid_ns = parts[2];
  return k;
}

std::string SessionKey::describe() const {
  switch (kind) {
    case Kind::process: return "pmon " + std::to_string(pid);
    case Kind::harness: return "harness " + std::to_string(pid);
    case Kind::named: return "name " + name;
  }
  return "";
}

Limits read_cgroup_limits(int dir) {
  Limits l;
  auto num = [&](const char* f) -> std::optional<uint64_t> {
    auto t = sys::read_file_at(dir, f);
    if (!t || t->starts_with("max")) return std::nullopt;
    return read_u64(dir, f);
  };
  l.memory_max = num("memory.max");
  l.memory_high = num("memory.high");
  l.pids_max = num("pids.max");
  if (auto t = sys::read_file_at(dir, "cpu.max"); t && !t->starts_with("max")) {
    uint64_t q = 0, p = 0;
    if (std::sscanf(t->c_str(), "%lu %lu", &q, &p) == 2 && p > 0)
      l.cpu_max = static_cast<double>(q) / static_cast<double>(p);
  }
  return l;
}

CgroupUsage read_usage(int dir) {
  CgroupUsage u;
  if (dir < 0) return u;
  u.memory_current = read_u64(dir, "memory.current");
  u.memory_peak = read_u64(dir, "memory.peak");
  if (auto t = sys::read_file_at(dir, "memory.events")) {
    u.memory_high_events = keyed(*t, "high");
    u.memory_max_events = keyed(*t, "max");
    u.oom = keyed(*t, "oom");
    u.oom_kill = keyed(*t, "oom_kill");
  }
  u.pids_current = read_u64(dir, "pids.current");
  if (auto t = sys::read_file_at(dir, "pids.events")) u.pids_max_events = keyed(*t, "max");
  u.memory_pressure_avg10 = psi_avg10(dir, "memory.pressure");
  u.cpu_pressure_avg10 = psi_avg10(dir, "cpu.pressure");
  if (auto t = sys::read_file_at(dir, "cpu.stat")) u.cpu_usec = keyed(*t, "usage_usec");
  return u;
}

namespace confine {

namespace {

// Sessions beside us that nobody holds any more and whose owner is gone
// (a crash's): removed before ours is opened, so they do not pile up. A
// named one has no owner but its holders: one that none holds is left over
// (its last holder was killed). One a pmon is opening just now is not
// held yet either: removed under it, it is made again (the retries of
// SessionCgroup::open).
void sweep(int base, const std::string& base_path, const std::string& ours) {
  for (const std::string& name : child_cgroups(base_path)) {
    if (name == ours) continue;
    auto key = SessionKey::parse(name);
    if (!key || !owner_gone(*key)) continue;
    (void)remove_session(base_path + "/" + name);
  }
  (void)base;
}

}  // namespace

std::expected<std::unique_ptr<SessionCgroup>, Error> SessionCgroup::open(const std::string& cgroup_root,
                                                                         const SessionKey& key,
                                                                         const Envelope& envelope) {
  auto where = choose_leaf_base(cgroup_root);
  if (!where) return std::unexpected(where.error());
  std::unique_ptr<SessionCgroup> s(new SessionCgroup());
  s->key_ = key;
  const std::string name = key.dir_name();
  s->path_ = where->base_path + "/" + name;
  for (int attempt = 0;; ++attempt) {
    s->joined_ = false;
    if (::mkdirat(where->base.get(), name.c_str(), 0755) != 0) {
      if (errno != EEXIST)
        return unsupported("cannot create the session's cgroup " + s->path_ + ": " + std::strerror(errno));
      s->joined_ = true;
    }
    s->dir_ = Fd(::openat(where->base.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!s->dir_) {
      if (errno == ENOENT && attempt < 16) continue;  // its last holder removed it just now
      return unsupported("cannot open the session's cgroup " + s->path_ + ": " + std::strerror(errno));
    }
    if (::flock(s->dir_.get(), LOCK_SH) != 0)
      return unsupported("cannot hold the session's cgroup " + s->path_ + ": " + std::strerror(errno));
    // Removed between our open and our lock: make it again.
    if (::faccessat(s->dir_.get(), "cgroup.procs", F_OK, 0) != 0 && attempt < 16) continue;
    break;
  }
  s->parent_ = std::move(where->base);
  // (Made now: what crashed beside it is looked at once, not on every join.)
  if (!s->joined_) sweep(s->parent_.get(), where->base_path, name);
  if (!s->joined_) {
    // Its controllers come from the place the leaves go; then its own
    // cgroup.subtree_control hands them on to every call inside.
    std::mutex mu;
    ControllerSite site{s->parent_.get(), where->base_path, where->loc.own == where->base_rel, &mu};
    bool memory = false;
    auto refused = write_limits(site, s->dir_.get(), s->path_, envelope.limits, &memory);
    std::string err = refused ? limit_words(*refused, "session's") : "";
    // write_limits sets memory.oom.group, which here would kill the whole
    // session on one call's OOM: each call's leaf is its own OOM group.
    if (err.empty() && memory) (void)sys::write_file_at(s->dir_.get(), "memory.oom.group", "0");
    auto pass_on = [&](const char* c, bool want) {
      if (!want || !err.empty()) return;
      if (auto w = sys::write_file_at(s->dir_.get(), "cgroup.subtree_control", std::string("+") + c); !w)
        err = std::string("cannot enable the ") + c + " controller for the calls in " + s->path_ +
              "/cgroup.subtree_control: " + w.error().message();
    };
    pass_on("memory", envelope.limits.memory_max || envelope.limits.memory_high);
    pass_on("pids", envelope.limits.has_pids_max());
    pass_on("cpu", envelope.limits.cpu_max.has_value());
    if (!err.empty()) {
      s->dir_.reset();
      (void)::unlinkat(s->parent_.get(), name.c_str(), AT_REMOVEDIR);
      return std::unexpected(Error::line("the session's envelope (" + describe(envelope) + ", set by " +
                                             envelope.set_by + "): " + err,
                                         Errc::confinement));
    }
  }
  s->envelope_.profile = envelope.profile;
  s->envelope_.set_by = s->joined_ ? "the session " + name + " (made by an earlier call)" : envelope.set_by;
  s->envelope_.asked = envelope.asked;
  // A harness's calls come one pmon at a time: the one that made its
  // session leaves a keeper that removes it once the harness is gone.
  if (!s->joined_ && key.kind == SessionKey::Kind::harness) start_session_keeper(key, s->parent_.get(), name);
  // One it made is read now (a service's: its threads then only read it);
  // one it joined on the first look (pmon run: most calls never look).
  if (!s->joined_) (void)s->envelope();
  return s;
}

CgroupUsage SessionCgroup::usage() const {
  const int64_t now = sys::monotonic_ns();
  std::lock_guard lock(usage_mu_);
  if (usage_at_ == 0 || now - usage_at_ > 1'000'000) {
    usage_ = read_usage(dir_.get());
    usage_at_ = now;
  }
  return usage_;
}

CgroupUsage SessionCgroup::events() const {
  CgroupUsage u;
  if (auto t = sys::read_file_at(dir_.get(), "memory.events")) {
    u.memory_high_events = keyed(*t, "high");
    u.oom_kill = keyed(*t, "oom_kill");
  }
  if (auto t = sys::read_file_at(dir_.get(), "pids.events")) u.pids_max_events = keyed(*t, "max");
  return u;
}

const Envelope& SessionCgroup::envelope() const {
  if (!envelope_read_) {
    envelope_.limits = read_cgroup_limits(dir_.get());
    envelope_read_ = true;
  }
  return envelope_;
}

SessionCgroup::~SessionCgroup() {
  if (!dir_) return;
  const std::string name = key_.dir_name();
  (void)::flock(dir_.get(), LOCK_UN);
  const bool ours = key_.kind == SessionKey::Kind::process && key_.pid == ::getpid();
  if (!ours && !owner_gone(key_)) return;
  Fd again(::openat(parent_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!again || !unheld(again.get())) return;  // another pmon runs calls in it
  dir_.reset();
  if (::unlinkat(parent_.get(), name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return;
  // Something is still in it (a crashed call's leaf): its killer is us now.
  (void)kill_and_remove_cgroup(parent_.get(), name.c_str(), 2000);
}

bool may_make_cgroup_namespace() noexcept {
  static const bool may = [] {
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct d[2]{};
    if (::syscall(SYS_capget, &h, d) != 0) return false;
    return (d[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32))) != 0;
  }();
  return may;
}

std::vector<SessionInfo> find_sessions(const std::string& mount) {
  std::vector<SessionInfo> out;
  std::vector<std::string> todo{mount};
  for (size_t i = 0; i < todo.size() && i < 4096; ++i) {
    for (const std::string& name : child_cgroups(todo[i])) {
      const std::string path = todo[i] + "/" + name;
      if (auto key = SessionKey::parse(name)) {
        SessionInfo info{path, *key};
        Fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        info.held = dir && !unheld(dir.get());
        info.owner_gone = owner_gone(*key);
        info.calls = child_cgroups(path).size();
        out.push_back(std::move(info));
        continue;
      }
      // A call's leaf (pmon-<pid>-...): its cgroups are its own. Any other
      // cgroup may hold sessions, a --cgroup-root named pmon-x too.
      if (name.size() > 5 && name.starts_with("pmon-") && std::isdigit(static_cast<unsigned char>(name[5]))) continue;
      todo.push_back(path);
    }
  }
  return out;
}

std::string remove_session(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "not a cgroup path";
  Fd parent(::open(path.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent || !dir) return std::strerror(errno);
  if (!unheld(dir.get())) return "a pmon still runs calls in it";
  const std::string name = path.substr(slash + 1);
  if (::unlinkat(parent.get(), name.c_str(), AT_REMOVEDIR) == 0) return "";
  if (int e = kill_and_remove_cgroup(parent.get(), name.c_str(), 5000); e != 0) return std::strerror(e);
  return "";
}

}  // namespace confine
}  // namespace pmon
