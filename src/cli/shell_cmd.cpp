// SPDX-License-Identifier: Apache-2.0
// pmon shell LINE (and pmon-shell LINE): a shell prefix for agent
// harnesses. pmon hook-rewrite: a PreToolUse hook that puts a harness's
// shell commands under pmon-shell.
#include <CLI/CLI.hpp>
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

constexpr const char* kHookFooter = R"(
Reads the JSON a harness sends a PreToolUse hook on stdin (Claude Code's and
Codex's: tool_input.command) and prints JSON whose updatedInput runs the same
command under pmon-shell, so it stops with its tree and with the harness.
Gemini CLI's BeforeTool hook works too: the answer is then its tool_input,
and MODE its top-level decision.
A command that is not a shell line, or runs under pmon-shell already, is left
as it is: nothing is printed. Exit status 0; 125 when the input is not JSON.

  MODE  the permission decision sent with the rewrite: allow (the harness runs
        the rewritten command without asking; Codex applies a rewrite only
        with it), ask (the user approves the rewritten command), or none (the
        harness decides as it would have)
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
  CLI::App app{"Rewrite a harness's shell command to run under pmon-shell (a PreToolUse hook).",
               "pmon hook-rewrite"};
  app.footer(kHookFooter);
  HookRewriteOptions opts;
  std::string decision = "none";
  app.add_option("--decision", decision, "the permission decision sent with the rewrite: allow, ask or none")
      ->type_name("MODE");
  app.add_option("--shell", opts.shell, "how the rewritten command names pmon-shell (default: pmon-shell, from PATH)")
      ->type_name("PATH");
  if (!parse_options(app, args, "hook-rewrite")) return 0;
  if (decision != "allow" && decision != "ask" && decision != "none")
    die("hook-rewrite: --decision: '" + decision + "' is not allow, ask or none");
  if (decision != "none") opts.decision = decision;

  std::string input;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, stdin)) > 0;) input.append(buf, n);
  HookRewrite r = hook_rewrite(input, opts);
  if (!r.error.empty()) die("hook-rewrite: " + r.error);
  if (r.output) std::printf("%s\n", r.output->c_str());
  return 0;
}

}  // namespace pmon::cli
