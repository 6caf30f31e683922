// SPDX-License-Identifier: Apache-2.0
// pmon gc [--dry-run]: stop and remove the leaves of pmon processes that are
// gone (crashed, SIGKILLed together with their crash guard, or an older pmon),
// their sessions, and the empty systemd scopes of such pmon processes.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "cli/call_flags.h"
#include "cli/cli.h"
#include "confine/cgroup_fs.h"
#include "confine/cgroup_kill.h"
#include "confine/session.h"
#include "confine/systemd.h"
#include "core/inventory.h"
#include "core/printable.h"
#include "core/units.h"
#include "jobs/spool.h"

namespace pmon::cli {

namespace {

// A scope pmon asked a systemd manager for, pmon-<pid>-<start time>.scope.
struct ScopeFound {
  std::string path;
  std::string unit;
  pid_t owner_pid = 0;
  uint64_t owner_start = 0;
};

void find_scopes(const std::string& dir, int depth, std::vector<ScopeFound>& out) {
  if (depth > 16) return;
  std::vector<std::string> subs = confine::child_cgroups(dir);
  std::sort(subs.begin(), subs.end());
  for (const std::string& s : subs) {
    ScopeFound f{dir + "/" + s, s};
    if (confine::parse_scope_name(s, &f.owner_pid, &f.owner_start)) {
      out.push_back(f);
      continue;  // below it are pmon's leaves, found with the others
    }
    if (!parse_leaf_name(s)) find_scopes(f.path, depth + 1, out);
  }
}

// Whether the cgroup at path holds no process, below it either.
bool cgroup_empty(const std::string& path) {
  Fd ev(::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  return ev && confine::cgroup_events_empty(ev.get()) == 1;
}

// Why a manager this process can ask would not be the one that runs the
// scope at `path`, or empty: root asks the system manager (scopes outside
// any user@UID.service), another user their own user manager.
std::string not_our_manager(const std::string& path) {
  const uid_t uid = ::geteuid();
  size_t at = path.find("/user@");
  if (at == std::string::npos) return uid == 0 ? "" : "the system manager's: run pmon gc as root";
  const std::string mine = "/user@" + std::to_string(uid) + ".service/";
  if (path.compare(at, mine.size(), mine) == 0) return "";
  return "another user's manager's: run pmon gc as that user";
}

// Whether pid 1 here is systemd: the manager numbers the processes of its
// scopes in this PID namespace, so a scope's owner can be judged here.
bool manager_is_pid1_here() {
  auto st = sys::read_stat(1);
  return st && st->comm == "systemd";
}

}  // namespace

int gc_main(const std::vector<std::string>& args) {
  CLI::App app{"Clean up after pmon processes that were killed: stop what their calls left running and remove "
               "their cgroups.",
               "pmon gc"};
  app.footer(
      "\nEach call runs in a cgroup of its own, named pmon-<pid>-<start time>-<pid namespace>-<n>\n"
      "after the pmon that made it; that pmon is gone when, in its own PID namespace, no\n"
      "process has that pid with that start time. The cgroups of live pmon processes, of\n"
      "pmon processes in another PID namespace (a container's, or the host's seen from a\n"
      "container), of an older pmon whose name does not say its namespace, and cgroups not\n"
      "named so, are never touched (--dry-run and -v list the ones left alone). One line\n"
      "per cgroup; exit 0, or 1 when one could not be removed (e.g. not yours to write).\n"
      "A job of a pmon serve or pmon mcp that died with its crash guard is named by its\n"
      "service's record: its id, name and command.\n"
      "A session's cgroup (pmon-session-...) that no pmon holds any more is removed too,\n"
      "once the process it is named after is gone (a named session: at once).\n"
      "An empty systemd scope of a pmon that is gone (pmon-<pid>-<start time>.scope, which\n"
      "systemd keeps running when that pmon ended just as systemd moved it in) is stopped\n"
      "through systemd: root stops the system manager's, a user their own manager's.");
  bool dry_run = false;
  int verbose = 0;
  app.add_flag("-n,--dry-run", dry_run, "list what would be removed, touch nothing");
  add_verbose_flag(app, verbose, "also list the cgroups of live pmon processes, left alone");
  if (!parse_options(app, args, "gc")) return 0;

  auto loc = confine::locate_cgroup2();
  if (!loc) {
    std::printf("pmon gc: nothing to do: %s\n", loc.error().text.c_str());
    return 0;
  }
  int failed = 0, done = 0;
  // The jobs of services that died with their crash guard, by name: their
  // records say which job each leaf was.
  if (!dry_run)
    serve::SpoolDir::sweep_dead([&](const std::string& line) {
      std::printf("%s\n", line.c_str());
      ++done;
    });
  for (const LeafInfo& l : find_leaves(loc->mount)) {
    if (l.owner_alive()) {
      if (verbose) std::printf("kept %s (owner %d is alive)\n", printable(l.path).c_str(), l.name.owner_pid);
      continue;
    }
    // When in doubt, nothing is killed: a pid another namespace numbered
    // may be a live pmon we cannot see.
    if (!l.owner_gone()) {
      if (!verbose && !dry_run) continue;
      const size_t n = leaf_processes(l.path).size();
      std::printf("left alone %s (owner %d %s, %s)\n", printable(l.path).c_str(), l.name.owner_pid,
                  l.owner == Owner::other_namespace
                      ? "is of another PID namespace"
                      : "is not running here, but the name, an older pmon's, does not say its PID namespace",
                  count_of(n, "process", "processes").c_str());
      continue;
    }
    size_t n = leaf_processes(l.path).size();
    std::string what =
        "owner " + std::to_string(l.name.owner_pid) + " is gone, " + count_of(n, "process", "processes");
    ++done;
    if (dry_run) {
      std::printf("would remove %s (%s)\n", printable(l.path).c_str(), what.c_str());
      continue;
    }
    if (auto r = clean_leaf(l.path, 5000); r) {
      std::printf("removed %s (%s killed)\n", printable(l.path).c_str(), what.c_str());
    } else {
      std::printf("could not remove %s (%s): %s\n", printable(l.path).c_str(), what.c_str(), r.error().message().c_str());
      ++failed;
    }
  }
  // Sessions a crash left: no pmon holds them, and their owner is gone (a
  // named one has none but its holders). After the leaves: what is left in
  // one is killed with it.
  for (const confine::SessionInfo& s : confine::find_sessions(loc->mount)) {
    if (s.held || !s.owner_gone) {
      if (verbose)
        std::printf("kept %s (session of %s, %s)\n", printable(s.path).c_str(), s.key.describe().c_str(),
                    s.held ? "a pmon runs calls in it" : "its owner is alive or of another PID namespace");
      continue;
    }
    const std::string what = "session of " + s.key.describe() + ", no pmon holds it";
    ++done;
    if (dry_run) {
      std::printf("would remove %s (%s)\n", printable(s.path).c_str(), what.c_str());
      continue;
    }
    if (std::string why = confine::remove_session(s.path); why.empty()) {
      std::printf("removed %s (%s)\n", printable(s.path).c_str(), what.c_str());
    } else {
      std::printf("could not remove %s (%s): %s\n", printable(s.path).c_str(), what.c_str(), why.c_str());
      ++failed;
    }
  }
  // Empty scopes of pmon processes that are gone, after the leaves (one
  // emptied there is stopped by its manager itself). Only where pid 1 is
  // the manager: it named the scope after a pid of this PID namespace.
  std::vector<ScopeFound> scopes;
  if (::access("/run/systemd/system", F_OK) == 0 && manager_is_pid1_here()) find_scopes(loc->mount, 0, scopes);
  for (const ScopeFound& sc : scopes) {
    const bool alive = process_alive(sc.owner_pid, sc.owner_start);
    const bool empty = cgroup_empty(sc.path);
    const std::string other = not_our_manager(sc.path);
    if (alive || !empty || !other.empty()) {
      if (verbose)
        std::printf("kept %s (%s)\n", printable(sc.path).c_str(),
                    alive    ? ("owner " + std::to_string(sc.owner_pid) + " is alive").c_str()
                    : !empty ? "not empty: processes of its own"
                             : ("a scope of " + other).c_str());
      continue;
    }
    const std::string what = "empty scope, owner " + std::to_string(sc.owner_pid) + " is gone";
    ++done;
    if (dry_run) {
      std::printf("would stop %s (%s)\n", printable(sc.path).c_str(), what.c_str());
      continue;
    }
    auto r = confine::stop_systemd_scope(sc.unit);
    // The manager removes the cgroup once the scope has stopped.
    bool gone = false;
    for (int i = 0; r && i < 250 && !(gone = ::access(sc.path.c_str(), F_OK) != 0); ++i) ::usleep(20'000);
    if (gone) {
      std::printf("stopped %s (%s)\n", printable(sc.path).c_str(), what.c_str());
    } else {
      std::printf("could not stop %s (%s): %s\n", printable(sc.path).c_str(), what.c_str(),
                  r ? "systemd took the request, and the scope is still there after 5 s" : r.error().text.c_str());
      ++failed;
    }
  }
  if (done == 0) std::printf("pmon gc: nothing left by a pmon that is gone under %s\n", loc->mount.c_str());
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

}  // namespace pmon::cli
