// SPDX-License-Identifier: Apache-2.0
// report_json (DESIGN §4) for hand-built results, and write_atomically.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "core/report.h"
#include "core/run.h"

namespace pmon {
namespace {

using json = nlohmann::json;

// 2024-02-29T13:14:15.123456Z
std::chrono::system_clock::time_point fixed_time() {
  return std::chrono::system_clock::time_point(std::chrono::seconds(1709212455)) +
         std::chrono::microseconds(123456);
}

RunResult exited_result() {
  RunResult r;
  r.command = {"sh", "-c", "exit 3"};
  r.pid = 4242;
  r.confinement = ConfineKind::cgroup;
  r.cgroup = "/sys/fs/cgroup/unified/pmon-1-2-0";
  r.started_at = fixed_time();
  r.duration_ms = 12.3456;
  r.outcome = Outcome::exited;
  r.exit_code = 3;
  r.cleanup_verified = true;
  r.stop.empty_confirmed_ms = 12.0;
  r.cpu_usec = 1500;
  return r;
}

json parse(const RunResult& r, const ReportContext& ctx = {}) {
  std::string text = report_json(r, ctx);
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  return json::parse(text);
}

TEST(ReportJson, FieldsOfAnExitedCall) {
  json j = parse(exited_result());
  EXPECT_EQ(j.at("version"), 1);
  EXPECT_EQ(j.at("command"), json({"sh", "-c", "exit 3"}));
  EXPECT_EQ(j.at("pid"), 4242);
  EXPECT_EQ(j.at("confinement"), "cgroup");
  EXPECT_EQ(j.at("cgroup"), "/sys/fs/cgroup/unified/pmon-1-2-0");
  EXPECT_EQ(j.at("started_at"), "2024-02-29T13:14:15.123456Z");
  EXPECT_NEAR(j.at("duration_ms").get<double>(), 12.346, 0.0011);
  EXPECT_EQ(j.at("outcome"), "exited");
  EXPECT_EQ(j.at("exit_code"), 3);
  EXPECT_TRUE(j.at("signal").is_null());
  EXPECT_EQ(j.at("timed_out"), false);
  EXPECT_EQ(j.at("leftovers"), json::array());
  const json& stop = j.at("stop");
  EXPECT_TRUE(stop.at("signal_sent_ms").is_null());
  EXPECT_TRUE(stop.at("kill_sent_ms").is_null());
  EXPECT_EQ(stop.at("empty_confirmed_ms"), 12.0);
  EXPECT_EQ(j.at("cpu_usec"), 1500);
  EXPECT_TRUE(j.at("memory_peak_bytes").is_null());
  EXPECT_EQ(j.at("exit_status"), 3);
}

TEST(ReportJson, UnknownIsNullNeverAGuess) {
  RunResult r = exited_result();
  r.confinement = ConfineKind::subreaper;
  r.cgroup.reset();
  r.cpu_usec.reset();
  r.memory_peak_bytes.reset();
  r.exit_code.reset();
  r.stop.empty_confirmed_ms.reset();
  r.cleanup_verified = false;
  json j = parse(r);
  EXPECT_EQ(j.at("confinement"), "subreaper");
  for (const char* k : {"cgroup", "cpu_usec", "memory_peak_bytes", "exit_code", "signal"})
    EXPECT_TRUE(j.at(k).is_null()) << k;
  EXPECT_TRUE(j.at("stop").at("empty_confirmed_ms").is_null());
  EXPECT_EQ(j.at("exit_status"), 125);
}

TEST(ReportJson, LimitsAndWhatWasHit) {
  json none = parse(exited_result());
  EXPECT_EQ(none.at("limits"), json::parse(R"({"memory_max": null, "memory_high": null, "pids_max": null, "cpu_max": null})"));
  EXPECT_TRUE(none.at("oom_killed").is_null());
  EXPECT_TRUE(none.at("pids_max_hit").is_null());

  RunResult r = exited_result();
  r.limits.memory_max = 100ull << 20;
  r.limits.pids_max = 50;
  r.limits.cpu_max = 1.5;
  r.oom_killed = true;
  r.pids_max_hit = false;
  json j = parse(r);
  EXPECT_EQ(j.at("limits").at("memory_max"), 104857600);
  EXPECT_EQ(j.at("limits").at("pids_max"), 50);
  EXPECT_EQ(j.at("limits").at("cpu_max"), 1.5);
  EXPECT_EQ(j.at("oom_killed"), true);
  EXPECT_EQ(j.at("pids_max_hit"), false);
  // Beside memory_peak_bytes, in the order of the README's example.
  std::string text = report_json(r, {});
  EXPECT_LT(text.find("\"memory_peak_bytes\""), text.find("\"limits\""));
  EXPECT_LT(text.find("\"pids_max_hit\""), text.find("\"exit_status\""));
}

TEST(ReportJson, SignaledTimeoutCancelled) {
  RunResult r = exited_result();
  r.exit_code.reset();
  r.outcome = Outcome::signaled;
  r.signal = SIGSEGV;
  json j = parse(r);
  EXPECT_EQ(j.at("outcome"), "signaled");
  EXPECT_EQ(j.at("signal"), SIGSEGV);
  EXPECT_TRUE(j.at("exit_code").is_null());
  EXPECT_EQ(j.at("exit_status"), 128 + SIGSEGV);

  r.outcome = Outcome::timeout;
  r.timed_out = true;
  r.signal = SIGTERM;
  r.stop.signal_sent_ms = 1000.25;
  r.stop.kill_sent_ms = 3000.5;
  j = parse(r);
  EXPECT_EQ(j.at("outcome"), "timeout");
  EXPECT_EQ(j.at("timed_out"), true);
  EXPECT_EQ(j.at("stop").at("signal_sent_ms"), 1000.25);
  EXPECT_EQ(j.at("stop").at("kill_sent_ms"), 3000.5);
  EXPECT_EQ(j.at("exit_status"), 124);

  r.outcome = Outcome::cancelled;
  r.timed_out = false;
  r.cancel_signal = SIGINT;
  j = parse(r);
  EXPECT_EQ(j.at("outcome"), "cancelled");
  EXPECT_EQ(j.at("exit_status"), 128 + SIGINT);
}

TEST(ReportJson, Leftovers) {
  RunResult r = exited_result();
  r.leftovers.push_back({101, 5000, "sleep 100", Fate::signalled_by(SIGTERM)});
  r.leftovers.push_back({102, 5001, "sh -c \"trap '' TERM\"", Fate::killed()});
  json j = parse(r);
  const json& l = j.at("leftovers");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].at("pid"), 101);
  EXPECT_EQ(l[0].at("cmdline"), "sleep 100");
  EXPECT_EQ(l[0].at("action"), "SIGTERM");
  EXPECT_EQ(l[1].at("pid"), 102);
  EXPECT_EQ(l[1].at("cmdline"), "sh -c \"trap '' TERM\"");
  EXPECT_EQ(l[1].at("action"), "SIGKILL");
}

// Commands and command lines are bytes, not always UTF-8 (file names,
// binary arguments): the report must still be one valid JSON document.
TEST(ReportJson, NonUtf8BytesStillGiveValidJson) {
  RunResult r = exited_result();
  r.command = {"printf", "\xff\xfe ok", "quote\" back\\ nl\n tab\t nul-free"};
  r.leftovers.push_back({101, 5000, "cat \xc3(", Fate::signalled_by(SIGTERM)});
  std::string text;
  ASSERT_NO_THROW(text = report_json(r, {}));
  json j;
  ASSERT_NO_THROW(j = json::parse(text));
  EXPECT_EQ(j.at("command").size(), 3u);
  EXPECT_EQ(j.at("command")[2], "quote\" back\\ nl\n tab\t nul-free");
  EXPECT_EQ(j.at("leftovers").size(), 1u);
}

// A call whose command never ran: outcome, error line and status, no pid,
// nothing of an exit.
TEST(ReportJson, NotStarted) {
  RunResult r = not_started({"no-such-command"}, ConfineKind::cgroup,
                            Error::line("cannot run 'no-such-command': not found", Errc::not_found), fixed_time());
  json j = parse(r);
  EXPECT_EQ(j.at("outcome"), "not_started");
  EXPECT_EQ(j.at("error"), "cannot run 'no-such-command': not found");
  EXPECT_EQ(j.at("exit_status"), 127);
  EXPECT_TRUE(j.at("pid").is_null());
  EXPECT_TRUE(j.at("exit_code").is_null());
  EXPECT_TRUE(j.at("signal").is_null());
  EXPECT_EQ(j.at("cleanup_verified"), true);
  EXPECT_EQ(j.at("started_at"), "2024-02-29T13:14:15.123456Z");
  // A call that ran has the field too, null.
  EXPECT_TRUE(parse(exited_result()).at("error").is_null());
}

class WriteAtomically : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pmon-unit.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& name : entries()) (void)::unlink((dir_ + "/" + name).c_str());
    (void)::rmdir((dir_ + "/sub").c_str());
    (void)::rmdir(dir_.c_str());
  }
  std::set<std::string> entries() const {
    std::set<std::string> out;
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
    ::closedir(d);
    return out;
  }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
};

TEST_F(WriteAtomically, WritesTheWholeText) {
  std::string path = dir_ + "/r.json";
  std::string text(200000, 'a');
  text += "\n";
  ASSERT_TRUE(write_atomically(path, text).has_value());
  EXPECT_EQ(slurp(path), text);
  EXPECT_EQ(entries(), std::set<std::string>{"r.json"});
}

TEST_F(WriteAtomically, ReplacesAnExistingFileByRename) {
  std::string path = dir_ + "/r.json";
  std::string link = dir_ + "/old";
  { std::ofstream(path) << std::string(100000, 'x'); }
  ASSERT_EQ(::link(path.c_str(), link.c_str()), 0);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  ASSERT_TRUE(write_atomically(path, "{}\n").has_value());
  EXPECT_EQ(slurp(path), "{}\n");
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  // A new inode: readers of the old name never see a half-written file.
  EXPECT_NE(before.st_ino, after.st_ino);
  EXPECT_EQ(slurp(link), std::string(100000, 'x'));
  EXPECT_EQ(entries(), (std::set<std::string>{"old", "r.json"}));
}

TEST_F(WriteAtomically, FailsCleanly) {
  auto r = write_atomically(dir_ + "/no-such-dir/r.json", "{}\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().value(), ENOENT);

  // The target is a directory: the rename fails and the temp file goes.
  ASSERT_EQ(::mkdir((dir_ + "/sub").c_str(), 0755), 0);
  r = write_atomically(dir_ + "/sub", "{}\n");
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(entries(), std::set<std::string>{"sub"});
}

// The fallback where O_TMPFILE is missing: the same guarantees by name.
TEST_F(WriteAtomically, FallbackByNameWritesAndReplaces) {
  std::string path = dir_ + "/r.json";
  std::string text(300000, 'b');
  ASSERT_TRUE(detail::write_atomically_named(path, text).has_value());
  EXPECT_EQ(slurp(path), text);
  EXPECT_EQ(entries(), std::set<std::string>{"r.json"});
  ASSERT_TRUE(detail::write_atomically_named(path, "{}\n").has_value());
  EXPECT_EQ(slurp(path), "{}\n");
  EXPECT_EQ(entries(), std::set<std::string>{"r.json"});
}

// A symlink planted at the target is replaced, never followed: the file it
// points to keeps its bytes.
TEST_F(WriteAtomically, FallbackByNameNeverFollowsASymlinkAtTheTarget) {
  std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "precious"; }
  std::string path = dir_ + "/r.json";
  ASSERT_EQ(::symlink(victim.c_str(), path.c_str()), 0);
  ASSERT_TRUE(detail::write_atomically_named(path, "{}\n").has_value());
  EXPECT_EQ(slurp(victim), "precious");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(slurp(path), "{}\n");
  EXPECT_EQ(entries(), (std::set<std::string>{"r.json", "victim"}));
}

TEST_F(WriteAtomically, FallbackByNameFailsCleanly) {
  ASSERT_EQ(::mkdir((dir_ + "/sub").c_str(), 0755), 0);
  auto r = detail::write_atomically_named(dir_ + "/sub", "{}\n");
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(entries(), std::set<std::string>{"sub"});
}


// A fate reads back from the word the report gives it (a call's record
// of a job is read from a report).
TEST(ReportJson, AFateReadsBackFromItsWord) {
  for (Fate f : {Fate::signalled_by(SIGTERM), Fate::signalled_by(SIGHUP), Fate::killed(), Fate::waited(), Fate::survived()})
    EXPECT_EQ(fate_from_string(to_string(f)), f) << to_string(f);
  EXPECT_EQ(to_string(Fate::signalled_by(SIGKILL)), "SIGKILL");
  EXPECT_FALSE(fate_from_string("15").decided());
  EXPECT_FALSE(fate_from_string("").decided());
}

}  // namespace
}  // namespace pmon

