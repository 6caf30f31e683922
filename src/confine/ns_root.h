// SPDX-License-Identifier: Apache-2.0
// A container with a cgroup namespace of its own and a writable cgroup2 puts
// its processes in the namespace's root. A cgroup that holds processes can
// enable no controller for the cgroups below it, so leaves made there could
// get no limit. A long-running front end (pmon sandboxd) moves the root's
// processes into a cgroup of their own first, and makes its leaves beside
// it, in the root.
#pragma once

#include <string>

namespace pmon::confine {

struct RootMove {
  bool moved = false;     // the root holds no process any more
  std::string root;       // the namespace root's path (the leaves' base)
  std::string to;         // the cgroup its processes are in now
  int processes = 0;      // how many were moved
  std::string why_not;    // a one-line reason when a move was wanted but failed
};

// When this process sits in the root of a cgroup namespace that is not the
// host's, on a writable cgroup2 with processes in that root: every process
// of the root (this one, a container's first process, ...) is moved into
// `<root>/<name>`, made if missing. Nothing is done elsewhere (the host's
// root cgroup, a cgroup below a namespace root, no cgroup2).
RootMove leave_namespace_root(const std::string& name);

}  // namespace pmon::confine
