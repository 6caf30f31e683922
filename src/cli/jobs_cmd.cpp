// The client verbs of pmon serve: start, jobs, logs, stop, wait. Each is
// one or a few JSON-RPC requests on the service's socket.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/units.h"
#include "serve/json_text.h"
#include "serve/socket.h"

extern char** environ;

namespace pmon::cli {

namespace {

using Json = nlohmann::json;

// One blocking connection to the service.
class Client {
 public:
  Client(const std::string& socket, bool explicit_path) : path_(socket) {
    auto fd = serve::connect_unix(socket);
    if (!fd)
      die("no service answers on " + socket + " (" + fd.error().substr(fd.error().rfind(": ") + 2) +
          "); start one with 'pmon serve" + (explicit_path ? " --listen " + socket : std::string()) + " &'");
    fd_ = std::move(*fd);
  }

  // The result of `method`, or die() with the service's error line.
  Json call(const std::string& method, const Json& params) {
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
      if (msg.contains("error")) die(msg["error"].value("message", std::string("error")));
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
      ssize_t n = ::read(fd_.get(), buf_.data() + len_, kReadSize);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) die("the service on " + path_ + " closed the connection");
      len_ += static_cast<size_t>(n);
    }
  }

  static constexpr size_t kReadSize = size_t{1} << 20;
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
    opt = app.add_option("--socket", path, "the service's socket (default $PMON_SOCKET, else the default path)");
  }
  Client connect() const {
    bool given = opt->count() > 0 || std::getenv("PMON_SOCKET") != nullptr;
    return Client(opt->count() > 0 ? path : serve::default_socket_path(true), given);
  }
};

std::string status_line(const Json& t) {
  std::string s = t.value("status", std::string("?"));
  const Json& st = t["exitStatus"];
  if (st.is_object()) {
    if (st["exitCode"].is_number()) s += " " + std::to_string(st["exitCode"].get<int>());
    else if (st["signal"].is_string()) s += " " + st["signal"].get<std::string>();
  }
  return s;
}

}  // namespace

int start_main(const std::vector<std::string>& args) {
  CLI::App app{"Start CMD as a job of the running pmon serve; prints its id.", "pmon start"};
  app.prefix_command();
  std::string name, timeout_s;
  bool pty = false;
  SocketFlag sock;
  app.add_option("--name", name, "a name for the job (pmon jobs shows it)");
  CLI::Option* timeout_opt = app.add_option("--timeout", timeout_s, "stop the job's whole tree after D");
  app.add_flag("--pty", pty, "run the job on a pseudo-terminal");
  sock.add_to(app);
  auto command = parse_command_line(app, args, "start");
  if (!command) return 0;
  Json p = {{"command", command->front()},
            {"args", std::vector<std::string>(command->begin() + 1, command->end())},
            {"keep", true}};
  if (!name.empty()) p["name"] = name;
  if (timeout_opt->count() > 0) {
    auto d = parse_duration(timeout_s);
    if (!d) die("start: --timeout: " + describe_duration_error(timeout_s, d.error()));
    p["timeoutMs"] = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
  }
  if (pty) p["pty"] = {{"rows", 24}, {"cols", 80}};
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd)) p["cwd"] = cwd;
  Json env = Json::array();
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.push_back({{"name", kv.substr(0, eq)}, {"value", kv.substr(eq + 1)}});
  }
  p["env"] = env;
  Client c = sock.connect();
  Json r = c.call("terminal/create", p);
  std::printf("%s\n", r["terminalId"].get<std::string>().c_str());
  return 0;
}

int jobs_main(const std::vector<std::string>& args) {
  CLI::App app{"List the jobs of the running pmon serve.", "pmon jobs"};
  bool json = false;
  SocketFlag sock;
  app.add_flag("--json", json, "the list as JSON");
  sock.add_to(app);
  if (!parse_options(app, args, "jobs")) return 0;
  Client c = sock.connect();
  Json r = c.call("terminal/list", Json::object());
  if (json) {
    std::printf("%s\n", r["terminals"].dump(2).c_str());
    return 0;
  }
  std::printf("%-6s %-12s %-12s %-8s %-24s %s\n", "ID", "NAME", "STATUS", "PID", "STARTED", "COMMAND");
  for (const Json& t : r["terminals"]) {
    std::string cmd;
    for (const Json& a : t["command"]) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    std::printf("%-6s %-12s %-12s %-8d %-24s %s\n", t["terminalId"].get<std::string>().c_str(),
                t["name"].is_string() ? t["name"].get<std::string>().c_str() : "-", status_line(t).c_str(),
                t["pid"].get<int>(), t["started"].get<std::string>().c_str(), cmd.c_str());
  }
  return 0;
}

int logs_main(const std::vector<std::string>& args) {
  CLI::App app{"Print a job's output (its newest bytes within the job's limit).", "pmon logs"};
  std::string id;
  bool follow = false;
  SocketFlag sock;
  app.add_option("ID", id, "the job's id")->required();
  app.add_flag("-f,--follow", follow, "keep printing new output until the job ends");
  sock.add_to(app);
  if (!parse_options(app, args, "logs")) return 0;
  Client c = sock.connect();
  Json p = {{"terminalId", id}};
  for (;;) {
    Json r = c.call("terminal/output", p);
    const std::string& text = r["output"].get_ref<const std::string&>();
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    // Over, and nothing came since: all is read (a job made with
    // outputBackpressure can end with output still to read).
    if (!follow || (!r["exitStatus"].is_null() && text.empty())) return 0;
    p["since"] = r["next"];
    p["waitMs"] = 60'000;
  }
}

int stop_main(const std::vector<std::string>& args) {
  CLI::App app{"Stop a job's whole tree (its output stays readable).", "pmon stop"};
  std::string id;
  SocketFlag sock;
  app.add_option("ID", id, "the job's id")->required();
  sock.add_to(app);
  if (!parse_options(app, args, "stop")) return 0;
  Client c = sock.connect();
  Json r = c.call("terminal/kill", {{"terminalId", id}});
  if (!r.value("cleanupVerified", false)) {
    std::fprintf(stderr, "pmon: stop: could not confirm the tree of %s is gone\n", id.c_str());
    return 125;
  }
  return 0;
}

int wait_main(const std::vector<std::string>& args) {
  CLI::App app{"Wait for a job to end; exits with its status (as pmon run does).", "pmon wait"};
  std::string id;
  SocketFlag sock;
  app.add_option("ID", id, "the job's id")->required();
  sock.add_to(app);
  if (!parse_options(app, args, "wait")) return 0;
  Client c = sock.connect();
  Json r = c.call("terminal/wait_for_exit", {{"terminalId", id}});
  if (r["exitCode"].is_number()) return r["exitCode"].get<int>();
  if (r["signal"].is_string())
    if (auto s = parse_signal(r["signal"].get<std::string>())) return 128 + *s;
  return 125;
}

}  // namespace pmon::cli
