// SPDX-License-Identifier: Apache-2.0
// The command line: parsing and printing only; the work is in libpmon.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pmon {
struct Selection;
}

namespace pmon::cli {

// What the values in the help texts are (DURATION, SIZE, ...), one line
// or a few each, for the footers of the subcommands whose options take them.
inline constexpr const char* kDurationWords = "  DURATION  a time: 500ms, 2s, 1.5m, 1h; a bare number is seconds\n";
inline constexpr const char* kSizeWords =
    "  SIZE      bytes, or a whole number with K, M, G or T (powers of 1024: 512M)\n"
    "  N         a whole number\n"
    "  CORES     a number of CPUs: 0.5 is half of one, 1.5 one and a half\n";
inline constexpr const char* kSignalWords = "  SIGNAL    a name or number: TERM, INT, HUP, 15\n";
inline constexpr const char* kBackendWords =
    "  BACKEND   how pmon holds a call's processes together, strongest first:\n"
    "              cgroup     a cgroup of its own, created for the call; every process\n"
    "                         the call starts is in it, and it is killed whole\n"
    "              pidns      a PID namespace of its own, under an init of pmon's\n"
    "              subreaper  pmon adopts the call's orphans and stops what is left\n"
    "              pgroup     a process group only (a daemon that calls setsid gets out)\n"
    "              auto       the strongest this host offers ('pmon doctor' says which)\n";

// Exit code 125 and one line on stderr: how every pmon error ends.
[[noreturn]] void die(const std::string& line);

// Parses a subcommand's options; false after --help was printed. Bad input
// ends with die(), naming the subcommand.
bool parse_options(CLI::App& app, const std::vector<std::string>& args, const std::string& sub);

// Parses the options of a subcommand that ends in "[--] CMD [ARG...]" (the
// app is a prefix_command()). Returns the command, or nothing after --help
// was printed; bad input ends with die(): an unknown option, no command.
std::optional<std::vector<std::string>> parse_command_line(CLI::App& app,
                                                           const std::vector<std::string>& args,
                                                           const std::string& sub);

// What --confine auto passed over, told as the chosen backend deserves: a
// backend as strong against escapes (cgroup, pidns) only under -v (the
// report and 'pmon doctor' say it too); a weaker one (subreaper, pgroup)
// in one short warning line unless -q; -v gives every reason in full.
void report_passed_over(const Selection& sel, bool verbose, bool quiet);

// How pmon run is asked for: as 'pmon run', or for pmon-shell ('pmon
// shell'), which always dies with its parent and says nothing unless the
// command left something running.
struct RunFront {
  bool shell = false;
};
int run_main(const std::vector<std::string>& args, const RunFront& front = {});
int shell_main(const std::vector<std::string>& args);
int hook_rewrite_main(const std::vector<std::string>& args);
int init_main(const std::vector<std::string>& args);
int supervise_main(const std::vector<std::string>& args);
int gc_main(const std::vector<std::string>& args);
int ps_main(const std::vector<std::string>& args);
int doctor_main(const std::vector<std::string>& args);
int serve_main(const std::vector<std::string>& args);
int mcp_main(const std::vector<std::string>& args);
int start_main(const std::vector<std::string>& args);
int jobs_main(const std::vector<std::string>& args);
int logs_main(const std::vector<std::string>& args);
int stop_main(const std::vector<std::string>& args);
int wait_main(const std::vector<std::string>& args);
int rm_main(const std::vector<std::string>& args);

// pmon sandboxd: its options checked (cli/sandboxd_flags.h), then the
// program that serves, pmon-sandboxd, run in pmon's place.
int sandboxd_main(const std::vector<std::string>& args);

}  // namespace pmon::cli
