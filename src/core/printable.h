// SPDX-License-Identifier: Apache-2.0
// Text from other processes (command lines, job names, cgroup paths) made
// safe to print on a terminal: what a terminal would act on instead of show
// is escaped, as ps(1) hides it, so a process cannot move the cursor, clear
// the screen, set the title or start a line of its own in our output.
#pragma once

#include <string>
#include <string_view>

namespace pmon {

// `s` with each control character escaped: a newline as \n, a tab as \t,
// the other C0 controls, DEL and each byte that is not part of valid UTF-8
// as \xNN, and the C1 controls (U+0080..U+009F, e.g. the one-character CSI)
// as \xC2\xNN. Printable UTF-8, spaces and backslashes are kept as they are.
std::string printable(std::string_view s);

}  // namespace pmon
