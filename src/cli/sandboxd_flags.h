// SPDX-License-Identifier: Apache-2.0
// pmon sandboxd's options: the reference sandboxd's (same names, same
// defaults) and pmon's own (the job services' JobFlags, --max-streams).
// Checked in pmon, so that --help and bad input need nothing else, and again
// in pmon-sandboxd, which serves with them.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cli/call_flags.h"

namespace pmon::cli {

struct SandboxdConfig {
  std::string listen_host = "0.0.0.0";
  int grpc_port = 9090;
  int rest_port = 8080;
  std::string root_dir = "/workspace";
  std::string metadata_env_prefix = "SANDBOX_";
  std::chrono::nanoseconds shutdown_timeout{};
  std::chrono::nanoseconds http_idle_timeout{};
  int stream_chunk_size = 0;  // 0: 4096
  size_t max_streams = 1024;
  bool quiet = false;
  JobFlags jobs;  // applied by the daemon (JobFlags::apply)
};
// Nothing after --help or --version was printed; bad input ends with die().
std::optional<SandboxdConfig> parse_sandboxd(const std::vector<std::string>& args);

}  // namespace pmon::cli
