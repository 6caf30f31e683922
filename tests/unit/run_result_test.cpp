// RunResult::status(): the timeout(1)-compatible exit status of a call.
#include <gtest/gtest.h>
#include <signal.h>

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

}  // namespace
}  // namespace pmon
