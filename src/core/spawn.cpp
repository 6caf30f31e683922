// SPDX-License-Identifier: Apache-2.0
#include "core/spawn.h"

namespace pmon {

std::expected<Child, Error> spawn_in(const SpawnSpec& spec, Backend& backend, std::unique_ptr<Boundary>& boundary,
                                     const Limits& limits, std::optional<uint64_t> default_pids,
                                     std::optional<Error>* default_skipped) {
  const confine::SessionCgroup* session = backend.session();
  if (session != nullptr && (limits.any() || limits.pids_max)) {
    if (std::string over = beyond_envelope(limits, session->envelope()); !over.empty())
      return std::unexpected(Error::line(std::move(over), Errc::confinement));
  }
  SpawnSpec in_session;
  const SpawnSpec* use = &spec;
  if (session != nullptr && confine::may_make_cgroup_namespace()) {
    in_session = spec;
    in_session.own_cgroup_namespace = true;
    use = &in_session;
  }
  for (int attempt = 0;; ++attempt) {
    if (limits.any())
      if (auto set = boundary->set_limits(limits, LimitsFrom::call); !set) {
        Error e = std::move(set.error());
        e.code = Errc::confinement;
        e.err = EINVAL;
        return std::unexpected(std::move(e));
      }
    if (limits.wants_default_pids() && default_pids) {
      Limits pids;
      pids.pids_max = default_pids;
      auto set = boundary->set_limits(pids, LimitsFrom::default_pids);
      if (default_skipped) *default_skipped = set ? std::nullopt : std::optional<Error>(set.error());
    } else if (!limits.has_pids_max()) {
      // pids_max 0 (or no default): a pooled leaf's default goes; one that
      // cannot lose it fails the call (it would run with a limit nobody
      // asked for).
      if (auto clear = boundary->set_limits(Limits{}, LimitsFrom::default_pids); !clear)
        return std::unexpected(clear.error());
    }
    auto child = spawn(*use, *boundary);
    if (child || child.error().err != EBUSY || boundary->kind() != ConfineKind::cgroup || attempt >= 32)
      return child;
    boundary->release(false);
    auto fresh = backend.open_boundary();
    if (!fresh) return child;
    boundary = std::move(*fresh);
  }
}

}  // namespace pmon
