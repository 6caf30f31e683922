// SPDX-License-Identifier: Apache-2.0
#include "serve/harness.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace pmon {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return r;
}

// The first word of a shell line, leading blanks skipped.
std::string_view first_word(std::string_view line) {
  size_t b = line.find_first_not_of(" \t\n");
  if (b == std::string_view::npos) return {};
  size_t e = line.find_first_of(" \t\n", b);
  return line.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
}

// A command that runs under pmon-shell already: its first word names it
// (bare, quoted, or as a path ending in /pmon-shell).
bool runs_under(std::string_view word, std::string_view shell) {
  if (word.size() >= 2 && (word.front() == '\'' || word.front() == '"') && word.back() == word.front())
    word = word.substr(1, word.size() - 2);
  if (word == shell || word == "pmon-shell") return true;
  size_t slash = word.rfind('/');
  return slash != std::string_view::npos && word.substr(slash + 1) == "pmon-shell";
}

}  // namespace

std::optional<std::vector<std::string>> shell_command(const std::vector<std::string>& args) {
  if (args.empty()) return std::nullopt;
  if (args.size() == 1 && args[0] != "--") return std::vector<std::string>{"/bin/bash", "-c", args[0]};
  if (args.size() == 2 && args[0] == "-c") return std::vector<std::string>{"/bin/bash", "-c", args[1]};
  auto from = args.begin() + (args[0] == "--" ? 1 : 0);
  if (from == args.end()) return std::nullopt;
  return std::vector<std::string>(from, args.end());
}

std::string shell_quote(std::string_view word) {
  std::string r = "'";
  for (char c : word) {
    if (c == '\'') r += "'\\''";
    else r += c;
  }
  return r + "'";
}

std::optional<bool> parse_switch(std::string_view value) {
  const std::string v = lower(value);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

HookRewrite hook_rewrite(std::string_view input, const HookRewriteOptions& opts) {
  using nlohmann::json;
  HookRewrite r;
  json in = json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded() || !in.is_object()) {
    r.error = "the hook input is not a JSON object";
    return r;
  }
  auto ti = in.find("tool_input");
  if (ti == in.end() || !ti->is_object()) return r;
  auto cmd = ti->find("command");
  if (cmd == ti->end()) return r;
  json updated = *ti;
  if (cmd->is_string()) {
    const std::string line = cmd->get<std::string>();
    if (line.find_first_not_of(" \t\n") == std::string::npos) return r;
    std::string_view first = first_word(line);
    if (first == "exec") first = first_word(std::string_view(line).substr(line.find("exec") + 4));
    if (runs_under(first, opts.shell)) return r;
    // exec: the shell a harness wraps each command in (Claude Code's bash
    // -c with its own setup around the line) becomes pmon-shell, so the
    // harness itself is pmon-shell's parent, whose death it watches; a shell
    // left in between would outlive the harness and hide its death.
    updated["command"] = "exec " + shell_quote(opts.shell) + " " + shell_quote(line);
  } else if (cmd->is_array() && !cmd->empty()) {
    std::vector<std::string> argv;
    for (const json& a : *cmd) {
      if (!a.is_string()) return r;
      argv.push_back(a.get<std::string>());
    }
    if (runs_under(argv.front(), opts.shell)) return r;
    json wrapped = json::array({opts.shell, "--"});
    for (std::string& a : argv) wrapped.push_back(std::move(a));
    updated["command"] = std::move(wrapped);
  } else {
    return r;
  }
  const std::string event = in.value("hook_event_name", std::string("PreToolUse"));
  json hso = {{"hookEventName", event}};
  json out = json::object();
  if (event == "BeforeTool") {
    // Gemini CLI: the new arguments are hookSpecificOutput.tool_input (merged
    // over the model's), the decision a top-level "decision".
    if (!opts.decision.empty()) out["decision"] = opts.decision;
    hso["tool_input"] = std::move(updated);
  } else {
    if (!opts.decision.empty()) hso["permissionDecision"] = opts.decision;
    hso["updatedInput"] = std::move(updated);
  }
  out["hookSpecificOutput"] = std::move(hso);
  r.output = out.dump();
  return r;
}

}  // namespace pmon
