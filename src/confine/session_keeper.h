// SPDX-License-Identifier: Apache-2.0
// The keeper of a harness's session (confine/session.h): the calls of a
// harness come one pmon-shell at a time, and the harness may end while none
// of them runs, so no pmon is left to remove the session's cgroup. The pmon
// that makes such a session starts a small process that waits for the
// harness to end (its pidfd), then removes the session's cgroup once no pmon
// holds it any more (the calls of a harness that is gone end at once:
// pmon-shell stops them with their parent). It gives up after ten minutes
// (`pmon gc` and the next session opened beside it still remove it).
#pragma once

#include <string>

#include "confine/session.h"

namespace pmon::confine {

// Starts the keeper of the session `name` in the directory `base_fd`, for
// the harness `key` (Kind::harness). Nothing when the harness is gone
// already or no process can be started (the fallbacks above remain).
void start_session_keeper(const SessionKey& key, int base_fd, const std::string& name) noexcept;

}  // namespace pmon::confine
