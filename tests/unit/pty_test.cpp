// SPDX-License-Identifier: Apache-2.0
// sys::open_pty / resize_pty: both ends CLOEXEC, the slave a terminal of the
// asked size that is nobody's controlling terminal, bytes both ways.
#include "sys/pty.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <string>

namespace pmon::sys {
namespace {

winsize size_of(int fd) {
  winsize ws{};
  EXPECT_EQ(::ioctl(fd, TIOCGWINSZ, &ws), 0);
  return ws;
}

std::string read_some(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return "";
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST(Pty, OpenSizedAndCloexec) {
  auto p = open_pty(33, 120);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(::isatty(p->slave.get()), 1);
  EXPECT_TRUE(::fcntl(p->master.get(), F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl(p->slave.get(), F_GETFD) & FD_CLOEXEC);
  winsize ws = size_of(p->slave.get());
  EXPECT_EQ(ws.ws_row, 33);
  EXPECT_EQ(ws.ws_col, 120);
  // O_NOCTTY: opening it did not make it ours (we have a session already,
  // but no pty of ours may become a session's terminal by accident).
  pid_t sid = -1;
  EXPECT_NE(::ioctl(p->slave.get(), TIOCGSID, &sid), 0);

  ASSERT_TRUE(resize_pty(p->master.get(), 50, 200).has_value());
  ws = size_of(p->slave.get());
  EXPECT_EQ(ws.ws_row, 50);
  EXPECT_EQ(ws.ws_col, 200);
}

TEST(Pty, BytesBothWays) {
  auto p = open_pty(24, 80);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(::write(p->slave.get(), "out\n", 4), 4);
  EXPECT_EQ(read_some(p->master.get()), "out\r\n");  // ONLCR, as a terminal shows it
  termios t{};
  ASSERT_EQ(::tcgetattr(p->slave.get(), &t), 0);
  t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
  ASSERT_EQ(::tcsetattr(p->slave.get(), TCSANOW, &t), 0);
  ASSERT_EQ(::write(p->master.get(), "in\n", 3), 3);
  EXPECT_EQ(read_some(p->slave.get()), "in\n");
}

TEST(Pty, ResizeOfNotAPtyFails) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_FALSE(resize_pty(fds[0], 10, 10).has_value());
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace pmon::sys
