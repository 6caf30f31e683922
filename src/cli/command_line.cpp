// SPDX-License-Identifier: Apache-2.0
#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>

#include "cli/cli.h"
#include "confine/boundary.h"

namespace pmon::cli {

namespace {

// CLI11's usage line, plus "-- CMD [ARG...]" for the subcommands that run one.
class Formatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string line = CLI::Formatter::make_usage(app, std::move(name));
    if (app->get_prefix_command() && !line.empty() && line.back() == '\n')
      line.insert(line.size() - 1, " -- CMD [ARG...]");
    return line;
  }
};

bool is_flag(const CLI::Option* o) { return o->get_expected_min() == 0; }

// An option or positional that takes a list (pmon rm ID...): given once, many values.
bool is_list(const CLI::Option* o) { return o->get_expected_max() > 1; }

bool looks_like_option(const std::string& w) { return w.size() > 1 && w[0] == '-'; }

// The option a CLI11 message is about: the text before its first ": ".
std::string subject_of(const std::string& what) {
  size_t colon = what.find(": ");
  return colon == std::string::npos ? std::string() : what.substr(0, colon);
}

// CLI11's own words for a parse error, in pmon's: one line naming the
// option and what is wrong with it.
std::string translate(const CLI::ParseError& e, const CLI::App& app) {
  const std::string what = e.what();
  const std::string name = subject_of(what);
  // A count of values that does not fit the option: with each option
  // given at most once (prepare()), one that takes a value was given none.
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && !name.empty()) {
    const CLI::Option* o = app.get_option_no_throw(name);
    if (o != nullptr) return name + (is_flag(o) ? " takes no value" : " needs a value");
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    // "Could not convert: NAME = VALUE", or a flag that was given a value.
    const std::string kConvert = "Could not convert: ";
    if (what.rfind(kConvert, 0) == 0) {
      std::string rest = what.substr(kConvert.size());
      size_t eq = rest.find(" = ");
      if (eq != std::string::npos) return rest.substr(0, eq) + ": '" + rest.substr(eq + 3) + "' is not a valid value";
    }
    if (!name.empty()) return name + " takes no value";
  }
  // "ID is required": a positional argument that was not given.
  const std::string kRequired = " is required";
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && what.ends_with(kRequired))
    return "no " + what.substr(0, what.size() - kRequired.size()) + " given";
  // A sentence starts lower case after "pmon: sub: ", a name (ID, PATH) as it is.
  std::string s = what;
  if (s.size() > 1 && std::isupper(static_cast<unsigned char>(s[0])) &&
      std::islower(static_cast<unsigned char>(s[1])))
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

// Before parsing: pmon's usage line, and a repeated option kept for pmon to
// refuse by name rather than CLI11's "At Most 1 required but received 2".
// (Each option names its value itself: DURATION, SIZE, N, never CLI11's
// TEXT or UINT.)
void prepare(CLI::App& app) {
  app.formatter(std::make_shared<Formatter>());
  app.allow_extras();
  for (CLI::Option* o : app.get_options()) {
    if (is_flag(o) || is_list(o) || o->get_name() == "--help") continue;
    o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

}  // namespace

bool parse_options(CLI::App& app, const std::vector<std::string>& args, const std::string& sub) {
  prepare(app);
  const std::string see = "; see 'pmon " + sub + " --help'";
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them reversed
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    die(sub + ": " + translate(e, app) + see);
  }
  for (const CLI::Option* o : app.get_options()) {
    if (!is_flag(o) && !is_list(o) && o->count() > 1)
      die(sub + ": " + o->get_name() + " was given " + std::to_string(o->count()) + " times; give it once" + see);
  }
  // -v and -q say opposite things: refused rather than one silently winning.
  const CLI::Option* v = app.get_option_no_throw("--verbose");
  const CLI::Option* q = app.get_option_no_throw("--quiet");
  if (v != nullptr && q != nullptr && v->count() > 0 && q->count() > 0)
    die(sub + ": -v (--verbose) and -q (--quiet) cannot be used together" + see);
  // A subcommand without a command of its own takes no words but options.
  if (!app.get_prefix_command()) {
    std::vector<std::string> extra = app.remaining();
    if (!extra.empty() && extra.front() == "--") extra.erase(extra.begin());  // "pmon ps --" is just ps
    if (!extra.empty()) {
      if (looks_like_option(extra.front())) die(sub + ": unknown option '" + extra.front() + "'" + see);
      die(sub + ": unexpected argument '" + extra.front() + "' (pmon " + sub + " takes options only)" + see);
    }
  }
  return true;
}

void report_passed_over(const Selection& sel, bool verbose, bool quiet) {
  const std::string chosen(to_string(sel.backend->kind()));
  if (sel.session_note && !quiet) std::fprintf(stderr, "pmon: note: %s\n", render(*sel.session_note).c_str());
  if (verbose)
    if (const confine::SessionCgroup* s = sel.backend->session())
      std::fprintf(stderr, "pmon: session %s in %s (%s), %s\n", s->key().describe().c_str(), s->path().c_str(),
                   describe(s->envelope()).c_str(), s->joined() ? "joined" : "made");
  if (verbose) {
    for (const Error& why : sel.passed_over)
      std::fprintf(stderr, "pmon: %s; falling back to %s\n", render(why).c_str(), chosen.c_str());
    return;
  }
  const ConfineKind k = sel.backend->kind();
  if (quiet || sel.passed_over.empty() || k == ConfineKind::cgroup || k == ConfineKind::pidns) return;
  const std::vector<ConfineKind>& over = sel.passed_over_kinds;
  std::string names;
  for (size_t i = 0; i < over.size(); ++i) {
    if (i > 0) names += i + 1 == over.size() ? " and " : ", ";
    names += to_string(over[i]);
  }
  std::fprintf(stderr, "pmon: warning: %s %s unavailable here; using the weaker %s backend (see 'pmon doctor')\n",
               names.c_str(), over.size() == 1 ? "is" : "are", chosen.c_str());
}

std::optional<std::vector<std::string>> parse_command_line(CLI::App& app,
                                                           const std::vector<std::string>& args,
                                                           const std::string& sub) {
  if (!parse_options(app, args, sub)) return std::nullopt;
  std::vector<std::string> command = app.remaining();
  // prefix_command() stops at the first unknown word: before "--" an unknown
  // option would otherwise be run as the command (and exit 127).
  if (!command.empty() && command.front() != "--" && looks_like_option(command.front()))
    die(sub + ": unknown option '" + command.front() + "'; see 'pmon " + sub + " --help'");
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty()) die(sub + ": no command given; usage: pmon " + sub + " [options] -- CMD [ARG...]");
  return command;
}

}  // namespace pmon::cli
