// SPDX-License-Identifier: Apache-2.0
// What pmon-shell runs for its arguments, which harness a hook's JSON came
// from and the line its call is blocked with, and the environment switch's words.
#include <gtest/gtest.h>

#include "serve/harness.h"

namespace pmon {
namespace {

using V = std::vector<std::string>;

TEST(ShellCommand, OneLineRunsUnderBash) {
  EXPECT_EQ(shell_command({"echo hi; exit 3"}), (V{"/bin/bash", "-c", "echo hi; exit 3"}));
  EXPECT_EQ(shell_command({"-c", "ls"}), (V{"/bin/bash", "-c", "ls"}));
}

TEST(ShellCommand, SeveralArgumentsRunAsThey) {
  EXPECT_EQ(shell_command({"ls", "-l"}), (V{"ls", "-l"}));
  EXPECT_EQ(shell_command({"--", "ls", "-l"}), (V{"ls", "-l"}));
  EXPECT_EQ(shell_command({"--", "-c"}), (V{"-c"}));
}

TEST(ShellCommand, NothingToRun) {
  EXPECT_FALSE(shell_command({}));
  EXPECT_FALSE(shell_command({"--"}));
  EXPECT_FALSE(shell_command({"-c"}));
}

TEST(ParseSwitch, Words) {
  for (const char* on : {"1", "true", "YES", "on"}) EXPECT_EQ(parse_switch(on), true) << on;
  for (const char* off : {"", "0", "false", "No", "off"}) EXPECT_EQ(parse_switch(off), false) << off;
  for (const char* bad : {"2", "y", "enabled"}) EXPECT_FALSE(parse_switch(bad)) << bad;
}

TEST(HookHarness, TellsTheHarnessApart) {
  EXPECT_EQ(hook_harness(R"({"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}})"),
            HookHarness::claude_code);
  EXPECT_EQ(hook_harness(R"({"turn_id":"t","hook_event_name":"PreToolUse","tool_input":{"command":"ls"}})"),
            HookHarness::codex);
  EXPECT_EQ(hook_harness(R"({"hook_event_name":"BeforeTool","tool_name":"run_shell_command"})"),
            HookHarness::gemini_cli);
  // Only the top level counts.
  EXPECT_EQ(hook_harness(R"({"x":{"hook_event_name":"BeforeTool","turn_id":1},"hook_event_name":"PreToolUse"})"),
            HookHarness::claude_code);
  EXPECT_EQ(hook_harness(R"({"hook_event_name":5})"), HookHarness::other);
  EXPECT_EQ(hook_harness(R"({"hook_event_name":"PostToolUse"})"), HookHarness::other);
  EXPECT_EQ(hook_harness("{}"), HookHarness::other);
}

TEST(HookHarness, UnreadableInput) {
  for (std::string bad : {"", "{not json", "[1,2]", "\"PreToolUse\"", "5", "{} {}",
                          R"({"tool_input":{"command":"\ud800"}})", "{\"a\":\"\xff\"}"})
    EXPECT_EQ(hook_harness(bad), HookHarness::unreadable) << bad;
  const std::string deep = R"({"hook_event_name":"PreToolUse","x":)" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  EXPECT_EQ(hook_harness(deep), HookHarness::unreadable);
  const std::string edge = "{\"x\":" + std::string(kHookMaxDepth - 1, '[') + std::string(kHookMaxDepth - 1, ']') + "}";
  EXPECT_EQ(hook_harness(edge), HookHarness::other);
}

TEST(HookRefusal, OneLineNamingWhatToUse) {
  const auto line = [](HookHarness h) { return hook_refusal(h); };
  EXPECT_NE(line(HookHarness::claude_code).find("CLAUDE_CODE_SHELL_PREFIX=pmon-shell"), std::string::npos);
  EXPECT_NE(line(HookHarness::codex).find("pmon mcp"), std::string::npos);
  EXPECT_NE(line(HookHarness::gemini_cli).find("pmon mcp"), std::string::npos);
  EXPECT_NE(line(HookHarness::unreadable).find("not a JSON object"), std::string::npos);
  for (HookHarness h : {HookHarness::claude_code, HookHarness::codex, HookHarness::gemini_cli, HookHarness::other,
                        HookHarness::unreadable})
    EXPECT_EQ(line(h).find('\n'), std::string::npos);
}

}  // namespace
}  // namespace pmon
