// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli.h"
#include "confine/pidns_init.h"
#include "pmon_version.h"  // generated: PMON_VERSION, from git describe

// The mark of pmon's executable (sys/exe_note.h): an ELF note, owner "pmon",
// type 0x706d6f6e. The service knows a pmon call among a client's
// ancestors by it, whatever the executable's path or inode.
asm(".pushsection .note.pmon, \"a\", @note\n"
    ".balign 4\n"
    ".long 5\n"           // n_namesz: "pmon" and its NUL
    ".long 4\n"           // n_descsz
    ".long 0x706d6f6e\n"  // n_type
    ".asciz \"pmon\"\n"
    ".balign 4\n"
    ".ascii \"call\"\n"
    ".balign 4\n"
    ".popsection\n");

namespace {

constexpr const char* kUsage =
    "pmon - run commands so that nothing they start outlives them\n"
    "\n"
    "usage:\n"
    "  pmon run [options] -- CMD [ARG...]        run CMD; when it ends, stop everything it started\n"
    "  pmon shell LINE                           run a shell line as 'pmon run --die-with-parent -q' would\n"
    "                                            (pmon-shell LINE is the same: a shell prefix for agent harnesses)\n"
    "  pmon hook-rewrite                         a hook left from older setups: blocks each shell call and says\n"
    "                                            what to use instead (the prefix above, or pmon mcp)\n"
    "  pmon supervise [options] -- CMD [ARG...]  restart CMD when it fails; each run's processes are stopped first\n"
    "  pmon init [options] -- CMD [ARG...]       be a container's first process (PID 1): reap, forward signals\n"
    "  pmon [init options] -- CMD [ARG...]       the same as 'pmon init' (what 'docker run --init' starts)\n"
    "  pmon doctor [--json]                      what this host offers, and which backend auto picks\n"
    "  pmon ps [--json] [-a]                     the pmon calls running now and their processes\n"
    "  pmon gc [--dry-run] [-v]                  clean up after a pmon that was killed\n"
    "  pmon serve [--stdio|--listen PATH]        a service that runs background jobs (JSON-RPC)\n"
    "  pmon mcp                                  the same jobs as MCP tools on stdin/stdout, for any agent\n"
    "  pmon sandboxd [options]                   a Kubernetes agent-sandbox pod's runtime daemon (gRPC and\n"
    "                                            REST), each command a pmon call\n"
    "  pmon start [options] -- CMD [ARG...]      start CMD as a background job of the service; prints its id\n"
    "  pmon jobs [--json]                        list the service's jobs\n"
    "  pmon logs [-f] ID                         print a job's output\n"
    "  pmon stop ID                              stop a job and everything it started\n"
    "  pmon wait [--timeout DURATION] ID         wait for a job to end; exit with its status\n"
    "  pmon rm [-f] ID...                        remove jobs that have ended (-f: stop them first)\n"
    "  pmon --version\n"
    "\n"
    "'pmon SUBCOMMAND --help' lists its options; 'pmon run --help' also the exit codes.\n";

// "pmon -v -- CMD": options before "--" and no subcommand are init's, as
// "pmon -- CMD" is init (so a runtime may pass its init options that way).
bool init_options_then_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0].size() < 2 || args[0][0] != '-') return false;
  for (const std::string& a : args)
    if (a == "--") return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // pmon answering to the name pmon-shell (a link installed next to it):
  // 'pmon shell', for harnesses whose shell prefix is one path.
  if (argc > 0) {
    std::string_view name = argv[0];
    if (size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
    if (name == "pmon-shell") return pmon::cli::shell_main(args);
  }
  if (args.empty()) pmon::cli::die("missing subcommand; see 'pmon --help'");
  const std::string& sub = args[0];
  if (sub == "-h" || sub == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (sub == "--version") {
    std::puts("pmon " PMON_VERSION);
    return 0;
  }
  // What 'docker run --init' and 'podman run --init' start as PID 1:
  // INIT -- CMD [ARG...].
  if (sub == "--" || init_options_then_command(args)) return pmon::cli::init_main(args);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "run") return pmon::cli::run_main(rest);
  if (sub == "shell") return pmon::cli::shell_main(rest);
  if (sub == "hook-rewrite") return pmon::cli::hook_rewrite_main(rest);
  if (sub == "init") return pmon::cli::init_main(rest);
  if (sub == "supervise") return pmon::cli::supervise_main(rest);
  if (sub == "gc") return pmon::cli::gc_main(rest);
  if (sub == "ps") return pmon::cli::ps_main(rest);
  if (sub == "doctor") return pmon::cli::doctor_main(rest);
  if (sub == "serve") return pmon::cli::serve_main(rest);
  if (sub == "mcp") return pmon::cli::mcp_main(rest);
  if (sub == "sandboxd") return pmon::cli::sandboxd_main(rest);
  if (sub == "start") return pmon::cli::start_main(rest);
  if (sub == "jobs") return pmon::cli::jobs_main(rest);
  if (sub == "logs") return pmon::cli::logs_main(rest);
  if (sub == "stop") return pmon::cli::stop_main(rest);
  if (sub == "wait") return pmon::cli::wait_main(rest);
  if (sub == "rm") return pmon::cli::rm_main(rest);
  if (sub == "__nsinit") return pmon::nsinit_main(rest);  // a pidns call's PID 1 (hidden)
  if (sub.size() > 1 && sub[0] == '-')
    pmon::cli::die("unknown option '" + sub + "'; a subcommand comes first, as in 'pmon run [options] -- CMD'; "
                   "see 'pmon --help'");
  pmon::cli::die("unknown subcommand '" + sub + "'; see 'pmon --help'");
}
