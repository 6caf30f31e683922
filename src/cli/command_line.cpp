#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/cli.h"

namespace pmon::cli {

bool parse_options(CLI::App& app, const std::vector<std::string>& args, const std::string& sub) {
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them reversed
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    die(sub + ": " + e.what() + "; see 'pmon " + sub + " --help'");
  }
  return true;
}

std::optional<std::vector<std::string>> parse_command_line(CLI::App& app,
                                                           const std::vector<std::string>& args,
                                                           const std::string& sub) {
  if (!parse_options(app, args, sub)) return std::nullopt;
  std::vector<std::string> command = app.remaining();
  // prefix_command() stops at the first unknown word: before "--" an unknown
  // option would otherwise be run as the command (and exit 127).
  if (!command.empty() && command.front() != "--" && command.front().size() > 1 && command.front()[0] == '-')
    die(sub + ": unknown option '" + command.front() + "'; see 'pmon " + sub + " --help'");
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty()) die(sub + ": no command given; usage: pmon " + sub + " [options] -- CMD [ARG...]");
  return command;
}

}  // namespace pmon::cli
