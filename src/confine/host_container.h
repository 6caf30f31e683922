// SPDX-License-Identifier: Apache-2.0
// Inside a container: what the container gives pmon, and for each thing it
// withholds one line naming the fix in the container's config (pmon doctor
// shows them).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "confine/cgroup_fs.h"
#include "confine/host_probe.h"

namespace pmon::confine {

// What the doctor's probes found, as the container section needs it.
struct ContainerProbe {
  std::optional<CgroupLocation> cgroup2;  // the cgroup2 mount, if any
  bool cgroup_writable = false;                    // a leaf could be made
  bool user_ns = false;
  bool pid_ns = false;
  std::string pid_ns_detail;
};

// How this process looks to be in a container ("" when it does not): a
// runtime's marker file, PID 1's "container=" variable, or a root file
// system that is a subtree of another (what pivot_root into a bundle leaves).
std::string container_evidence();

// The container section of the host checks: empty outside a container. The first
// line says what the container offers; one more line per gap, with its fix.
std::vector<HostCheck> container_lines(const ContainerProbe& probe);

}  // namespace pmon::confine
