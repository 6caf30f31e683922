// SPDX-License-Identifier: Apache-2.0
// The shaping of output for an agent: ANSI stripped, lines cut, head and
// tail joined with the count of what was left out, pages and grep.
#include "jobs/output_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace pmon::serve {
namespace {

TEST(StripAnsi, RemovesColoursAndCursorMoves) {
  EXPECT_EQ(strip_ansi("\x1b[1;31mred\x1b[0m plain\n"), "red plain\n");
  EXPECT_EQ(strip_ansi("\x1b[2K\x1b[1Gline\n"), "line\n");
  EXPECT_EQ(strip_ansi("a\x1b[?25lb\x1b[?25hc"), "abc");
}

TEST(StripAnsi, RemovesOscAndOtherStrings) {
  EXPECT_EQ(strip_ansi("\x1b]0;title\x07text\n"), "text\n");
  EXPECT_EQ(strip_ansi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n"), "link\n");
  EXPECT_EQ(strip_ansi("\x1bPdata\x1b\\x"), "x");
  EXPECT_EQ(strip_ansi("\x1b(Bok\x1b=\n"), "ok\n");
}

TEST(StripAnsi, KeepsTheTextAfterTheLastCarriageReturnOfALine) {
  EXPECT_EQ(strip_ansi("10%\r50%\r100%\ndone\n"), "100%\ndone\n");
  EXPECT_EQ(strip_ansi("a\r\nb\r\n"), "a\nb\n");  // CRLF endings (a pty) keep their lines
  EXPECT_EQ(strip_ansi("x\r\x1b[Ky\n"), "y\n");
  EXPECT_EQ(strip_ansi("partial\r"), "partial");
}

TEST(StripAnsi, LeavesPlainTextAndACutSequenceAlone) {
  EXPECT_EQ(strip_ansi("plain text\n\xc3\xa9\n"), "plain text\n\xc3\xa9\n");
  EXPECT_EQ(strip_ansi("abc\x1b[31"), "abc");
  EXPECT_EQ(strip_ansi("abc\x1b"), "abc");
}

TEST(CapLines, CutsLongLinesAndSaysHowMuch) {
  EXPECT_EQ(cap_lines("short\n" + std::string(100000, 'x') + "\nend", 100),
            "short\n" + std::string(100, 'x') + "[... 99900 bytes]\nend");
  EXPECT_EQ(cap_lines("exactly5\n", 8), "exactly5\n");
  // A character the cut falls into goes whole.
  EXPECT_EQ(cap_lines("ab\xc3\xa9z\n", 3), "ab[... 3 bytes]\n");
}

TEST(HeadTail, TheMarkerIsALineOfItsOwnWithTheCount) {
  EXPECT_EQ(left_out_line(12345), "[... 12345 bytes left out ...]");
  EXPECT_EQ(join_head_tail("head\n", 7, "tail"), "head\n[... 7 bytes left out ...]\ntail");
  EXPECT_EQ(join_head_tail("hea", 7, "tail"), "hea\n[... 7 bytes left out ...]\ntail");
}

ByteSource source_of(const std::string& s, uint64_t from = 0, uint64_t lines_before = 0) {
  ByteSource src;
  src.from = from;
  src.end = from + s.size();
  src.lines_before = lines_before;
  src.read = [&s, from](uint64_t off, char* buf, size_t n) {
    size_t at = static_cast<size_t>(off - from);
    n = std::min(n, s.size() - at);
    std::memcpy(buf, s.data() + at, n);
    return n;
  };
  return src;
}

TEST(RenderView, HeadAndTailOfTheWhole) {
  std::string s;
  for (int i = 0; i < 1000; ++i) s += "line " + std::to_string(i) + "\n";
  ViewParams v;
  v.head = 12;
  v.tail = 9;
  auto r = render_view(source_of(s), v, 1 << 20);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->left_out, s.size() - 21);
  EXPECT_EQ(r->text, s.substr(0, 12) + "\n" + left_out_line(s.size() - 21) + "\n" + s.substr(s.size() - 9));
  // Short enough: all of it, nothing left out.
  v.head = s.size();
  r = render_view(source_of(s), v, 1 << 20);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, s);
  EXPECT_EQ(r->left_out, 0u);
}

TEST(RenderView, PagesAndBytesNoLongerHeld) {
  const std::string s = "0123456789abcdef";
  ViewParams v;
  v.offset = 4;
  v.length = 5;
  auto r = render_view(source_of(s), v, 1 << 20);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "45678");
  EXPECT_EQ(r->next, 9u);
  EXPECT_FALSE(r->truncated);
  v.offset = 2;  // the source holds bytes from 100 on
  r = render_view(source_of(s, 100), v, 1 << 20);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->from, 100u);
  EXPECT_EQ(r->text, "");  // (offset 2 + length 5 ends before 100)
  v.length.reset();
  r = render_view(source_of(s), v, 3);  // a reply's size cuts a page short
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "234");
  EXPECT_TRUE(r->more);
  EXPECT_EQ(r->next, 5u);
}

TEST(RenderView, GrepNumbersLinesFromTheJobsFirst) {
  const std::string s = "alpha\nbeta\n\x1b[32mgamma\x1b[0m\nbeta again";
  ViewParams v;
  v.grep = "^beta";
  auto r = render_view(source_of(s, 0, 0), v, 1 << 20);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "2:beta\n4:beta again\n");
  EXPECT_EQ(*r->matches, 2u);
  v.grep = "^gamma$";
  v.strip_ansi = true;
  r = render_view(source_of(s, 500, 41), v, 1 << 20);  // 41 lines rotated away before
  ASSERT_TRUE(r);
  EXPECT_EQ(r->text, "44:gamma\n");
  v.grep = "(";
  r = render_view(source_of(s), v, 1 << 20);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().text.find("'grep'"), std::string::npos);
}

// The cap is bytes: the lines that fit whole, `more` for the rest; a first
// line longer than the cap alone is cut to fit.
TEST(RenderView, GrepAnswersAtMostMaxBytes) {
  std::string s;
  for (int i = 0; i < 3000; ++i) s += "match " + std::string(1500, 'x') + "\n";
  ViewParams v;
  v.grep = "^match";
  v.max_line_bytes = 2000;
  auto r = render_view(source_of(s), v, 64 << 10);
  ASSERT_TRUE(r);
  EXPECT_LE(r->text.size(), size_t{64} << 10);
  EXPECT_GT(r->text.size(), (size_t{64} << 10) - 1600);  // filled, but for less than a line
  EXPECT_EQ(r->shown, static_cast<uint64_t>(std::count(r->text.begin(), r->text.end(), '\n')));
  EXPECT_EQ(*r->matches, 3000u);
  EXPECT_TRUE(r->more);
  v.max_line_bytes.reset();
  v.grep = "x";
  const std::string one_long = std::string(100000, 'x') + "\n";
  r = render_view(source_of(one_long), v, 1000);
  ASSERT_TRUE(r);
  EXPECT_LE(r->text.size(), 1000u);
  EXPECT_EQ(r->text.substr(0, 4), "1:xx");
  EXPECT_EQ(r->shown, 1u);
}

// A grep made a chunk a step (its clock always past) finds what one made
// whole does; lines rotated away between steps are left out, said as
// truncated, and the line numbers stay the job's.
TEST(GrepScan, StepsFindWhatOneScanFinds) {
  std::string s;
  for (int i = 1; i <= 40000; ++i) s += (i % 997 == 0 ? "match " : "line ") + std::to_string(i) + "\n";
  ViewParams v;
  v.grep = "^match";
  auto whole = render_view(source_of(s), v, 1 << 20);
  ASSERT_TRUE(whole);
  auto g = GrepScan::begin(source_of(s), v, 1 << 20);
  ASSERT_TRUE(g);
  int steps = 1;
  while (!g->step(source_of(s), 0)) ++steps;
  EXPECT_GT(steps, 3);
  EXPECT_EQ(g->result().text, whole->text);
  EXPECT_EQ(g->result().matches, whole->matches);
  EXPECT_EQ(*whole->matches, 40u);
  EXPECT_EQ(whole->text.substr(0, 10), "997:match ");

  // The first 300 KiB (and the lines in them) rotated away after a step.
  auto r = GrepScan::begin(source_of(s), v, 1 << 20);
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->step(source_of(s), 0));
  const size_t cut = s.find('\n', 300 << 10) + 1;
  const auto lines = static_cast<uint64_t>(std::count(s.begin(), s.begin() + static_cast<ptrdiff_t>(cut), '\n'));
  const std::string rest = s.substr(cut);
  while (!r->step(source_of(rest, cut, lines), 0)) {
  }
  EXPECT_TRUE(r->result().truncated);
  const std::string later = "\n" + std::to_string((lines / 997 + 1) * 997) + ":match";
  EXPECT_NE(("\n" + r->result().text).find(later), std::string::npos) << r->result().text.substr(0, 200);
  EXPECT_LT(*r->result().matches, 40u);
}

}  // namespace
}  // namespace pmon::serve
