// SPDX-License-Identifier: Apache-2.0
// pmon shell LINE (and pmon-shell LINE): a shell prefix for agent
// harnesses. pmon hook-rewrite: a hook that blocks a harness's shell call
// and says what to use instead (a rewrite would turn the harness's rules off).
#include <cstdio>
#include <string>

#include "cli/cli.h"
#include "serve/harness.h"

namespace pmon::cli {

namespace {

constexpr const char* kShellHelp = R"(Run a shell line so that nothing it starts outlives it, or the program that started pmon.
Usage: pmon-shell LINE
       pmon-shell -c LINE
       pmon-shell [--] CMD [ARG...]
       pmon shell LINE

Runs LINE with /bin/bash -c (or CMD with its arguments, when given more than
one argument) as 'pmon run --die-with-parent -q' does: when LINE exits,
whatever it started that still runs is stopped and confirmed gone; when the
program that started pmon-shell exits or is killed, LINE and everything it
started are stopped too, and so they are when nobody is left to read its
output (its stdout a pipe, socket or terminal whose reader went: a harness
that died behind a shell of its own). pmon prints nothing of its own, unless LINE left
processes running (one line on stderr saying it stopped them) or pmon itself
failed.

For a harness whose shell prefix is one path that gets the shell line as one
argument, e.g. Claude Code:

  CLAUDE_CODE_SHELL_PREFIX=pmon-shell

pmon-shell is pmon under another name (a link to it); 'pmon shell' is the
same.

Exit status: LINE's own, as 'pmon run' gives it (128+N when it died by
signal N; 125 when pmon itself failed, 126 not executable, 127 not found).
)";

constexpr const char* kHookHelp = R"(Blocks a harness's shell call, saying what to use instead of this hook.
Usage: pmon hook-rewrite [--decision MODE] [--shell PATH]

pmon no longer rewrites a harness's shell commands from a hook: Claude Code,
Codex and Gemini CLI check their permission rules (deny, ask, allow) against
the command a hook hands back, so a rewrite to run it under pmon-shell would
turn those rules off. Instead:

  Claude Code   CLAUDE_CODE_SHELL_PREFIX=pmon-shell (its rules see the
                model's command; the prefix wraps it as it runs)
  Codex CLI     pmon mcp as an MCP server
  Gemini CLI    pmon mcp as an MCP server

A hook left in place reads the harness's JSON on stdin and blocks the call
(exit status 2, one line on stderr saying the above), whatever the input,
so a command never runs outside pmon where the setup expected it under pmon.
--decision and --shell are accepted and ignored.
)";

}  // namespace

int shell_main(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kShellHelp, stdout);
    return 0;
  }
  auto command = shell_command(args);
  if (!command) die("shell: no shell line given; usage: pmon-shell LINE (see 'pmon shell --help')");
  std::vector<std::string> run_args{"--"};
  run_args.insert(run_args.end(), command->begin(), command->end());
  return run_main(run_args, RunFront{.shell = true});
}

int hook_rewrite_main(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kHookHelp, stdout);
    return 0;
  }
  // Exit status 2 is how each harness's hook protocol blocks a call; any
  // other failure of the hook would let the harness run the command as is.
  std::string input;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, stdin)) > 0;) input.append(buf, n);
  std::fprintf(stderr, "%s\n", hook_refusal(hook_harness(input)).c_str());
  return 2;
}

}  // namespace pmon::cli
