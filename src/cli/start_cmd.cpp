// SPDX-License-Identifier: Apache-2.0
// pmon start: a job of pmon serve, started in this directory and
// environment, its id printed (once it is ready, with a readiness probe).
#include <map>
#include <string>

#include "cli/call_flags.h"
#include "cli/jobs_client.h"
#include "serve/fields.h"

extern char** environ;

namespace pmon::cli {

using namespace jobs;

int start_main(const std::vector<std::string>& args) {
  CLI::App app{"Start CMD as a background job of the running pmon serve; prints its id.", "pmon start"};
  app.footer(std::string("\nThe job outlives this command, in this directory and environment: 'pmon stop ID'\n"
                         "stops it and everything it started, 'pmon rm ID' removes it once it has ended.\n"
                         "Started from inside a pmon call, it belongs to that call and is stopped when\n"
                         "the call ends. Its stdin is /dev/null (with --pty, the terminal): a command that\n"
                         "reads it gets end of file at once, never waits.\n\n"
                         "With --ready-port, --ready-http or --ready-line, pmon start waits until the job\n"
                         "is ready, then prints its id and exits 0. When the job ends first, or is not\n"
                         "ready within --ready-timeout (default 30s; the job then runs on), it prints the\n"
                         "id, says why on stderr and exits 1.\n\n"
                         "--memory-max, --memory-high, --pids-max and --cpu-max are set on the job's\n"
                         "cgroup by the service. A limit the service cannot set there (its cgroup has\n"
                         "no such controller) is refused: nothing is started, one line says why, exit\n"
                         "125.\n\nValues:\n") +
             kDurationWords + kSizeWords +
             "  REGEX     a regular expression, RE2 syntax (no backreferences), found anywhere in\n"
             "            a line: ^ and $ anchor it to the line's start and end\n");
  app.prefix_command();
  std::string name, idle_s, ready_http, ready_line, ready_timeout_s;
  CallFlags flags;
  int ready_port = 0;
  bool pty = false, replace = false;
  SocketFlag sock;
  app.add_option("--name", name,
                 "a name for the job (pmon jobs shows it); while a job of that name runs, its id is printed "
                 "and nothing new is started")
      ->type_name("NAME");
  app.add_flag("--replace", replace,
               "with --name: stop the running job of that name (and all it started, confirmed gone), then start "
               "CMD");
  flags.add_timeout(app, "the job");
  CLI::Option* idle_opt =
      app.add_option("--idle-timeout", idle_s,
                     "stop the job and everything it started when it has printed nothing for DURATION")
          ->type_name("DURATION");
  app.add_flag("--pty", pty, "run the job on a pseudo-terminal (24x80)");
  flags.limits.add_to(app, /*default_pids=*/true, "job");
  CLI::Option* ready_port_opt =
      app.add_option("--ready-port", ready_port, "wait until a process of the job listens on TCP port PORT")
          ->type_name("PORT")
          ->check(CLI::Range(1, 65535).description(""));
  CLI::Option* ready_http_opt =
      app.add_option("--ready-http", ready_http,
                     "wait until an HTTP GET of PATH on 127.0.0.1 answers 2xx (on --ready-port, or the first port "
                     "the job listens on)")
          ->type_name("PATH");
  CLI::Option* ready_line_opt =
      app.add_option("--ready-line", ready_line,
                     "wait until a line of the job's output matches the regular expression REGEX (RE2 syntax)")
          ->type_name("REGEX");
  CLI::Option* ready_timeout_opt =
      app.add_option("--ready-timeout", ready_timeout_s, "how long to wait for the job to be ready (default 30s)")
          ->type_name("DURATION");
  sock.add_to(app);
  auto command = parse_command_line(app, args, "start");
  if (!command) return 0;
  // The service is sent text only (JSON): anything else is refused here,
  // by name, rather than sent changed.
  for (size_t i = 0; i < command->size(); ++i)
    if (!is_text((*command)[i]))
      die("start: " + (i == 0 ? std::string("the command name") : "argument " + std::to_string(i) + " of the command") +
          ", '" + shown((*command)[i]) + "', is not valid UTF-8; the service takes text only (pmon run takes any bytes)");
  if (!is_text(name)) die("start: --name '" + shown(name) + "' is not valid UTF-8; give a name in text");
  Json p = {{"command", command->front()},
            {"args", std::vector<std::string>(command->begin() + 1, command->end())},
            {"keep", true}};
  if (!name.empty()) p["name"] = name;
  if (replace && name.empty()) die("start: --replace needs --name: the job it replaces is the one of that name");
  if (replace) p["replace"] = true;
  // (as given: the service's own reading says what 0 means)
  if (auto d = flags.given_timeout("start")) p["timeoutMs"] = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
  if (idle_opt->count() > 0) {
    auto d = parse_duration(idle_s);
    if (!d) die("start: --idle-timeout: " + describe_duration_error(idle_s, d.error()));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
    if (ms < 1) die("start: --idle-timeout: '" + idle_s + "' is under a millisecond; give a longer DURATION");
    p["idleTimeoutMs"] = ms;
  }
  // Sent as terminal/create's fields: bytes, processes, cores.
  const Limits l = flags.limits.parse("start");
  if (l.memory_max) p["memoryMax"] = *l.memory_max;
  if (l.memory_high) p["memoryHigh"] = *l.memory_high;
  if (l.pids_max) p["pidsMax"] = *l.pids_max;
  if (l.cpu_max) p["cpuMax"] = *l.cpu_max;
  if (pty) p["pty"] = {{"rows", 24}, {"cols", 80}};
  else p["stdin"] = "null";  // nothing here writes to it: a read gets end of file, never waits
  const bool probe = ready_port_opt->count() + ready_http_opt->count() + ready_line_opt->count() > 0;
  if (probe) {
    if (ready_line_opt->count() > 0 && (ready_port_opt->count() > 0 || ready_http_opt->count() > 0))
      die("start: --ready-line goes alone: give --ready-line, --ready-port, --ready-http, or --ready-port with "
          "--ready-http");
    if (!is_text(ready_http) || !is_text(ready_line))
      die("start: --ready-http and --ready-line must be valid UTF-8");
    Json ready = Json::object();
    if (ready_port_opt->count() > 0) ready["port"] = ready_port;
    if (ready_http_opt->count() > 0) ready["http"] = ready_http;
    if (ready_line_opt->count() > 0) ready["line"] = ready_line;
    if (ready_timeout_opt->count() > 0) {
      auto d = parse_duration(ready_timeout_s);
      if (!d) die("start: --ready-timeout: " + describe_duration_error(ready_timeout_s, d.error()));
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
      if (ms < 1) die("start: --ready-timeout: '" + ready_timeout_s + "' is under a millisecond; give a longer DURATION");
      ready["timeoutMs"] = ms;
    }
    p["ready"] = ready;
    // The probe read here as the service reads it: what it refuses is said
    // of the flag that gave the field.
    serve::FieldReader check(p);
    (void)check.ready("ready");
    if (const auto& bad = check.problem()) {
      static const std::map<std::string, std::string> kFlags = {{"ready.port", "--ready-port"},
                                                                {"ready.http", "--ready-http"},
                                                                {"ready.line", "--ready-line"},
                                                                {"ready.timeoutMs", "--ready-timeout"}};
      auto flag = kFlags.find(bad->field);
      die("start: " + (flag != kFlags.end() ? flag->second + " " + bad->why : *check.error()));
    }
  } else if (ready_timeout_opt->count() > 0) {
    die("start: --ready-timeout needs --ready-port, --ready-http or --ready-line: what ready means");
  }
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd)) {
    if (!is_text(cwd))
      die("start: the current directory " + shown(cwd) +
          " is not valid UTF-8; the service takes text only: start the job from a directory whose path is");
    p["cwd"] = cwd;
  }
  Json env = Json::array();
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    if (!is_text(kv)) {
      const std::string var = shown(kv.substr(0, eq));
      die("start: the environment variable " + var +
          " is not valid UTF-8; the service takes text only: leave it out with 'env -u " + var + " pmon start ...'");
    }
    env.push_back({{"name", kv.substr(0, eq)}, {"value", kv.substr(eq + 1)}});
  }
  p["env"] = env;
  Client c = sock.connect();
  // (a limit the service's cgroup cannot take is refused in the service's
  // words for its clients: its --cgroup-root, or this job without the limit)
  auto created = c.try_call("terminal/create", p);
  if (!created) die(created.error());
  Json r = std::move(*created);
  const std::string id = r["terminalId"].get<std::string>();
  if (r.value("existing", false))
    std::fprintf(stderr, "pmon: job %s named '%s' is already running; nothing new was started (--replace starts "
                 "CMD in its place)\n", id.c_str(), name.c_str());
  std::printf("%s\n", id.c_str());
  if (r.value("ready", true)) return 0;
  std::fflush(stdout);
  std::fprintf(stderr, "pmon: job %s is not ready: %s\n", id.c_str(),
               r.value("readyError", std::string("it is not ready")).c_str());
  return 1;
}

}  // namespace pmon::cli
