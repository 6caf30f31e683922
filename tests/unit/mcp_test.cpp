// pmon mcp's protocol logic: revisions, tool-call arguments, result shapes.
#include "serve/mcp.h"

#include <gtest/gtest.h>

namespace pmon::serve::mcp {
namespace {

TEST(McpVersion, EverySupportedRevisionIsKeptAnotherGetsTheNewest) {
  for (const char* v : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"})
    EXPECT_EQ(negotiate_version(Json(v)), v);
  EXPECT_EQ(negotiate_version(Json("1999-01-01")), kLatestVersion);
  EXPECT_EQ(negotiate_version(Json(nullptr)), kLatestVersion);
  EXPECT_EQ(initialize_result(Json{{"protocolVersion", "2024-11-05"}})["protocolVersion"], "2024-11-05");
}

TEST(McpTools, EachHasAnInputAndAnOutputSchema) {
  Json tools = tools_list()["tools"];
  ASSERT_EQ(tools.size(), 8u);
  for (const Json& t : tools) {
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_EQ(t["outputSchema"]["type"], "object") << t["name"];
  }
}

std::string call_error(const Json& params) {
  auto r = parse_tool_call(params);
  auto* e = std::get_if<CallError>(&r);
  return e ? e->message : "";
}

TEST(McpToolCall, RunIsAShellLineWithSecondsAsMilliseconds) {
  auto r = parse_tool_call({{"name", "run"},
                            {"arguments", {{"command", "make test"}, {"timeout_s", 1.5},
                                           {"background_after_s", 0.25}, {"env", {{"A", "b"}}}}}});
  ASSERT_TRUE(std::holds_alternative<ToolCall>(r));
  const auto& a = std::get<RunArgs>(std::get<ToolCall>(r).args);
  EXPECT_EQ(a.create.command, "/bin/sh");
  EXPECT_EQ(a.create.args, (std::vector<std::string>{"-c", "make test"}));
  EXPECT_EQ(a.create.timeout_ms, 1500u);
  EXPECT_EQ(a.background_after_ms, 250u);
  ASSERT_EQ(a.create.env.size(), 1u);
  EXPECT_EQ(a.create.env[0].name, "A");
  auto d = parse_tool_call({{"name", "run"}, {"arguments", {{"command", "x"}}}});
  EXPECT_EQ(std::get<RunArgs>(std::get<ToolCall>(d).args).create.timeout_ms, 120'000u);
}

TEST(McpToolCall, BadArgumentsNameTheField) {
  EXPECT_EQ(call_error({{"name", "run"}, {"arguments", Json::object()}}), "invalid arguments: 'command' is required");
  EXPECT_EQ(call_error({{"name", "run"}, {"arguments", {{"command", "x"}, {"timeout", 3}}}}),
            "invalid arguments: 'timeout' is not an argument of this tool");
  EXPECT_EQ(call_error({{"name", "wait_for_port"}, {"arguments", {{"id", "t1"}, {"port", 0}}}}),
            "invalid arguments: 'port' must be an integer from 1 to 65535");
  EXPECT_EQ(call_error({{"name", "wait"}, {"arguments", {{"id", "t1"}, {"timeout_s", -1}}}}),
            "invalid arguments: 'timeout_s' must be a number of seconds, at least 0");
  EXPECT_EQ(call_error({{"name", "start"}, {"arguments", {{"command", "x"}, {"env", {{"A", 1}}}}}}),
            "invalid arguments: 'env.A' must be a string");
  auto unknown = parse_tool_call({{"name", "rm"}});
  ASSERT_TRUE(std::holds_alternative<CallError>(unknown));
  EXPECT_TRUE(std::get<CallError>(unknown).protocol);
}

TEST(McpResult, LongRunOutputKeepsHeadAndTail) {
  std::string out;
  for (int i = 0; i < 20000; ++i) out += std::to_string(i) + "\n";
  Json a = {{"running", false}, {"terminalId", "t1"}, {"output", out}, {"truncated", false},
            {"exit_code", 0}, {"signal", nullptr}, {"timed_out", false}, {"leftovers", Json::array()},
            {"cleanup_verified", true}, {"duration_ms", 3.5}};
  Json r = tool_result(Tool::run, a);
  const std::string text = r["structuredContent"]["output"];
  EXPECT_TRUE(r["structuredContent"]["truncated"].get<bool>());
  EXPECT_LE(text.size(), kOutputLimit + 64);
  EXPECT_EQ(text.substr(0, 4), "0\n1\n");
  EXPECT_EQ(text.substr(text.size() - 6), "19999\n");
  EXPECT_NE(text.find("bytes left out"), std::string::npos);
  EXPECT_FALSE(r["isError"].get<bool>());
}

TEST(McpResult, AnErrorIsOneLineWithIsError) {
  Json e = tool_error("unknown job 't9'");
  EXPECT_TRUE(e["isError"].get<bool>());
  EXPECT_EQ(e["content"][0]["text"], "unknown job 't9'");
}

}  // namespace
}  // namespace pmon::serve::mcp
