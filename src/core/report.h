// SPDX-License-Identifier: Apache-2.0
// The versioned JSON report of one call (DESIGN §4).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/run.h"
#include "sys/result.h"

namespace pmon {

struct ReportContext {
  std::vector<Error> passed_over;  // why stronger backends were not used
  // The words the report's messages use for a setting the reader may change.
  SettingWords words = kCommandLineWords;
  bool weak = false;                     // the backend cannot contain escapes
};

std::string report_json(const RunResult& r, const ReportContext& ctx);

// The same report as a value, for a caller that adds to it or sends it
// inside a message of its own (serve's terminal/report): no text between.
// J is nlohmann::json (keys sorted) or nlohmann::ordered_json (the file's order).
template <class J>
J report_object(const RunResult& r, const ReportContext& ctx);

// The report's "limits": {"memory_max": bytes, "pids_max": n, "cpu_max":
// cores}, null for each not set (also serve's terminal/report).
nlohmann::ordered_json limits_json(const Limits& l);

// What a cgroup used (a session's or a call's), as the report says it.
nlohmann::ordered_json usage_json(const CgroupUsage& u);

// Writes `text` to `path` atomically: a temp file beside it, fsync, rename.
Result<void> write_atomically(const std::string& path, const std::string& text) noexcept;

namespace detail {
// The same with the fallback that write_atomically takes where the file
// system has no O_TMPFILE: a random name created O_EXCL|O_NOFOLLOW.
Result<void> write_atomically_named(const std::string& path, const std::string& text) noexcept;
}  // namespace detail

}  // namespace pmon
