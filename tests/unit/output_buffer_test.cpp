// SPDX-License-Identifier: Apache-2.0
// serve::OutputBuffer: the newest `limit` bytes of a job's output, cut at a
// character start, read as valid UTF-8 by byte offset.
#include "jobs/output_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>

namespace pmon::serve {
namespace {

const std::string kEuro = "\xE2\x82\xAC";      // U+20AC, 3 bytes
const std::string kSmile = "\xF0\x9F\x99\x82";  // U+1F642, 4 bytes
const std::string kFffd = "\xEF\xBF\xBD";

bool is_char_start(unsigned char c) { return (c & 0xC0) != 0x80; }

std::string sanitized(std::string_view in, bool final = true) {
  std::string out;
  EXPECT_EQ(append_sanitized_utf8(out, in, final), in.size());
  return out;
}

TEST(Utf8, ValidPassesThrough) {
  std::string s = "plain " + kEuro + " \xC3\xA9 " + kSmile;
  EXPECT_EQ(sanitized(s), s);
}

TEST(Utf8, InvalidBecomesReplacement) {
  EXPECT_EQ(sanitized("a\xFF" "b"), "a" + kFffd + "b");
  // A truncated sequence is one maximal subpart: one U+FFFD, then the rest.
  EXPECT_EQ(sanitized("\xE2\x82x"), kFffd + "x");
  // Overlongs, surrogates and > U+10FFFF: every byte is its own subpart.
  EXPECT_EQ(sanitized("\xC0\xAF"), kFffd + kFffd);
  EXPECT_EQ(sanitized("\xE0\x80\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(sanitized("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(sanitized("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(sanitized("\x80\x80" "ok"), kFffd + kFffd + "ok");
}

TEST(Utf8, NonAsciiAfterAsciiRunsOfEveryLength) {
  // ASCII is scanned several bytes at a time: a non-ASCII byte anywhere in
  // or after such a run is still seen.
  for (size_t k = 0; k < 20; ++k) {
    std::string run(k, 'a');
    EXPECT_EQ(sanitized(run + "\xFF" + run), run + kFffd + run) << k;
    EXPECT_EQ(sanitized(run + kEuro + run), run + kEuro + run) << k;
  }
}

TEST(Utf8, IncompleteEndHeldBackUnlessFinal) {
  std::string out;
  std::string in = "ab" + kSmile.substr(0, 3);
  EXPECT_EQ(append_sanitized_utf8(out, in, false), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(append_sanitized_utf8(out, in, true), in.size());
  EXPECT_EQ(out, "ab" + kFffd);
  // An invalid end is not held back: it cannot be completed.
  out.clear();
  EXPECT_EQ(append_sanitized_utf8(out, "a\xE2x", false), 3u);
  EXPECT_EQ(out, "a" + kFffd + "x");
}

TEST(OutputBuffer, SmallAppendsAndSinceReads) {
  OutputBuffer b(1024);
  EXPECT_EQ(b.read(std::nullopt).next, 0u);
  b.append("hello ");
  b.append("world");
  auto r = b.read(std::nullopt);
  EXPECT_EQ(r.text, "hello world");
  EXPECT_EQ(r.next, 11u);
  EXPECT_FALSE(r.truncated);
  r = b.read(6);
  EXPECT_EQ(r.text, "world");
  EXPECT_EQ(r.next, 11u);
  r = b.read(11);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.next, 11u);
  EXPECT_FALSE(r.truncated);
  // Beyond the end: nothing, and next is where the output is.
  r = b.read(500);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.next, 11u);
  EXPECT_EQ(b.total(), 11u);
}

TEST(OutputBuffer, CharacterAcrossAppendsIsHeldBack) {
  OutputBuffer b(1024);
  b.append("x" + kEuro.substr(0, 2));
  auto r = b.read(0);
  EXPECT_EQ(r.text, "x");
  EXPECT_EQ(r.next, 1u);
  b.append(kEuro.substr(2));
  r = b.read(r.next);
  EXPECT_EQ(r.text, kEuro);
  EXPECT_EQ(r.next, 4u);
}

TEST(OutputBuffer, CloseShowsAnIncompleteEnd) {
  OutputBuffer b(1024);
  b.append("ab" + kSmile.substr(0, 2));
  auto r = b.read(std::nullopt);
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.next, 2u);
  b.close();
  r = b.read(r.next);
  EXPECT_EQ(r.text, kFffd);
  EXPECT_EQ(r.next, 4u);
}

TEST(OutputBuffer, CutInsideACharacterDropsItsRest) {
  OutputBuffer b(4);
  b.append("a" + kEuro);  // 4 bytes: fits
  EXPECT_EQ(b.read(std::nullopt).text, "a" + kEuro);
  b.append("b");  // drops "a": the euro sign starts the buffer
  EXPECT_EQ(b.first_kept(), 1u);
  EXPECT_EQ(b.read(std::nullopt).text, kEuro + "b");
  b.append("c");  // would start at the euro sign's second byte
  EXPECT_EQ(b.first_kept(), 4u);
  auto r = b.read(std::nullopt);
  EXPECT_EQ(r.text, "bc");
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(b.total(), 6u);
  EXPECT_EQ(b.capacity(), 4u);
}

TEST(OutputBuffer, OneAppendLargerThanTheLimit) {
  OutputBuffer b(5);
  b.append("xx" + kSmile + "abcd");  // 10 bytes; the newest 5 start mid-character
  EXPECT_EQ(b.total(), 10u);
  EXPECT_EQ(b.first_kept(), 6u);
  auto r = b.read(std::nullopt);
  EXPECT_EQ(r.text, "abcd");
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.next, 10u);
  // Read from an offset that was dropped: truncated, from the first kept.
  r = b.read(3);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.text, "abcd");
  r = b.read(7);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.text, "bcd");
}

TEST(OutputBuffer, StrayContinuationBytesAreNotAllDropped) {
  // Invalid output that is nothing but continuation bytes: a cut drops at
  // most the three a character can have, the rest shows as U+FFFD.
  OutputBuffer b(8);
  b.append(std::string(12, '\x80'));
  EXPECT_EQ(b.first_kept(), 7u);
  auto r = b.read(std::nullopt);
  std::string want;
  for (int i = 0; i < 5; ++i) want += kFffd;
  EXPECT_EQ(r.text, want);
  EXPECT_EQ(r.next, 12u);
}

TEST(OutputBuffer, CharacterLongerThanTheLimitReadsAsReplacement) {
  OutputBuffer b(1);
  b.append("\xC3");  // the first byte of "\u00e9": it fills the limit
  auto r = b.read(0);
  EXPECT_EQ(r.text, kFffd);
  EXPECT_EQ(r.next, 1u);
  b.append("\xA9");  // its second: kept, not dropped as the rest of a cut
  r = b.read(r.next);
  EXPECT_EQ(r.text, kFffd);
  EXPECT_EQ(r.next, 2u);
  EXPECT_FALSE(r.truncated);
  // A character that fits the limit is still held back until it is whole.
  OutputBuffer two(2);
  two.append("\xC3");
  r = two.read(0);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.next, 0u);
  two.append("\xA9");
  EXPECT_EQ(two.read(0).text, "\xC3\xA9");
}

// A reader that keeps up with `since` while the writer waits for room (the
// service's outputBackpressure): under limits of 1-3 bytes every read makes
// progress, no byte is dropped, and characters that fit arrive whole.
TEST(OutputBuffer, TinyLimitWithBackpressureAlwaysMovesOn) {
  const std::string input = "\xC3\xA9" + kEuro + kSmile;
  const std::string chars[] = {"\xC3\xA9", kEuro, kSmile};
  for (size_t limit : {size_t{1}, size_t{2}, size_t{3}}) {
    OutputBuffer b(limit);
    std::string got;
    uint64_t next = 0;
    size_t at = 0;
    for (int round = 0; round < 100 && (at < input.size() || next < b.total()); ++round) {
      const size_t room = limit - static_cast<size_t>(b.total() - next);  // what the pipe may give
      const size_t n = std::min(room, input.size() - at);
      b.append(std::string_view(input).substr(at, n));
      at += n;
      if (at == input.size()) b.close();
      auto r = b.read(next);
      ASSERT_FALSE(r.truncated) << limit;
      ASSERT_TRUE(n > 0 || r.next > next) << "stuck at " << next << ", limit " << limit;
      got += r.text;
      next = r.next;
    }
    EXPECT_EQ(next, input.size()) << limit;
    // Each character whole where it fits, else U+FFFD for its bytes (one
    // or more; those of characters side by side run together).
    std::string rest = got;
    bool replaced = false;
    auto skip_replacements = [&] {
      while (rest.starts_with(kFffd)) rest.erase(0, kFffd.size());
    };
    for (const std::string& c : chars) {
      if (c.size() > limit) {
        if (!replaced) {
          ASSERT_TRUE(rest.starts_with(kFffd)) << limit << ": " << got;
        }
        replaced = true;
        continue;
      }
      if (replaced) skip_replacements();
      replaced = false;
      ASSERT_TRUE(rest.starts_with(c)) << limit << ": " << got;
      rest.erase(0, c.size());
    }
    skip_replacements();
    EXPECT_EQ(rest, "") << limit << ": " << got;
  }
}

TEST(OutputBuffer, ZeroLimitKeepsNothing) {
  OutputBuffer b(0);
  b.append("abc");
  auto r = b.read(std::nullopt);
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.next, 3u);
  EXPECT_EQ(b.capacity(), 0u);
}

// Pseudo-random text of ASCII and 2-, 3- and 4-byte characters.
std::string mixed_text(size_t bytes, unsigned seed) {
  std::mt19937 rng(seed);
  const std::string pieces[] = {"a", "Z", "\n", "\xC3\xA9", kEuro, kSmile, "0123456789"};
  std::string s;
  s.reserve(bytes + 16);
  while (s.size() < bytes) s += pieces[rng() % std::size(pieces)];
  return s;
}

TEST(OutputBuffer, TenMiBThroughOneMiB) {
  constexpr size_t kLimit = 1 << 20;
  const std::string input = mixed_text(10 << 20, 1);
  OutputBuffer b(kLimit);
  std::mt19937 rng(2);
  std::string followed;  // what a reader keeping up with `since` got
  uint64_t next = 0;
  for (size_t at = 0; at < input.size();) {
    size_t n = std::min<size_t>(1 + rng() % 70000, input.size() - at);  // splits characters
    b.append(std::string_view(input).substr(at, n));
    at += n;
    auto r = b.read(next);
    ASSERT_FALSE(r.truncated) << "at " << at;
    ASSERT_TRUE(r.next == at || is_char_start(input[r.next])) << "at " << at;
    followed += r.text;
    next = r.next;
    ASSERT_LE(b.capacity(), kLimit);
  }
  EXPECT_EQ(next, input.size());
  EXPECT_TRUE(followed == input);  // every byte once, in order

  EXPECT_EQ(b.total(), input.size());
  uint64_t newest = input.size() - kLimit;
  EXPECT_GE(b.first_kept(), newest);
  EXPECT_LE(b.first_kept(), newest + 3);
  EXPECT_TRUE(is_char_start(input[b.first_kept()]));
  auto r = b.read(std::nullopt);
  EXPECT_TRUE(r.truncated);
  EXPECT_TRUE(r.text == input.substr(b.first_kept()));
  EXPECT_EQ(r.next, input.size());
}

TEST(OutputBuffer, SlowReaderSeesTheGap) {
  constexpr size_t kLimit = 1000;
  const std::string input = mixed_text(5000, 3);
  OutputBuffer b(kLimit);
  b.append(std::string_view(input).substr(0, 600));
  auto r = b.read(std::nullopt);
  EXPECT_FALSE(r.truncated);
  uint64_t seen = r.next;
  b.append(std::string_view(input).substr(600));  // far more than the limit since
  r = b.read(seen);
  EXPECT_TRUE(r.truncated);
  EXPECT_TRUE(r.text == input.substr(b.first_kept()));
  // Caught up: the next read is not truncated.
  b.append("tail");
  auto r2 = b.read(r.next);
  EXPECT_FALSE(r2.truncated);
  EXPECT_EQ(r2.text, "tail");
}

// writable()+commit() (the service reads its pipes straight into the
// storage) keeps exactly what append() of the same bytes keeps.
TEST(OutputBuffer, WritableAndCommitAsAppend) {
  const std::string input = mixed_text(200000, 5);
  for (size_t limit : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{10000}, size_t{300000}}) {
    OutputBuffer a(limit), b(limit);
    std::mt19937 rng(static_cast<unsigned>(limit));
    size_t at = 0;
    while (at < input.size()) {
      size_t want = std::min<size_t>(1 + rng() % 9000, input.size() - at);
      std::span<char> room = b.writable(want);
      if (room.empty()) {  // no storage yet, or full below the limit: append grows it
        ASSERT_LT(b.capacity(), std::max<size_t>(limit, 1));
        b.append(std::string_view(input).substr(at, want));
        a.append(std::string_view(input).substr(at, want));
        at += want;
        continue;
      }
      ASSERT_LE(room.size(), want);
      size_t n = 1 + rng() % room.size();  // a read may return less
      std::memcpy(room.data(), input.data() + at, n);
      b.commit(n);
      a.append(std::string_view(input).substr(at, n));
      at += n;
      ASSERT_EQ(a.total(), b.total());
      ASSERT_EQ(a.first_kept(), b.first_kept()) << limit << " at " << at;
      ASSERT_LE(b.capacity(), limit);
      if (rng() % 50 == 0) {  // reads from the same offset agree
        uint64_t since = a.total() - std::min<uint64_t>(a.total(), rng() % 20000);
        auto ra = a.read(since), rb = b.read(since);
        ASSERT_TRUE(ra.text == rb.text);
        ASSERT_EQ(ra.next, rb.next);
        ASSERT_EQ(ra.truncated, rb.truncated);
      }
    }
    auto ra = a.read(std::nullopt), rb = b.read(std::nullopt);
    EXPECT_TRUE(ra.text == rb.text) << limit;
    EXPECT_EQ(ra.next, rb.next);
    EXPECT_EQ(ra.truncated, rb.truncated);
    if (limit >= input.size()) {
      EXPECT_TRUE(rb.text == input);
    }
  }
}

// bytes_from gives the kept bytes as appended (no U+FFFD), from any kept
// offset, in one span or two where the ring wraps, never past `max`.
TEST(OutputBuffer, BytesFromAreTheRawKeptBytes) {
  std::mt19937 rng(7);
  for (size_t limit : {size_t{1}, size_t{5}, size_t{64}, size_t{1000}, size_t{5000}}) {
    OutputBuffer b(limit);
    std::string all;
    for (int i = 0; i < 400; ++i) {
      std::string chunk(1 + rng() % 300, '\0');
      for (char& c : chunk) c = static_cast<char>(rng() % 256);  // invalid UTF-8 too
      b.append(chunk);
      all += chunk;
      ASSERT_EQ(b.total(), all.size());
      ASSERT_LE(b.total() - b.first_kept(), limit);
      const uint64_t from = b.first_kept() + rng() % (b.total() - b.first_kept() + 1);
      const size_t max = 1 + rng() % (limit + 10);
      auto parts = b.bytes_from(from, max);
      std::string got(parts[0].begin(), parts[0].end());
      got.append(parts[1].begin(), parts[1].end());
      const size_t want = std::min<uint64_t>(max, b.total() - from);
      ASSERT_EQ(got.size(), want) << limit << " from " << from;
      ASSERT_TRUE(got == all.substr(static_cast<size_t>(from), want)) << limit << " from " << from;
      if (parts[0].empty()) {
        ASSERT_TRUE(parts[1].empty());
      }
    }
    // Before the first kept byte, at or past the end: nothing.
    if (b.first_kept() > 0) {
      EXPECT_TRUE(b.bytes_from(b.first_kept() - 1, 100)[0].empty());
    }
    EXPECT_TRUE(b.bytes_from(b.total(), 100)[0].empty());
  }
  OutputBuffer none(0);
  none.append("gone");
  EXPECT_TRUE(none.bytes_from(4, 10)[0].empty());
}

// A read of at most `max` bytes says `more` and goes on from `next`; a
// character cut by `max` is read whole, so even max 1 moves on.
TEST(OutputBuffer, BoundedReadsReadOn) {
  OutputBuffer b(1 << 20);
  std::string all;
  for (int i = 0; i < 1000; ++i) all += "line " + std::to_string(i) + " " + kEuro + kSmile + "\n";
  b.append(all);
  b.close();
  for (size_t max : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{4096}, all.size(), all.size() + 1}) {
    std::string got;
    std::optional<uint64_t> since;
    size_t reads = 0;
    for (;;) {
      OutputBuffer::Read r = b.read(since, max);
      ASSERT_LE(r.text.size(), max + 3) << max;
      got += r.text;
      since = r.next;
      ++reads;
      if (!r.more) break;
      ASSERT_FALSE(r.text.empty()) << max;
    }
    EXPECT_EQ(got, all) << max;
    EXPECT_EQ(*since, all.size()) << max;
    if (max >= all.size()) {
      EXPECT_EQ(reads, 1u);
    }
  }
}

// Buffers that share a budget grow only by what it grants; past it they
// keep their newest bytes (truncated), and give it back when they go.
TEST(OutputBuffer, BudgetCapsGrowth) {
  MemoryBudget budget(1 << 20);
  std::string chunk(64 << 10, 'a');
  auto first = std::make_unique<OutputBuffer>(size_t{768} << 10, &budget);
  for (int i = 0; i < 16; ++i) first->append(chunk);
  EXPECT_EQ(first->capacity(), size_t{768} << 10);
  OutputBuffer second(size_t{1} << 20, &budget);
  for (int i = 0; i < 16; ++i) second.append(chunk);
  EXPECT_LE(first->capacity() + second.capacity(), size_t{1} << 20);
  EXPECT_EQ(budget.used(), first->capacity() + second.capacity());
  OutputBuffer::Read r = second.read(std::nullopt);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.text.size(), second.capacity());
  EXPECT_EQ(r.next, 16u * chunk.size());
  first.reset();
  EXPECT_EQ(budget.used(), second.capacity());
  // A budget with nothing left: a new buffer counts what went by.
  MemoryBudget none(0);
  OutputBuffer starved(1 << 20, &none);
  starved.append("gone");
  EXPECT_EQ(starved.capacity(), 0u);
  EXPECT_EQ(starved.total(), 4u);
  EXPECT_TRUE(starved.read(std::nullopt).truncated);
}

}  // namespace
}  // namespace pmon::serve
