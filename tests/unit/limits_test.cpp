// SPDX-License-Identifier: Apache-2.0
// The limits' units (--memory-max, --pids-max, --cpu-max) and what is
// written to cpu.max.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "confine/limits.h"
#include "confine/settings.h"
#include "core/units.h"

namespace pmon {
namespace {

TEST(ParseSize, BytesAndPowersOf1024) {
  EXPECT_EQ(parse_size("1"), 1u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("512k"), 512u * 1024);
  EXPECT_EQ(parse_size("100M"), 100u * 1024 * 1024);
  EXPECT_EQ(parse_size("2g"), 2ull << 30);
  EXPECT_EQ(parse_size("3T"), 3ull << 40);
  EXPECT_EQ(parse_size("18446744073709551615"), UINT64_MAX);
}

TEST(ParseSize, RefusesWhatIsNotASize) {
  for (const char* bad : {"", "M", "-1", "-5M", "1.5G", "10X", "10MB", "10 M", " 10", "0x10", "1e6", "10Mi"}) {
    auto r = parse_size(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().why, BadValue::Why::not_a_size) << bad;
    EXPECT_EQ(describe(r.error()), "'" + std::string(bad) + "' is not a size (use bytes, or K, M or G for powers of 1024, e.g. 512M)");
  }
  EXPECT_EQ(describe(parse_size("0").error()), "'0' must be more than 0");
  EXPECT_EQ(describe(parse_size("0M").error()), "'0M' must be more than 0");
  EXPECT_EQ(describe(parse_size("18446744073709551616").error()), "'18446744073709551616' is too large");
  // Fits as a number, not once multiplied by its suffix.
  EXPECT_EQ(describe(parse_size("16777216T").error()), "'16777216T' is too large");
  EXPECT_EQ(parse_size("16777215T"), 16777215ull << 40);
}

TEST(ParsePids, WholeNumbersFromOne) {
  EXPECT_EQ(parse_pids("1"), 1u);
  EXPECT_EQ(parse_pids("50"), 50u);
  EXPECT_EQ(parse_pids("2147483647"), 2147483647u);
  EXPECT_EQ(parse_pids("0"), 0u);  // no limit, not even the default
  EXPECT_NE(describe(parse_pids("-1").error()).find("is not a whole number of processes"), std::string::npos);
  EXPECT_EQ(describe(parse_pids("2147483648").error()), "'2147483648' is too large (at most 2147483647)");
  EXPECT_EQ(describe(parse_pids("99999999999999999999").error()), "'99999999999999999999' is too large (at most 2147483647)");
  for (const char* bad : {"", "-1", "+5", "5k", "1.0", "lots", " 5"})
    EXPECT_NE(describe(parse_pids(bad).error()).find("is not a whole number of processes"), std::string::npos) << bad;
}

TEST(ParseCores, DecimalCores) {
  EXPECT_EQ(parse_cores("1"), 1.0);
  EXPECT_EQ(parse_cores("1.5"), 1.5);
  EXPECT_EQ(parse_cores("0.5"), 0.5);
  EXPECT_EQ(parse_cores(".25"), 0.25);
  EXPECT_EQ(parse_cores("0.01"), 0.01);
  EXPECT_EQ(parse_cores("100000"), 100000.0);
}

TEST(ParseCores, RefusesOutOfRangeAndWords) {
  for (const char* bad : {"0", "0.0", "0.009", "100000.5"})
    EXPECT_NE(describe(parse_cores(bad).error()).find("is out of range (from 0.01 to 100000 cores)"), std::string::npos) << bad;
  for (const char* bad : {"", ".", "1..5", "-1", "1,5", "half", "1e3", "nan", "inf", "50%"})
    EXPECT_NE(describe(parse_cores(bad).error()).find("is not a number of cores"), std::string::npos) << bad;
  EXPECT_TRUE(check_cores(0.5));
  EXPECT_FALSE(check_cores(0));
  EXPECT_FALSE(check_cores(-1));
  EXPECT_FALSE(check_cores(1e9));
  EXPECT_FALSE(check_cores(0.0 / 0.0));
}

TEST(CpuMaxLine, QuotaPerPeriodOf100ms) {
  EXPECT_EQ(cpu_max_line(1.5), "150000 100000");
  EXPECT_EQ(cpu_max_line(0.5), "50000 100000");
  EXPECT_EQ(cpu_max_line(1), "100000 100000");
  EXPECT_EQ(cpu_max_line(2), "200000 100000");
  // The smallest the kernel takes: 1 ms a period.
  EXPECT_EQ(cpu_max_line(0.01), "1000 100000");
  // Rounded to the microsecond, not truncated (0.29 * 100000 is 28999.99...).
  EXPECT_EQ(cpu_max_line(0.29), "29000 100000");
  EXPECT_EQ(cpu_max_line(*parse_cores("0.333333")), "33333 100000");
}

TEST(LimitNames, ForMessages) {
  Limits l;
  EXPECT_FALSE(l.any());
  l.cpu_max = 1;
  EXPECT_TRUE(l.any());
  EXPECT_EQ(limit_names(l), "cpu");
  l.memory_max = 1;
  EXPECT_EQ(limit_names(l), "memory and cpu");
  l.pids_max = 1;
  EXPECT_EQ(limit_names(l), "memory, pids and cpu");
  EXPECT_NE(render(no_cgroup_for_limits(l, "the pgroup backend")).find("cannot set the memory, pids and cpu limits: limits "
                                                              "need a cgroup, and the pgroup backend has none"),
            std::string::npos);
}

// The fix a refusal names is in the caller's words: the command line's by
// default, a Python caller's when the binding renders it.
TEST(LimitNames, TheFixIsNamedInTheCallersWords) {
  Limits l;
  l.memory_max = 1;
  const Error e = no_cgroup_for_limits(l, "the pgroup backend");
  EXPECT_EQ(e.code, Errc::confinement);
  EXPECT_NE(render(e).find("(--confine cgroup)"), std::string::npos);
  const std::string py = render(e, kPythonWords);
  EXPECT_NE(py.find("(confine=\"cgroup\")"), std::string::npos) << py;
  EXPECT_EQ(py.find("--"), std::string::npos) << py;
  EXPECT_EQ(render_text(setting_token(Setting::cgroup_root)), "--cgroup-root");
}

}  // namespace
}  // namespace pmon
