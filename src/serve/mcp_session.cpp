// SPDX-License-Identifier: Apache-2.0
// pmon mcp's words for a session's envelope and use (docs/sessions.md):
// the tools' descriptions, and the session in run, wait and list.
#include "serve/mcp.h"

#include <cstdio>

namespace pmon::serve::mcp {

std::string session_note(const Json& session, bool oom_killed) {
  const Json& env = session["envelope"];
  const Json& use = session["usage"];
  auto mib = [](const Json& v) { return v.is_number() ? std::to_string(v.get<uint64_t>() >> 20) + " MiB" : std::string("?"); };
  std::string t;
  if (oom_killed)
    t = "killed whole by the kernel for memory: the session's envelope holds memory.max " + mib(env["memory_max"]) +
        " for all its commands together (ask for less memory, or end other jobs of the session); ";
  if (use["memory_peak"].is_number()) {
    t += "session memory peak " + mib(use["memory_peak"]);
    if (env["memory_max"].is_number()) t += " of memory.max " + mib(env["memory_max"]);
  } else {
    t += "in a session";
  }
  const Json& high = use["memory_events"]["high"];
  if (high.is_number() && high.get<uint64_t>() > 0)
    t += ", slowed down past memory.high " + std::to_string(high.get<uint64_t>()) + " times";
  const Json& forks = use["pids_events_max"];
  if (forks.is_number() && forks.get<uint64_t>() > 0)
    t += ", forks refused at the session's pids.max " + std::to_string(forks.get<uint64_t>()) + " times";
  return t;
}

namespace {

std::string mib(uint64_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; }

}  // namespace

// One line a model can act on: how much of the envelope is used, and
// whether it has been throttled or has killed.
std::string session_line(const JobInfo::InSession& s) {
  const Limits& l = s.envelope.limits;
  const CgroupUsage& u = s.session;
  std::string t = "session envelope: " + describe(s.envelope);
  if (u.memory_current) t += "; memory in use " + mib(*u.memory_current);
  if (u.memory_peak) t += " (peak " + mib(*u.memory_peak) + ")";
  if (u.memory_high_events && *u.memory_high_events > 0)
    t += "; slowed down past memory.high " + std::to_string(*u.memory_high_events) + " times";
  if (u.oom_kill && *u.oom_kill > 0) t += "; " + std::to_string(*u.oom_kill) + " processes killed for memory";
  if (u.pids_current && l.pids_max) t += "; " + std::to_string(*u.pids_current) + " processes of " + std::to_string(*l.pids_max);
  if (u.pids_max_events && *u.pids_max_events > 0) t += " (forks refused " + std::to_string(*u.pids_max_events) + " times)";
  if (u.memory_pressure_avg10) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", *u.memory_pressure_avg10);
    t += std::string("; memory pressure ") + buf + "%";
  }
  return t + "\n";
}


std::string envelope_words(const pmon::Envelope* e) {
  if (e == nullptr) return "";
  return " This session runs inside an envelope set by the user (" + describe(*e) +
         "): every command and job of the session shares it, and a command may ask for less (memory_max, "
         "memory_high, pids_max, cpu_max), never more. Past memory.high the session is slowed down; past "
         "memory.max a command is killed whole.";
}


}  // namespace pmon::serve::mcp
