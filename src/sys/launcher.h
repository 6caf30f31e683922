// SPDX-License-Identifier: Apache-2.0
// The launcher thread: one long-lived thread of libpmon's own that clones
// every child armed with a parent-death signal. PR_SET_PDEATHSIG fires when
// the *thread* that created the child exits, not the process (seed 001,
// golang/go#27505), so a caller's short-lived thread must never be that
// creator. The thread starts on first use and never exits while the process
// lives; children without a pdeathsig are cloned on the caller's thread, so
// the common path has no thread hop.
#pragma once

#include <system_error>
#include <utility>

namespace pmon::sys {

// Runs fn(arg) on the launcher thread and returns when it has finished.
// Fails (EAGAIN and the like) only when the thread cannot be started.
std::error_code run_on_launcher(void (*fn)(void*), void* arg) noexcept;

template <class F>
std::error_code run_on_launcher(F& f) noexcept {
  return run_on_launcher([](void* p) { (*static_cast<F*>(p))(); }, &f);
}

}  // namespace pmon::sys
