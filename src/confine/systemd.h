// Asking a systemd manager for a delegated cgroup (a transient scope with
// Delegate=yes) when pmon's own cgroup is not writable: one D-Bus round trip
// per pmon process, never per call.
#pragma once

#include <sys/types.h>

#include <expected>
#include <string>

#include "confine/cgroup_fs.h"

typedef struct sd_bus_message sd_bus_message;

namespace pmon::confine {

struct ScopeRequest {
  std::string unit;         // pmon-<pid>-<start time>.scope
  pid_t pid = 0;            // the process the scope is made for (us)
  std::string description;
};

// The scope unit name for this process.
ScopeRequest scope_request_for_self();

// Appends the arguments of org.freedesktop.systemd1.Manager.StartTransientUnit
// (name, mode "fail", properties PIDs=[pid] Delegate=true Description
// CollectMode, no aux units) to m. Returns 0 or -errno. Exposed for a unit
// test of the message; needs libsystemd (-ENOSYS without it).
int append_start_scope_args(sd_bus_message* m, const ScopeRequest& req);

// "systemd 252 (user manager of uid 1000, via the session bus)" when a manager
// answers, else why not (one line).
std::expected<std::string, std::string> probe_systemd_manager();

// Makes this process the only member of a fresh transient scope with
// Delegate=yes, waits for the job, moves itself into <scope>/supervisor (a
// delegated cgroup may hold processes only in leaves once controllers are
// enabled) and enables the scope's controllers for the leaves. Returns the
// new location (own = .../supervisor) and sets *scope_rel to the scope.
std::expected<CgroupLocation, std::string> systemd_delegate_self(const CgroupLocation& loc,
                                                                std::string* scope_rel);

}  // namespace pmon::confine
