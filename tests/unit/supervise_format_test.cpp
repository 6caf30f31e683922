// SPDX-License-Identifier: Apache-2.0
// The supervisor's stderr lines (seed 004, byte for byte) and exit codes.
#include <gtest/gtest.h>

#include "core/supervise.h"

namespace pmon {
namespace {

SuperviseEvent started(Engine e, pid_t pid, int fd) {
  SuperviseEvent ev;
  ev.kind = SuperviseEvent::Kind::started;
  ev.engine = e;
  ev.pid = pid;
  ev.pidfd = fd;
  return ev;
}

SuperviseEvent exited(pid_t pid, bool signaled, int code) {
  SuperviseEvent ev;
  ev.kind = SuperviseEvent::Kind::exited;
  ev.pid = pid;
  ev.status.signaled = signaled;
  ev.status.code = code;
  return ev;
}

TEST(SuperviseFormat, SeedLines) {
  EXPECT_EQ(format_event(started(Engine::pidfd, 2621527, 4)), "pmon: engine=pidfd child=2621527 pidfd=4");
  EXPECT_EQ(format_event(started(Engine::sigchld, 2621527, 4)), "pmon: engine=sigchld child=2621527");
  EXPECT_EQ(format_event(exited(2621527, false, 1)), "pmon: child=2621527 exited status=1");
  EXPECT_EQ(format_event(exited(2621961, true, 15)), "pmon: child=2621961 killed signal=15");

  SuperviseEvent r;
  r.kind = SuperviseEvent::Kind::restarting;
  r.restart = 1;
  r.max_restarts = 2;
  EXPECT_EQ(format_event(r), "pmon: restart 1/2");

  SuperviseEvent g;
  g.kind = SuperviseEvent::Kind::giving_up;
  g.max_restarts = 2;
  EXPECT_EQ(format_event(g), "pmon: giving up after 2 restarts");

  SuperviseEvent x;
  x.kind = SuperviseEvent::Kind::exiting;
  x.end = SuperviseEnd::timeout;
  EXPECT_EQ(format_event(x), "pmon: exiting (timeout)");
  x.end = SuperviseEnd::signal;
  EXPECT_EQ(format_event(x), "pmon: exiting (signal)");
}

TEST(SuperviseFormat, ExitCodes) {
  SuperviseResult r;
  r.end = SuperviseEnd::clean_exit;
  EXPECT_EQ(r.status(), 0);
  r.end = SuperviseEnd::gave_up;
  EXPECT_EQ(r.status(), 1);
  r.end = SuperviseEnd::timeout;
  EXPECT_EQ(r.status(), 124);
  r.end = SuperviseEnd::cleanup_failed;
  EXPECT_EQ(r.status(), 125);
  r.end = SuperviseEnd::signal;
  for (int sig : {SIGHUP, SIGINT, SIGTERM}) {
    r.stop_signal = sig;
    EXPECT_EQ(r.status(), 128 + sig);
  }
  r.end = SuperviseEnd::spawn_failed;
  r.spawn_error = Error::line("x", Errc::not_found);
  EXPECT_EQ(r.status(), 127);
  r.spawn_error = Error::line("x", Errc::not_executable);
  EXPECT_EQ(r.status(), 126);
}

TEST(SuperviseFormat, Engines) {
  EXPECT_EQ(parse_engine("pidfd"), Engine::pidfd);
  EXPECT_EQ(parse_engine("sigchld"), Engine::sigchld);
  EXPECT_FALSE(parse_engine("epoll").has_value());
  EXPECT_EQ(to_string(Engine::sigchld), "sigchld");
}

}  // namespace
}  // namespace pmon
