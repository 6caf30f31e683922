// SPDX-License-Identifier: Apache-2.0
#include "confine/limits.h"

#include <cmath>
#include <string>
#include <vector>

#include "confine/error.h"

namespace pmon {

std::string cpu_max_line(double cores) {
  auto quota = static_cast<uint64_t>(std::llround(cores * static_cast<double>(kCpuPeriodUsec)));
  return std::to_string(quota) + " " + std::to_string(kCpuPeriodUsec);
}

std::string limit_names(const Limits& l) {
  std::vector<const char*> names;
  if (l.memory_max || l.memory_high) names.push_back("memory");
  if (l.pids_max) names.push_back("pids");
  if (l.cpu_max) names.push_back("cpu");
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

Error no_cgroup_for_limits(const Limits& l, std::string_view boundary) {
  const std::string names = limit_names(l);
  const bool several = names.find(' ') != std::string::npos;
  return Error::line("cannot set the " + names + " limit" + (several ? "s" : "") + ": limits need a cgroup, and " +
         std::string(boundary) + " has none; use the cgroup backend (" +
         setting_token(Setting::confine_cgroup) + ") where cgroup v2 "
         "is delegated, or run without " + (several ? "them" : "it"),
                     Errc::confinement);
}

}  // namespace pmon
