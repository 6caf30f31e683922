// SPDX-License-Identifier: Apache-2.0
// What this host offers pmon, found by trying it: the cgroup2 mount and a
// leaf made for real, the controllers a leaf gets, a child cloned into a
// leaf and killed by cgroup.kill, pidfds, user and PID namespaces, the
// subreaper, the systemd manager, and inside a container what it withholds.
// Every probe cleans up after itself (its leaf removed, its children
// reaped). pmon doctor prints the checks; they are data, not text to parse.
#pragma once

#include <string>
#include <vector>

namespace pmon::confine {

struct HostCheck {
  std::string name;    // "cgroup2", "delegated", "pidfd", ...
  bool ok = false;
  std::string detail;  // what was found, or why not and what to do (may name a setting: render_text)
};

std::vector<HostCheck> probe_host();

}  // namespace pmon::confine
