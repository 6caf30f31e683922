// SPDX-License-Identifier: Apache-2.0
#include "jobs/owner_call.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

#include "confine/cgroup_fs.h"
#include "core/inventory.h"
#include "jobs/call_records.h"
#include "sys/exe_note.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77  // Linux 6.5; older C library headers lack it
#endif

namespace pmon::serve {

namespace {

// The innermost pmon-* component of a cgroup path ("/a/pmon-1-2-3/x"), as
// the path up to and including it, or "".
std::string innermost_leaf(std::string_view path) {
  size_t end = std::string_view::npos;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    size_t stop = slash == std::string_view::npos ? path.size() : slash;
    if (stop > pos && parse_leaf_name(path.substr(pos, stop - pos))) end = stop;
    pos = stop + 1;
  }
  return end == std::string_view::npos ? std::string() : std::string(path.substr(0, end));
}

// The "0::" line of /proc/<pid>/cgroup.
std::string cgroup_of(pid_t pid) {
  auto text = sys::read_file("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text) return "";
  std::string_view s(*text);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    std::string_view line = s.substr(pos, nl == std::string_view::npos ? s.npos : nl - pos);
    if (line.starts_with("0::")) return std::string(line.substr(3));
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return "";
}

// A pmon, by the mark its executable carries: a copy of it elsewhere, or
// one replaced since it started (an upgrade under a running service), is
// one too; the same inode as ours would miss both.
bool is_pmon(pid_t pid) { return sys::exe_has_note(pid, sys::kPmonNoteOwner, sys::kPmonNoteType); }

}  // namespace

Result<PeerCall> peer_call(int sock, const std::string& mount) {
  PeerCall out;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return fail_errno();
  const pid_t self = ::getpid();
  // 0: a peer in a PID namespace we cannot see (above or beside ours), so
  // in no call of ours to see either.
  if (cred.pid <= 0 || cred.pid == self) return out;
  Fd peer;
  int raw = -1;
  len = sizeof raw;
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &raw, &len) == 0 && raw >= 0) {
    peer = Fd(raw);
    (void)::fcntl(raw, F_SETFD, FD_CLOEXEC);
  } else if (auto fd = sys::pidfd_open(cred.pid)) {
    // (Before 6.5: the pid may have been recycled already; the cgroup read
    // below is then a stranger's, which at worst ties the job to a call.)
    peer = std::move(*fd);
  } else {
    return fail(ESRCH);
  }

  if (!mount.empty()) {
    std::string rel = innermost_leaf(cgroup_of(cred.pid));
    if (!rel.empty()) out.leaf = mount + rel;
  }

  auto own_ns = sys::read_nspid(self);
  auto peer_ns = sys::read_nspid(cred.pid);
  const size_t own_depth = own_ns ? own_ns->size() : 1;
  const size_t peer_depth = peer_ns ? peer_ns->size() : own_depth;

  // Up the parents: orphans are handed to the nearest subreaper or to their
  // namespace's init, so a process of a call stays below what runs it.
  pid_t prev = cred.pid;
  pid_t cur = cred.pid;
  uint64_t sup_start = 0;
  bool sup_is_init = false;
  for (int depth = 0; depth < 4096; ++depth) {
    auto st = sys::read_stat(cur);
    if (!st) break;
    if (cur != cred.pid) {
      if (cur == self) {
        out.service_child = prev;
        break;
      }
      if (out.supervisor_pid == 0) {
        bool init = false;
        if (peer_depth > own_depth)
          if (auto ns = sys::read_nspid(cur); ns && ns->size() == peer_depth && ns->back() == 1) init = true;
        if (init || is_pmon(cur)) {
          out.supervisor_pid = cur;
          sup_start = st->start_time;
          sup_is_init = init;
          if (!init) out.call_pmon = cur, out.call_pmon_start = st->start_time;
        }
      } else if (sup_is_init && out.call_pmon == 0 && prev == out.supervisor_pid) {
        // The init's parent: the pmon that made the namespace.
        if (is_pmon(cur))
          out.call_pmon = cur, out.call_pmon_start = st->start_time;
      }
    }
    if (st->ppid <= 0) break;
    prev = cur;
    cur = st->ppid;
  }

  // Everything above was read while the peer was still there (not reaped):
  // its pid was its own all along.
  if (sys::pidfd_send_signal(peer.get(), 0) != 0) return fail(ESRCH);
  if (out.supervisor_pid != 0) {
    if (auto fd = sys::open_identified(out.supervisor_pid, sup_start)) out.supervisor = std::move(*fd);
    else out.call_over = true;
  }
  return out;
}

Result<const PeerCall*> PeerCalls::of(uint64_t conn, int sock) {
  if (auto it = calls_.find(conn); it != calls_.end()) return &it->second;
  if (!mount_) {
    auto loc = confine::locate_cgroup2();
    mount_ = loc ? loc->mount : std::string();
  }
  auto pc = peer_call(sock, *mount_);
  if (!pc) return std::unexpected(pc.error());
  return &calls_.emplace(conn, std::move(*pc)).first->second;
}

bool CallTie::call_ended(bool owner_job_ended) const {
  bool ended = owner_job != 0 && owner_job_ended;
  if (!ended && owner_pidfd) ended = !sys::pidfd_alive(owner_pidfd.get());
  if (!ended && !owner_leaf.empty()) {
    // Nothing of that call is left in its leaf itself (its main process
    // and the rest are gone; ours are in a leaf below), or the leaf is gone.
    auto procs = sys::read_file(owner_leaf + "/cgroup.procs");
    ended = !procs || procs->find_first_not_of(" \n") == std::string::npos;
  }
  return ended;
}

bool CallTie::asked_by_call_pmon(int sock) const {
  if (record_for == 0 || sock < 0) return false;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != record_for) return false;
  auto st = sys::read_stat(cred.pid);
  return st && st->start_time == record_for_start;
}

void CallTie::leave_record(const PeerCall& from, const std::string& socket, const std::string& terminal_id,
                           pid_t job_pid, const std::vector<std::string>& command) {
  CallRecord rec;
  rec.start_time = from.call_pmon_start;
  rec.socket = socket;
  rec.terminal_id = terminal_id;
  rec.job_pid = job_pid;
  if (auto st = sys::read_stat(rec.job_pid)) rec.job_start_time = st->start_time;
  for (const std::string& a : command) rec.command += (rec.command.empty() ? "" : " ") + a;
  if (auto w = write_call_record(from.call_pmon, rec)) {
    record = std::move(*w);
    record_for = from.call_pmon;
    record_for_start = from.call_pmon_start;
  }
}

}  // namespace pmon::serve
