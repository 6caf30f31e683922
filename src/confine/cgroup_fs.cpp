// SPDX-License-Identifier: Apache-2.0
#include "confine/cgroup_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "sys/proc.h"

namespace pmon::confine {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool ok = true;
      for (size_t j = 1; j <= 3; ++j) {
        char c = s[i + j];
        if (c < '0' || c > '7') ok = false;
        v = v * 8 + (c - '0');
      }
      if (ok) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string own_from_proc_cgroup(std::string_view text) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (line.starts_with("0::")) return std::string(line.substr(3));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return {};
}

// The usual mount points, /sys/fs/cgroup (pure v2) and then
// /sys/fs/cgroup/unified (hybrid): one statfs each, where mountinfo costs
// the kernel a line per mount on every start of pmon. Taken only when the
// mount shows the whole hierarchy, so that /proc/self/cgroup paths hold
// below it as they are: the root cgroup has no cgroup.type, a subtree or
// namespace-root mount does. Anything else is looked up in mountinfo.
std::optional<std::string> usual_cgroup2_mount() {
  for (const char* dir : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs sf;
    if (::statfs(dir, &sf) != 0 || sf.f_type != CGROUP2_SUPER_MAGIC) continue;
    std::string type = std::string(dir) + "/cgroup.type";
    if (::access(type.c_str(), F_OK) != 0 && errno == ENOENT) return std::string(dir);
    return std::nullopt;
  }
  return std::nullopt;
}

// In a cgroup namespace whose root is below the mount's (a call of a
// session, which runs in a namespace rooted at its own leaf, under the
// host's mount): /proc/self/cgroup is relative to the namespace's root,
// which mountinfo shows as `depth` levels below the mount's ("/../.."). The
// cgroup at that depth whose `own` below it lists this process is ours.
std::optional<std::string> own_below_wider_mount(const std::string& mount, int depth, const std::string& own) {
  const std::string self = std::to_string(::getpid());
  std::vector<std::string> level{""};
  size_t seen = 0;
  for (int d = 0; d < depth && !level.empty(); ++d) {
    std::vector<std::string> next;
    for (const std::string& rel : level)
      for (const std::string& c : child_cgroups(mount + rel)) {
        if (++seen > 100'000) return std::nullopt;
        next.push_back(rel + "/" + c);
      }
    level = std::move(next);
  }
  std::optional<std::string> found;
  for (const std::string& rel : level) {
    const std::string path = rel + (own == "/" ? "" : own);
    auto procs = sys::read_file(mount + path + "/cgroup.procs");
    if (!procs) continue;
    std::vector<int> pids;
    parse_pid_list(*procs, pids);
    for (int p : pids)
      if (std::to_string(p) == self) {
        if (found) return std::nullopt;  // two: cannot tell
        found = path;
      }
  }
  return found;
}

bool in_first_cgroup_namespace() {
  char link[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/cgroup", link, sizeof link - 1);
  // (No /proc/self/ns: an old kernel, which has no cgroup namespaces.)
  return n <= 0 || std::string_view(link, static_cast<size_t>(n)) == "cgroup:[4026531835]";
}

std::expected<CgroupLocation, Error> with_own_cgroup(const std::string& mount, const std::string& root) {
  auto pc = sys::read_file("/proc/self/cgroup");
  std::string own = pc ? own_from_proc_cgroup(*pc) : std::string();
  if (own.empty()) return unsupported("this process has no cgroup v2 entry in /proc/self/cgroup");
  if (root.starts_with("/..")) {
    int depth = 0;
    for (size_t at = 0; (at = root.find("..", at)) != std::string::npos; at += 2) ++depth;
    auto real = own_below_wider_mount(mount, depth, own);
    if (!real)
      return unsupported("this process's cgroup namespace is rooted below the cgroup2 mount at " + mount +
                         " and its cgroup there cannot be found");
    CgroupLocation loc;
    loc.mount = mount;
    loc.own = real->empty() ? std::string("/") : *real;
    loc.own_path = loc.own == "/" ? mount : mount + loc.own;
    return loc;
  }
  // A mount of a subtree (root "/x") shows paths below it.
  // (Built in a fresh string: assigning back into `own` draws a false
  // -Wrestrict from GCC 12 at -O3.)
  std::string_view rel(own);
  if (root != "/" && rel.starts_with(root)) rel.remove_prefix(root.size());
  CgroupLocation loc;
  loc.mount = mount;
  loc.own = rel.empty() ? std::string("/") : std::string(rel);
  loc.own_path = loc.own == "/" ? mount : mount + loc.own;
  return loc;
}

}  // namespace

std::expected<CgroupLocation, Error> locate_cgroup2() {
  // The usual mount shows the whole hierarchy; /proc/self/cgroup holds
  // below it as it is only in the first cgroup namespace (a call of a
  // session has one of its own: mountinfo says how far below its root is).
  if (auto mount = usual_cgroup2_mount(); mount && in_first_cgroup_namespace()) return with_own_cgroup(*mount, "/");
  return locate_cgroup2_by_mountinfo();
}

std::expected<CgroupLocation, Error> locate_cgroup2_by_mountinfo() {
  auto mi = sys::read_file("/proc/self/mountinfo");
  if (!mi) return unsupported("cannot read /proc/self/mountinfo: " + mi.error().message());
  // "id parent major:minor root mountpoint options [optional...] - fstype ..."
  // (read on every start of pmon: split in place, no streams)
  // The first cgroup2 mount point; of mounts stacked there, the last (the
  // one a path there reaches: a container's own, mounted over the host's).
  std::string mount, root;
  std::string_view rest(*mi);
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::string_view tail = line.substr(dash + 3);
    if (tail.substr(0, tail.find(' ')) != "cgroup2") continue;
    std::string_view f[5];
    std::string_view head = line.substr(0, dash);
    int n = 0;
    while (n < 5 && !head.empty()) {
      size_t sp = head.find(' ');
      if (sp != 0) f[n++] = head.substr(0, sp);
      head.remove_prefix(sp == std::string_view::npos ? head.size() : sp + 1);
    }
    if (n < 5) continue;
    std::string point = unescape_octal(std::string(f[4]));
    if (!mount.empty() && point != mount) continue;
    root = unescape_octal(std::string(f[3]));
    mount = std::move(point);
  }
  if (mount.empty()) return unsupported("no cgroup2 file system is mounted (see /proc/self/mountinfo)");
  return with_own_cgroup(mount, root);
}

std::string cgroup_of(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
  auto text = sys::read_file(path);
  return text ? own_from_proc_cgroup(*text) : std::string();
}

void parse_pid_list(const std::string& text, std::vector<int>& out) {
  const char* p = text.c_str();
  char* end = nullptr;
  for (;;) {
    long v = std::strtol(p, &end, 10);
    if (end == p) return;
    out.push_back(static_cast<int>(v));
    p = end;
  }
}

void cgroup_tree_pids(const std::string& dir, std::vector<int>& out, int depth) {
  if (auto text = sys::read_file(dir + "/cgroup.procs")) parse_pid_list(*text, out);
  if (depth >= 32) return;
  for (const std::string& s : child_cgroups(dir)) cgroup_tree_pids(dir + "/" + s, out, depth + 1);
}

std::vector<std::string> child_cgroups(const std::string& dir) {
  std::vector<std::string> subs;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return subs;
  while (dirent* e = ::readdir(d))
    if (e->d_type == DT_DIR && e->d_name[0] != '.') subs.push_back(e->d_name);
  ::closedir(d);
  return subs;
}

long child_cgroup_count(int dirfd) noexcept {
  struct stat st;
  if (::fstat(dirfd, &st) != 0 || st.st_nlink < 2) return -1;
  return static_cast<long>(st.st_nlink) - 2;
}

void remove_cgroup_tree(int parent, const char* name, bool childless) noexcept {
  int fd = childless ? -1 : ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0 && child_cgroup_count(fd) == 0) {
    ::close(fd);
    fd = -1;
  }
  if (fd >= 0) {
    if (DIR* d = ::fdopendir(fd)) {
      std::vector<std::string> subs;
      while (dirent* e = ::readdir(d))
        if (e->d_type == DT_DIR && e->d_name[0] != '.') subs.push_back(e->d_name);
      for (const std::string& sub : subs) remove_cgroup_tree(::dirfd(d), sub.c_str());
      ::closedir(d);
    } else {
      ::close(fd);
    }
  }
  // A cgroup whose last task is still exiting can answer EBUSY for a moment.
  for (int i = 0; i < 50; ++i) {
    if (::unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno != EBUSY) return;
    ::usleep(1000);
  }
}

}  // namespace pmon::confine
