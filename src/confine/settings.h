// SPDX-License-Identifier: Apache-2.0
// The settings an error from confine/ or core/ may tell its reader to
// change, named in the reader's terms: a flag on the command line, a keyword
// argument in Python. A message holds a token for the setting (see
// confine/error.h); the front end that shows it puts in its own word.
#pragma once

#include <string_view>

namespace pmon {

enum class Setting {
  cgroup_root,     // the delegated cgroup the leaves are made below
  confine_cgroup,  // the cgroup backend, asked for by name
  isolate,         // the PID namespace with a cgroup of its own inside it
  memory_max,      // a call's own limits
  memory_high,
  pids_max,
  cpu_max,
};

struct SettingWords {
  std::string_view cgroup_root;
  std::string_view confine_cgroup;
  std::string_view isolate;
  std::string_view memory_max = "--memory-max";
  std::string_view memory_high = "--memory-high";
  std::string_view pids_max = "--pids-max";
  std::string_view cpu_max = "--cpu-max";
};

// pmon run, serve, mcp, supervise, init.
inline constexpr SettingWords kCommandLineWords{"--cgroup-root", "--confine cgroup", "--isolate"};

// The Python module's keyword arguments.
inline constexpr SettingWords kPythonWords{"cgroup_root=", "confine=\"cgroup\"", "isolate=True", "memory_max=",
                                           "memory_high=", "pids_max=", "cpu_max="};

}  // namespace pmon
