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

int run_main(const std::vector<std::string>& args);
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

}  // namespace pmon::cli
