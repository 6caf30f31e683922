// SPDX-License-Identifier: Apache-2.0
// parse_duration, parse_signal and signal_name: the user-facing units.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>

#include "core/units.h"

namespace pmon {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ParseDuration, UnitsOfTheContract) {
  EXPECT_EQ(parse_duration("500ms"), Nanos(milliseconds(500)));
  EXPECT_EQ(parse_duration("2s"), Nanos(seconds(2)));
  EXPECT_EQ(parse_duration("1.5m"), Nanos(seconds(90)));
  EXPECT_EQ(parse_duration("1h"), Nanos(hours(1)));
  EXPECT_EQ(parse_duration("250us"), Nanos(microseconds(250)));
}

TEST(ParseDuration, BareNumberIsSeconds) {
  EXPECT_EQ(parse_duration("2"), Nanos(seconds(2)));
  EXPECT_EQ(parse_duration("0.5"), Nanos(milliseconds(500)));
  EXPECT_EQ(parse_duration("0"), Nanos(0));
  EXPECT_EQ(parse_duration("0ms"), Nanos(0));
  EXPECT_EQ(parse_duration("007"), Nanos(seconds(7)));
}

TEST(ParseDuration, FractionsRoundToNanoseconds) {
  EXPECT_EQ(parse_duration("1.5ms"), Nanos(microseconds(1500)));
  EXPECT_EQ(parse_duration(".5s"), Nanos(milliseconds(500)));
  EXPECT_EQ(parse_duration("2."), Nanos(seconds(2)));
  EXPECT_EQ(parse_duration("0.1"), Nanos(milliseconds(100)));
  EXPECT_EQ(parse_duration("0.0000000004"), Nanos(0));
}

TEST(ParseDuration, RejectsWhatIsNotADuration) {
  for (const char* bad : {"", "5x", "-1", "-1s", "+1s", ".", "..", "1..2", "1.2.3s", "ms", "s",
                          " 1s", "1s ", "1 s", "1e3", "inf", "nan", "0x10", "1sec", "1mm",
                          "1,5s", "1.5.m", "\t1"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ParseDuration, RejectsAbsurdlyLong) {
  EXPECT_FALSE(parse_duration("99999999999999h").has_value());
  EXPECT_FALSE(parse_duration("1000000000000000000000").has_value());
  EXPECT_TRUE(parse_duration("24h").has_value());
}

// The reason is the user's: "must not be negative", "too long", or not a
// duration at all.
TEST(ParseDuration, SaysWhyItRefuses) {
  for (const char* neg : {"-1", "-1s", "-0.5m", "-.5", "-0", "-250us"})
    EXPECT_EQ(parse_duration(neg), std::unexpected(DurationError::negative)) << "'" << neg << "'";
  for (const char* lng : {"99999999999999h", "1000000000000000000000", "1000000001", "16666667m"})
    EXPECT_EQ(parse_duration(lng), std::unexpected(DurationError::too_long)) << "'" << lng << "'";
  for (const char* bad : {"-", "--1", "-x", "-1x", "5x", "", "1.2.3s", "-1..2"})
    EXPECT_EQ(parse_duration(bad), std::unexpected(DurationError::invalid)) << "'" << bad << "'";
  EXPECT_EQ(parse_duration("1000000000"), Nanos(kMaxDuration));
  EXPECT_EQ(parse_duration("1000000000s"), Nanos(kMaxDuration));
}

TEST(ParseDuration, DescribesTheReason) {
  EXPECT_EQ(describe_duration_error("-1s", DurationError::negative), "'-1s' must not be negative");
  EXPECT_NE(describe_duration_error("9999999999h", DurationError::too_long).find("'9999999999h' is too long"),
            std::string::npos);
  EXPECT_NE(describe_duration_error("5x", DurationError::invalid).find("invalid duration '5x'"), std::string::npos);
}

TEST(ParseSignal, NamesWithAndWithoutSigAnyCase) {
  EXPECT_EQ(parse_signal("TERM"), SIGTERM);
  EXPECT_EQ(parse_signal("SIGTERM"), SIGTERM);
  EXPECT_EQ(parse_signal("sigterm"), SIGTERM);
  EXPECT_EQ(parse_signal("Int"), SIGINT);
  EXPECT_EQ(parse_signal("HUP"), SIGHUP);
  EXPECT_EQ(parse_signal("KILL"), SIGKILL);
  EXPECT_EQ(parse_signal("USR1"), SIGUSR1);
  EXPECT_EQ(parse_signal("SIGUSR2"), SIGUSR2);
  EXPECT_EQ(parse_signal("WINCH"), SIGWINCH);
}

TEST(ParseSignal, Numbers) {
  EXPECT_EQ(parse_signal("15"), 15);
  EXPECT_EQ(parse_signal("1"), 1);
  EXPECT_EQ(parse_signal(std::to_string(NSIG - 1)), NSIG - 1);
  for (const char* bad : {"0", "-1", "-15", "+15", "15x", "1.5", " 15", "99999999999"})
    EXPECT_FALSE(parse_signal(bad).has_value()) << "'" << bad << "'";
  EXPECT_FALSE(parse_signal(std::to_string(NSIG)).has_value());
}

TEST(ParseSignal, RealTime) {
  EXPECT_EQ(parse_signal("RTMIN"), SIGRTMIN);
  EXPECT_EQ(parse_signal("SIGRTMIN+3"), SIGRTMIN + 3);
  EXPECT_EQ(parse_signal("rtmin+0"), SIGRTMIN);
  EXPECT_EQ(parse_signal("RTMIN+" + std::to_string(SIGRTMAX - SIGRTMIN)), SIGRTMAX);
  EXPECT_FALSE(parse_signal("RTMIN+" + std::to_string(SIGRTMAX - SIGRTMIN + 1)).has_value());
  for (const char* bad : {"RTMIN+", "RTMINX", "RTMIN-1", "RTMIN+x", "RTMIN+1x"})
    EXPECT_FALSE(parse_signal(bad).has_value()) << "'" << bad << "'";
}

TEST(ParseSignal, RejectsUnknownNames) {
  for (const char* bad : {"", "SIG", "FOO", "SIGFOO", "TERMX", "SIGSIGTERM", "TERM ", "KILL\n"})
    EXPECT_FALSE(parse_signal(bad).has_value()) << "'" << bad << "'";
}

TEST(SignalName, KnownSignals) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGHUP), "SIGHUP");
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGCHLD), "SIGCHLD");
}

TEST(SignalName, RealTimeAndUnknown) {
  EXPECT_EQ(signal_name(SIGRTMIN), "SIGRTMIN");
  EXPECT_EQ(signal_name(SIGRTMIN + 3), "SIGRTMIN+3");
  EXPECT_EQ(signal_name(0), "0");
  EXPECT_EQ(signal_name(200), "200");
  EXPECT_EQ(signal_name(-1), "-1");
}

// Whatever signal_name prints, parse_signal reads back as the same signal.
TEST(SignalName, RoundTripsThroughParseSignal) {
  for (int sig = 1; sig < NSIG; ++sig) {
    std::string name = signal_name(sig);
    EXPECT_EQ(parse_signal(name), sig) << name;
  }
}

}  // namespace
}  // namespace pmon
