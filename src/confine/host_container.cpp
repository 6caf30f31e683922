// SPDX-License-Identifier: Apache-2.0
#include "confine/host_container.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <sstream>

#include "sys/proc.h"

namespace pmon::confine {

namespace {

std::string read_or_empty(const std::string& path) {
  auto t = sys::read_file(path);
  return t ? *t : std::string();
}

// The fields of the mountinfo line whose mount point is `target`.
std::vector<std::string> mountinfo_fields(const std::string& target) {
  std::istringstream in(read_or_empty("/proc/self/mountinfo"));
  std::vector<std::string> found;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::vector<std::string> fields;
    for (std::string w; f >> w;) fields.push_back(w);
    if (fields.size() > 4 && fields[4] == target) found = fields;  // the last one mounted wins
  }
  return found;
}

// The cgroup v2 path ("0::") of a process, "" when unreadable.
std::string cgroup2_path_of(const std::string& pid) {
  std::istringstream in(read_or_empty("/proc/" + pid + "/cgroup"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return {};
}

}  // namespace

std::string container_evidence() {
  if (::access("/.dockerenv", F_OK) == 0) return "/.dockerenv exists (Docker)";
  if (::access("/run/.containerenv", F_OK) == 0) return "/run/.containerenv exists (Podman)";
  std::string env = read_or_empty("/proc/1/environ");
  for (size_t at = 0; at < env.size();) {
    size_t end = env.find('\0', at);
    if (end == std::string::npos) end = env.size();
    std::string var = env.substr(at, end - at);
    if (var.rfind("container=", 0) == 0) return "PID 1 has " + var;
    at = end + 1;
  }
  std::vector<std::string> root = mountinfo_fields("/");
  if (root.size() > 3 && root[3] != "/")
    return "its root is " + root[3] + " of another file system (an OCI runtime's pivot_root)";
  return {};
}

std::vector<HostCheck> container_lines(const ContainerProbe& probe) {
  std::vector<HostCheck> out;
  std::string evidence = container_evidence();
  if (evidence.empty()) return out;

  // With its own cgroup namespace the container's init sits at the root of
  // what it sees; without one it sees the host's path to its cgroup.
  const bool have_cg2 = probe.cgroup2.has_value();
  std::string init_cgroup = cgroup2_path_of("1");
  const bool private_ns = init_cgroup == "/";
  bool read_only = false;
  if (have_cg2) {
    struct statvfs sv {};
    read_only = ::statvfs(probe.cgroup2->mount.c_str(), &sv) == 0 && (sv.f_flag & ST_RDONLY) != 0;
  }

  std::string offers, lacks;
  auto add = [](std::string& list, const std::string& what) { list += (list.empty() ? "" : ", ") + what; };
  if (!have_cg2) add(lacks, "cgroup2");
  else if (!probe.cgroup_writable) add(lacks, read_only ? "a writable cgroup2 (it is read-only)" : "a writable cgroup2");
  else add(offers, "a writable cgroup2 at " + probe.cgroup2->mount);
  if (have_cg2) {
    if (private_ns) add(offers, "its own cgroup namespace");
    else add(lacks, "its own cgroup namespace");
  }
  if (probe.pid_ns) add(offers, "PID namespaces");
  else add(lacks, "PID namespaces");
  if (probe.user_ns) add(offers, "user namespaces");
  else add(lacks, "user namespaces");
  out.push_back({"container", true,
                 evidence + "; it offers " + (offers.empty() ? "none of what pmon can use" : offers) +
                     (lacks.empty() ? "" : "; not " + lacks)});

  constexpr const char* kMount =
      "a mount {\"destination\": \"/sys/fs/cgroup\", \"type\": \"cgroup2\", \"source\": \"cgroup2\", "
      "\"options\": [\"rw\", \"nosuid\", \"nodev\", \"noexec\"]}";
  if (!have_cg2) {
    out.push_back({"container cgroup2", false,
                   std::string("no cgroup2 is mounted, so no cgroup leaves; fix: in the OCI config, ") + kMount +
                       " (in place of the \"cgroup\" one) and {\"type\": \"cgroup\"} in linux.namespaces"});
  } else if (read_only) {
    out.push_back({"container cgroup2", false,
                   "cgroup2 at " + probe.cgroup2->mount +
                       " is read-only, so no cgroup leaves; fix: mount it read-write (\"rw\" in place of \"ro\" "
                       "in the options of the OCI config's /sys/fs/cgroup mount)"});
  } else if (!probe.cgroup_writable) {
    out.push_back({"container cgroup2", false,
                   "the container's cgroup (" + probe.cgroup2->own_path +
                       ") is not writable by uid " + std::to_string(::geteuid()) +
                       "; fix: delegate it (the runtime's cgroup delegation, or chown of the cgroup directory "
                       "and its cgroup.procs, cgroup.subtree_control, cgroup.threads)"});
  }
  if (have_cg2 && !private_ns) {
    out.push_back({"container cgroupns", false,
                   "the container shares the host's cgroup namespace (its init is in " +
                       (init_cgroup.empty() ? std::string("an unknown cgroup") : init_cgroup) +
                       "), so leaves would be named by host paths; fix: {\"type\": \"cgroup\"} in the OCI "
                       "config's linux.namespaces"});
  }
  if (!probe.pid_ns) {
    out.push_back({"container pidns", false,
                   "no PID namespaces (" + probe.pid_ns_detail +
                       "); fix: CAP_SYS_ADMIN in the OCI config's process.capabilities (bounding, effective, "
                       "permitted); without it pmon confines calls with cgroup or subreaper"});
  }
  return out;
}

}  // namespace pmon::confine
