// SPDX-License-Identifier: Apache-2.0
// Why a call ended, in every front end's words: each CallEnd's row of the
// one table (core/end_words.h), read through the functions each wire uses:
// the JSON report, serve's JSON-RPC (stoppedBy), MCP (stopped_by, its
// sentences, its task status), the job's sentence and the CLI's.
#include "core/end_words.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/report.h"
#include "serve/mcp.h"
#include "serve/protocol.h"

namespace pmon {
namespace {

using Json = nlohmann::json;

struct Row {
  CallEnd end;
  const char* outcome;      // the report's, for a call stopped for it
  bool timed_out;           // the report's
  const char* stop_reason;  // the report's stop.reason (null: none)
  const char* stopped_by;   // serve's stoppedBy and MCP's stopped_by (null: none)
  const char* job_words;    // the job's end in a sentence
  const char* already;      // the CLI's, for a job that had ended
  bool task_cancelled;      // MCP's task status
};

// Every CallEnd, once.
const Row kRows[] = {
    {CallEnd::main_exited, "exited", false, nullptr, nullptr, "the job exited with status 3", nullptr, false},
    {CallEnd::timeout, "timeout", true, "timeout", "timeout", "the job was stopped by its timeout",
     "was already stopped by its timeout", false},
    {CallEnd::idle_timeout, "timeout", true, "idle_timeout", "idle timeout",
     "the job was stopped: it printed nothing for its idle timeout",
     "was already stopped: it printed nothing for its idle timeout", false},
    {CallEnd::cancel, "cancelled", false, "cancel", nullptr, "the job exited with status 3", nullptr, false},
    {CallEnd::parent_exited, "cancelled", false, "parent_exited", nullptr, "the job exited with status 3", nullptr,
     false},
    {CallEnd::kill, "cancelled", false, "cancel", "kill", "the job was stopped (kill)", "was already stopped", true},
    {CallEnd::release, "cancelled", false, "cancel", "release", "the job was stopped (release)",
     "was already stopped (release)", true},
    {CallEnd::replaced, "cancelled", false, "cancel", "replaced", "the job was stopped (replaced)",
     "was already stopped (replaced)", true},
    {CallEnd::owner_ended, "cancelled", false, "cancel", "owner call ended", "the job was stopped (owner call ended)",
     "was already stopped (owner call ended)", false},
    {CallEnd::not_ready, "cancelled", false, "cancel", "not ready", "the job was stopped (not ready)",
     "was already stopped (not ready)", false},
    {CallEnd::session_closed, "cancelled", false, "cancel", "session closed", "the job was stopped (session closed)",
     "was already stopped (session closed)", false},
    {CallEnd::request_cancelled, "cancelled", false, "cancel", "cancelled", "the job was stopped (cancelled)",
     "was already stopped (cancelled)", false},
    {CallEnd::connection_closed, "cancelled", false, "cancel", "connection closed",
     "the job was stopped (connection closed)", "was already stopped (connection closed)", false},
    {CallEnd::service_stopped, "cancelled", false, "cancel", "service stopped", "the job was stopped (service stopped)",
     "was already stopped (service stopped)", false},
};

Json null_or(const char* s) { return s ? Json(s) : Json(nullptr); }

TEST(EndWords, EveryEndHasOneRowHere) {
  ASSERT_EQ(std::size(kRows), static_cast<size_t>(kCallEnds));
  for (int i = 0; i < kCallEnds; ++i) EXPECT_EQ(static_cast<int>(kRows[i].end), i);
}

// The report of a call that ended so (its main process exited 3, or was
// stopped): outcome, timed_out, stop.reason.
TEST(EndWords, TheReport) {
  for (const Row& row : kRows) {
    RunResult r;
    r.end = row.end;
    r.exit_code = 3;
    r.outcome = outcome_of(row.end, false);
    r.timed_out = is_time_up(row.end);
    if (row.end != CallEnd::main_exited) r.stop.reason = StopReason::ended;
    Json j = Json::parse(report_json(r, {}));
    EXPECT_EQ(j["outcome"], row.outcome) << static_cast<int>(row.end);
    EXPECT_EQ(j["timed_out"], row.timed_out) << static_cast<int>(row.end);
    EXPECT_EQ(j["stop"]["reason"], null_or(row.stop_reason)) << static_cast<int>(row.end);
  }
  // An end the main process made: its own status, and what the stop found.
  EXPECT_EQ(outcome_of(CallEnd::main_exited, true), Outcome::signaled);
  EXPECT_EQ(stop_reason_word(StopReason::leftovers, CallEnd::main_exited), "leftovers");
  EXPECT_EQ(stop_reason_word(StopReason::escaped, CallEnd::main_exited), "escaped");
  EXPECT_EQ(stop_reason_word(StopReason::none, CallEnd::timeout), "");
}

// A job stopped so: serve's wait result and terminal/exited (stoppedBy,
// timedOut), MCP's wait result and its lines, the sentences.
TEST(EndWords, TheJobServiceMcpAndTheCli) {
  for (const Row& row : kRows) {
    const int n = static_cast<int>(row.end);
    serve::EndFacts f;
    if (row.stopped_by) f.stopped_by = row.end;
    f.timed_out = row.timed_out;
    const serve::ExitStatus st{3, std::nullopt};
    Json rpc = serve::wait_result(st, f);
    EXPECT_EQ(rpc["stoppedBy"], null_or(row.stopped_by)) << n;
    Json mcp = serve::mcp::wait_result(st, false, f);
    EXPECT_EQ(mcp["structuredContent"]["stopped_by"], null_or(row.stopped_by)) << n;
    EXPECT_EQ(mcp["content"][0]["text"],
              row.stopped_by ? "exit code 3 (stopped: " + std::string(row.stopped_by) + ")" : "exit code 3")
        << n;
    RunResult r;
    r.exit_code = 3;
    EXPECT_EQ(job_ended_sentence(f.stopped_by, r), row.job_words) << n;
    if (row.stopped_by) {
      EXPECT_EQ(already_ended_words(row.stopped_by), row.already) << n;
      EXPECT_EQ(end_from_stopped_by(row.stopped_by), row.end) << n;
    }
    EXPECT_EQ(words_of(row.end).task_cancelled, row.task_cancelled) << n;
  }
  EXPECT_EQ(already_ended_words("something new"), "was already stopped (something new)");
  EXPECT_EQ(end_from_stopped_by(""), std::nullopt);
}

}  // namespace
}  // namespace pmon
