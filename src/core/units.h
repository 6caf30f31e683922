// SPDX-License-Identifier: Apache-2.0
// Parsing of the user-facing units: durations ("500ms", "2s", "1.5m", bare
// seconds) and signals ("TERM", "SIGTERM", "15").
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace pmon {

using Nanos = std::chrono::nanoseconds;

// Why a duration was refused: not a duration at all, below zero, or longer
// than kMaxDuration (a typo, and a deadline that would overflow the clock).
enum class DurationError { invalid, negative, too_long };

// 10^9 seconds, about 31.7 years.
inline constexpr Nanos kMaxDuration{1'000'000'000'000'000'000};

std::expected<Nanos, DurationError> parse_duration(std::string_view s) noexcept;

// The user's words for a refused duration, after "OPTION: ", e.g.
// "'-1s' must not be negative".
std::string describe_duration_error(std::string_view text, DurationError e);

std::optional<int> parse_signal(std::string_view s) noexcept;

// Why a size, a number of processes or a number of cores was refused, and
// the value as it was given (check_cores: the number as %g shows it). Its
// words come from describe(), after the caller's "OPTION: " or "'field' ".
struct BadValue {
  enum class Why : uint8_t {
    not_a_size,     // parse_size
    not_positive,   // parse_size: 0
    too_large,      // parse_size: past 2^64 bytes
    not_pids,       // parse_pids
    too_many_pids,  // parse_pids: past what pids.max holds
    not_cores,      // parse_cores
    cores_out_of_range,
  };
  Why why;
  std::string value;
  bool number = false;  // given as a number (check_cores), not as text
};
std::string describe(const BadValue& b);

// Sizes for --memory-max: bytes, or a whole number with K, M, G or T
// (powers of 1024; lower case too), e.g. 512M. More than 0.
std::expected<uint64_t, BadValue> parse_size(std::string_view s);

// A whole number of processes for --pids-max; 0 is no limit (not even the
// default).
std::expected<uint64_t, BadValue> parse_pids(std::string_view s);

// Cores for --cpu-max: a decimal number (0.5, 1.5, 2) from 0.01 up.
std::expected<double, BadValue> parse_cores(std::string_view s);
// The same check for a number given as a number (serve, the bindings).
std::expected<double, BadValue> check_cores(double cores);

// "1 process", "0 processes": a count with its noun in the right number.
std::string count_of(size_t n, std::string_view one, std::string_view many);

// "SIGTERM" for 15, "SIGRTMIN+3", or the number as text.
std::string signal_name(int sig);

}  // namespace pmon
