// SPDX-License-Identifier: Apache-2.0
// What every boundary shares: the names of the backends, how a command
// starts in a boundary, and the limits of one without a cgroup.
#include "confine/boundary.h"

namespace pmon {

std::string_view to_string(ConfineKind k) noexcept {
  switch (k) {
    case ConfineKind::cgroup: return "cgroup";
    case ConfineKind::pidns: return "pidns";
    case ConfineKind::subreaper: return "subreaper";
    case ConfineKind::pgroup: return "pgroup";
  }
  return "?";
}

std::optional<ConfineKind> parse_confine_kind(std::string_view s) noexcept {
  for (ConfineKind k : {ConfineKind::cgroup, ConfineKind::pidns,
                        ConfineKind::subreaper, ConfineKind::pgroup})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

std::expected<Child, Error> spawn(const SpawnSpec& spec, Boundary& boundary) {
  if (spec.argv.empty()) return std::unexpected(Error::line("no command given", Errc::invalid_argument));
  if (spec.pty_slave >= 0 && !spec.new_session)
    return std::unexpected(Error::line("a command on a pty needs a session of its own", Errc::invalid_argument));
  return boundary.launch(spec);
}

std::expected<Child, Error> Boundary::launch(const SpawnSpec& spec) {
  return launch_process(spec, clone_cgroup_fd());
}

std::expected<void, Error> Boundary::set_limits(const Limits& limits, LimitsFrom from) {
  if (from == LimitsFrom::call)
    return std::unexpected(no_cgroup_for_limits(limits, "the " + std::string(to_string(kind())) + " backend"));
  if (!limits.pids_max) return {};
  return std::unexpected(Error::line("the " + std::string(to_string(kind())) + " backend has no cgroup",
                                     Errc::unsupported));
}

}  // namespace pmon
