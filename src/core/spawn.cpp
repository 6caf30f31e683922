// SPDX-License-Identifier: Apache-2.0
#include "core/spawn.h"

namespace pmon {

std::expected<Child, Error> spawn_in(const SpawnSpec& spec, Backend& backend,
                                          std::unique_ptr<Boundary>& boundary, const Limits& limits) {
  for (int attempt = 0;; ++attempt) {
    // Nothing to do (not a syscall) on the hot path without limits.
    if (limits.any())
      if (auto set = boundary->set_limits(limits); !set) {
        Error e = std::move(set.error());
        e.code = Errc::confinement;
        e.err = EINVAL;
        return std::unexpected(std::move(e));
      }
    auto child = spawn(spec, *boundary);
    if (child || child.error().err != EBUSY || boundary->kind() != ConfineKind::cgroup || attempt >= 32)
      return child;
    boundary->release(false);
    auto fresh = backend.open_boundary();
    if (!fresh) return child;
    boundary = std::move(*fresh);
  }
}

}  // namespace pmon
