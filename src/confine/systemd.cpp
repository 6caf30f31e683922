// SPDX-License-Identifier: Apache-2.0
#include "confine/systemd.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "sys/fd.h"
#include "sys/numbers.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon::confine {

ScopeRequest scope_request_for_self() {
  ScopeRequest r;
  r.pid = ::getpid();
  auto start = sys::self_start_time();
  r.unit = "pmon-" + std::to_string(r.pid) + "-" + std::to_string(start ? *start : 0) + ".scope";
  r.description = "pmon " + std::to_string(r.pid) + " (delegated cgroup for its calls)";
  return r;
}

namespace {

std::atomic<const SystemdAccess*> g_access{nullptr};  // nullptr: the helper

// pmon-systemd next to this executable, or in ../libexec/pmon/.
std::expected<std::string, Error> helper_path() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return std::unexpected(Error::line(std::string("cannot read /proc/self/exe: ") + std::strerror(errno)));
  std::string dir(buf, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  for (const std::string& p : {dir + "/pmon-systemd", dir + "/../libexec/pmon/pmon-systemd"})
    if (::access(p.c_str(), X_OK) == 0) return p;
  return std::unexpected(Error::line("pmon-systemd, the helper that talks to systemd for pmon, is neither in " + dir +
                         " nor in " + dir + "/../libexec/pmon"));
}

// Runs the helper with args; its one line on stdout is the value (exit 0)
// or the reason (exit 1).
std::expected<std::string, Error> run_helper(const std::vector<std::string>& args) {
  auto path = helper_path();
  if (!path) return std::unexpected(Error::line("no systemd manager reachable (" + path.error().text + ")"));
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return std::unexpected(Error::line(std::string("pipe2: ") + std::strerror(errno)));
  Fd rd(out[0]), wr(out[1]);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  ::posix_spawnattr_init(&attr);
  // pmon blocks the signals it reads from a signalfd: the helper starts clean.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path->c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int e = ::posix_spawn(&pid, path->c_str(), &fa, &attr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  wr.reset();
  if (e != 0)
    return std::unexpected(
        Error::line("no systemd manager reachable (cannot run " + *path + ": " + std::strerror(e) + ")"));
  std::string text;
  char chunk[512];
  for (;;) {
    ssize_t r = retry_eintr([&] { return ::read(rd.get(), chunk, sizeof chunk); });
    if (r <= 0) break;
    text.append(chunk, static_cast<size_t>(r));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return text;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 1 && !text.empty()) return std::unexpected(Error::line(text));
  return std::unexpected(Error::line("no systemd manager reachable (" + *path + " failed: " +
                         (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                              : "exit " + std::to_string(WEXITSTATUS(status))) + ")"));
}

std::expected<std::string, Error> start_scope_by_helper(const ScopeRequest& req) {
  return run_helper({"scope", std::to_string(req.pid), req.unit, req.description});
}

std::expected<std::string, Error> probe_by_helper() { return run_helper({"probe"}); }

std::expected<std::string, Error> stop_scope_by_helper(const std::string& unit) {
  return run_helper({"stop", unit});
}

[[maybe_unused]] const SystemdAccess* access_in_use() {
  static const SystemdAccess helper{start_scope_by_helper, probe_by_helper, stop_scope_by_helper};
  const SystemdAccess* a = g_access.load(std::memory_order_acquire);
  return a != nullptr ? a : &helper;
}

}  // namespace

namespace {

// Whether systemd marked cgroup `path` delegated: trusted.delegate (the
// system manager's mark, visible to root only) or user.delegate (a user
// manager's) set to "1".
bool marked_delegated(const std::string& path) {
  for (const char* name : {"trusted.delegate", "user.delegate"}) {
    char v[8];
    ssize_t n = ::getxattr(path.c_str(), name, v, sizeof v);
    if (n == 1 && v[0] == '1') return true;
  }
  return false;
}

// Digits, then what follows them.
std::string_view after_digits(std::string_view s) {
  size_t n = s.find_first_not_of("0123456789");
  if (n == 0) return "x";  // no digits: matches nothing below
  return n == std::string_view::npos ? std::string_view() : s.substr(n);
}

// A cgroup pmon makes: a leaf "pmon-<pid>-<start>-<n>" or a scope
// "pmon-<pid>-<start>.scope".
bool pmons_cgroup(std::string_view name) {
  if (!name.starts_with("pmon-")) return false;
  std::string_view rest = after_digits(name.substr(5));
  if (!rest.starts_with("-")) return false;
  rest = after_digits(rest.substr(1));
  if (rest == ".scope") return true;
  if (!rest.starts_with("-")) return false;
  return after_digits(rest.substr(1)).empty() && rest.size() > 1;
}

bool user_manager_unit(std::string_view name) {
  if (!name.starts_with("user@") || !name.ends_with(".service")) return false;
  std::string_view uid = name.substr(5, name.size() - 5 - 8);
  return !uid.empty() && uid.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

bool parse_scope_name(std::string_view name, pid_t* pid, uint64_t* start) {
  if (!name.starts_with("pmon-") || !name.ends_with(".scope")) return false;
  name = name.substr(5, name.size() - 5 - 6);
  size_t dash = name.find('-');
  if (dash == std::string_view::npos) return false;
  uint64_t p = 0;
  if (!sys::parse_name_number(name.substr(0, dash), p) || !sys::parse_name_number(name.substr(dash + 1), *start))
    return false;
  if (p == 0 || p > 4194304) return false;  // PID_MAX_LIMIT
  *pid = static_cast<pid_t>(p);
  return true;
}

namespace {

// Why `unit` is not one of pmon's scopes, which alone gc may stop.
std::optional<Error> not_a_scope(const std::string& unit) {
  pid_t pid = 0;
  uint64_t start = 0;
  if (parse_scope_name(unit, &pid, &start)) return std::nullopt;
  return Error::line(unit + " is not a scope pmon asks for (pmon-<pid>-<start time>.scope)");
}

}  // namespace

std::optional<std::string> cgroup_owned_by_manager(const CgroupLocation& loc) {
  const std::string& own = loc.own;
  if (own.empty() || own == "/") return std::nullopt;
  if (::access("/run/systemd/system", F_OK) != 0) return std::nullopt;
  // One of pmon's own cgroups (a call's leaf, a delegated scope pmon asked
  // for, or below them): a pmon started by a call stays in it.
  for (size_t pos = 0; pos < own.size();) {
    size_t start = own.find_first_not_of('/', pos);
    if (start == std::string::npos) break;
    size_t end = own.find('/', start);
    if (end == std::string::npos) end = own.size();
    if (pmons_cgroup(std::string_view(own).substr(start, end - start))) return std::nullopt;
    pos = end;
  }
  for (std::string cur = own; !cur.empty() && cur != "/";) {
    if (marked_delegated(loc.mount + cur)) {
      if (cur == own) return std::nullopt;  // delegated to the unit pmon runs in
      std::string_view name = std::string_view(cur).substr(cur.rfind('/') + 1);
      if (user_manager_unit(name))
        return own + " is the user manager's (below " + cur + ", not delegated to pmon)";
      return std::nullopt;  // delegated to whoever runs pmon below it
    }
    size_t slash = cur.rfind('/');
    cur = slash == 0 || slash == std::string::npos ? std::string("/") : cur.substr(0, slash);
  }
  return own + " is a systemd manager's (not delegated to pmon)";
}

void detail::set_systemd_access(const SystemdAccess* access) {
  g_access.store(access, std::memory_order_release);
}

#ifndef PMON_HAVE_SYSTEMD

std::expected<std::string, Error> probe_systemd_manager() {
  return std::unexpected(Error::line(std::string("this pmon was built without libsystemd")));
}

std::expected<CgroupLocation, Error> systemd_delegate_self(const CgroupLocation&, std::string*) {
  return std::unexpected(Error::line(std::string("this pmon was built without libsystemd")));
}

std::expected<std::string, Error> stop_systemd_scope(const std::string& unit) {
  if (auto bad = not_a_scope(unit)) return std::unexpected(*bad);
  return std::unexpected(Error::line(std::string("this pmon was built without libsystemd")));
}

#else

std::expected<std::string, Error> probe_systemd_manager() { return access_in_use()->probe(); }

std::expected<std::string, Error> stop_systemd_scope(const std::string& unit) {
  if (auto bad = not_a_scope(unit)) return std::unexpected(*bad);
  return access_in_use()->stop_scope(unit);
}

std::expected<CgroupLocation, Error> systemd_delegate_self(const CgroupLocation& loc,
                                                                std::string* scope_rel) {
  ScopeRequest req = scope_request_for_self();
  auto own = access_in_use()->start_scope(req);
  if (!own) return std::unexpected(own.error());

  // cgroup_of() is relative to the hierarchy root; strip a subtree mount.
  std::string rel = *own;
  std::string scope_path = loc.mount + (rel == "/" ? "" : rel);
  if (::access((scope_path + "/cgroup.procs").c_str(), W_OK) != 0)
    return std::unexpected(
        Error::line("systemd made " + req.unit + " but " + scope_path + " is not writable (Delegate= ignored?)"));
  // No internal processes: we move to a leaf of our own, so the scope may
  // enable controllers for the call leaves next to it.
  std::string sup = scope_path + "/supervisor";
  if (::mkdir(sup.c_str(), 0755) != 0 && errno != EEXIST)
    return std::unexpected(Error::line("cannot create " + sup + ": " + std::strerror(errno)));
  {
    Fd f(::open((sup + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    std::string me = std::to_string(::getpid());
    if (!f || ::write(f.get(), me.data(), me.size()) != static_cast<ssize_t>(me.size()))
      return std::unexpected(Error::line("cannot move pmon into " + sup + ": " + std::strerror(errno)));
  }
  if (auto ctl = sys::read_file(scope_path + "/cgroup.controllers")) {
    size_t pos = 0;
    while (pos < ctl->size()) {
      size_t end = ctl->find_first_of(" \n", pos);
      if (end == std::string::npos) end = ctl->size();
      if (end > pos) {
        // Built by append: GCC 12 -O2 warns (-Wrestrict, falsely) on "+" + substr.
        std::string c = "+";
        c.append(*ctl, pos, end - pos);
        Fd f(::open((scope_path + "/cgroup.subtree_control").c_str(), O_WRONLY | O_CLOEXEC));
        if (f) (void)!::write(f.get(), c.data(), c.size());
      }
      pos = end + 1;
    }
  }
  *scope_rel = rel;
  CgroupLocation out = loc;
  out.own = rel + "/supervisor";
  out.own_path = sup;
  return out;
}

#endif

}  // namespace pmon::confine
