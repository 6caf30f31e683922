// Parsing of the user-facing units: durations ("500ms", "2s", "1.5m", bare
// seconds) and signals ("TERM", "SIGTERM", "15").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace pmon {

using Nanos = std::chrono::nanoseconds;

std::optional<Nanos> parse_duration(std::string_view s) noexcept;

std::optional<int> parse_signal(std::string_view s) noexcept;

// "SIGTERM" for 15, "SIGRTMIN+3", or the number as text.
std::string signal_name(int sig);

}  // namespace pmon
