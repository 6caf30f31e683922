// SPDX-License-Identifier: Apache-2.0
// A cgroup leaf frozen for one signal pass of a stop (cgroup.freeze), so that
// no member forks a child the pass never signals; thawed again on every
// path. Used by the cgroup backend (cgroup.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sys/fd.h"
#include "sys/syscalls.h"

namespace pmon::confine {

// The number after `key ` on its own line of a flat-keyed cgroup file
// ("populated 1", "usage_usec 123"); none when the key is not there.
std::optional<uint64_t> keyed_value(std::string_view s, std::string_view key);

// `key`'s value in the cgroup file `file` of `dirfd`, read through `fd`,
// which is opened on the first read and kept: a pread at 0 has the kernel
// write the file afresh (no open and close per read).
std::optional<uint64_t> read_keyed(int dirfd, Fd& fd, const char* file, std::string_view key);

// "frozen 1" / "populated 0" in a cgroup.events text.
bool events_say(std::string_view text, std::string_view key, char value);

// PMON_NO_FREEZE=1 turns the freeze off: a benchmarking knob (bench/README.md),
// so the unfrozen pass can be measured against the frozen one. Not an option.
bool freeze_disabled() noexcept;

// Freezes a leaf for one signal pass and thaws it when it goes out of scope,
// whatever happens in between (an exception included): a leaf is never left
// frozen by us. The freeze is a speed-up, not a guarantee: without
// cgroup.freeze, when it cannot be written (EACCES), when the leaf is already
// frozen (a frozen ancestor: not ours to thaw), or with PMON_NO_FREEZE set,
// nothing is frozen and the pass goes unfrozen. The pass waits at most
// kSettleMs for the freeze to settle ("frozen 1" in cgroup.events) before it
// signals; a freeze still settling after that (many members, a slow
// machine) is caught up with (catch_up): a member not yet frozen may still
// fork, and its child, frozen at birth, was not in the listing. If pmon dies
// while the leaf is frozen, the guard's cgroup.kill still kills the frozen
// tasks (a fatal signal ends a frozen task on cgroup v2), and it thaws the
// leaf as well (cgroup_kill.h).
class FrozenPass {
 public:
  // dir_fd: the leaf's directory; events_fd: its cgroup.events, open.
  FrozenPass(int dir_fd, int events_fd) noexcept;
  ~FrozenPass();
  FrozenPass(const FrozenPass&) = delete;
  FrozenPass& operator=(const FrozenPass&) = delete;

  bool held() const noexcept { return held_; }
  bool nothing_there() const noexcept { return empty_; }

  // While the freeze has not settled, at most kCatchUpMs: pass() every
  // kRelistMs (it signals the members it has not signalled yet), and once
  // more when the freeze settles, when the listing is complete.
  template <class F>
  void catch_up(F&& pass) {
    if (!held_ || settled_) return;
    const int64_t deadline = sys::monotonic_ns() + int64_t{kCatchUpMs} * 1'000'000;
    while (!settled_ && sys::monotonic_ns() < deadline) {
      wait_settled(kRelistMs);
      pass();
    }
  }

 private:
  static constexpr int kSettleMs = 20;
  static constexpr int kCatchUpMs = 1000;
  static constexpr int kRelistMs = 10;

  std::optional<std::string_view> read_events() noexcept;
  bool write_freeze(char v) noexcept;
  // Until cgroup.events says "frozen 1" or "populated 0" (POLLPRI on each
  // change), at most ms. The read re-arms the stop's POLLPRI on the same fd;
  // the stop reads cgroup.events again right after the pass.
  void wait_settled(int ms) noexcept;

  int dir_;
  int events_;
  char buf_[256];
  bool held_ = false;
  bool settled_ = false;
  bool empty_ = false;
};

}  // namespace pmon::confine
