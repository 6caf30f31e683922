// SPDX-License-Identifier: Apache-2.0
// The output of one job: one stream, addressed by byte offset from the job's
// start, of which only the newest `limit` bytes are kept. Readers get text:
// valid UTF-8, invalid bytes shown as U+FFFD, and an offset to ask from next
// time so that successive reads return every kept byte exactly once.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pmon::serve {

// What the output buffers of one service may hold together. A buffer grows
// only by what it is granted here; past that it keeps what it has and drops
// its oldest bytes, as it does at its own limit.
class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) noexcept : limit_(limit) {}
  // Up to `want` more bytes, fewer (or none) when the budget is short.
  size_t take(size_t want) noexcept {
    size_t n = std::min(want, limit_ - std::min(limit_, used_));
    used_ += n;
    return n;
  }
  void give(size_t n) noexcept { used_ -= std::min(used_, n); }
  size_t used() const noexcept { return used_; }
  size_t limit() const noexcept { return limit_; }

 private:
  size_t limit_;
  size_t used_ = 0;
};

class OutputBuffer {
 public:
  // `budget` (may be null: no cap but `limit`) must outlive the buffer.
  explicit OutputBuffer(size_t limit, MemoryBudget* budget = nullptr);
  ~OutputBuffer();
  OutputBuffer(const OutputBuffer&) = delete;
  OutputBuffer& operator=(const OutputBuffer&) = delete;

  // Adds what the job wrote. Storage grows as needed up to `limit` bytes (or
  // what the budget grants, and what can be allocated), then the oldest
  // bytes are overwritten; the first kept byte is always where a
  // UTF-8 character starts (a character cut in two loses its rest as well),
  // except under a limit of 1-3 bytes, too small to keep every character
  // whole: there bytes are kept as they come (see read).
  void append(std::string_view bytes);
  // append() without a copy: room for up to `want` new bytes in the
  // storage as it is (fewer where it wraps or it is full; it is never grown
  // here, so storage follows what was appended), to be filled (by read(2))
  // and handed to commit(). Once the limit is reached the room is where the
  // oldest bytes are: commit drops them.
  std::span<char> writable(size_t want);
  void commit(size_t n) noexcept;
  // No more bytes will come: an incomplete character at the end is shown
  // (as U+FFFD) instead of being held back for its missing bytes.
  void close() noexcept { closed_ = true; }

  struct Read {
    std::string text;
    uint64_t next = 0;       // the offset to pass as `since` next time
    bool truncated = false;  // bytes from `since` (or from 0) were dropped
    bool more = false;       // kept bytes past `next` were left for the next read (`max`)
  };
  // The kept text from `since` (from the first kept byte when nullopt or
  // older). An incomplete character at the end stays back until the bytes
  // completing it arrive or close() is called; `next` stops before it.
  // One that fills the whole limit (a character longer than the limit)
  // cannot be completed: it reads as U+FFFD, and so do its later bytes.
  // A `since` beyond total() reads nothing and gives next = total().
  // At most `max` bytes are read (a character cut by it is read whole).
  Read read(std::optional<uint64_t> since, size_t max = SIZE_MAX) const { return read(since, std::string(), max); }
  // The same, its text made in `storage` (emptied first; a caller that
  // reads often hands back the last text, keeping its allocation).
  Read read(std::optional<uint64_t> since, std::string storage, size_t max = SIZE_MAX) const;

  // The kept bytes from offset `from` (first_kept() <= from <= total()) as
  // they were appended, at most `max` of them: two spans, the second empty
  // unless they wrap around the end of the storage.
  std::array<std::span<const char>, 2> bytes_from(uint64_t from, size_t max) const noexcept;

  uint64_t total() const noexcept { return first_ + size_; }  // every byte ever appended
  uint64_t first_kept() const noexcept { return first_; }     // offset of the oldest kept byte
  size_t capacity() const noexcept { return ring_.size(); }   // storage held, at most `limit`
  bool closed() const noexcept { return closed_; }

 private:
  void reserve_for(size_t n);
  void drop_front(size_t n) noexcept;
  void skip_cut_character() noexcept;
  void write_tail(std::string_view bytes) noexcept;

  size_t limit_;
  MemoryBudget* budget_;
  std::vector<char> ring_;  // grows up to limit_, then wraps
  size_t head_ = 0;         // index in ring_ of the first kept byte
  size_t size_ = 0;         // bytes kept
  uint64_t first_ = 0;      // offset of the first kept byte
  bool closed_ = false;
};

// What a byte of 0x80 or more starts in UTF-8: a sequence of `len` bytes
// whose second byte lies in [lo, hi] (which rules out overlongs,
// surrogates and > U+10FFFF; the others are continuation bytes), or len 0:
// a byte that starts nothing (a stray continuation byte, a never-valid one).
struct Utf8Lead {
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
};
constexpr Utf8Lead utf8_lead(unsigned char c) noexcept {
  Utf8Lead l;
  if (c >= 0xC2 && c <= 0xDF) {
    l.len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    l.len = 3;
    if (c == 0xE0) l.lo = 0xA0;
    if (c == 0xED) l.hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    l.len = 4;
    if (c == 0xF0) l.lo = 0x90;
    if (c == 0xF4) l.hi = 0x8F;
  }
  return l;
}

// How many bytes `s` starts with that are valid UTF-8 (s.size(): all).
size_t valid_utf8_prefix(std::string_view s) noexcept;

// Appends `in` to `out` as valid UTF-8: each maximal invalid subpart (as
// Unicode defines it) becomes one U+FFFD. When `final` is false an
// incomplete but so far valid sequence at the very end is not consumed.
// Returns how many bytes of `in` were consumed.
size_t append_sanitized_utf8(std::string& out, std::string_view in, bool final);

}  // namespace pmon::serve
