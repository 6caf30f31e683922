// SPDX-License-Identifier: Apache-2.0
#include "sys/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "sys/numbers.h"
#include "sys/syscalls.h"

namespace pmon::sys {

namespace {

// Reads up to the whole file into `out`; fd is closed by the caller.
Result<void> read_all(int fd, std::string& out) noexcept {
  char buf[4096];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd, buf, sizeof buf); });
    if (n < 0) return fail_errno();
    if (n == 0) return {};
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Result<std::string> read_file(const std::string& path) noexcept {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail_errno();
  std::string out;
  if (auto r = read_all(fd.get(), out); !r) return std::unexpected(r.error());
  return out;
}

Result<std::string> read_file_at(int dirfd, const char* name) noexcept {
  Fd fd(::openat(dirfd, name, O_RDONLY | O_CLOEXEC));
  if (!fd) return fail_errno();
  std::string out;
  if (auto r = read_all(fd.get(), out); !r) return std::unexpected(r.error());
  return out;
}

Result<void> write_file_at(int dirfd, const char* name,
                           std::string_view data) noexcept {
  Fd fd(::openat(dirfd, name, O_WRONLY | O_CLOEXEC));
  if (!fd) return fail_errno();
  ssize_t n =
      retry_eintr([&] { return ::write(fd.get(), data.data(), data.size()); });
  if (n < 0) return fail_errno();
  if (static_cast<size_t>(n) != data.size()) return fail(EIO);
  return {};
}

std::vector<pid_t> parse_nspid(std::string_view status) {
  std::vector<pid_t> out;
  size_t at = status.starts_with("NSpid:") ? 0 : status.find("\nNSpid:");
  if (at == std::string_view::npos) return out;
  std::string_view line = status.substr(at + (at == 0 ? 6 : 7));
  line = line.substr(0, line.find('\n'));
  while (!line.empty()) {
    size_t skip = line.find_first_not_of(" \t");
    if (skip == std::string_view::npos) break;
    line.remove_prefix(skip);
    size_t end = line.find_first_of(" \t");
    pid_t v = 0;
    std::string_view tok = line.substr(0, end);
    auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec != std::errc() || ptr != tok.data() + tok.size() || v <= 0) return {};
    out.push_back(v);
    if (end == std::string_view::npos) break;
    line.remove_prefix(end);
  }
  return out;
}

Result<std::vector<pid_t>> read_nspid(pid_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  auto text = read_file(path);
  if (!text) return std::unexpected(text.error());
  std::vector<pid_t> v = parse_nspid(*text);
  if (v.empty()) return fail(EIO);
  return v;
}

namespace {

// This process as the mounted /proc shows it, read once (self_start_time):
// its start time, and its pid there (self_pid_namespace's check).
std::atomic<pid_t> cached_pid{0};
std::atomic<uint64_t> cached_start{0};
std::atomic<pid_t> cached_in_proc{0};

}  // namespace

Result<pid_t> pid_in_proc() noexcept {
  char buf[32];
  ssize_t n = ::readlink("/proc/self", buf, sizeof buf - 1);
  if (n <= 0) return fail_errno();
  buf[n] = '\0';
  pid_t v = 0;
  auto [ptr, ec] = std::from_chars(buf, buf + n, v);
  if (ec != std::errc() || ptr != buf + n || v <= 0) return fail(ENOENT);
  return v;
}

Result<uint64_t> self_pid_namespace() noexcept {
  // /proc/self/stat read already (self_start_time) said how /proc numbers us.
  const pid_t self = ::getpid();
  Result<pid_t> in_proc = cached_pid.load(std::memory_order_acquire) == self
                              ? Result<pid_t>(cached_in_proc.load(std::memory_order_relaxed))
                              : pid_in_proc();
  if (!in_proc || *in_proc != self) return fail(EXDEV);
  struct stat st;
  if (::stat("/proc/self/ns/pid", &st) != 0) return fail_errno();
  return static_cast<uint64_t>(st.st_ino);
}

namespace {

Result<ProcStat> parse_stat(const std::string& s, pid_t pid) noexcept {
  // comm may hold spaces and ')' — the last ')' ends it.
  size_t open = s.find('(');
  size_t close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return fail(EIO);
  ProcStat st;
  st.pid = pid;
  st.comm = s.substr(open + 1, close - open - 1);
  // Fields after comm: 3 state, 4 ppid, 5 pgrp, 6 session, ... 22 starttime.
  std::string_view rest(s);
  rest.remove_prefix(close + 2);
  int field = 3;
  while (!rest.empty() && field <= 22) {
    size_t sp = rest.find(' ');
    std::string_view tok = rest.substr(0, sp);
    switch (field) {
      case 3: st.state = tok.empty() ? '?' : tok[0]; break;
      case 4: parse_whole(tok, st.ppid); break;
      case 5: parse_whole(tok, st.pgrp); break;
      case 6: parse_whole(tok, st.session); break;
      case 20: parse_whole(tok, st.num_threads); break;
      case 22: parse_whole(tok, st.start_time); break;
      default: break;
    }
    if (sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
    ++field;
  }
  if (field < 22) return fail(EIO);
  return st;
}

}  // namespace

Result<ProcStat> read_stat(pid_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  auto text = read_file(path);
  if (!text) return std::unexpected(text.error());
  return parse_stat(*text, pid);
}

Result<uint64_t> self_start_time() noexcept {
  // Keyed by pid: a forked copy of us reads its own.
  const pid_t self = ::getpid();
  if (cached_pid.load(std::memory_order_acquire) == self) return cached_start.load(std::memory_order_relaxed);
  auto text = read_file("/proc/self/stat");
  if (!text) return std::unexpected(text.error());
  auto st = parse_stat(*text, self);
  if (!st) return std::unexpected(st.error());
  pid_t in_proc = 0;
  (void)std::from_chars(text->data(), text->data() + text->size(), in_proc);
  cached_start.store(st->start_time, std::memory_order_relaxed);
  cached_in_proc.store(in_proc, std::memory_order_relaxed);
  cached_pid.store(self, std::memory_order_release);
  return st->start_time;
}

std::optional<int> blocked_read_fd(pid_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/syscall", pid);
  auto text = read_file(path);
  if (!text) return std::nullopt;
  // "NR ARG0 ARG1 ... SP PC": NR in decimal, the rest in hex; "running" or
  // "-1 ..." when it is not in a system call.
  const std::string_view s = *text;
  long nr = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), nr);
  if (ec != std::errc() || p == s.data() + s.size() || *p != ' ') return std::nullopt;
  switch (nr) {
    case SYS_read:
    case SYS_readv:
    case SYS_pread64:
    case SYS_preadv:
      break;
    default:
      return std::nullopt;
  }
  ++p;
  if (s.end() - p > 2 && p[0] == '0' && p[1] == 'x') p += 2;
  unsigned long fd = 0;
  auto [q, ec2] = std::from_chars(p, s.data() + s.size(), fd, 16);
  if (ec2 != std::errc() || q == p || fd > 1u << 20) return std::nullopt;
  return static_cast<int>(fd);
}

std::optional<FileId> open_file_of(pid_t pid, int fd) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
  struct stat st {};
  if (::stat(path, &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino, st.st_rdev};
}

std::string read_cmdline(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
  auto text = read_file(path);
  std::string out = text ? *text : std::string();
  while (!out.empty() && out.back() == '\0') out.pop_back();
  for (char& c : out)
    if (c == '\0') c = ' ';
  if (out.empty()) {
    auto st = read_stat(pid);
    if (st) out = unnamed_cmdline(st->comm);
  }
  return out;
}

std::string unnamed_cmdline(std::string_view comm) { return "[" + std::string(comm) + "]"; }

std::vector<ProcStat> scan_processes() {
  std::vector<ProcStat> out;
  DIR* dir = ::opendir("/proc");
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    pid_t pid = 0;
    if (!parse_whole(std::string_view(e->d_name), pid) || pid <= 0) continue;
    if (auto st = read_stat(pid)) out.push_back(std::move(*st));
  }
  ::closedir(dir);
  return out;
}

std::vector<ProcStat> descendants_of(const std::vector<ProcStat>& table,
                                     pid_t root) {
  std::unordered_multimap<pid_t, const ProcStat*> children;
  for (const ProcStat& p : table) children.emplace(p.ppid, &p);
  std::vector<ProcStat> out;
  std::vector<pid_t> queue{root};
  for (size_t i = 0; i < queue.size(); ++i) {
    auto [b, e] = children.equal_range(queue[i]);
    for (auto it = b; it != e; ++it) {
      if (it->second->pid == root) continue;
      out.push_back(*it->second);
      queue.push_back(it->second->pid);
    }
  }
  return out;
}

namespace {

// The children of every thread of `pid`, as the kernel lists them now;
// *stale when a thread could not be read (it ended, handing its children
// on to another). ESRCH/ENOENT when the process is gone.
Result<std::vector<pid_t>> children_of(pid_t pid, bool* stale) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", pid);
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail_errno();
  DIR* dir = ::fdopendir(fd);  // owns fd from here on
  if (!dir) {
    ::close(fd);
    return fail(EIO);
  }
  std::vector<pid_t> out;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    char name[300];
    std::snprintf(name, sizeof name, "%s/children", e->d_name);
    auto text = read_file_at(::dirfd(dir), name);
    if (!text) {
      *stale = true;
      continue;
    }
    std::string_view rest(*text);
    while (!rest.empty()) {
      size_t sp = rest.find(' ');
      pid_t child = 0;
      if (parse_whole(rest.substr(0, sp), child) && child > 0) out.push_back(child);
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    }
  }
  ::closedir(dir);
  return out;
}

// The kernel lists each thread's children (CONFIG_PROC_CHILDREN).
bool have_children_files() {
  static const bool have = ::access("/proc/thread-self/children", R_OK) == 0;
  return have;
}

}  // namespace

std::vector<pid_t> zombie_children(const std::function<bool(pid_t)>& leave_out) {
  const pid_t self = ::getpid();
  std::vector<pid_t> out;
  if (!have_children_files()) {
    for (const ProcStat& p : scan_processes())
      if (p.ppid == self && p.dead() && !(leave_out && leave_out(p.pid))) out.push_back(p.pid);
    return out;
  }
  bool stale = false;
  auto kids = children_of(self, &stale);
  if (!kids) return out;
  for (pid_t kid : *kids) {
    if (leave_out && leave_out(kid)) continue;
    if (auto st = read_stat(kid); st && st->ppid == self && st->dead()) out.push_back(kid);
  }
  return out;
}

std::vector<ProcStat> descendants_by_children(pid_t root, const std::function<bool(pid_t)>& leave_out) {
  if (!have_children_files()) {
    std::vector<ProcStat> table = scan_processes();
    // /proc is not a snapshot: a process read before its parent died shows
    // a parent that is gone from the table by the end of the scan. It has
    // been reparented since (to us, if it is ours): read it again.
    std::unordered_set<pid_t> listed;
    for (const ProcStat& p : table) listed.insert(p.pid);
    for (ProcStat& p : table)
      if (p.ppid > 0 && !listed.contains(p.ppid))
        if (auto fresh = read_stat(p.pid)) p = *fresh;
    if (leave_out) std::erase_if(table, [&](const ProcStat& p) { return leave_out(p.pid); });
    return descendants_of(table, root);
  }
  constexpr int kWalks = 3;
  std::vector<ProcStat> out;
  for (int walk = 0; walk < kWalks; ++walk) {
    out.clear();
    bool stale = false;
    std::vector<pid_t> queue{root};
    std::unordered_set<pid_t> seen{root};
    for (size_t i = 0; i < queue.size(); ++i) {
      auto kids = children_of(queue[i], &stale);
      if (!kids) {
        if (i > 0) stale = true;  // (the root gone: nothing is below it)
        continue;
      }
      for (pid_t kid : *kids) {
        if (!seen.insert(kid).second) continue;
        if (leave_out && leave_out(kid)) continue;
        auto st = read_stat(kid);
        // Gone, or its number already another's whose parent is none of
        // ours: whatever it had below it has moved since the listing.
        if (!st || !seen.contains(st->ppid)) {
          stale = true;
          continue;
        }
        queue.push_back(kid);
        out.push_back(std::move(*st));
      }
    }
    if (!stale) break;
  }
  return out;
}

Result<Fd> open_identified(pid_t pid, uint64_t start_time, pid_t ppid) noexcept {
  auto fd = pidfd_open(pid);
  if (!fd) return std::unexpected(fd.error());
  auto st = read_stat(pid);
  // Alive after the read means the stat we read was this pidfd's process.
  if (!st || st->start_time != start_time || !pidfd_alive(fd->get()))
    return fail(ESRCH);
  if (ppid > 0 && st->ppid != ppid && st->ppid != ::getpid()) return fail(ESRCH);
  return fd;
}

bool pidfd_alive(int pidfd) noexcept {
  // Signal 0 reaches a zombie too; a zombie is dead for our purposes, and a
  // pidfd turns readable exactly when its process exits.
  pollfd p{pidfd, POLLIN, 0};
  return retry_eintr([&] { return ::poll(&p, 1, 0); }) == 0;
}

long clock_ticks() noexcept {
  static const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks;
}

}  // namespace pmon::sys
