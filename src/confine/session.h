// SPDX-License-Identifier: Apache-2.0
// A session's envelope: one cgroup for everything an agent session runs
// (every call and job of it is a leaf inside), with memory.high,
// memory.max, pids.max and cpu.max set by the user. Inside it a call may ask
// for less, never more; the kernel holds the sum of all of them to it.
//
// A session cgroup is named after who holds it, next to the leaves pmon
// makes where it has none:
//   pmon-session-p<pid>-<start>-<pidns>  a pmon process (serve, mcp, sandboxd)
//   pmon-session-h<pid>-<start>-<pidns>  a harness whose calls come one
//                                        pmon-shell at a time
//   pmon-session-n-<name>                a name (PMON_SESSION, --session)
// Every pmon that runs a call in it holds a shared flock on its directory.
// It is removed, verified empty, by its process-owner when that ends; a
// harness's when the harness is gone and no pmon holds it; a named one by the
// last pmon that held it. What a crash leaves is removed by the next session
// opened beside it or by `pmon gc`.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confine/envelope.h"
#include "confine/error.h"
#include "confine/limits.h"
#include "sys/fd.h"

namespace pmon {

struct SessionKey {
  enum class Kind : char { process = 'p', harness = 'h', named = 'n' };
  Kind kind = Kind::process;
  pid_t pid = 0;
  uint64_t start = 0;
  uint64_t pid_ns = 0;
  std::string name;  // Kind::named

  static SessionKey of_this_process();
  // The process `pid` (a harness), or nullopt when it is not readable.
  static std::optional<SessionKey> of_harness(pid_t pid);
  // A session by name: letters, digits, '.', '_' and '-', at most 64.
  static std::expected<SessionKey, Error> named_(std::string_view name);

  std::string dir_name() const;
  static std::optional<SessionKey> parse(std::string_view dir_name);
  // What the report and `pmon ps` call it: "harness 1234", "pmon 99",
  // "name build-7".
  std::string describe() const;
};

// What a cgroup (a session's or a call's) has used, read from its files;
// each field only where the kernel keeps it.
struct CgroupUsage {
  std::optional<uint64_t> memory_current, memory_peak;
  std::optional<uint64_t> memory_high_events, memory_max_events, oom, oom_kill;  // memory.events
  std::optional<uint64_t> pids_current, pids_max_events;                         // pids.events max
  std::optional<double> memory_pressure_avg10, cpu_pressure_avg10;              // PSI "some"
  std::optional<uint64_t> cpu_usec;
};
CgroupUsage read_usage(int dir_fd);
// The limits a cgroup holds (memory.max, memory.high, pids.max, cpu.max).
Limits read_cgroup_limits(int dir_fd);

namespace confine {

class SessionCgroup {
 public:
  // Opens the session `key` under the place leaves go (`cgroup_root`, or
  // pmon's default): made with `envelope` written in it, or joined as it is
  // when it exists (its own envelope holds; this one is then only checked).
  static std::expected<std::unique_ptr<SessionCgroup>, Error> open(const std::string& cgroup_root,
                                                                   const SessionKey& key, const Envelope& envelope);
  ~SessionCgroup();
  SessionCgroup(const SessionCgroup&) = delete;
  SessionCgroup& operator=(const SessionCgroup&) = delete;

  const std::string& path() const noexcept { return path_; }
  const SessionKey& key() const noexcept { return key_; }
  // The envelope as the cgroup holds it (read back from its files on the
  // first look), with where it was set.
  const Envelope& envelope() const;
  bool joined() const noexcept { return joined_; }
  // (Read at most once a millisecond: a hundred jobs ending together
  // share one reading.)
  CgroupUsage usage() const;
  // Only its memory.events and pids.events (two reads).
  CgroupUsage events() const;
  int dir_fd() const noexcept { return dir_.get(); }

 private:
  SessionCgroup() = default;
  SessionKey key_;
  mutable std::mutex usage_mu_;
  mutable CgroupUsage usage_;
  mutable int64_t usage_at_ = 0;
  mutable Envelope envelope_;
  mutable bool envelope_read_ = false;
  std::string path_;
  Fd parent_, dir_;
  bool joined_ = false;
};

// Whether this process may give a call a cgroup namespace of its own
// (CAP_SYS_ADMIN in its user namespace).
bool may_make_cgroup_namespace() noexcept;

// The session cgroups below `mount`, for `pmon ps` and `pmon gc`.
struct SessionInfo {
  std::string path;
  SessionKey key;
  bool held = false;       // a pmon holds it (its flock)
  bool owner_gone = false; // its process-owner or harness is gone
  size_t calls = 0;        // cgroups inside it
};
std::vector<SessionInfo> find_sessions(const std::string& mount);
// Removes a session no pmon holds, verified empty of processes (what is
// left in it is killed first: its calls' pmon are gone). "" or why not.
std::string remove_session(const std::string& path);

}  // namespace confine
}  // namespace pmon
