// SPDX-License-Identifier: Apache-2.0
// RunResult::status(): the timeout(1)-compatible exit status of a call.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "core/run.h"

namespace pmon {
namespace {

RunResult verified(Outcome o) {
  RunResult r;
  r.outcome = o;
  r.cleanup_verified = true;
  return r;
}

TEST(RunResultStatus, ExitCodeAsIs) {
  for (int code = 0; code <= 255; ++code) {
    RunResult r = verified(Outcome::exited);
    r.exit_code = code;
    EXPECT_EQ(r.status(), code);
  }
}

TEST(RunResultStatus, SignalIs128PlusN) {
  for (int sig = 1; sig < NSIG; ++sig) {
    RunResult r = verified(Outcome::signaled);
    r.signal = sig;
    EXPECT_EQ(r.status(), 128 + sig) << sig;
  }
}

TEST(RunResultStatus, TimeoutIs124WhateverTheMainProcessDid) {
  RunResult r = verified(Outcome::timeout);
  r.timed_out = true;
  r.signal = SIGTERM;
  EXPECT_EQ(r.status(), 124);
  r.signal.reset();
  r.exit_code = 0;
  EXPECT_EQ(r.status(), 124);
}

TEST(RunResultStatus, CancelledIs128PlusTheCancellingSignal) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    RunResult r = verified(Outcome::cancelled);
    r.cancel_signal = sig;
    r.signal = SIGKILL;  // how the main process died does not matter
    EXPECT_EQ(r.status(), 128 + sig);
  }
}

// Cancelled with no signal asked (--die-with-parent: the parent exited):
// as a shell whose terminal hung up.
TEST(RunResultStatus, CancelledWithoutASignalIs129) {
  RunResult r = verified(Outcome::cancelled);
  r.cancel_signal = 0;
  EXPECT_EQ(r.status(), 128 + SIGHUP);
}

// A tree that could not be confirmed gone is pmon's failure, whatever the
// command did: never a silent success.
TEST(RunResultStatus, UnverifiedCleanupIs125) {
  for (Outcome o : {Outcome::exited, Outcome::signaled, Outcome::timeout, Outcome::cancelled}) {
    RunResult r;
    r.outcome = o;
    r.exit_code = 0;
    r.signal = SIGTERM;
    r.cancel_signal = SIGTERM;
    r.cleanup_verified = false;
    EXPECT_EQ(r.status(), 125) << to_string(o);
  }
}

TEST(Outcome, Names) {
  EXPECT_EQ(to_string(Outcome::exited), "exited");
  EXPECT_EQ(to_string(Outcome::signaled), "signaled");
  EXPECT_EQ(to_string(Outcome::timeout), "timeout");
  EXPECT_EQ(to_string(Outcome::cancelled), "cancelled");
}

// A call whose command never ran ends with the error's status (125, 126,
// 127), whatever else the result says.
TEST(RunResultStatus, NotStartedIsTheErrorStatus) {
  for (auto [code, errc] : {std::pair{125, Errc::system}, {126, Errc::not_executable}, {127, Errc::not_found}}) {
    RunResult r = not_started({"x"}, ConfineKind::pgroup, Error::line("why", errc), std::chrono::system_clock::now());
    EXPECT_EQ(r.outcome, Outcome::not_started);
    EXPECT_EQ(r.status(), code);
    ASSERT_TRUE(r.error.has_value());
    EXPECT_EQ(r.error->text, "why");
    EXPECT_TRUE(r.cleanup_verified);
    EXPECT_EQ(r.pid, 0);
    EXPECT_FALSE(r.exit_code.has_value());
    EXPECT_GE(r.duration_ms, 0);
  }
  EXPECT_EQ(to_string(Outcome::not_started), "not_started");
}

// A process in both lists is a leftover that left the boundary during the
// stop: it stays a leftover, with what finally ended it.
TEST(MergeEscaped, ALeftoverThatLeftIsNotAlsoEscaped) {
  std::vector<Leftover> left{{10, 100, "a", Fate::killed()}, {11, 101, "b", Fate::signalled_by(SIGTERM)}};
  std::vector<Leftover> esc{{10, 100, "a", Fate::signalled_by(SIGTERM)}, {12, 102, "c", Fate::killed()},
                            // pid 11 again, but another process (pid reused)
                            {11, 999, "d", Fate::signalled_by(SIGTERM)}};
  merge_escaped(left, esc);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].fate, Fate::signalled_by(SIGTERM));
  EXPECT_EQ(left[1].fate, Fate::signalled_by(SIGTERM));
  ASSERT_EQ(esc.size(), 2u);
  EXPECT_EQ(esc[0].pid, 12);
  EXPECT_EQ(esc[1].start_time, 999u);
}

}  // namespace
}  // namespace pmon
