// SPDX-License-Identifier: Apache-2.0
// What agent harnesses hand pmon, and what pmon hands back: the words of
// pmon-shell (a shell prefix takes one shell line) and of a PreToolUse hook
// that rewrites a harness's shell command to run under pmon-shell. Pure:
// no process is started here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmon {

// The command pmon-shell runs for its arguments:
//   LINE           /bin/bash -c LINE (what a shell prefix hands over)
//   -c LINE        the same (pmon-shell used as a shell)
//   [--] CMD ARG.. CMD with its arguments, as they are
// Nothing for no arguments.
std::optional<std::vector<std::string>> shell_command(const std::vector<std::string>& args);

// LINE quoted for a POSIX shell, as one word: 'it'\''s'.
std::string shell_quote(std::string_view word);

// "1"/"true"/"yes"/"on" or "0"/"false"/"no"/"off"/"" (any case): an
// environment switch such as PMON_DIE_WITH_PARENT; nothing for anything else.
std::optional<bool> parse_switch(std::string_view value);

struct HookRewriteOptions {
  std::string shell = "pmon-shell";  // how the rewritten command names pmon-shell
  // The permissionDecision to send with the rewrite ("allow", "ask"), or
  // none ("": the harness decides as it would have).
  std::string decision;
};

// The hook's answer to a PreToolUse event (Claude Code's and Codex's JSON
// on stdin: tool_input.command, a shell line or an argv array; answered with
// hookSpecificOutput.updatedInput) or to Gemini CLI's BeforeTool event (the
// same tool_input; answered with hookSpecificOutput.tool_input and the
// decision as a top-level "decision"), or nothing
// when the command is left as it is (not a shell tool, no command, already
// under pmon-shell). Error text for input that is not such JSON.
struct HookRewrite {
  std::optional<std::string> output;  // the JSON to print, one line
  std::string error;                  // non-empty: the input was unusable
};
HookRewrite hook_rewrite(std::string_view input, const HookRewriteOptions& opts);

}  // namespace pmon
