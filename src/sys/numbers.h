// SPDX-License-Identifier: Apache-2.0
// Numbers as the kernel and pmon's own names write them: decimal digits,
// the whole of the text.
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace pmon::sys {

// `s`, all of it, as a decimal number of type T: false for an empty text,
// anything before or after the digits, or a value T cannot hold.
template <class T>
bool parse_whole(std::string_view s, T& out) noexcept {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// A number of a name pmon made (a cgroup's, a session's): at most 20
// digits, so that zeros in front cannot make a second name for one number.
inline bool parse_name_number(std::string_view s, uint64_t& out) noexcept {
  return s.size() <= 20 && parse_whole(s, out);
}

}  // namespace pmon::sys
