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
  // The two ways out of a limit the leaves' cgroup cannot take, as phrases:
  // "set --cgroup-root" (to a cgroup where the controller is), and "run
  // without the limit". A job service's client reads them as what to do
  // with the service and with the job.
  set_cgroup_root,
  without_limit,
};

struct SettingWords {
  std::string_view cgroup_root;
  std::string_view confine_cgroup;
  std::string_view isolate;
  std::string_view memory_max = "--memory-max";
  std::string_view memory_high = "--memory-high";
  std::string_view pids_max = "--pids-max";
  std::string_view cpu_max = "--cpu-max";
  std::string_view set_cgroup_root = "set --cgroup-root";
  std::string_view without_limit = "run without the limit";
};

// pmon run, serve, mcp, supervise, init.
inline constexpr SettingWords kCommandLineWords{"--cgroup-root", "--confine cgroup", "--isolate"};

// The Python module's keyword arguments.
inline constexpr SettingWords kPythonWords{"cgroup_root=",     "confine=\"cgroup\"",     "isolate=True",
                                           "memory_max=",      "memory_high=",           "pids_max=",
                                           "cpu_max=",         "set cgroup_root=",       "run without the limit"};

// A job service's errors about a job, for its clients (pmon start, the
// JSON-RPC, MCP and gRPC clients): the service's own flags are the
// operator's, the job is the client's.
inline constexpr SettingWords kJobServiceWords{"--cgroup-root",
                                               "--confine cgroup",
                                               "--isolate",
                                               "--memory-max",
                                               "--memory-high",
                                               "--pids-max",
                                               "--cpu-max",
                                               "start the service with --cgroup-root set",
                                               "start the job without it"};

}  // namespace pmon
