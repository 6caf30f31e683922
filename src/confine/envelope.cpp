// SPDX-License-Identifier: Apache-2.0
#include "confine/envelope.h"

#include <cmath>
#include <cstdio>

#include "confine/error.h"

namespace pmon {

namespace {

std::string size_words(uint64_t b) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4 && std::fmod(v, 1024) == 0) v /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  return buf;
}

std::string cores_words(double c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", c);
  return std::string(buf) + (c == 1 ? " CPU" : " CPUs");
}

}  // namespace

std::string describe(const Envelope& e) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (e.limits.memory_max) add("memory.max " + size_words(*e.limits.memory_max));
  if (e.limits.memory_high) add("memory.high " + size_words(*e.limits.memory_high));
  if (e.limits.has_pids_max()) add("pids.max " + std::to_string(*e.limits.pids_max));
  if (e.limits.cpu_max) add("cpu.max " + cores_words(*e.limits.cpu_max));
  return out.empty() ? "no limits" : out;
}

std::string beyond_envelope(const Limits& asked, const Envelope& e) {
  const Limits& env = e.limits;
  std::string what;
  auto over = [&](Setting flag, const std::string& a, const std::string& b) {
    what = setting_token(flag) + " " + a + " is more than the session's envelope allows (" + b + ")";
  };
  if (asked.memory_max && env.memory_max && *asked.memory_max > *env.memory_max)
    over(Setting::memory_max, size_words(*asked.memory_max), "memory.max " + size_words(*env.memory_max));
  else if (asked.memory_high && env.memory_max && *asked.memory_high > *env.memory_max)
    over(Setting::memory_high, size_words(*asked.memory_high), "memory.max " + size_words(*env.memory_max));
  else if (asked.has_pids_max() && env.has_pids_max() && *asked.pids_max > *env.pids_max)
    over(Setting::pids_max, std::to_string(*asked.pids_max), "pids.max " + std::to_string(*env.pids_max));
  else if (asked.pids_max && *asked.pids_max == 0 && env.has_pids_max())
    over(Setting::pids_max, "0 (no limit)", "pids.max " + std::to_string(*env.pids_max));
  else if (asked.cpu_max && env.cpu_max && *asked.cpu_max > *env.cpu_max)
    over(Setting::cpu_max, cores_words(*asked.cpu_max), "cpu.max " + cores_words(*env.cpu_max));
  if (what.empty()) return "";
  return what + "; the envelope is " + describe(e) + ", set by " + (e.set_by.empty() ? "the session" : e.set_by) +
         "; ask for less, or have the user raise the envelope there";
}

}  // namespace pmon
