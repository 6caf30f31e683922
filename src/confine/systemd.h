// SPDX-License-Identifier: Apache-2.0
// Asking a systemd manager for a delegated cgroup (a transient scope with
// Delegate=yes) when pmon's own cgroup is not writable: one D-Bus round trip
// per pmon process, never per call.
//
// Two ways to reach the manager, one per kind of process:
// - in this process (sd_bus.cpp): libsystemd is dlopen'ed on first use, not
//   linked (it and what it pulls in, gcrypt, lzma, zstd, lz4, cap, would be
//   mapped by the loader on every start). The Python module and the
//   pmon-systemd helper use this, after use_in_process_sd_bus().
// - through the helper program pmon-systemd (the default): the pmon
//   executable is linked statically for its start-up time, and a static
//   program must not dlopen (it would load a second C library). The helper
//   is looked for next to the executable, then in ../libexec/pmon/.
#pragma once

#include <sys/types.h>

#include <expected>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "confine/cgroup_fs.h"
#include "confine/error.h"

#ifdef PMON_HAVE_SYSTEMD
#include <systemd/sd-bus.h>
#else
typedef struct sd_bus_message sd_bus_message;
#endif

namespace pmon::confine {

#ifdef PMON_HAVE_SYSTEMD
// The sd-bus functions pmon (and its unit test) calls, resolved by dlsym.
// The members have the functions' own types, variadic ones included.
#define PMON_SD_BUS_FUNCTIONS(X)                                                                 \
  X(sd_bus_open_system) X(sd_bus_open_user) X(sd_bus_new) X(sd_bus_set_address) X(sd_bus_set_fd) \
  X(sd_bus_start) X(sd_bus_process) X(sd_bus_wait) X(sd_bus_close_unref)                         \
  X(sd_bus_flush_close_unref) X(sd_bus_match_signal) X(sd_bus_slot_unref) X(sd_bus_call)         \
  X(sd_bus_call_method) X(sd_bus_get_property) X(sd_bus_error_free)                              \
  X(sd_bus_message_new_method_call) X(sd_bus_message_unref) X(sd_bus_message_append)             \
  X(sd_bus_message_open_container) X(sd_bus_message_close_container) X(sd_bus_message_read)      \
  X(sd_bus_message_seal) X(sd_bus_message_rewind) X(sd_bus_message_get_signature)                \
  X(sd_bus_message_enter_container) X(sd_bus_message_exit_container) X(sd_bus_message_skip)

struct SdBus {
#define PMON_SD_BUS_MEMBER(name) decltype(&::name) name = nullptr;
  PMON_SD_BUS_FUNCTIONS(PMON_SD_BUS_MEMBER)
#undef PMON_SD_BUS_MEMBER
};

// Opens `soname` (RTLD_NOW|RTLD_LOCAL, never closed) and resolves the table;
// else why not, one line ("libsystemd.so.0 not found: ..."). Exposed so a
// test can name a library that is not there.
std::expected<SdBus, Error> load_sd_bus(const char* soname);

// The table from libsystemd.so.0, loaded once per process on first use
// (thread-safe), or why it cannot be.
const std::expected<SdBus, Error>& sd_bus_api();
#endif

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
// test of the message; needs libsystemd (-ENOSYS without it or when it
// cannot be loaded).
int append_start_scope_args(sd_bus_message* m, const ScopeRequest& req);

// What pmon asks of a manager, however it reaches it. Errors are one line.
struct SystemdAccess {
  // Starts req's transient scope and waits until req.pid is in it. Returns
  // the scope's cgroup relative to the hierarchy root
  // ("/user.slice/.../pmon-1-2.scope").
  std::expected<std::string, Error> (*start_scope)(const ScopeRequest& req);
  // "systemd 252 (user manager of uid 1000, via the session bus)".
  std::expected<std::string, Error> (*probe)();
  // Asks the manager to stop the scope `unit` (a pmon-<pid>-<start>.scope)
  // and returns once it has taken the request ("stopping <unit>").
  std::expected<std::string, Error> (*stop_scope)(const std::string& unit);
};

namespace detail {
void set_systemd_access(const SystemdAccess* access);  // nullptr: the helper
}

// From now on this process talks to the manager itself (sd_bus.cpp). Only
// a dynamically linked program may call it; it links the dlopen code in.
void use_in_process_sd_bus();

// The in-process access, for the helper (nullptr in a build without
// libsystemd).
const SystemdAccess* in_process_sd_bus();

// "systemd 252 (user manager of uid 1000, via the session bus)" when a manager
// answers, else why not (one line).
std::expected<std::string, Error> probe_systemd_manager();

// Asks the manager this process reaches (the system manager for root, else
// the user's own) to stop the scope `unit`, which must be named
// pmon-<pid>-<start time>.scope: `pmon gc` stops so the scope of a pmon
// that ended before the manager could move it in, which the manager keeps
// running empty. One line on failure.
std::expected<std::string, Error> stop_systemd_scope(const std::string& unit);

// Whether `name` is a scope pmon asks for, pmon-<pid>-<start time>.scope;
// sets *pid and *start.
bool parse_scope_name(std::string_view name, pid_t* pid, uint64_t* start);

// Why pmon's own cgroup, though writable, is a systemd manager's and not
// pmon's to make leaves in (and so pmon should ask that manager for a
// delegated scope), or nullopt when it is pmon's to use. It is the
// manager's when systemd is PID 1 (/run/systemd/system exists), the
// cgroup is not the root one, no cgroup on its path is one of pmon's own
// (pmon-*: a pmon started by a call stays in that call's leaf), and the
// nearest cgroup on the path marked delegated (trusted.delegate or
// user.delegate set to 1, as systemd marks a Delegate=yes unit's) is
// either none (the system manager's tree) or a strict ancestor named
// user@UID.service (the user manager's tree). pmon in a delegated unit of
// its own (Delegate=yes on its service) uses that.
std::optional<std::string> cgroup_owned_by_manager(const CgroupLocation& loc);

// Makes this process the only member of a fresh transient scope with
// Delegate=yes, waits for the job, moves itself into <scope>/supervisor (a
// delegated cgroup may hold processes only in leaves once controllers are
// enabled) and enables the scope's controllers for the leaves. Returns the
// new location (own = .../supervisor) and sets *scope_rel to the scope.
std::expected<CgroupLocation, Error> systemd_delegate_self(const CgroupLocation& loc,
                                                                std::string* scope_rel);

}  // namespace pmon::confine
