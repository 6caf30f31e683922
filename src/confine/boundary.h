// SPDX-License-Identifier: Apache-2.0
// The confinement boundary of one call: the set of processes that belong to
// it, however they try to leave. One backend per file behind this interface.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confine/launch.h"
#include "confine/limits.h"
#include "confine/session.h"
#include "sys/proc.h"
#include "sys/result.h"

namespace pmon {

enum class ConfineKind { cgroup, pidns, subreaper, pgroup };

std::string_view to_string(ConfineKind k) noexcept;
std::optional<ConfineKind> parse_confine_kind(std::string_view s) noexcept;

// What to poll while waiting for the boundary to shrink. Scan-based backends
// have no kernel event for "a descendant died", so they watch the members'
// pidfds and, past a cap, fall back to re-scanning every rescan_ms.
struct Watch {
  std::vector<pollfd> fds;
  int rescan_ms = -1;
  // The boundary says by itself when it is empty (a killed cgroup leaf):
  // the exits of its members need not wake the wait one by one. They are
  // reaped together once it is empty, and their CPU goes to the dying.
  bool reap_later = false;
};

// How a signal pass may be narrowed. A caller that has just sent the
// signal (and then_sig) to `signalled` itself (the main process, through its
// pidfd, not yet reaped) names it: a boundary may leave that pid out (no
// pidfd and verification for it). then_sig (SIGCONT after a stop signal, or
// 0) follows the signal to each member; a boundary may send both from one
// listing. `listed`: listed_pids() as the caller has just read it (the
// leftover snapshot's confirming listing), which a boundary may start from
// instead of listing again; it still confirms each pidfd with a listing of
// its own.
struct SignalPass {
  pid_t signalled = 0;
  int then_sig = 0;
  const std::vector<pid_t>* listed = nullptr;
};

// Which limits set_limits sets. The call's own fail closed: a limit that
// cannot be set is an error (one line naming what is missing and what to
// do), never ignored. The default pids.max (kDefaultPidsMax, for a call
// that asked for no pids limit) is not the call's: where it cannot be set
// the call runs without it and the error says why, for its report; with
// pids_max empty it makes sure the boundary has none (a pooled cgroup leaf
// may have the default from its last call).
enum class LimitsFrom { call, default_pids };

// Whether every child of the process is the call's (pmon run: the caller
// reaps every child, RunOptions::own_all_children). A boundary that finds
// its members by walking /proc may then read "empty" as "no child at all".
enum class Children { shared, all_the_calls };

// What a boundary can tell of its call, each known only where the backend
// keeps it: CPU time and peak memory, and whether the kernel ended a
// process for running out of memory (memory.events oom_kill), refused a
// fork at the pids limit (pids.events max) or throttled the call past
// memory.high, known only where that limit was set.
struct Figures {
  std::optional<uint64_t> cpu_usec;
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<bool> oom_killed;
  std::optional<bool> pids_max_hit;
  std::optional<bool> memory_high_hit;
};

// Which figures to read: in a cgroup each is a file to read.
struct FiguresWanted {
  bool usage = true;       // cpu_usec, memory_peak_bytes
  bool limit_hits = true;  // oom_killed, pids_max_hit, memory_high_hit
};

class Boundary {
 public:
  virtual ~Boundary() = default;

  virtual ConfineKind kind() const noexcept = 0;

  // fd of the cgroup directory for CLONE_INTO_CGROUP, or -1.
  virtual int clone_cgroup_fd() const noexcept { return -1; }

  // Starts the call's command in the boundary: a plain clone into its
  // cgroup (clone_cgroup_fd) unless the boundary has a way of its own (a
  // PID namespace starts pmon's init, which starts the command).
  virtual std::expected<Child, Error> launch(const SpawnSpec& spec);

  // Called once the main process exists (right after clone).
  virtual void set_main(pid_t pid, Children children) noexcept = 0;

  // Live (non-zombie) processes in the boundary right now.
  virtual std::vector<sys::ProcStat> members() = 0;

  // The members' pids as the kernel lists them, read without touching
  // /proc (a cgroup's cgroup.procs), sorted; nullopt where the boundary has
  // no such list. A pid read here may be recycled before it is used: a
  // caller opens pidfds first and keeps those whose pid a second listing
  // still shows (a live process's pid is its own, so a listed pid whose
  // pidfd is alive is a member's).
  virtual std::optional<std::vector<pid_t>> listed_pids() { return std::nullopt; }

  // Sends sig to every live member, each addressed by a verified pidfd (or
  // by membership: an init forwarding it). Returns how many processes were
  // signalled.
  virtual Result<int> signal_all(int sig, const SignalPass& pass) = 0;
  Result<int> signal_all(int sig) { return signal_all(sig, SignalPass{}); }

  // SIGKILL for everyone: one atomic cgroup.kill where there is one, else a
  // scan-and-kill pass (the caller repeats until empty).
  virtual Result<void> kill_all() = 0;

  virtual Result<bool> empty() = 0;

  // Refreshes and returns what to poll until empty() may have changed.
  virtual Watch watch() = 0;

  // False for the backends an escape defeats (pgroup).
  virtual bool contains_escapes() const noexcept = 0;

  // The cgroup path in the report, when there is one.
  virtual std::optional<std::string> cgroup_path() const { return {}; }

  virtual Figures figures(FiguresWanted wanted) {
    (void)wanted;
    return {};
  }

  // Sets limits before anything runs in the boundary (LimitsFrom says how
  // a failure counts). Only a cgroup can hold limits.
  virtual std::expected<void, Error> set_limits(const Limits& limits, LimitsFrom from);

  // Hands the boundary's resources back once it has been verified empty.
  virtual void release(bool verified_empty) noexcept = 0;

 protected:
  // signal_all for a boundary whose pass sends one signal: sig to every
  // member, then then_sig to every member.
  template <class One>
  static Result<int> signal_in_turn(int sig, const SignalPass& pass, One one) {
    auto r = one(sig);
    if (pass.then_sig != 0) (void)one(pass.then_sig);
    return r;
  }
};

// How a caller uses its backend, given once before its first call.
struct BackendUse {
  // One call and then the end (pmon run): what the call leaves is removed
  // as soon as it is released, not kept for a next call, and once it was
  // verified empty the helpers are sent away at once.
  bool single_call = false;
  // What is left of a call once it is over and verified (a cgroup leaf not
  // kept for reuse) is removed later, by Backend::tidy, not as the call
  // ends: a caller with an event loop (pmon serve) answers first and tidies
  // when it has nothing else to do. Nothing of it runs any more; the crash
  // guard and `pmon gc` still cover it; the backend's end removes what is
  // left.
  bool defer_cleanup = false;
  // A caller that runs long and whose memory may grow (pmon serve): its
  // helpers (the crash guard) get memory of their own and the lowest OOM
  // score allowed, so that an out-of-memory kill of the caller does not
  // take them with it (the kernel kills every process sharing the memory
  // of the one it picks).
  bool helpers_apart = false;
};

// A process of pmon's own that lives beside the calls and stops them if
// pmon is killed (the cgroup backend's crash guard).
class CrashGuard {
 public:
  virtual ~CrashGuard() = default;
  // Its pid, so scans of our descendants can leave it out; 0 when there is
  // none.
  virtual pid_t pid() const noexcept = 0;
  // Its pidfd (POLLIN once it has exited), -1 without one.
  virtual int pidfd() const noexcept = 0;
  // The caller will start no more calls and every call it made is over and
  // verified empty: the guard may go now (it is reaped when the backend is
  // destroyed, so its exit overlaps the caller's own end). Later calls
  // still work, but without the guard.
  virtual void dismiss() noexcept = 0;
  // A guard that exited (it was killed) replaced by a new one, which covers
  // every call running now; or why there is none.
  virtual std::expected<void, Error> restart() noexcept = 0;
  // What the guard could not be given, in words, or "": an OOM shield
  // refused, unless to a user other than root (for whom that is the rule).
  virtual std::string warning() const = 0;
};

// A confinement mechanism for the whole process; makes one Boundary per call.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual ConfineKind kind() const noexcept = 0;
  virtual Result<std::unique_ptr<Boundary>> open_boundary() = 0;
  // A boundary inside the cgroup `dir` (absolute, under the cgroup2 mount):
  // another call's leaf, so that call's stop and emptiness cover this one
  // too. Only the cgroup backend can; it is never pooled. EOPNOTSUPP
  // elsewhere (the caller then opens an ordinary boundary).
  virtual Result<std::unique_ptr<Boundary>> open_boundary_inside(const std::string& dir) {
    (void)dir;
    return fail(EOPNOTSUPP);
  }
  // One line for -v and the report ("cgroup2 at /sys/fs/cgroup, leaves under
  // /user.slice/...").
  virtual std::string describe() const = 0;
  // Call once, before the first call starts.
  virtual void use(const BackendUse& how) noexcept { (void)how; }
  // The crash guard, or null for a backend without one.
  virtual CrashGuard* guard() noexcept { return nullptr; }
  // Removes up to `max` of what BackendUse::defer_cleanup left for later;
  // says whether anything is still left.
  virtual bool tidy(size_t max) noexcept {
    (void)max;
    return false;
  }

  // The session whose cgroup holds every call of this backend, or null
  // (confine/session.h). Held from select_backend on; removed after the
  // backend's own leaves (a member of the base, destroyed last).
  const confine::SessionCgroup* session() const noexcept { return session_.get(); }
  void hold_session(std::unique_ptr<confine::SessionCgroup> s) noexcept { session_ = std::move(s); }

 private:
  std::unique_ptr<confine::SessionCgroup> session_;
};

// The crash guard's pid, 0 when the backend has none (or there is no backend).
inline pid_t guard_pid(Backend* backend) noexcept {
  CrashGuard* g = backend != nullptr ? backend->guard() : nullptr;
  return g != nullptr ? g->pid() : 0;
}

// Which backend a front end asks for: the one decision every front end
// (run, supervise, init, serve, the Python binding) makes the same way.
struct ConfineRequest {
  std::optional<ConfineKind> kind;  // empty: auto
  std::string cgroup_root;          // override of the delegated subtree
  // The pidns backend around a cgroup leaf, inside cgroup, mount and user
  // namespaces too (kind empty or pidns): nothing weaker will do.
  bool isolate = false;
  // The pmon executable a PID namespace's init is exec'd from: unset, this
  // process's own; "" where none was found (a library whose pmon is not
  // installed): then pidns is unavailable.
  std::optional<std::string> init_exe;
  // The caller is a library in a process whose other children are not its
  // own: the subreaper backend (which makes the whole process a subreaper
  // and takes every orphan below it as a call's) is not offered, and auto
  // passes over it.
  bool in_library = false;
  // The session's envelope: every call of the backend is a leaf in the
  // session's cgroup (cgroup backend, or pidns with isolate). One asked for
  // (Envelope::asked) fails closed where it cannot be set; the configured
  // default is then skipped, with a note.
  std::optional<Envelope> envelope;
  // Whose session it is (default: this process's).
  std::optional<SessionKey> session;
};

struct Selection {
  std::unique_ptr<Backend> backend;
  // For auto: why each stronger backend was passed over, one line each
  // ("cgroup: ..."), and which backend each line is of.
  std::vector<Error> passed_over;
  std::vector<ConfineKind> passed_over_kinds;
  // Why the configured default envelope was not set, or empty.
  std::optional<Error> session_note;
};

// Picks the backend: the named one (or a one-line reason it is not here),
// or under auto the strongest that works (cgroup, pidns, subreaper, pgroup).
std::expected<Selection, Error> select_backend(const ConfineRequest& req);

// Starts spec.argv[0] (searched in PATH like execvp) inside `boundary`.
std::expected<Child, Error> spawn(const SpawnSpec& spec, Boundary& boundary);

// Per-backend constructors; each says why it is unavailable.
std::expected<std::unique_ptr<Backend>, Error> open_cgroup_backend(
    const std::string& cgroup_root);
std::expected<std::unique_ptr<Backend>, Error> open_subreaper_backend();
// With `holds_pmon`, each boundary's group leader is a pmon of the job's own
// (a service on the subreaper backend): the processes below that pmon are
// the boundary's too, and once it is dead, the orphans it left to this
// process (which must be their subreaper); a kill of the group kills them
// too, and the boundary is empty once they are gone and reaped.
std::expected<std::unique_ptr<Backend>, Error> open_pgroup_backend(bool holds_pmon = false);

}  // namespace pmon
