// SPDX-License-Identifier: Apache-2.0
// The client verbs of pmon serve: start, jobs, logs, stop, wait, rm. Each
// is one or a few JSON-RPC requests on the service's socket.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/units.h"
#include "serve/json_text.h"
#include "serve/output_buffer.h"
#include "serve/socket.h"

extern char** environ;

namespace pmon::cli {

namespace {

using Json = nlohmann::json;

// JSON carries text only: what the service is sent must be valid UTF-8.
bool is_text(std::string_view s) { return serve::valid_utf8_prefix(s) == s.size(); }

// `s` for a line of pmon's: each byte that is not UTF-8 as \xNN.
std::string shown(std::string_view s) {
  std::string out;
  for (;;) {
    const size_t ok = serve::valid_utf8_prefix(s);
    out.append(s.substr(0, ok));
    if (ok == s.size()) return out;
    char b[8];
    std::snprintf(b, sizeof b, "\\x%02X", static_cast<unsigned char>(s[ok]));
    out += b;
    s.remove_prefix(ok + 1);
  }
}

// The service's error line in the CLI's words: the protocol says
// "terminal", the CLI "job", and what the CLI offers to do about it.
std::string cli_words(const std::string& message) {
  const std::string kUnknown = "unknown terminal ";
  if (message.starts_with(kUnknown))
    return "no job " + message.substr(kUnknown.size()) + " on this service; 'pmon jobs' lists them";
  const std::string kRelease = "; release some first";
  if (message.starts_with("too many jobs") && message.ends_with(kRelease))
    return message.substr(0, message.size() - kRelease.size()) +
           "; remove jobs that have ended with 'pmon rm ID' ('pmon jobs' lists them), or start the service with "
           "a larger --max-jobs";
  const std::string kNone = "no running terminal of yours";
  if (message.starts_with(kNone))
    return "no running job" + message.substr(kNone.size()) + " on this service; 'pmon jobs' lists them";
  const std::string kTerminal = "terminal '";
  if (message.starts_with(kTerminal)) return "job '" + message.substr(kTerminal.size());
  return message;
}

// A job id from the command line is text, or die() names `sub`.
void check_job_id(const std::string& sub, const std::string& id) {
  if (!is_text(id)) die(sub + ": '" + shown(id) + "' is not a job id (it is not valid UTF-8); 'pmon jobs' lists them");
}

// One blocking connection to the service.
class Client {
 public:
  Client(const std::string& socket, bool explicit_path) : path_(socket) {
    auto fd = serve::connect_service(socket, !explicit_path);
    if (!fd && fd.error().untrusted) {
      // Nothing was sent: the request holds the whole environment.
      const char* xdg = std::getenv("XDG_RUNTIME_DIR");
      const std::string fix = explicit_path   ? "give --socket (or PMON_SOCKET) a path in a directory only you can write"
                              : xdg && *xdg ? "remove it and start the service again"
                                            : "remove it or set XDG_RUNTIME_DIR";
      die(fd.error().subject + " " + fd.error().what + ": another user may be impersonating the service; " + fix);
    }
    if (!fd)
      die("no service answers on " + socket + " (" + fd.error().what + "); start one with 'pmon serve" +
          (explicit_path ? " --listen " + socket : std::string()) + " &'");
    fd_ = std::move(*fd);
  }

  // The result of `method`, or die() with the service's error line; an fd
  // that came with the reply is put in *passed.
  Json call(const std::string& method, const Json& params, Fd* passed = nullptr) {
    auto r = try_call(method, params, passed);
    if (!r) die(r.error());
    return std::move(*r);
  }

  // The same, but the service's error line (in the CLI's words) is returned.
  std::expected<Json, std::string> try_call(const std::string& method, const Json& params, Fd* passed = nullptr) {
    fds_.clear();
    const int id = next_id_++;
    std::string line = Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() + "\n";
    for (size_t off = 0; off < line.size();) {
      ssize_t n = ::write(fd_.get(), line.data() + off, line.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) die("the service on " + path_ + " closed the connection");
      off += static_cast<size_t>(n);
    }
    for (;;) {
      Json msg = read_message();
      if (!msg.contains("id") || msg["id"] != id) continue;  // a notification
      if (msg.contains("error")) return std::unexpected(cli_words(msg["error"].value("message", std::string("error"))));
      if (passed && !fds_.empty()) *passed = std::move(fds_.front());
      fds_.clear();
      return std::move(msg["result"]);
    }
  }

 private:
  // The next message; a reply can be megabytes (a job's output), so the
  // newline is looked for in what came since, and the text is read with
  // the fast reader.
  Json read_message() {
    for (;;) {
      char* nl = len_ > scanned_ ? static_cast<char*>(std::memchr(buf_.data() + scanned_, '\n', len_ - scanned_))
                                 : nullptr;
      if (nl) {
        const size_t end = static_cast<size_t>(nl - buf_.data());
        Json j = serve::parse_json(std::string_view(buf_.data() + start_, end - start_));
        start_ = scanned_ = end + 1;
        if (start_ == len_) len_ = start_ = scanned_ = 0;
        if (!j.is_discarded()) return j;
        continue;
      }
      scanned_ = len_;
      if (start_ > 0) {  // what was parsed goes before reading more
        std::memmove(buf_.data(), buf_.data() + start_, len_ - start_);
        len_ -= start_;
        scanned_ = len_;
        start_ = 0;
      }
      if (buf_.size() < len_ + kReadSize) buf_.resize(std::max(2 * buf_.size(), len_ + kReadSize));
      ssize_t n = receive(buf_.data() + len_, kReadSize);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) die("the service on " + path_ + " closed the connection");
      len_ += static_cast<size_t>(n);
    }
  }

  // read(2), keeping the fds that come along (the service passes one with
  // a stream's reply, and never more than one a message).
  ssize_t receive(char* into, size_t len) {
    iovec iov{into, len};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) return n;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
        fds_.emplace_back(fd);
      }
    }
    return n;
  }

  static constexpr size_t kReadSize = size_t{1} << 20;
  std::deque<Fd> fds_;  // came with the messages read for the current call
  std::string path_;
  Fd fd_;
  std::vector<char> buf_;  // what came: its first len_ bytes
  size_t len_ = 0;
  size_t start_ = 0;    // where the next message begins in buf_
  size_t scanned_ = 0;  // no newline in buf_ before this
  int next_id_ = 1;
};

// --socket PATH, else $PMON_SOCKET, else the default.
struct SocketFlag {
  std::string path;
  CLI::Option* opt = nullptr;
  void add_to(CLI::App& app) {
    opt = app.add_option("--socket", path, "the service's socket (default $PMON_SOCKET, else the default path)")->type_name("PATH");
  }
  Client connect() const {
    bool given = opt->count() > 0 || std::getenv("PMON_SOCKET") != nullptr;
    return Client(opt->count() > 0 ? path : serve::default_socket_path(true), given);
  }
};

// How many columns `s` takes on a terminal: one a character (names and
// commands are UTF-8; wide characters are rare enough to ignore).
size_t columns_of(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
}

// A command as one line a shell would read back: words with anything but
// letters, digits and @%+=:,./-_ in single quotes; a control character
// (a newline in a script given with -c) shown as \n, \t or \xNN, so that
// a row of the table stays one line.
std::string shell_line(const Json& argv) {
  std::string line;
  for (const Json& a : argv) {
    const std::string& w = a.get_ref<const std::string&>();
    const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char ch) {
      const auto u = static_cast<unsigned char>(ch);
      return (u < 0x80 && std::isalnum(u) != 0) || (u != 0 && std::strchr("@%+=:,./-_", ch) != nullptr);
    });
    std::string word = plain ? "" : "'";
    for (char ch : w) {
      const auto u = static_cast<unsigned char>(ch);
      if (ch == '\'') word += "'\\''";
      else if (ch == '\n') word += "\\n";
      else if (ch == '\t') word += "\\t";
      else if (u < 0x20 || u == 0x7f) {
        char b[8];
        std::snprintf(b, sizeof b, "\\x%02X", u);
        word += b;
      } else word += ch;
    }
    if (!plain) word += "'";
    line += (line.empty() ? "" : " ") + word;
  }
  return line;
}

// "running", "waiting for input", "stopping", "exited 3", "killed SIGTERM".
std::string status_line(const Json& t) {
  const Json& st = t["exitStatus"];
  if (st.is_object()) {
    if (st["exitCode"].is_number()) return "exited " + std::to_string(st["exitCode"].get<int>());
    if (st["signal"].is_string()) return "killed " + st["signal"].get<std::string>();
  }
  if (t.value("waitingForInput", false)) return "waiting for input";
  return t.value("status", std::string("?"));
}

// "5173,8080", or "-" when the job listens on no TCP port.
std::string ports_line(const Json& t) {
  std::string s;
  if (t.contains("ports") && t["ports"].is_array())
    for (const Json& p : t["ports"]) {
      const std::string port = std::to_string(p.value("port", 0));
      if (("," + s + ",").find("," + port + ",") != std::string::npos) continue;  // IPv4 and IPv6 alike
      s += (s.empty() ? "" : ",") + port;
    }
  return s.empty() ? "-" : s;
}

// How a job that has ended ended, for "pmon stop" and "pmon rm": "ended
// (exited 3)", "was stopped by its timeout", ...
std::string ended_words(Client& c, const std::string& id, const Json& exit_status) {
  std::string how = status_line(Json{{"exitStatus", exit_status}, {"status", "ended"}});
  auto rep = c.try_call("terminal/report", {{"terminalId", id}});
  const Json by = rep && rep->contains("job") ? (*rep)["job"].value("stoppedBy", Json(nullptr)) : Json(nullptr);
  if (!by.is_string()) return "had already ended (" + how + ")";
  const std::string b = by.get<std::string>();
  if (b == "kill") return "was already stopped";
  if (b == "timeout") return "was already stopped by its timeout";
  if (b == "idle timeout") return "was already stopped: it printed nothing for its idle timeout";
  return "was already stopped (" + b + ")";
}

// Whether job `id` still runs; its exit status in *ended when not.
bool job_running(Client& c, const std::string& id, Json* ended) {
  Json r = c.call("terminal/wait_for_exit", {{"terminalId", id}, {"timeoutMs", 0}});
  if (r.value("running", false)) return true;
  *ended = r;
  return false;
}

// Copies what comes on `fd` to stdout until its end; how many bytes. A
// pipe to a pipe or a file moves by splice(2), anything else by read and
// write.
uint64_t copy_to_stdout(int fd) {
  std::fflush(stdout);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::splice(fd, nullptr, STDOUT_FILENO, nullptr, size_t{1} << 20, SPLICE_F_MOVE | SPLICE_F_MORE);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EINVAL) break;  // stdout takes no splice (a terminal, a socket on old kernels)
    if (n < 0) die(std::string("logs: cannot write the output: ") + std::strerror(errno));
    if (n == 0) return total;
    total += static_cast<uint64_t>(n);
  }
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die(std::string("logs: cannot read the output: ") + std::strerror(errno));
    if (n == 0) return total;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(STDOUT_FILENO, buf.data() + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) die(std::string("logs: cannot write the output: ") + std::strerror(errno));
      off += w;
    }
    total += static_cast<uint64_t>(n);
  }
}

}  // namespace

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
                         "id, says why on stderr and exits 1.\n\nValues:\n") +
             kDurationWords +
             "  REGEX     a regular expression, RE2 syntax (no backreferences), found anywhere in\n"
             "            a line: ^ and $ anchor it to the line's start and end\n");
  app.prefix_command();
  std::string name, timeout_s, idle_s, ready_http, ready_line, ready_timeout_s;
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
  CLI::Option* timeout_opt =
      app.add_option("--timeout", timeout_s, "stop the job and everything it started after DURATION")
          ->type_name("DURATION");
  CLI::Option* idle_opt =
      app.add_option("--idle-timeout", idle_s,
                     "stop the job and everything it started when it has printed nothing for DURATION")
          ->type_name("DURATION");
  app.add_flag("--pty", pty, "run the job on a pseudo-terminal (24x80)");
  CLI::Option* ready_port_opt =
      app.add_option("--ready-port", ready_port, "wait until a process of the job listens on TCP port PORT")
          ->type_name("PORT")
          ->check(CLI::Range(1, 65535));
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
  if (timeout_opt->count() > 0) {
    auto d = parse_duration(timeout_s);
    if (!d) die("start: --timeout: " + describe_duration_error(timeout_s, d.error()));
    p["timeoutMs"] = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
  }
  if (idle_opt->count() > 0) {
    auto d = parse_duration(idle_s);
    if (!d) die("start: --idle-timeout: " + describe_duration_error(idle_s, d.error()));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
    if (ms < 1) die("start: --idle-timeout: '" + idle_s + "' is under a millisecond; give a longer DURATION");
    p["idleTimeoutMs"] = ms;
  }
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
  auto created = c.try_call("terminal/create", p);
  if (!created) {
    // A probe the service refused, in the words of its flag.
    std::string m = created.error();
    const std::string kInvalid = "invalid params: ";
    for (const auto& [field, flag] : {std::pair{"'ready.line'", "--ready-line"}, {"'ready.http'", "--ready-http"},
                                      {"'ready.port'", "--ready-port"}})
      if (m.starts_with(kInvalid + field)) m = std::string("start: ") + flag + m.substr(kInvalid.size() + std::strlen(field));
    die(m);
  }
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
    rows.push_back({t["terminalId"].get<std::string>(), t["name"].is_string() ? t["name"].get<std::string>() : "-",
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
  return 0;
}

int logs_main(const std::vector<std::string>& args) {
  CLI::App app{"Print a job's output, the bytes as it wrote them (its newest within the job's limit).", "pmon logs"};
  app.footer("\nThe service also keeps each job's whole output in a file (its spool, up to\n"
             "--spool-limit): --head, --tail, --grep, --strip-ansi and --max-line-bytes read\n"
             "from there, so they see the output from its first byte, and shape only what\n"
             "is printed.\n\nValues:\n  N         a whole number\n"
             "  REGEX     a regular expression (RE2 syntax, as in grep -E): '^error', 'fail(ed|ure)'\n");
  std::string id;
  bool follow = false;
  SocketFlag sock;
  app.add_option("ID", id, "the job's id ('pmon jobs' lists them)")->type_name("")->required();
  app.add_flag("-f,--follow", follow, "keep printing new output until the job ends");
  uint64_t head = 0, tail = 0, max_line = 0;
  std::string grep;
  bool strip = false;
  CLI::Option* head_opt =
      app.add_option("--head", head, "the first N bytes of the whole output (with --tail: both, the middle left out)")
          ->type_name("N");
  CLI::Option* tail_opt = app.add_option("--tail", tail, "the last N bytes of the whole output")->type_name("N");
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
  const bool view = head_opt->count() || tail_opt->count() || grep_opt->count() || strip || line_opt->count();
  if (view && follow) die("logs: -f goes with none of --head, --tail, --grep, --strip-ansi, --max-line-bytes");
  if (line_opt->count() && max_line == 0) die("logs: --max-line-bytes must be at least 1");
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
      p["offset"] = r["next"];
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
  app.footer("\nExit status: the job's own exit code; 128+N when it died by signal N (143 after\n"
             "'pmon stop'); 124 when its --timeout or --idle-timeout stopped it; 125 when what it started could\n"
             "not be confirmed gone; 126 or 127 when its command could not be run.");
  std::string id;
  SocketFlag sock;
  app.add_option("ID", id, "the job's id ('pmon jobs' lists them)")->type_name("")->required();
  sock.add_to(app);
  if (!parse_options(app, args, "wait")) return 0;
  check_job_id("wait", id);
  Client c = sock.connect();
  Json r = c.call("terminal/wait_for_exit", {{"terminalId", id}});
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
