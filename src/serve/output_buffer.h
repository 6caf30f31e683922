// The output of one job: the newest bytes it wrote, at most `limit` of them,
// addressed by their offset in everything it ever wrote, so a reader can
// ask for only what is new.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pmon::serve {

class OutputBuffer {
 public:
  explicit OutputBuffer(size_t limit);

  void append(std::string_view bytes);

  struct Read {
    std::string text;   // valid UTF-8 (invalid bytes read as U+FFFD)
    uint64_t next = 0;  // the offset to pass as `since` next time
    bool truncated = false;  // bytes before what was asked for are gone
  };
  // Everything kept from offset `since` on (all that is kept without it).
  // An incomplete UTF-8 sequence at the end is held back until it completes.
  Read read(std::optional<uint64_t> since) const;

  uint64_t total() const noexcept { return base_ + data_.size(); }

 private:
  size_t limit_;
  std::string data_;   // the kept bytes
  uint64_t base_ = 0;  // offset of data_[0]
};

}  // namespace pmon::serve
