// SPDX-License-Identifier: Apache-2.0
// The client verbs of pmon serve: jobs, logs, stop, wait, rm (start is in
// cli/start_cmd.cpp). Each is one or a few JSON-RPC requests on the
// service's socket.
#include "cli/jobs_client.h"

namespace pmon::cli {

using namespace jobs;

namespace {

// pmon wait's exit status when its --timeout passed and the job still runs:
// sysexits' EX_TEMPFAIL ("try again later"), none of the statuses pmon
// gives a job that has ended (124 is a job its own timeout stopped).
constexpr int kStillRunning = 75;
// The longest wait the service takes (terminal/wait_for_exit's timeoutMs).
constexpr int64_t kMaxWaitMs = int64_t{1} << 40;

}  // namespace

int jobs_main(const std::vector<std::string>& args) {
  CLI::App app{"List the jobs of the running pmon serve.", "pmon jobs"};
  app.footer("\nSTATUS is running, 'waiting for input' (blocked reading its stdin), stopping,\n"
             "'exited N' or 'killed SIGNAL'; PORTS the TCP ports the job's processes listen on.");
  bool json = false;
  SocketFlag sock;
  app.add_flag("--json", json, "the list as JSON");
  sock.add_to(app);
  if (!parse_options(app, args, "jobs")) return 0;
  Client c = sock.connect();
  Json r = c.call("terminal/list", Json::object());
  if (json) {
    std::printf("%s\n", r["terminals"].dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    return 0;
  }
  // One row of cells a job, the columns as wide as their widest cell.
  std::vector<std::vector<std::string>> rows{{"ID", "NAME", "STATUS", "PID", "PORTS", "STARTED", "COMMAND"}};
  for (const Json& t : r["terminals"]) {
    const std::string cmd = shell_line(t["command"]);
    rows.push_back({t["terminalId"].get<std::string>(), t["name"].is_string() ? printable(t["name"].get<std::string>()) : "-",
                    status_line(t), std::to_string(t.value("pid", 0)), ports_line(t),
                    t.value("started", std::string("-")), cmd});
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], columns_of(row[i]));
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - columns_of(row[i]) + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
  // The service's session: its envelope and what it has used.
  for (const Json& t : r["terminals"]) {
    auto s = t.find("session");
    if (s == t.end() || !s->is_object()) continue;
    auto mib = [](const Json& v) { return v.is_number() ? std::to_string(v.get<uint64_t>() >> 20) + " MiB" : std::string("-"); };
    const Json& env = (*s)["envelope"];
    const Json& use = (*s)["usage"];
    std::printf("session %s: memory.max %s, memory.high %s, pids.max %s; memory in use %s (peak %s), over memory.high "
                "%s times, OOM kills %s, forks refused %s times\n",
                printable((*s)["cgroup"].get<std::string>()).c_str(), mib(env["memoryMax"]).c_str(),
                mib(env["memoryHigh"]).c_str(), env["pidsMax"].dump().c_str(), mib(use["memoryCurrent"]).c_str(),
                mib(use["memoryPeak"]).c_str(), use["memoryEvents"]["high"].dump().c_str(),
                use["memoryEvents"]["oomKill"].dump().c_str(), use["pidsEventsMax"].dump().c_str());
    break;
  }
  return 0;
}

int logs_main(const std::vector<std::string>& args) {
  CLI::App app{"Print a job's output, the bytes as it wrote them (its newest within the job's limit).", "pmon logs"};
  app.footer("\nThe service also keeps each job's whole output in a file (its spool, up to\n"
             "--spool-limit): --head, --tail, --offset, --length, --grep, --strip-ansi and\n"
             "--max-line-bytes read from there, so they see the output from its first byte,\n"
             "and shape only what is printed. --offset and --length count bytes from the\n"
             "first byte the job wrote: --offset 100 --length 50 prints bytes 100 to 149\n"
             "(what is not UTF-8 there, or a character cut by the range, is printed as\n"
             "U+FFFD). With --grep they pick the lines that reach into that range.\n\n"
             "Values:\n  N         a whole number\n"
             "  REGEX     a regular expression (RE2 syntax, as in grep -E): '^error', 'fail(ed|ure)'\n");
  std::string id;
  bool follow = false;
  SocketFlag sock;
  app.add_option("ID", id, "the job's id ('pmon jobs' lists them)")->type_name("")->required();
  app.add_flag("-f,--follow", follow, "keep printing new output until the job ends");
  uint64_t head = 0, tail = 0, max_line = 0, offset = 0, length = 0;
  std::string grep;
  bool strip = false;
  CLI::Option* head_opt =
      app.add_option("--head", head, "the first N bytes of the whole output (with --tail: both, the middle left out)")
          ->type_name("N");
  CLI::Option* tail_opt = app.add_option("--tail", tail, "the last N bytes of the whole output")->type_name("N");
  CLI::Option* offset_opt =
      app.add_option("--offset", offset, "start at byte N of the whole output (0: its first byte)")->type_name("N");
  CLI::Option* length_opt =
      app.add_option("--length", length, "at most N bytes, from --offset (else from the first byte)")->type_name("N");
  CLI::Option* grep_opt =
      app.add_option("--grep", grep, "only the lines that match REGEX (RE2 syntax), each after its line number")
          ->type_name("REGEX");
  app.add_flag("--strip-ansi", strip, "remove ANSI escapes (colours) and carriage-return progress redraws");
  CLI::Option* line_opt =
      app.add_option("--max-line-bytes", max_line, "cut lines longer than N bytes, saying how much was cut")
          ->type_name("N");
  sock.add_to(app);
  if (!parse_options(app, args, "logs")) return 0;
  check_job_id("logs", id);
  const bool range = offset_opt->count() || length_opt->count();
  const bool view =
      head_opt->count() || tail_opt->count() || range || grep_opt->count() || strip || line_opt->count();
  if (view && follow)
    die("logs: -f goes with none of --head, --tail, --offset, --length, --grep, --strip-ansi, --max-line-bytes");
  if (line_opt->count() && max_line == 0) die("logs: --max-line-bytes must be at least 1");
  if (length_opt->count() && length == 0) die("logs: --length must be at least 1");
  if (range && (head_opt->count() || tail_opt->count()))
    die("logs: --offset and --length go with neither --head nor --tail");
  // (the service counts bytes in a signed 64-bit number)
  constexpr uint64_t kMaxByte = uint64_t{1} << 62;
  if (offset > kMaxByte) die("logs: --offset: '" + std::to_string(offset) + "' is past any job's output");
  length = std::min(length, kMaxByte);
  if (grep_opt->count() && (head_opt->count() || tail_opt->count()))
    die("logs: --grep goes with neither --head nor --tail");
  Client c = sock.connect();
  if (view) {
    // The whole output as the service keeps it on disk (its spool), shaped
    // there; a long one read in pages.
    Json p = {{"terminalId", id}};
    if (head_opt->count()) p["head"] = head;
    if (tail_opt->count()) p["tail"] = tail;
    if (grep_opt->count()) p["grep"] = grep;
    if (strip) p["stripAnsi"] = true;
    if (line_opt->count()) p["maxLineBytes"] = max_line;
    if (offset_opt->count()) p["offset"] = offset;
    if (length_opt->count()) p["length"] = length;
    const uint64_t range_end = offset + length;  // with --length: where the range ends
    for (bool first = true;; first = false) {
      Json r = c.call("terminal/output", p);
      if (first && r.value("truncated", false))
        std::fprintf(stderr, "pmon: logs: the output before byte %llu is no longer kept\n",
                     static_cast<unsigned long long>(r.value("from", uint64_t{0})));
      const std::string& text = r["output"].get_ref<const std::string&>();
      std::fwrite(text.data(), 1, text.size(), stdout);
      if (!r.value("more", false) || r.contains("matches")) {
        if (r.contains("matches") && r.value("more", false))
          std::fprintf(stderr, "pmon: logs: %llu lines matched; the first %llu are shown\n",
                       static_cast<unsigned long long>(r.value("matches", uint64_t{0})),
                       static_cast<unsigned long long>(r.value("shown", uint64_t{0})));
        std::fflush(stdout);
        return 0;
      }
      // The next page: from where this one ended, to the same end.
      const uint64_t next = r["next"].get<uint64_t>();
      p["offset"] = next;
      if (length_opt->count()) {
        if (next >= range_end) return std::fflush(stdout), 0;
        p["length"] = range_end - next;
      }
    }
  }
  Json p = {{"terminalId", id}};
  bool streams = true;
  for (;;) {
    if (streams) {
      // The bytes as the job wrote them, through a pipe the service writes
      // into (no JSON on the way), to the end of the job's output or to
      // where the service could not go on: bytes dropped before they were
      // read, said by the read below.
      Json sp = p;
      sp.erase("waitMs");
      sp["stream"] = true;
      if (!follow) sp["follow"] = false;
      Fd pipe;
      Json r = c.call("terminal/output", sp, &pipe);
      if (r.value("stream", false) && pipe) {
        const uint64_t n = copy_to_stdout(pipe.get());
        if (!follow) return 0;
        p["since"] = r["since"].get<uint64_t>() + n;
        p.erase("waitMs");
      } else {
        streams = false;  // a service that does not stream answered with text
        p = {{"terminalId", id}};
      }
    }
    Json r = c.call("terminal/output", p);
    const std::string& text = r["output"].get_ref<const std::string&>();
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    // A reply carries a bounded part of what is kept (`more`: read on).
    // Over, and nothing came since: all is read (a job made with
    // outputBackpressure can end with output still to read).
    const bool more = r.value("more", false);
    if ((!follow && !more) || (!r["exitStatus"].is_null() && text.empty() && !more)) return 0;
    p["since"] = r["next"];
    if (!streams && !more) p["waitMs"] = 60'000;
    else p.erase("waitMs");
  }
}

int stop_main(const std::vector<std::string>& args) {
  CLI::App app{"Stop a job and everything it started (its output stays readable).", "pmon stop"};
  app.footer("\nA job that has already ended is left as it is, and pmon says so. --name and\n"
             "--port look only among the service's jobs, never at other processes. Exit 0\n"
             "when the job is confirmed gone, 125 otherwise.");
  std::string id, name;
  int port = 0;
  SocketFlag sock;
  CLI::Option* id_opt = app.add_option("ID", id, "the job's id ('pmon jobs' lists them)")->type_name("");
  CLI::Option* name_opt = app.add_option("--name", name, "the running job of this name")->type_name("NAME");
  CLI::Option* port_opt =
      app.add_option("--port", port, "the running job one of whose processes listens on this TCP port (1-65535)")
          ->type_name("PORT");
  sock.add_to(app);
  if (!parse_options(app, args, "stop")) return 0;
  if (port_opt->count() > 0 && (port < 1 || port > 65535))
    die("stop: --port: '" + std::to_string(port) + "' is not a TCP port; give one from 1 to 65535");
  const bool by_find = name_opt->count() > 0 || port_opt->count() > 0;
  if (id_opt->count() == 0 && !by_find) die("stop: give the job's ID, or --name NAME or --port PORT");
  if (id_opt->count() > 0 && by_find) die("stop: give the job's ID alone, or --name or --port instead of it");
  Client c = sock.connect();
  if (by_find) {
    Json q = Json::object();
    if (name_opt->count() > 0) q["name"] = name;
    if (port_opt->count() > 0) q["port"] = port;
    id = c.call("terminal/find", q)["terminalId"].get<std::string>();
  }
  check_job_id("stop", id);
  Json ended;
  if (!job_running(c, id, &ended)) {
    std::fprintf(stderr, "pmon: job %s %s; nothing to stop\n", id.c_str(), ended_words(c, id, ended).c_str());
    return 0;
  }
  Json r = c.call("terminal/kill", {{"terminalId", id}});
  if (!r.value("cleanupVerified", false)) {
    std::fprintf(stderr, "pmon: stop: could not confirm that everything job %s started is gone\n", id.c_str());
    return 125;
  }
  return 0;
}

int wait_main(const std::vector<std::string>& args) {
  CLI::App app{"Wait for a job to end; exits with its status, as pmon run would.", "pmon wait"};
  app.footer(std::string("\nExit status: the job's own exit code; 128+N when it died by signal N (143\n"
                         "after 'pmon stop'); 124 when the --timeout or --idle-timeout it was started\n"
                         "with stopped it; 125 when what it started could not be confirmed gone; 126 or\n"
                         "127 when its command could not be run. 75 when the --timeout of pmon wait\n"
                         "passed first: the job goes on running, and one line on stderr says so and how\n"
                         "to wait again (a job can exit 75 itself: that line, or 'pmon jobs', tells the\n"
                         "two apart).\n\nValues:\n") +
             kDurationWords);
  std::string id, timeout_s;
  SocketFlag sock;
  app.add_option("ID", id, "the job's id ('pmon jobs' lists them)")->type_name("")->required();
  CLI::Option* timeout_opt =
      app.add_option("--timeout", timeout_s,
                     "wait at most DURATION; if the job is still running then, exit 75 and leave it running "
                     "(0: no limit)")
          ->type_name("DURATION");
  sock.add_to(app);
  if (!parse_options(app, args, "wait")) return 0;
  check_job_id("wait", id);
  Json params = {{"terminalId", id}};
  if (timeout_opt->count() > 0) {
    auto d = parse_duration(timeout_s);
    if (!d) die("wait: --timeout: " + describe_duration_error(timeout_s, d.error()));
    // 0: no limit, as pmon run's --timeout; a part of a millisecond is one;
    // past what the service takes (34 years), no limit either.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*d).count();
    if (ms > 0 && ms <= kMaxWaitMs) params["timeoutMs"] = ms;
  }
  Client c = sock.connect();
  Json r = c.call("terminal/wait_for_exit", params);
  if (r.value("running", false)) {
    std::fprintf(stderr, "pmon: job %s is still running after %s; wait again with 'pmon wait %s'\n", id.c_str(),
                 timeout_s.c_str(), id.c_str());
    return kStillRunning;
  }
  // The report's exit status is pmon run's: 124 for a timeout, 125 for a
  // tree not confirmed gone, where the bare exit status would say 143.
  if (auto rep = c.try_call("terminal/report", {{"terminalId", id}}); rep && (*rep)["exit_status"].is_number_integer())
    return (*rep)["exit_status"].get<int>();
  if (r["exitCode"].is_number()) return r["exitCode"].get<int>();
  if (r["signal"].is_string())
    if (auto s = parse_signal(r["signal"].get<std::string>())) return 128 + *s;
  return 125;
}

int rm_main(const std::vector<std::string>& args) {
  CLI::App app{"Remove jobs that have ended: their output and report are forgotten.", "pmon rm"};
  app.footer("\nA job that still runs is refused unless -f is given; then it is stopped first,\n"
             "with everything it started. Removed jobs no longer count against the service's\n"
             "--max-jobs. Exit 0 when every job was removed, 125 otherwise.");
  std::vector<std::string> ids;
  bool force = false;
  SocketFlag sock;
  app.add_option("ID", ids, "the jobs' ids ('pmon jobs' lists them)")->type_name("")->required();
  app.add_flag("-f,--force", force, "stop a job that still runs, then remove it");
  sock.add_to(app);
  if (!parse_options(app, args, "rm")) return 0;
  for (const std::string& id : ids) check_job_id("rm", id);
  Client c = sock.connect();
  int rc = 0;
  for (const std::string& id : ids) {
    Json ended;
    auto running = c.try_call("terminal/wait_for_exit", {{"terminalId", id}, {"timeoutMs", 0}});
    if (!running) {
      std::fprintf(stderr, "pmon: rm: %s\n", running.error().c_str());
      rc = 125;
      continue;
    }
    if (running->value("running", false) && !force) {
      std::fprintf(stderr, "pmon: rm: job %s is still running; stop it first ('pmon stop %s') or use 'pmon rm -f'\n",
                   id.c_str(), id.c_str());
      rc = 125;
      continue;
    }
    auto r = c.try_call("terminal/release", {{"terminalId", id}});
    if (!r) {
      std::fprintf(stderr, "pmon: rm: %s\n", r.error().c_str());
      rc = 125;
    } else if (!r->value("cleanupVerified", false)) {
      std::fprintf(stderr, "pmon: rm: could not confirm that everything job %s started is gone\n", id.c_str());
      rc = 125;
    }
  }
  return rc;
}

}  // namespace pmon::cli
