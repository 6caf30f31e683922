// SPDX-License-Identifier: Apache-2.0
#include "confine/host_probe.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>

#include "confine/boundary.h"
#include "confine/cgroup_fs.h"
#include "confine/cgroup_guard.h"
#include "confine/host_container.h"
#include "confine/error.h"
#include "confine/systemd.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace pmon::confine {

namespace {

std::set<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& w : s) out += (out.empty() ? "" : " ") + w;
  return out.empty() ? "none" : out;
}

std::string err(int e) { return std::strerror(e); }

// A child that does nothing but wait to be killed (async-signal-safe).
[[noreturn]] void idle_child() {
  for (;;) ::pause();
}

// Clones a child with the namespaces asked for; it exits 0 at once.
HostCheck probe_clone(const std::string& name, const sys::CloneRequest& req, const std::string& what) {
  auto c = sys::clone3_fork(req);
  if (!c) return {name, false, what + " failed: " + c.error().message()};
  if (c->pid == 0) ::_exit(0);
  siginfo_t si{};
  (void)sys::waitid_raw(P_PIDFD, static_cast<id_t>(c->pidfd.get()), &si, WEXITED, nullptr);
  return {name, true, "probed: " + what + " works"};
}

std::string read_trim(const std::string& path) {
  auto t = sys::read_file(path);
  if (!t) return {};
  std::string s = *t;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::vector<HostCheck> probe_host() {
  std::vector<HostCheck> checks;
  auto loc = locate_cgroup2();
  if (!loc) {
    checks.push_back({"cgroup2", false, loc.error().text});
  } else {
    bool v1 = false;
    if (auto mi = sys::read_file("/proc/self/mountinfo")) v1 = mi->find(" - cgroup ") != std::string::npos;
    checks.push_back({"cgroup2", true, "mounted at " + loc->mount + (v1 ? " (hybrid: cgroup v1 is mounted too)" : "")});
    checks.push_back({"own cgroup", true, loc->own + " (" + loc->own_path + ")"});
  }

  // The cgroup backend, opened for real: it creates (and removes) a leaf.
  auto cg = open_cgroup_backend("");
  if (loc) {
    if (cg) {
      checks.push_back({"delegated", true, (*cg)->describe()});
    } else {
      checks.push_back({"delegated", false, cg.error().text});
    }
    // Controllers a leaf can get: those pmon's cgroup enables for its
    // children. A non-root cgroup that holds processes cannot enable any
    // domain controller (the no-internal-process rule).
    std::string base = loc->own_path;
    // Moved by systemd into a delegated scope (its supervisor leaf): the
    // leaves go in the scope, which holds no processes itself.
    if (cg) {
      auto now = locate_cgroup2();
      if (now && now->own != loc->own && now->own_path.ends_with("/supervisor"))
        base = now->own_path.substr(0, now->own_path.size() - std::string("/supervisor").size());
    }
    auto avail = words(read_trim(base + "/cgroup.controllers"));
    auto enabled = words(read_trim(base + "/cgroup.subtree_control"));
    bool has_procs = !read_trim(base + "/cgroup.procs").empty();
    std::string d = "leaves get: " + join(enabled) + "; pmon's cgroup offers: " + join(avail);
    if (!avail.count("memory")) {
      d += "; memory: not available to pmon's cgroup (no memory_peak_bytes in reports)";
    } else if (!enabled.count("memory") && has_procs && loc->own != "/") {
      d += "; memory: pmon's own cgroup holds processes, so its leaves can never get memory "
           "accounting: set " + setting_token(Setting::cgroup_root) + " to an empty delegated cgroup";
    }
    checks.push_back({"controllers", enabled.count("memory") > 0, d});
  }

  // clone3 + CLONE_INTO_CGROUP and cgroup.kill, with a child in a real leaf.
  HostCheck into{"clone3 into cgroup", false, ""}, kill{"cgroup.kill", false, ""};
  HostCheck pidfd{"pidfd", false, ""};
  std::unique_ptr<Boundary> leaf;
  if (cg) {
    auto b = (*cg)->open_boundary();
    if (b) leaf = std::move(*b);
    else into.detail = "cannot make a leaf: " + b.error().message();
  } else {
    into.detail = kill.detail = "no writable cgroup (see delegated)";
  }
  sys::CloneRequest req;
  if (leaf) {
    req.into_cgroup = true;
    req.cgroup_fd = leaf->clone_cgroup_fd();
  }
  auto c = sys::clone3_fork(req);
  if (c && c->pid == 0) idle_child();
  if (!c) {
    (leaf ? into : pidfd).detail = "clone3 failed: " + c.error().message();
  } else {
    if (leaf) {
      std::string want = leaf->cgroup_path()->substr(loc->mount.size());
      into.ok = cgroup_of(c->pid) == want;
      into.detail = into.ok ? "probed: a child started inside " + *leaf->cgroup_path()
                            : "the child landed in " + cgroup_of(c->pid) + ", not " + want;
    }
    // pidfd_open, pidfd_send_signal, waitid(P_PIDFD) on the same child.
    auto fd = sys::pidfd_open(c->pid);
    bool sent = fd && sys::pidfd_send_signal(fd->get(), 0) == 0;
    bool killed_by_cgroup = false;
    // cgroup.kill alone: kill_all would also signal the child by its pidfd.
    if (leaf && sys::write_file_at(leaf->clone_cgroup_fd(), "cgroup.kill", "1")) killed_by_cgroup = true;
    else (void)sys::pidfd_send_signal(c->pidfd.get(), SIGKILL);
    siginfo_t si{};
    int w = sys::waitid_raw(P_PIDFD, static_cast<id_t>(c->pidfd.get()), &si, WEXITED, nullptr);
    bool waited = w == 0 && si.si_pid == c->pid;
    pidfd.ok = fd && sent && waited;
    pidfd.detail = pidfd.ok ? "probed: pidfd_open, pidfd_send_signal, waitid(P_PIDFD)"
                            : std::string("pidfd_open ") + (fd ? "ok" : err(fd.error().value())) +
                                  ", pidfd_send_signal " + (sent ? "ok" : "failed") + ", waitid(P_PIDFD) " +
                                  (waited ? "ok" : err(-w));
    if (leaf) {
      kill.ok = killed_by_cgroup && waited && si.si_code == CLD_KILLED && si.si_status == SIGKILL;
      kill.detail = kill.ok ? "probed: one write killed the child" : "writing cgroup.kill did not kill the child";
      leaf->release(false);  // killed: never reused (cgroup.cpp)
    }
  }
  leaf.reset();
  checks.push_back(into);
  checks.push_back(kill);
  checks.push_back(pidfd);

  {
    sys::CloneRequest u;
    u.new_user_ns = true;
    HostCheck c1 = probe_clone("user namespaces", u, "clone3(CLONE_NEWUSER)");
    std::string lim = read_trim("/proc/sys/user/max_user_namespaces");
    if (!c1.ok && lim == "0") c1.detail += " (user.max_user_namespaces is 0)";
    checks.push_back(c1);
    sys::CloneRequest p;
    p.new_pid_ns = true;
    p.new_user_ns = ::geteuid() != 0;
    checks.push_back(probe_clone("pid namespaces", p, p.new_user_ns ? "clone3(CLONE_NEWUSER|CLONE_NEWPID)" : "clone3(CLONE_NEWPID)"));
  }
  {
    int was = 0, now = 0;
    (void)::prctl(PR_GET_CHILD_SUBREAPER, &was, 0UL, 0UL, 0UL);
    int r = ::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
    (void)::prctl(PR_GET_CHILD_SUBREAPER, &now, 0UL, 0UL, 0UL);
    (void)::prctl(PR_SET_CHILD_SUBREAPER, static_cast<unsigned long>(was), 0UL, 0UL, 0UL);
    checks.push_back({"subreaper", r == 0 && now == 1,
                      r == 0 ? "probed: PR_SET_CHILD_SUBREAPER" : "PR_SET_CHILD_SUBREAPER: " + err(errno)});
  }
  {
    auto sd = probe_systemd_manager();
    checks.push_back({"systemd", sd.has_value(),
                      sd ? *sd + "; pmon asks it for a Delegate=yes scope only when its own cgroup is not writable"
                         : sd.error().text});
  }
  cg = std::unexpected(Error{});  // drop the probe backend (and its guard)
  {
    // What pmon serve's crash guard gets: tried on a child that waits.
    const pid_t child = ::fork();
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    const int e = child < 0 ? errno : shield_from_oom(child);
    if (child > 0) {
      (void)::kill(child, SIGKILL);
      (void)::waitpid(child, nullptr, 0);
    }
    checks.push_back({"oom shield", e == 0,
                      e == 0 ? "probed: oom_score_adj -1000 (pmon serve's crash guard is never the OOM killer's pick)"
                             : oom_shield_words(e)});
  }

  // Inside a container: what it offers, and the fix for each gap.
  ContainerProbe cprobe;
  if (loc) cprobe.cgroup2 = *loc;
  for (const HostCheck& c : checks) {
    if (c.name == "delegated") cprobe.cgroup_writable = c.ok;
    if (c.name == "user namespaces") cprobe.user_ns = c.ok;
    if (c.name == "pid namespaces") {
      cprobe.pid_ns = c.ok;
      cprobe.pid_ns_detail = c.detail;
    }
  }
  for (HostCheck& l : container_lines(cprobe)) checks.push_back(std::move(l));

  return checks;
}

}  // namespace pmon::confine
