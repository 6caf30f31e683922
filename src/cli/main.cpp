#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "core/nsinit.h"
#include "pmon_version.h"  // generated: PMON_VERSION, from git describe

namespace {

constexpr const char* kUsage =
    "pmon - run commands so that nothing they start outlives them\n"
    "\n"
    "usage:\n"
    "  pmon run [options] -- CMD [ARG...]        one tool call, whole-tree cleanup\n"
    "  pmon init [options] -- CMD [ARG...]       PID 1 / subreaper shim: reap all, forward signals\n"
    "  pmon -- CMD [ARG...]                      the same as 'pmon init -- CMD...' (a container's init)\n"
    "  pmon supervise [options] -- CMD [ARG...]  restart CMD when it fails; each child's tree is stopped\n"
    "  pmon doctor [--json]                      what this host offers, and which backend auto picks\n"
    "  pmon ps [--json] [-a]                     live calls (cgroup leaves) and their process trees\n"
    "  pmon gc [--dry-run] [-v]                  stop and remove the leaves of pmon processes that died\n"
    "  pmon serve [--stdio|--listen PATH]        background jobs with an owned lifetime (JSON-RPC)\n"
    "  pmon mcp                                  the same jobs as MCP tools on stdin/stdout, for any agent\n"
    "  pmon start [options] -- CMD [ARG...]      start CMD as a kept job of the service; prints its id\n"
    "  pmon jobs [--json] / logs ID [-f] / stop ID / wait ID   the service's jobs\n"
    "  pmon --version\n"
    "\n"
    "'pmon SUBCOMMAND --help' lists its options; 'pmon run --help' also the exit codes.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
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
  if (sub == "--") return pmon::cli::init_main(args);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "run") return pmon::cli::run_main(rest);
  if (sub == "init") return pmon::cli::init_main(rest);
  if (sub == "supervise") return pmon::cli::supervise_main(rest);
  if (sub == "gc") return pmon::cli::gc_main(rest);
  if (sub == "ps") return pmon::cli::ps_main(rest);
  if (sub == "doctor") return pmon::cli::doctor_main(rest);
  if (sub == "serve") return pmon::cli::serve_main(rest);
  if (sub == "mcp") return pmon::cli::mcp_main(rest);
  if (sub == "start") return pmon::cli::start_main(rest);
  if (sub == "jobs") return pmon::cli::jobs_main(rest);
  if (sub == "logs") return pmon::cli::logs_main(rest);
  if (sub == "stop") return pmon::cli::stop_main(rest);
  if (sub == "wait") return pmon::cli::wait_main(rest);
  if (sub == "__nsinit") return pmon::nsinit_main(rest);  // a pidns call's PID 1 (hidden)
  pmon::cli::die("unknown subcommand '" + sub + "'; see 'pmon --help'");
}
