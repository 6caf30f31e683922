// SPDX-License-Identifier: Apache-2.0
// Output as an agent reads it: a job's whole output (its spool, else the
// bytes its buffer keeps) seen through head and tail, a page at a byte
// offset, lines matching a regular expression, with ANSI escapes and
// carriage-return redraws taken out and long lines cut. What is returned
// is shaped; the spool keeps the raw bytes.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "confine/error.h"

namespace pmon::serve {

struct ViewParams {
  std::optional<uint64_t> head;    // the first N bytes of the range
  std::optional<uint64_t> tail;    // the last N bytes of the range
  std::optional<uint64_t> offset;  // the range starts here (bytes since the job began)
  std::optional<uint64_t> length;  // and is this long (else: to the end)
  std::optional<std::string> grep;  // lines matching (RE2 syntax), numbered
  bool strip_ansi = false;
  std::optional<uint64_t> max_line_bytes;
  bool any() const { return head || tail || offset || length || grep || strip_ansi || max_line_bytes; }
};

// What MCP's output tool (and a long run's result) shows a model by
// default: the first 4 KiB and the last 12 KiB, ANSI stripped, lines cut
// at 2000 bytes; at most 64 KiB of text for a page or grep.
inline constexpr uint64_t kAgentHead = 4096;
inline constexpr uint64_t kAgentTail = 12288;
inline constexpr uint64_t kAgentMaxLine = 2000;
inline constexpr size_t kAgentMaxText = size_t{64} << 10;
inline ViewParams agent_view() {
  ViewParams v;
  v.head = kAgentHead;
  v.tail = kAgentTail;
  v.strip_ansi = true;
  v.max_line_bytes = kAgentMaxLine;
  return v;
}

// Where a view reads: bytes [from, end) of a stream, by offset.
struct ByteSource {
  uint64_t from = 0;          // the oldest byte still held
  uint64_t end = 0;           // every byte written so far
  uint64_t lines_before = 0;  // newlines before `from` that are known of
  std::function<size_t(uint64_t off, char* buf, size_t n)> read;
};

struct ViewResult {
  std::string text;
  bool truncated = false;  // bytes asked for are no longer held: it starts at `from`
  uint64_t from = 0;       // the first byte the view looked at
  uint64_t next = 0;       // the offset after the last byte it covered
  bool more = false;       // a page cut short by the reply's size: read on from next
  uint64_t left_out = 0;   // bytes between head and tail not shown
  uint64_t total = 0;      // bytes the job has written
  std::optional<uint64_t> matches;  // grep: lines that matched
  uint64_t shown = 0;               // grep: of them, shown (the rest did not fit)
};

// The view of `src` by `v`; at most about `max` bytes of text. An invalid
// `grep` is an error naming it.
std::expected<ViewResult, Error> render_view(const ByteSource& src, const ViewParams& v, size_t max);

struct GrepState;

// A grep view read a piece at a time (a spool of 64 MiB takes a few
// hundred ms): each step() goes on from where the last stopped.
class GrepScan {
 public:
  // The scan of `src` by `v` (whose grep is set), at most about `max`
  // bytes of text; an invalid grep is an error naming it.
  static std::expected<GrepScan, Error> begin(const ByteSource& src, const ViewParams& v, size_t max);
  GrepScan(GrepScan&&) noexcept;
  GrepScan& operator=(GrepScan&&) noexcept;
  ~GrepScan();
  // Reads on in `src` as it is now until the range asked (as it was at
  // begin) is done (true) or the clock (sys::monotonic_ns) passes
  // `until`. Lines rotated away meanwhile are left out, said as truncated.
  bool step(const ByteSource& src, int64_t until);
  ViewResult& result() { return r_; }
  // What a scan holds besides its text: a chunk read, and a line (whose
  // first 1 MiB is matched).
  static constexpr size_t kHeld = (size_t{64} << 10) + (size_t{1} << 20);

 private:
  GrepScan() = default;
  void finish_line(uint64_t line_end);
  std::unique_ptr<GrepState> s_;
  ViewResult r_;
};

// --- the pieces, for tests ---
// ANSI escape sequences (CSI, OSC and the other string sequences, two- and
// three-byte escapes) removed; of each line only the text after its last
// carriage return (a \r that ends a line, as in \r\n, ends it).
std::string strip_ansi(std::string_view s);
// Each line longer than `max` bytes cut there (at a character's start)
// and "[... K bytes]" put after it.
std::string cap_lines(std::string_view s, size_t max);
// The line that stands for what was left out between a head and a tail.
std::string left_out_line(uint64_t bytes);
// head, the marker on a line of its own, tail.
std::string join_head_tail(std::string head, uint64_t left_out, std::string_view tail);

}  // namespace pmon::serve
