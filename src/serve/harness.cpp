// SPDX-License-Identifier: Apache-2.0
#include "serve/harness.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>

namespace pmon {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return r;
}

// Reads a hook's JSON without building it: the top-level keys that tell the
// harness apart, and a bound on nesting (a deep value fails the parse).
class HarnessSniffer : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool binary(binary_t&) override { return false; }
  bool string(string_t& s) override {
    if (depth_ == 1 && key_ == "hook_event_name") event_ = s;
    return value();
  }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      key_ = k;
      if (k == "turn_id") turn_id_ = true;
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

  bool object_seen() const { return object_; }
  const std::string& event() const { return event_; }
  bool turn_id() const { return turn_id_; }

 private:
  bool value() { return depth_ > 0; }  // a bare scalar is no hook input
  bool open(bool object) {
    if (depth_ == 0) {
      if (!object) return false;
      object_ = true;
    }
    return ++depth_ <= kHookMaxDepth;
  }
  bool close() {
    --depth_;
    if (depth_ == 1) key_.clear();
    return true;
  }

  int depth_ = 0;
  bool object_ = false;
  bool turn_id_ = false;
  std::string key_;
  std::string event_;
};

}  // namespace

std::optional<std::vector<std::string>> shell_command(const std::vector<std::string>& args) {
  if (args.empty() || (args.size() == 1 && args[0] == "-c")) return std::nullopt;
  if (args.size() == 1 && args[0] != "--") return std::vector<std::string>{"/bin/bash", "-c", args[0]};
  if (args.size() == 2 && args[0] == "-c") return std::vector<std::string>{"/bin/bash", "-c", args[1]};
  auto from = args.begin() + (args[0] == "--" ? 1 : 0);
  if (from == args.end()) return std::nullopt;
  return std::vector<std::string>(from, args.end());
}

std::optional<bool> parse_switch(std::string_view value) {
  const std::string v = lower(value);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

HookHarness hook_harness(std::string_view input) {
  HarnessSniffer sniff;
  if (!nlohmann::json::sax_parse(input, &sniff) || !sniff.object_seen()) return HookHarness::unreadable;
  if (sniff.event() == "BeforeTool") return HookHarness::gemini_cli;
  if (sniff.event() == "PreToolUse") return sniff.turn_id() ? HookHarness::codex : HookHarness::claude_code;
  return HookHarness::other;
}

std::string hook_refusal(HookHarness harness) {
  const std::string head = "pmon hook-rewrite: blocked: ";
  switch (harness) {
    case HookHarness::claude_code:
      return head + "Claude Code would check its permission rules against a rewritten command, not this one, "
                    "so pmon does not rewrite it; remove this hook and set CLAUDE_CODE_SHELL_PREFIX=pmon-shell "
                    "(in the environment or in settings.json's env) instead";
    case HookHarness::codex:
      return head + "Codex runs a rewritten command only when the hook allows it, which skips Codex's own rules, "
                    "so pmon does not rewrite it; remove this hook and add pmon mcp as an MCP server "
                    "([mcp_servers.pmon] in config.toml) instead";
    case HookHarness::gemini_cli:
      return head + "Gemini CLI would check its policy rules against a rewritten command, not this one, "
                    "so pmon does not rewrite it; remove this hook and add pmon mcp as an MCP server "
                    "(mcpServers in settings.json) instead";
    case HookHarness::other:
    case HookHarness::unreadable:
      break;
  }
  return head + (harness == HookHarness::unreadable ? "the hook's input is not a JSON object pmon can read, and " : "") +
         "pmon does not rewrite a harness's shell commands (the harness would check its rules against the "
         "rewrite); remove this hook and use CLAUDE_CODE_SHELL_PREFIX=pmon-shell (Claude Code) or pmon mcp "
         "(any MCP client) instead";
}

}  // namespace pmon
