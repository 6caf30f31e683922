// SPDX-License-Identifier: Apache-2.0
// pmon ps [--json] [--all]: the live calls on this host (the leaves whose
// pmon owner is alive) and their process trees.
#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "confine/session.h"
#include "core/report.h"
#include "sys/fd.h"
#include "confine/cgroup_fs.h"
#include "core/inventory.h"
#include "core/printable.h"
#include "sys/proc.h"

namespace pmon::cli {

int ps_main(const std::vector<std::string>& args) {
  CLI::App app{"List the pmon calls running now (each in a cgroup of its own) and their processes.", "pmon ps"};
  bool json = false, all = false;
  app.add_flag("--json", json, "one JSON object on stdout");
  app.add_flag("-a,--all", all, "also the empty cgroups pmon keeps for later calls, and those of pmon processes that are gone");
  if (!parse_options(app, args, "ps")) return 0;

  auto loc = confine::locate_cgroup2();
  std::vector<LeafInfo> leaves;
  if (loc) leaves = find_leaves(loc->mount);

  nlohmann::json calls = nlohmann::json::array();
  nlohmann::json sessions = nlohmann::json::array();
  size_t shown = 0;
  // Sessions first: the envelope each shares among its calls, and its use.
  for (const confine::SessionInfo& s : loc ? confine::find_sessions(loc->mount) : std::vector<confine::SessionInfo>()) {
    if (!all && !s.held && s.calls == 0) continue;
    Fd dir(::open(s.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    Envelope env;
    CgroupUsage u;
    if (dir) env.limits = read_cgroup_limits(dir.get()), u = read_usage(dir.get());
    ++shown;
    if (json) {
      sessions.push_back({{"cgroup", s.path},
                          {"session", s.key.describe()},
                          {"held", s.held},
                          {"calls", s.calls},
                          {"envelope", limits_json(env.limits)},
                          {"usage", usage_json(u)}});
      continue;
    }
    std::printf("%s\n  session of %s, %zu call%s%s\n  envelope: %s\n", printable(s.path).c_str(), s.key.describe().c_str(),
                s.calls, s.calls == 1 ? "" : "s", s.held ? "" : " (no pmon holds it)", describe(env).c_str());
    std::string use;
    if (u.memory_current) use += "memory " + std::to_string(*u.memory_current >> 20) + " MiB";
    if (u.memory_peak) use += " (peak " + std::to_string(*u.memory_peak >> 20) + " MiB)";
    if (u.memory_high_events) use += ", over memory.high " + std::to_string(*u.memory_high_events) + " times";
    if (u.oom_kill) use += ", " + std::to_string(*u.oom_kill) + " OOM kills";
    if (u.pids_current) use += ", " + std::to_string(*u.pids_current) + " processes";
    if (u.pids_max_events) use += ", forks refused " + std::to_string(*u.pids_max_events) + " times";
    if (!use.empty()) std::printf("  use: %s\n", use.c_str());
  }
  for (const LeafInfo& l : leaves) {
    std::vector<LeafProcess> procs = leaf_processes(l.path);
    // A leaf whose owner cannot be judged from here (another PID
    // namespace's) is shown while it holds processes: it may well run.
    if (!all && (l.owner_gone() || procs.empty())) continue;
    ++shown;
    std::string owner_cmd = l.owner_alive() ? sys::read_cmdline(l.name.owner_pid) : std::string();
    if (json) {
      nlohmann::json ps = nlohmann::json::array();
      for (const LeafProcess& p : procs)
        ps.push_back({{"pid", p.pid}, {"ppid", p.ppid}, {"state", std::string(1, p.state)},
                      {"command", p.command}, {"depth", p.depth}});
      calls.push_back({{"leaf", l.path},
                       {"owner", {{"pid", l.name.owner_pid}, {"start_time", l.name.owner_start},
                                  {"alive", l.owner_alive() ? nlohmann::json(true)
                                            : l.owner_gone() ? nlohmann::json(false)
                                                             : nlohmann::json()},
                                  {"command", l.owner_alive() ? nlohmann::json(owner_cmd) : nlohmann::json()}}},
                       {"processes", ps}});
      continue;
    }
    // Command lines and paths as ps(1) shows them: what a terminal would
    // act on is escaped (a process chooses its own command line).
    std::printf("%s\n  owner %d %s\n", printable(l.path).c_str(), l.name.owner_pid,
                l.owner_alive()  ? ("(" + printable(owner_cmd.substr(0, 100)) + ")").c_str()
                : l.owner_gone() ? "(its pmon is gone: 'pmon gc' cleans it up)"
                : l.owner == Owner::other_namespace ? "(of another PID namespace)"
                                                    : "(an older pmon's, not running here; its PID namespace is unknown)");
    if (procs.empty()) std::printf("  (no processes)\n");
    else std::printf("  %7s %5s  %s\n", "PID", "STATE", "COMMAND");
    for (const LeafProcess& p : procs)
      std::printf("  %7d %5c  %*s%s\n", p.pid, p.state, 2 * p.depth, "", printable(p.command.substr(0, 120)).c_str());
  }
  if (json) {
    nlohmann::json out = {{"version", 1}, {"cgroup2", loc ? nlohmann::json(loc->mount) : nlohmann::json()},
                          {"calls", calls}, {"sessions", sessions}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (!loc) {
    std::printf("no cgroup2 here (%s): no calls to list\n", loc.error().text.c_str());
  } else if (shown == 0) {
    // Said, not an empty screen: "nothing runs" is the answer.
    std::printf(all ? "no pmon cgroups under %s\n" : "no live pmon calls under %s ('pmon ps -a' also lists what is left of others)\n",
                loc->mount.c_str());
  }
  return 0;
}

}  // namespace pmon::cli
