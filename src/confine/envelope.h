// SPDX-License-Identifier: Apache-2.0
// A session's envelope (confine/session.h) as a value: its limits, where
// they were set, and the words for it and for a call that asks for more.
#pragma once

#include <string>

#include "confine/limits.h"

namespace pmon {

struct Envelope {
  Limits limits;        // memory_high at 3/4 of memory_max unless set
  std::string profile;  // the profile it came from, or ""
  // Where it was set, in the user's words: "--session-memory-max",
  // "PMON_SESSION_PROFILE", "/etc/pmon/config.toml".
  std::string set_by;
  // Set for this session (flags, environment): it fails closed where it
  // cannot be set. The configured default for every session (the config
  // file) is skipped there instead, with a note.
  bool asked = true;
};

// "memory.max 4 GiB, memory.high 3 GiB, pids.max 512, cpu.max 2 CPUs".
std::string describe(const Envelope& e);

// A call's limits against its session's envelope: what it asks for more
// than the envelope allows, in one line naming the envelope and where it
// was set (the call's fields as setting tokens: confine/settings.h), or ""
// when it asks for less or the same.
std::string beyond_envelope(const Limits& asked, const Envelope& e);

}  // namespace pmon
