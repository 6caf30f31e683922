// SPDX-License-Identifier: Apache-2.0
// Where a session's envelope comes from, the strongest first:
//   1. flags of the front end (--session-profile, --session-memory-max, ...),
//   2. the environment (PMON_SESSION_PROFILE, PMON_SESSION_MEMORY_MAX, ...),
//   3. the config file's [session] table: $PMON_CONFIG, else
//      $XDG_CONFIG_HOME/pmon/config.toml (~/.config/pmon/config.toml), else
//      /etc/pmon/config.toml.
// A profile (built in, or a [profiles.NAME] table of the file) gives every
// field; fields given beside it replace the profile's. memory.high is 3/4 of
// memory.max unless set. 1 and 2 ask for an envelope for this session (it
// fails closed where it cannot be set); 3 is the default of every session
// (skipped with a note there).
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "confine/envelope.h"
#include "confine/error.h"

namespace pmon {

struct EnvelopeAsk {
  std::string profile, memory_max, memory_high, pids_max, cpu_max;  // "": not given
  // The flags' names, for messages ("--session-memory-max").
  std::string flag_prefix = "--session-";
};

struct BuiltinProfile {
  const char* name;
  uint64_t memory_max;
  uint64_t pids_max;
  double cpu_max;
};
// small: 2 GiB, 512 processes, 1 CPU; standard: 8 GiB, 2048, 2;
// large: 32 GiB, 8192, 8.
const std::vector<BuiltinProfile>& builtin_profiles();

// The envelope, or nullopt when nothing sets one; one line on a bad value
// (naming the flag, variable or file and key). `env`: getenv by default.
// `with_file`: false where the config file's default does not apply (pmon
// run in no named session): it is not read.
std::expected<std::optional<Envelope>, Error> resolve_envelope(
    const EnvelopeAsk& flags, const char* (*env)(const char*) = nullptr, bool with_file = true);

// Reads a config file's envelope (for tests and fuzzing): the text of the
// file named `path`.
std::expected<std::optional<Envelope>, Error> envelope_from_toml(const std::string& text,
                                                                       const std::string& path);

}  // namespace pmon
