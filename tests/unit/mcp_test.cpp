// SPDX-License-Identifier: Apache-2.0
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

// A client may run read-only tools without asking, and asks before a
// destructive one: output, wait, list and wait_for_port only read; kill
// and run and start may destroy.
TEST(McpTools, EachSaysWhetherItOnlyReadsOrMayDestroy) {
  const Json list = tools_list();  // kept: a range over a temporary's member would outlive it
  for (const Json& t : list["tools"]) {
    const std::string name = t["name"];
    ASSERT_TRUE(t.contains("annotations")) << name;
    const Json& a = t["annotations"];
    const bool reads = name == "output" || name == "wait" || name == "list" || name == "wait_for_port";
    EXPECT_EQ(a["readOnlyHint"], reads) << name;
    if (!reads) {
      EXPECT_EQ(a["destructiveHint"], name == "kill" || name == "run" || name == "start") << name;
    }
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
  EXPECT_FALSE(a.create.idle_timeout_ms.has_value());
  auto d = parse_tool_call({{"name", "run"}, {"arguments", {{"command", "x"}}}});
  EXPECT_EQ(std::get<RunArgs>(std::get<ToolCall>(d).args).create.timeout_ms, 120'000u);
  auto i = parse_tool_call({{"name", "start"}, {"arguments", {{"command", "x"}, {"idle_timeout_s", 30}}}});
  EXPECT_EQ(std::get<CreateParams>(std::get<ToolCall>(i).args).idle_timeout_ms, 30'000u);
  auto z = parse_tool_call({{"name", "run"}, {"arguments", {{"command", "x"}, {"idle_timeout_s", 0}}}});
  EXPECT_FALSE(std::get<RunArgs>(std::get<ToolCall>(z).args).create.idle_timeout_ms.has_value());
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

BadRequest bad_message(const std::string& line) {
  auto r = parse_message(line);
  EXPECT_TRUE(std::holds_alternative<BadRequest>(r)) << line.substr(0, 200);
  return std::holds_alternative<BadRequest>(r) ? std::get<BadRequest>(r) : BadRequest{};
}

TEST(McpMessage, ADeepMessageIsRefusedNotCopied) {
  const std::string open(100000, '['), close(100000, ']');
  BadRequest b = bad_message(R"({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"run","arguments":)" +
                             open + close + "}}");
  EXPECT_EQ(b.error.code, rpc::kInvalidRequest);
  EXPECT_EQ(b.error.message, "invalid request: nested more than 64 levels deep");
  EXPECT_EQ(b.id, "x");
  EXPECT_TRUE(b.answer);
  // As a notification: not answered.
  b = bad_message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" + open + close + "}}");
  EXPECT_FALSE(b.answer);
  // The message, its params and 62 arrays: 64 levels are read, 65 are not.
  std::string ok = R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"a":)" + std::string(62, '[') +
                   std::string(62, ']') + "}}";
  auto m = parse_message(ok);
  ASSERT_TRUE(std::holds_alternative<Message>(m));
  EXPECT_EQ(std::get<Message>(m).params["a"].dump(), std::string(62, '[') + std::string(62, ']'));
  EXPECT_FALSE(std::get<Message>(m).params["a"].is_null());
  EXPECT_EQ(bad_message(R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"a":)" + std::string(63, '[') +
                        std::string(63, ']') + "}}")
                .error.code,
            rpc::kInvalidRequest);
}

TEST(McpMessage, NotificationsAndResponsesAreNeverAnswered) {
  for (const char* line : {
           R"({"jsonrpc":"2.0","method":"notifications/initialized","params":"x"})",
           R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]})",
           R"({"jsonrpc":"2.0","id":5,"result":{}})",
           R"({"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"no"}})",
       })
    EXPECT_FALSE(bad_message(line).answer) << line;
  for (const char* line : {
           "{nope", "[]", R"({"method":"ping"})", R"({"jsonrpc":"2.0"})", R"({"jsonrpc":"2.0","id":null,"method":"ping"})",
           R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":"x"})",
       }) {
    BadRequest b = bad_message(line);
    EXPECT_TRUE(b.answer) << line;
    EXPECT_NE(b.error.code, 0) << line;
  }
  EXPECT_EQ(bad_message(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":"x"})").id, 2);
  auto n = parse_message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})");
  ASSERT_TRUE(std::holds_alternative<Message>(n));
  EXPECT_TRUE(std::get<Message>(n).notification);
}

TEST(McpToolCall, ANulByteOrABadVariableNameIsRefused) {
  auto args = [](Json a) { return Json{{"name", "start"}, {"arguments", std::move(a)}}; };
  EXPECT_EQ(call_error({{"name", "run"}, {"arguments", {{"command", std::string("ls\0; rm x", 9)}}}}),
            "invalid arguments: 'command' contains a NUL byte");
  EXPECT_EQ(call_error(args({{"command", "ls"}, {"cwd", std::string("/tmp\0/x", 7)}})),
            "invalid arguments: 'cwd' contains a NUL byte");
  EXPECT_EQ(call_error(args({{"command", "ls"}, {"env", {{"A", std::string("1\0", 2)}}}})),
            "invalid arguments: 'env.A' contains a NUL byte");
  EXPECT_EQ(call_error(args({{"command", "ls"}, {"env", {{std::string("A\0B", 3), "1"}}}})),
            "invalid arguments: 'env' has a variable name that contains a NUL byte");
  EXPECT_EQ(call_error(args({{"command", "ls"}, {"env", {{"", "1"}}}})),
            "invalid arguments: 'env' has an empty variable name");
  EXPECT_EQ(call_error(args({{"command", "ls"}, {"env", {{"A=B", "1"}}}})),
            "invalid arguments: 'env.A=B' is not a variable name (it contains '=')");
  // Data for a job's stdin may hold any byte.
  auto w = parse_tool_call({{"name", "write"}, {"arguments", {{"id", "t1"}, {"data", std::string("a\0b", 3)}}}});
  ASSERT_TRUE(std::holds_alternative<ToolCall>(w));
  EXPECT_EQ(std::get<WriteParams>(std::get<ToolCall>(w).args).data.size(), 3u);
}

TEST(McpResult, LongRunOutputKeepsHeadAndTail) {
  std::string out;
  for (int i = 0; i < 20000; ++i) out += std::to_string(i) + "\n";
  RunSummary a{"t1", out, false, ExitStatus{0, std::nullopt},
               {{"timed_out", false}, {"leftovers", Json::array()}, {"duration_ms", 3.5}}, true, 0, ""};
  Json r = run_result(a);
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

TEST(McpToolCall, StartReadsAReadinessProbe) {
  auto r = parse_tool_call({{"name", "start"},
                            {"arguments", {{"command", "npm run dev"}, {"ready_port", 5173}, {"ready_http", "/health"},
                                           {"ready_timeout_s", 2.5}}}});
  ASSERT_TRUE(std::holds_alternative<ToolCall>(r));
  const auto& c = std::get<CreateParams>(std::get<ToolCall>(r).args);
  ASSERT_TRUE(c.ready.has_value());
  EXPECT_EQ(c.ready->port, 5173);
  EXPECT_EQ(c.ready->http, "/health");
  EXPECT_FALSE(c.ready->line.has_value());
  EXPECT_EQ(c.ready->timeout_ms, 2500u);
  auto none = parse_tool_call({{"name", "start"}, {"arguments", {{"command", "x"}}}});
  EXPECT_FALSE(std::get<CreateParams>(std::get<ToolCall>(none).args).ready.has_value());
  auto line = parse_tool_call({{"name", "start"}, {"arguments", {{"command", "x"}, {"ready_line", "^up$"}}}});
  EXPECT_EQ(std::get<CreateParams>(std::get<ToolCall>(line).args).ready->timeout_ms, 30'000u);
  EXPECT_EQ(call_error({{"name", "start"}, {"arguments", {{"command", "x"}, {"ready_line", "(a"}}}}),
            "invalid arguments: 'ready_line' is not a valid regular expression: missing ): (a");
  EXPECT_EQ(call_error({{"name", "start"}, {"arguments", {{"command", "x"}, {"ready_line", "a"}, {"ready_port", 1}}}}),
            "invalid arguments: 'ready_line' goes alone: give a line, a port, an http path, or a port with an http "
            "path");
  EXPECT_EQ(call_error({{"name", "start"}, {"arguments", {{"command", "x"}, {"ready_timeout_s", 3}}}}),
            "invalid arguments: 'ready_timeout_s' needs 'ready_port', 'ready_http' or 'ready_line'");
  EXPECT_EQ(call_error({{"name", "start"}, {"arguments", {{"command", "x"}, {"ready_http", "health"}}}}),
            "invalid arguments: 'ready_http' must be a path such as \"/health\" (starting with '/', no spaces)");
}

}  // namespace
}  // namespace pmon::serve::mcp
