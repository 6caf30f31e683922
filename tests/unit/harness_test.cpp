// SPDX-License-Identifier: Apache-2.0
// What pmon-shell runs for its arguments, the hook's rewrite of a
// harness's PreToolUse JSON, and the environment switch's words.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve/harness.h"

namespace pmon {
namespace {

using nlohmann::json;
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
}

TEST(ShellQuote, OneWordForAnyBytes) {
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(ParseSwitch, Words) {
  for (const char* on : {"1", "true", "YES", "on"}) EXPECT_EQ(parse_switch(on), true) << on;
  for (const char* off : {"", "0", "false", "No", "off"}) EXPECT_EQ(parse_switch(off), false) << off;
  for (const char* bad : {"2", "y", "enabled"}) EXPECT_FALSE(parse_switch(bad)) << bad;
}

json rewrite(const json& in, HookRewriteOptions opts = {}) {
  HookRewrite r = hook_rewrite(in.dump(), opts);
  EXPECT_TRUE(r.error.empty()) << r.error;
  return r.output ? json::parse(*r.output) : json();
}

TEST(HookRewrite, ClaudeCodeBashCommand) {
  json in = {{"hook_event_name", "PreToolUse"},
             {"tool_name", "Bash"},
             {"tool_input", {{"command", "npm test && echo 'done'"}, {"timeout", 120000}, {"description", "tests"}}}};
  json out = rewrite(in);
  const json& h = out.at("hookSpecificOutput");
  EXPECT_EQ(h.at("hookEventName"), "PreToolUse");
  EXPECT_FALSE(h.contains("permissionDecision"));
  EXPECT_EQ(h.at("updatedInput").at("command"), "exec 'pmon-shell' 'npm test && echo '\\''done'\\'''");
  // The rest of the tool's input is kept.
  EXPECT_EQ(h.at("updatedInput").at("timeout"), 120000);
  EXPECT_EQ(h.at("updatedInput").at("description"), "tests");
}

TEST(HookRewrite, DecisionAndShellPath) {
  json in = {{"hook_event_name", "PreToolUse"}, {"tool_input", {{"command", "ls"}}}};
  json out = rewrite(in, {.shell = "/opt/pmon/bin/pmon-shell", .decision = "allow"});
  EXPECT_EQ(out["hookSpecificOutput"]["permissionDecision"], "allow");
  EXPECT_EQ(out["hookSpecificOutput"]["updatedInput"]["command"], "exec '/opt/pmon/bin/pmon-shell' 'ls'");
}

TEST(HookRewrite, ArgvCommandGetsPmonShellInFront) {
  json in = {{"hook_event_name", "PreToolUse"}, {"tool_input", {{"command", {"bash", "-lc", "make"}}}}};
  EXPECT_EQ(rewrite(in)["hookSpecificOutput"]["updatedInput"]["command"], (json{"pmon-shell", "--", "bash", "-lc", "make"}));
}

TEST(HookRewrite, GeminiCliBeforeTool) {
  json in = {{"session_id", "s"},
             {"hook_event_name", "BeforeTool"},
             {"tool_name", "run_shell_command"},
             {"tool_input", {{"command", "npm run dev"}, {"description", "dev server"}, {"dir_path", "web"}}}};
  json out = rewrite(in);
  const json& h = out.at("hookSpecificOutput");
  EXPECT_EQ(h.at("hookEventName"), "BeforeTool");
  // Gemini CLI reads the new arguments from tool_input, not updatedInput.
  EXPECT_FALSE(h.contains("updatedInput"));
  EXPECT_FALSE(h.contains("permissionDecision"));
  EXPECT_FALSE(out.contains("decision"));
  EXPECT_EQ(h.at("tool_input").at("command"), "exec 'pmon-shell' 'npm run dev'");
  EXPECT_EQ(h.at("tool_input").at("description"), "dev server");
  EXPECT_EQ(h.at("tool_input").at("dir_path"), "web");
}

TEST(HookRewrite, GeminiCliDecisionIsTopLevel) {
  json in = {{"hook_event_name", "BeforeTool"}, {"tool_input", {{"command", "ls"}}}};
  json out = rewrite(in, {.shell = "/opt/pmon/bin/pmon-shell", .decision = "ask"});
  EXPECT_EQ(out["decision"], "ask");
  EXPECT_FALSE(out["hookSpecificOutput"].contains("permissionDecision"));
  EXPECT_EQ(out["hookSpecificOutput"]["tool_input"]["command"], "exec '/opt/pmon/bin/pmon-shell' 'ls'");
  // Already under pmon-shell: nothing to say.
  json again = {{"hook_event_name", "BeforeTool"}, {"tool_input", out["hookSpecificOutput"]["tool_input"]}};
  EXPECT_FALSE(hook_rewrite(again.dump(), {.shell = "/opt/pmon/bin/pmon-shell", .decision = ""}).output);
}

TEST(HookRewrite, LeftAsItIs) {
  for (const json& in : {json{{"tool_input", {{"command", "pmon-shell 'ls'"}}}},
                         json{{"tool_input", {{"command", "  '/usr/bin/pmon-shell' ls"}}}},
                         json{{"tool_input", {{"command", "exec 'pmon-shell' 'ls'"}}}},
                         json{{"tool_input", {{"command", {"pmon-shell", "--", "ls"}}}}},
                         json{{"tool_input", {{"command", "   "}}}},
                         json{{"tool_input", {{"file_path", "/tmp/x"}}}},
                         json{{"tool_name", "Read"}}}) {
    HookRewrite r = hook_rewrite(in.dump(), {});
    EXPECT_TRUE(r.error.empty()) << in;
    EXPECT_FALSE(r.output) << in;
  }
}

TEST(HookRewrite, NotJson) {
  EXPECT_FALSE(hook_rewrite("{not json", {}).error.empty());
  EXPECT_FALSE(hook_rewrite("[1,2]", {}).error.empty());
}

}  // namespace
}  // namespace pmon
