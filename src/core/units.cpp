// SPDX-License-Identifier: Apache-2.0
#include "core/units.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "confine/limits.h"

namespace pmon {

namespace {

// kMinCores with a margin: "0.01" written in decimal is not exactly 0.01.
constexpr double kMinCoresLimit = kMinCores - 1e-9;
constexpr double kMaxCoresLimit = kMaxCores;

struct SigName {
  const char* name;
  int sig;
};

constexpr SigName kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ILL", SIGILL},
    {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"BUS", SIGBUS},   {"FPE", SIGFPE},
    {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
    {"IO", SIGIO},     {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

}  // namespace

std::expected<Nanos, DurationError> parse_duration(std::string_view s) noexcept {
  // "-1s": a duration, but below zero; said so rather than "invalid".
  const bool minus = !s.empty() && s[0] == '-';
  if (minus) s.remove_prefix(1);
  if (s.empty()) return std::unexpected(DurationError::invalid);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  std::string num(s.substr(0, i));
  std::string_view unit = s.substr(i);
  if (num.empty() || num == "." || std::count(num.begin(), num.end(), '.') > 1)
    return std::unexpected(DurationError::invalid);
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(v) || v < 0) return std::unexpected(DurationError::invalid);
  double scale;
  if (unit.empty() || unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "us") scale = 1e3;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return std::unexpected(DurationError::invalid);
  if (minus) return std::unexpected(DurationError::negative);
  double ns = v * scale;
  if (ns > static_cast<double>(kMaxDuration.count())) return std::unexpected(DurationError::too_long);
  return Nanos(static_cast<int64_t>(std::llround(ns)));
}

std::string describe_duration_error(std::string_view text, DurationError e) {
  std::string quoted = "'" + std::string(text) + "'";
  switch (e) {
    case DurationError::negative: return quoted + " must not be negative";
    case DurationError::too_long: return quoted + " is too long (at most 1000000000s, about 31 years)";
    case DurationError::invalid: break;
  }
  return "invalid duration " + quoted + " (use e.g. 500ms, 2s, 1.5m, 1h)";
}

std::optional<int> parse_signal(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  int n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec == std::errc() && p == s.data() + s.size()) {
    if (n >= 1 && n < NSIG) return n;
    return std::nullopt;
  }
  std::string up;
  for (char c : s) up.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (up.rfind("SIG", 0) == 0) up = up.substr(3);
  for (const SigName& e : kSignals)
    if (up == e.name) return e.sig;
  if (up.rfind("RTMIN", 0) == 0) {
    int off = 0;
    if (up.size() > 5) {
      if (up[5] != '+') return std::nullopt;
      auto [q, ec2] = std::from_chars(up.data() + 6, up.data() + up.size(), off);
      if (ec2 != std::errc() || q != up.data() + up.size()) return std::nullopt;
    }
    int sig = SIGRTMIN + off;
    if (sig <= SIGRTMAX) return sig;
  }
  return std::nullopt;
}

std::string describe(const BadValue& b) {
  const std::string quoted = b.number ? b.value : "'" + b.value + "'";
  switch (b.why) {
    case BadValue::Why::not_a_size:
      return quoted + " is not a size (use bytes, or K, M or G for powers of 1024, e.g. 512M)";
    case BadValue::Why::not_positive: return quoted + " must be more than 0";
    case BadValue::Why::too_large: return quoted + " is too large";
    case BadValue::Why::not_pids: return quoted + " is not a whole number of processes (e.g. 100)";
    case BadValue::Why::too_many_pids: return quoted + " is too large (at most " + std::to_string(INT32_MAX) + ")";
    case BadValue::Why::not_cores: return quoted + " is not a number of cores (e.g. 0.5, 1.5, 2)";
    case BadValue::Why::cores_out_of_range:
      return b.number ? quoted + " cores is out of range (from 0.01 to 100000)"
                      : quoted + " is out of range (from 0.01 to 100000 cores)";
  }
  return quoted + " is not valid";
}

std::expected<uint64_t, BadValue> parse_size(std::string_view s) {
  auto refuse = [&](BadValue::Why why) { return std::unexpected(BadValue{why, std::string(s)}); };
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0) return refuse(BadValue::Why::not_a_size);
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + i, n);
  if (ec == std::errc::result_out_of_range) return refuse(BadValue::Why::too_large);
  if (ec != std::errc() || p != s.data() + i) return refuse(BadValue::Why::not_a_size);
  std::string_view unit = s.substr(i);
  int shift = 0;
  if (unit.size() > 1) return refuse(BadValue::Why::not_a_size);
  if (unit.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(unit[0]))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: return refuse(BadValue::Why::not_a_size);
    }
  }
  if (n == 0) return refuse(BadValue::Why::not_positive);
  if (shift > 0 && n > (UINT64_MAX >> shift)) return refuse(BadValue::Why::too_large);
  return n << shift;
}

std::expected<uint64_t, BadValue> parse_pids(std::string_view s) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])) || ec == std::errc::invalid_argument ||
      p != s.data() + s.size())
    return std::unexpected(BadValue{BadValue::Why::not_pids, std::string(s)});
  // pids.max is an int in the kernel.
  if (ec == std::errc::result_out_of_range || n > INT32_MAX)
    return std::unexpected(BadValue{BadValue::Why::too_many_pids, std::string(s)});
  return n;
}

std::expected<double, BadValue> check_cores(double cores) {
  if (!std::isfinite(cores) || cores < kMinCoresLimit || cores > kMaxCoresLimit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", cores);
    return std::unexpected(BadValue{BadValue::Why::cores_out_of_range, buf, /*number=*/true});
  }
  return cores;
}

std::expected<double, BadValue> parse_cores(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  std::string num(s);
  if (s.empty() || i != s.size() || num == "." || std::count(num.begin(), num.end(), '.') > 1)
    return std::unexpected(BadValue{BadValue::Why::not_cores, num});
  double v = std::strtod(num.c_str(), nullptr);
  if (!std::isfinite(v) || v < kMinCoresLimit || v > kMaxCoresLimit)
    return std::unexpected(BadValue{BadValue::Why::cores_out_of_range, num});
  return v;
}

std::string count_of(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string signal_name(int sig) {
  for (const SigName& e : kSignals)
    if (e.sig == sig) return std::string("SIG") + e.name;
  if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    return sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  return std::to_string(sig);
}

}  // namespace pmon
