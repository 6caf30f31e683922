// SPDX-License-Identifier: Apache-2.0
// printable: what pmon ps, pmon jobs and pmon gc print of other processes.
#include "core/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace pmon {
namespace {

TEST(Printable, KeepsPrintableTextAndUtf8) {
  EXPECT_EQ(printable("sleep 5"), "sleep 5");
  EXPECT_EQ(printable("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x99\x82 a\\b"), "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x99\x82 a\\b");
  EXPECT_EQ(printable("\xC2\xA0"), "\xC2\xA0");  // (no-break space: printable)
}

TEST(Printable, EscapesWhatATerminalActsOn) {
  EXPECT_EQ(printable("evil\033]0;PWNED\007\033[2J\nfake line"), "evil\\x1B]0;PWNED\\x07\\x1B[2J\\nfake line");
  EXPECT_EQ(printable("a\tb\rc\x7f"), "a\\tb\\x0Dc\\x7F");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("\xC2\x9B" "2J"), "\\xC2\\x9B2J");  // C1 CSI
}

TEST(Printable, EscapesBytesThatAreNotUtf8) {
  EXPECT_EQ(printable("\x9B" "2J"), "\\x9B2J");
  EXPECT_EQ(printable("\xC3"), "\\xC3");
  EXPECT_EQ(printable("\xC0\xAF"), "\\xC0\\xAF");  // overlong
  EXPECT_EQ(printable("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a surrogate
}

}  // namespace
}  // namespace pmon
