// SPDX-License-Identifier: Apache-2.0
// Pseudo-terminals: a master pmon reads and writes, a slave a command gets
// as its stdin, stdout, stderr and controlling terminal.
#pragma once

#include "sys/fd.h"
#include "sys/result.h"

namespace pmon::sys {

struct PtyPair {
  Fd master;
  Fd slave;
};

// A new pty of rows x cols. Both ends are CLOEXEC and opened with
// O_NOCTTY: opening it never makes it pmon's own controlling terminal.
Result<PtyPair> open_pty(unsigned short rows, unsigned short cols) noexcept;

// A new window size; the terminal's foreground process group gets SIGWINCH.
Result<void> resize_pty(int master_fd, unsigned short rows, unsigned short cols) noexcept;

}  // namespace pmon::sys
