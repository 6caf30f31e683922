// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the benchmark programs: a monotonic clock,
// order statistics and fixed-width table output. No policy, no pmon code.
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace bench {

inline int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Stats {
  size_t n = 0;
  double min = 0, median = 0, p90 = 0, mean = 0, max = 0;
};

// Nearest-rank percentile of a sorted sample.
inline double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

inline Stats stats_of(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.p90 = percentile(v, 0.90);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return s;
}

// "0.41 0.35 0.20" from /proc/loadavg: printed beside every table because
// others share the two cores while we measure.
inline std::string loadavg() {
  FILE* f = std::fopen("/proc/loadavg", "re");
  if (!f) return "?";
  char buf[128] = {};
  double a = 0, b = 0, c = 0;
  std::string out = "?";
  if (std::fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) {
    std::snprintf(buf, sizeof buf, "%.2f %.2f %.2f", a, b, c);
    out = buf;
  }
  std::fclose(f);
  return out;
}

// The directory of this executable, to find pmon and bench_tree beside it.
inline std::string self_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// First PATH entry that holds an executable `name`, or "".
inline std::string which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  for (;;) {
    size_t colon = p.find(':', pos);
    std::string dir = p.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    if (colon == std::string::npos) return "";
    pos = colon + 1;
  }
}

}  // namespace bench
