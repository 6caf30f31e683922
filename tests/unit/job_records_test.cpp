// SPDX-License-Identifier: Apache-2.0
// JobRecords: the running jobs' records as lines of the spool directory's
// jobs.log, read back as a dead service's successor reads them, and the
// log written anew once it has grown.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "jobs/spool.h"

namespace pmon::serve {
namespace {

std::string record(const std::string& id, const std::string& name = "") {
  return nlohmann::json{{"id", id}, {"name", name}, {"command", {"sleep", "1"}}, {"cgroup", "/sys/fs/cgroup/x"}}.dump();
}

std::vector<std::string> ids(const std::vector<nlohmann::json>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r["id"].get<std::string>());
  return out;
}

// A runtime directory of this test's own, so that the spool directory is.
class JobRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pmon-records-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    runtime_ = tmpl;
    const char* old = std::getenv("XDG_RUNTIME_DIR");
    if (old) old_runtime_ = old;
    ::setenv("XDG_RUNTIME_DIR", runtime_.c_str(), 1);
  }
  void TearDown() override {
    if (old_runtime_) ::setenv("XDG_RUNTIME_DIR", old_runtime_->c_str(), 1);
    else ::unsetenv("XDG_RUNTIME_DIR");
    (void)std::system(("rm -rf '" + runtime_ + "'").c_str());
  }
  static size_t size_of(SpoolDir& dir) {
    struct stat st {};
    return ::stat((dir.path() + "/jobs.log").c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  }
  static std::string log_of(SpoolDir& dir) {
    std::ifstream f(dir.path() + "/jobs.log");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::string runtime_;
  std::optional<std::string> old_runtime_;
};

TEST_F(JobRecordsTest, RunningJobsAreTheOnesNotEnded) {
  SpoolDir dir;
  {
    JobRecords records(dir);
    ASSERT_TRUE(records.add("ta", record("ta")));
    ASSERT_TRUE(records.add("tb", record("tb")));
    ASSERT_TRUE(records.add("tc", record("tc")));
    records.remove("tb");
    records.remove("tnever");  // (no such record: nothing written)
    // The end is written with the round's other ends, by flush().
    EXPECT_EQ(ids(JobRecords::running_in(log_of(dir))), (std::vector<std::string>{"ta", "tb", "tc"}));
    records.flush();
    const std::string log = log_of(dir);
    EXPECT_EQ(ids(JobRecords::running_in(log)), (std::vector<std::string>{"ta", "tc"}));
    // A line cut short by a death, and one that is no record, are passed over.
    EXPECT_EQ(ids(JobRecords::running_in(log + "{\"id\":\"td\",\"na")), (std::vector<std::string>{"ta", "tc"}));
    EXPECT_EQ(ids(JobRecords::running_in("not json\n" + log)), (std::vector<std::string>{"ta", "tc"}));
  }
  // Gone with the object (a service that ends stops all its jobs first).
  struct stat st {};
  EXPECT_NE(::stat((dir.path() + "/jobs.log").c_str(), &st), 0);
}

TEST_F(JobRecordsTest, AGrownLogIsWrittenAnewWithTheRunningJobsOnly) {
  SpoolDir dir;
  JobRecords records(dir);
  ASSERT_TRUE(records.add("tkeep", record("tkeep")));
  // Well past 64 KiB of lines for jobs that came and went.
  const std::string filler(400, 'x');
  size_t largest = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string id = "t" + std::to_string(i);
    ASSERT_TRUE(records.add(id, record(id, filler)));
    records.remove(id);
    records.flush();
    largest = std::max(largest, size_of(dir));
  }
  const std::string log = log_of(dir);
  EXPECT_LE(largest, size_t{65} << 10) << "the log was not written anew once past 64 KiB";
  EXPECT_LT(log.size(), size_t{64} << 10);
  EXPECT_EQ(ids(JobRecords::running_in(log)), (std::vector<std::string>{"tkeep"}));
  // Appended to as before once written anew.
  ASSERT_TRUE(records.add("tlast", record("tlast")));
  EXPECT_EQ(ids(JobRecords::running_in(log_of(dir))), (std::vector<std::string>{"tkeep", "tlast"}));
}

}  // namespace
}  // namespace pmon::serve

namespace pmon::serve {
namespace {

// The spool's newline count against std::count, at every length and
// alignment around the vector width and past a block of 255 vectors.
TEST(CountNewlines, CountsAsStdCountDoesAtEveryLengthAndOffset) {
  std::string text;
  unsigned seed = 7;
  for (size_t i = 0; i < 40000; ++i) {
    seed = seed * 1103515245u + 12345u;
    const unsigned r = (seed >> 16) % 7;
    text += r == 0 ? '\n' : r == 1 ? '\xff' : r == 2 ? '\x0a' + 1 : static_cast<char>('a' + r);
  }
  for (size_t off = 0; off < 40; ++off)
    for (size_t len : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{64}, size_t{255 * 32},
                       size_t{255 * 32 + 1}, size_t{255 * 32 * 3 + 17}, text.size() - off}) {
      std::string_view v = std::string_view(text).substr(off, len);
      EXPECT_EQ(count_newlines(v), static_cast<size_t>(std::count(v.begin(), v.end(), '\n')))
          << "at " << off << ", " << len << " bytes";
    }
  const std::string all(100000, '\n');  // every lane at its most in every block
  EXPECT_EQ(count_newlines(all), all.size());
}

}  // namespace
}  // namespace pmon::serve
