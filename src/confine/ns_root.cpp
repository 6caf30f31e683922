// SPDX-License-Identifier: Apache-2.0
#include "confine/ns_root.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "confine/cgroup_fs.h"
#include "sys/proc.h"

namespace pmon::confine {

namespace {

// The inode of the host's (initial) cgroup namespace, fixed by the kernel.
constexpr ino_t kInitialCgroupNs = 0xEFFFFFFBU;

}  // namespace

RootMove leave_namespace_root(const std::string& name) {
  RootMove r;
  struct stat ns;
  if (::stat("/proc/self/ns/cgroup", &ns) != 0 || ns.st_ino == kInitialCgroupNs) return r;
  auto loc = locate_cgroup2();
  if (!loc || loc->own != "/") return r;
  if (::access((loc->mount + "/cgroup.procs").c_str(), W_OK) != 0) return r;
  auto text = sys::read_file(loc->mount + "/cgroup.procs");
  if (!text) return r;
  std::vector<int> pids;
  parse_pid_list(*text, pids);
  if (pids.empty()) return r;
  r.root = loc->mount;
  r.to = loc->mount + "/" + name;
  if (::mkdir(r.to.c_str(), 0755) != 0 && errno != EEXIST) {
    r.why_not = "cannot make " + r.to + ": " + std::strerror(errno);
    return r;
  }
  const int dir = ::open(r.to.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    r.why_not = "cannot open " + r.to + ": " + std::strerror(errno);
    return r;
  }
  // (a process forked meanwhile lands in the root: read it again, a few times)
  for (int pass = 0; pass < 8 && !pids.empty(); ++pass) {
    for (int pid : pids) {
      auto w = sys::write_file_at(dir, "cgroup.procs", std::to_string(pid));
      if (w) ++r.processes;
      else if (w.error().value() != ESRCH) {
        r.why_not = "cannot move process " + std::to_string(pid) + " into " + r.to + ": " + w.error().message();
        ::close(dir);
        return r;
      }
    }
    pids.clear();
    if (auto again = sys::read_file(loc->mount + "/cgroup.procs")) parse_pid_list(*again, pids);
  }
  ::close(dir);
  if (!pids.empty()) {
    r.why_not = "processes keep appearing in " + r.root;
    return r;
  }
  r.moved = true;
  return r;
}

}  // namespace pmon::confine
