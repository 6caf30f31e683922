// SPDX-License-Identifier: Apache-2.0
// One error currency below the CLI and the binding: std::expected with an
// errno-valued std::error_code. Nothing under src/ throws or logs.
#pragma once

#include <cerrno>
#include <expected>
#include <system_error>

namespace pmon {

template <class T>
using Result = std::expected<T, std::error_code>;

inline std::error_code errno_code(int e) noexcept {
  return {e, std::generic_category()};
}

// The current errno as an error; call right after the failing syscall.
inline std::error_code last_error() noexcept { return errno_code(errno); }

inline std::unexpected<std::error_code> fail(int e) noexcept {
  return std::unexpected(errno_code(e));
}

inline std::unexpected<std::error_code> fail_errno() noexcept {
  return std::unexpected(last_error());
}

// Retries a syscall-like expression while it fails with EINTR.
template <class F>
auto retry_eintr(F&& f) noexcept {
  for (;;) {
    auto r = f();
    if (r != -1 || errno != EINTR) return r;
  }
}

}  // namespace pmon
