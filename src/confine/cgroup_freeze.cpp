// SPDX-License-Identifier: Apache-2.0
#include "confine/cgroup_freeze.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "sys/fd.h"
#include "sys/result.h"

namespace pmon::confine {

std::optional<uint64_t> keyed_value(std::string_view s, std::string_view key) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    std::string_view line = s.substr(pos, nl == std::string_view::npos ? s.npos : nl - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key &&
        line[key.size()] == ' ')
      return std::strtoull(std::string(line.substr(key.size() + 1)).c_str(), nullptr, 10);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return std::nullopt;
}

std::optional<uint64_t> read_keyed(int dirfd, Fd& fd, const char* file, std::string_view key) {
  if (!fd) fd = Fd(::openat(dirfd, file, O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  char buf[1024];
  ssize_t n = retry_eintr([&] { return ::pread(fd.get(), buf, sizeof buf, 0); });
  if (n <= 0) return std::nullopt;
  return keyed_value(std::string_view(buf, static_cast<size_t>(n)), key);
}

// "frozen 1" / "populated 0" in a cgroup.events text.
bool events_say(std::string_view text, std::string_view key, char value) {
  auto v = keyed_value(text, key);
  return v && *v == static_cast<uint64_t>(value - '0');
}

// PMON_NO_FREEZE=1 turns the freeze off: a benchmarking knob (bench/README.md),
// so the unfrozen pass can be measured against the frozen one. Not an option.
bool freeze_disabled() noexcept {
  static const bool off = [] {
    const char* v = std::getenv("PMON_NO_FREEZE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return off;
}

FrozenPass::FrozenPass(int dir_fd, int events_fd) noexcept : dir_(dir_fd), events_(events_fd) {
  auto text = read_events();
  if (!text) return;
  if (events_say(*text, "populated", '0')) {
    empty_ = true;
    return;
  }
  if (freeze_disabled() || events_say(*text, "frozen", '1')) return;
  if (!write_freeze('1')) return;
  held_ = true;
  wait_settled(kSettleMs);
}

FrozenPass::~FrozenPass() {
  if (held_) (void)write_freeze('0');
}

std::optional<std::string_view> FrozenPass::read_events() noexcept {
  ssize_t n = retry_eintr([&] { return ::pread(events_, buf_, sizeof buf_, 0); });
  if (n <= 0) return std::nullopt;
  return std::string_view(buf_, static_cast<size_t>(n));
}

bool FrozenPass::write_freeze(char v) noexcept {
  Fd fd(::openat(dir_, "cgroup.freeze", O_WRONLY | O_CLOEXEC));
  if (!fd) return false;
  return retry_eintr([&] { return ::write(fd.get(), &v, 1); }) == 1;
}

void FrozenPass::wait_settled(int ms) noexcept {
  const int64_t deadline = sys::monotonic_ns() + int64_t{ms} * 1'000'000;
  for (;;) {
    auto text = read_events();
    if (!text) return;
    if (events_say(*text, "frozen", '1') || events_say(*text, "populated", '0')) {
      settled_ = true;
      return;
    }
    int64_t left = deadline - sys::monotonic_ns();
    if (left <= 0) return;
    pollfd pf{events_, POLLPRI, 0};
    (void)::poll(&pf, 1, static_cast<int>((left + 999'999) / 1'000'000));
  }
}

}  // namespace pmon::confine
