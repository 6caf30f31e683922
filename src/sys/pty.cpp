// SPDX-License-Identifier: Apache-2.0
#include "sys/pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>

namespace pmon::sys {

Result<PtyPair> open_pty(unsigned short rows, unsigned short cols) noexcept {
  PtyPair p;
  p.master = Fd(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!p.master) return fail_errno();
  if (::grantpt(p.master.get()) != 0 || ::unlockpt(p.master.get()) != 0) return fail_errno();
  // The slave by the master itself (TIOCGPTPEER, Linux 4.13): no lookup of
  // a /dev/pts path, which may name another devpts in a mount namespace.
  p.slave = Fd(::ioctl(p.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!p.slave) {
    char name[64];
    if (::ptsname_r(p.master.get(), name, sizeof name) != 0) return fail_errno();
    p.slave = Fd(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!p.slave) return fail_errno();
  }
  if (auto r = resize_pty(p.master.get(), rows, cols); !r) return std::unexpected(r.error());
  return p;
}

Result<void> resize_pty(int master_fd, unsigned short rows, unsigned short cols) noexcept {
  winsize ws{};
  ws.ws_row = rows;
  ws.ws_col = cols;
  if (::ioctl(master_fd, TIOCSWINSZ, &ws) != 0) return fail_errno();
  return {};
}

}  // namespace pmon::sys
