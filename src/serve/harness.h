// SPDX-License-Identifier: Apache-2.0
// What agent harnesses hand pmon, and what pmon hands back: the words of
// pmon-shell (a shell prefix takes one shell line), and the refusal of a
// hook that would rewrite a harness's shell command (a rewrite would have
// the harness check its permission rules against the rewrite, not the
// model's command). Pure: no process is started here.
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
// Nothing for no arguments, or -c with no LINE.
std::optional<std::vector<std::string>> shell_command(const std::vector<std::string>& args);

// "1"/"true"/"yes"/"on" or "0"/"false"/"no"/"off"/"" (any case): an
// environment switch such as PMON_DIE_WITH_PARENT; nothing for anything else.
std::optional<bool> parse_switch(std::string_view value);

// The harness a hook's JSON input came from, as far as pmon can tell.
enum class HookHarness { claude_code, codex, gemini_cli, other, unreadable };

// Nesting past this in a hook's input makes it unreadable.
inline constexpr int kHookMaxDepth = 64;

// Which harness sent INPUT, a shell tool's hook JSON: Gemini CLI names its
// event BeforeTool; Codex's PreToolUse carries a turn_id; any other
// PreToolUse is Claude Code's. unreadable: not a JSON object (lone
// surrogates and bad UTF-8 included), or nested past kHookMaxDepth.
HookHarness hook_harness(std::string_view input);

// The one line pmon hook-rewrite blocks a call with: that pmon does not
// rewrite this harness's commands, why, and what to use instead.
std::string hook_refusal(HookHarness harness);

}  // namespace pmon
