#include "serve/mcp.h"

// The version 'pmon --version' prints (the fuzz build defines its own).
#ifndef PMON_VERSION
#include "pmon_version.h"
#endif

#include <array>
#include <limits>

#include "core/units.h"

namespace pmon::serve::mcp {

namespace {

constexpr std::array<const char*, 5> kSupportedVersions = {kLatestVersion, "2025-06-18", "2025-03-26",
                                                           "2024-11-05", "2024-10-07"};
constexpr uint64_t kMaxSeconds = uint64_t{1} << 30;

// The tools as the model sees them. Every result is also given as text.
constexpr const char* kTools = R"JSON([
{
  "name": "run",
  "title": "Run a shell command",
  "description": "Runs a shell command (sh -c) and waits for it. Returns its output (stdout and stderr as a terminal shows them; head and tail when long), its exit code or signal, and any processes it left running, which are stopped: nothing it started outlives the call. With background_after_s, a command still running after that long goes on as a job: the result then has its id and running: true, for output, wait and kill.",
  "inputSchema": {
    "type": "object",
    "properties": {
      "command": {"type": "string", "description": "a shell command line"},
      "cwd": {"type": "string", "description": "working directory"},
      "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "variables set on top of the environment"},
      "timeout_s": {"type": "number", "minimum": 0, "description": "stop the whole tree after this many seconds (default 120)"},
      "background_after_s": {"type": "number", "minimum": 0, "description": "keep a command still running after this many seconds as a job and return"},
      "memory_max": {"type": ["integer", "string"], "description": "most memory the command may use: bytes, or a string with K, M or G (powers of 1024), e.g. \"512M\"; past it the whole command is killed"},
      "pids_max": {"type": "integer", "minimum": 1, "description": "most processes and threads it may have at once"},
      "cpu_max": {"type": "number", "minimum": 0.01, "description": "CPU time it may use, in cores (0.5: half of one CPU)"}
    },
    "required": ["command"],
    "additionalProperties": false
  },
  "outputSchema": {
    "type": "object",
    "properties": {
      "running": {"type": "boolean"},
      "id": {"type": "string"},
      "output": {"type": "string"},
      "truncated": {"type": "boolean"},
      "exit_code": {"type": ["integer", "null"]},
      "signal": {"type": ["string", "null"]},
      "timed_out": {"type": "boolean"},
      "leftovers": {"type": "array", "items": {"type": "object", "properties": {"pid": {"type": "integer"}, "command": {"type": "string"}, "action": {"type": "string"}}}},
      "cleanup_verified": {"type": "boolean"},
      "duration_ms": {"type": "number"},
      "oom_killed": {"type": ["boolean", "null"], "description": "killed for going past memory_max (null: no memory_max)"},
      "pids_max_hit": {"type": ["boolean", "null"], "description": "a fork failed at pids_max (null: no pids_max)"}
    },
    "required": ["running", "output", "truncated"]
  }
},
{
  "name": "start",
  "title": "Start a background job",
  "description": "Starts a shell command as a job that runs on (a dev server, a watcher) and returns its id at once. The job and everything it starts are stopped when killed, and when this session ends.",
  "inputSchema": {
    "type": "object",
    "properties": {
      "command": {"type": "string", "description": "a shell command line"},
      "cwd": {"type": "string"},
      "env": {"type": "object", "additionalProperties": {"type": "string"}},
      "pty": {"type": "boolean", "description": "run it on a pseudo-terminal"},
      "name": {"type": "string", "description": "a label shown by list"},
      "memory_max": {"type": ["integer", "string"], "description": "most memory the command may use: bytes, or a string with K, M or G (powers of 1024), e.g. \"512M\"; past it the whole command is killed"},
      "pids_max": {"type": "integer", "minimum": 1, "description": "most processes and threads it may have at once"},
      "cpu_max": {"type": "number", "minimum": 0.01, "description": "CPU time it may use, in cores (0.5: half of one CPU)"}
    },
    "required": ["command"],
    "additionalProperties": false
  },
  "outputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
},
{
  "name": "output",
  "title": "Read a job's output",
  "description": "The output of a job, from the byte offset since (all that is kept when omitted, up to 4 MiB a call; more: true when there is more to read); pass the returned next as since to get only what is new.",
  "inputSchema": {
    "type": "object",
    "properties": {"id": {"type": "string"}, "since": {"type": "integer", "minimum": 0}},
    "required": ["id"],
    "additionalProperties": false
  },
  "outputSchema": {
    "type": "object",
    "properties": {
      "output": {"type": "string"}, "truncated": {"type": "boolean"}, "next": {"type": "integer"},
      "more": {"type": "boolean"}, "running": {"type": "boolean"}, "exit_code": {"type": ["integer", "null"]}, "signal": {"type": ["string", "null"]}
    },
    "required": ["output", "truncated", "next", "running"]
  }
},
{
  "name": "wait",
  "title": "Wait for a job to end",
  "description": "Waits for a job to end (up to timeout_s seconds when given) and returns its exit code or signal, or running: true if it still runs.",
  "inputSchema": {
    "type": "object",
    "properties": {"id": {"type": "string"}, "timeout_s": {"type": "number", "minimum": 0}},
    "required": ["id"],
    "additionalProperties": false
  },
  "outputSchema": {
    "type": "object",
    "properties": {"running": {"type": "boolean"}, "exit_code": {"type": ["integer", "null"]}, "signal": {"type": ["string", "null"]}},
    "required": ["running"]
  }
},
{
  "name": "write",
  "title": "Write to a job's stdin",
  "description": "Writes data to a job's stdin; eof: true closes it afterwards.",
  "inputSchema": {
    "type": "object",
    "properties": {"id": {"type": "string"}, "data": {"type": "string"}, "eof": {"type": "boolean"}},
    "required": ["id", "data"],
    "additionalProperties": false
  },
  "outputSchema": {"type": "object", "properties": {"written": {"type": "integer"}}, "required": ["written"]}
},
{
  "name": "kill",
  "title": "Kill a job",
  "description": "Stops a job and every process it started, and confirms they are gone. Its output stays readable.",
  "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false},
  "outputSchema": {"type": "object", "properties": {"cleanup_verified": {"type": "boolean"}}, "required": ["cleanup_verified"]}
},
{
  "name": "list",
  "title": "List jobs",
  "description": "Every job of this session: its status and the TCP ports its processes listen on.",
  "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
  "outputSchema": {
    "type": "object",
    "properties": {
      "jobs": {"type": "array", "items": {"type": "object", "properties": {
        "id": {"type": "string"}, "name": {"type": ["string", "null"]}, "command": {"type": "string"},
        "status": {"type": "string"}, "pid": {"type": "integer"}, "ports": {"type": "array", "items": {"type": "integer"}},
        "exit_code": {"type": ["integer", "null"]}, "signal": {"type": ["string", "null"]}}}}
    },
    "required": ["jobs"]
  }
},
{
  "name": "wait_for_port",
  "title": "Wait until a job listens",
  "description": "Waits until a process of the job listens on a TCP port (the given one, or any) and returns it; fails after timeout_s (default 30) or when the job ends first.",
  "inputSchema": {
    "type": "object",
    "properties": {"id": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}, "timeout_s": {"type": "number", "minimum": 0}},
    "required": ["id"],
    "additionalProperties": false
  },
  "outputSchema": {
    "type": "object",
    "properties": {"port": {"type": "integer"}, "address": {"type": "string"}, "pid": {"type": "integer"}},
    "required": ["port", "address", "pid"]
  }
}
])JSON";

// The arguments of one tool call.
class Args : public FieldReader {
 public:
  explicit Args(const Json& obj) : FieldReader(obj, "invalid arguments") {}

  // Seconds (a number, fractions allowed) as milliseconds.
  std::optional<uint64_t> seconds_ms(const char* name) {
    const Json* v = find(name, false);
    if (!v) return std::nullopt;
    if (!v->is_number() || v->get<double>() < 0 || v->get<double>() > static_cast<double>(kMaxSeconds))
      return bad(name, "must be a number of seconds, at least 0"), std::nullopt;
    return static_cast<uint64_t>(v->get<double>() * 1000.0 + 0.5);
  }
  std::optional<uint64_t> uint(const char* name, uint64_t min, uint64_t max) {
    const Json* v = find(name, false);
    if (!v) return std::nullopt;
    if (!v->is_number_integer() || v->get<int64_t>() < static_cast<int64_t>(min) ||
        v->get<uint64_t>() > max)
      return bad(name, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max)),
             std::nullopt;
    return v->get<uint64_t>();
  }
  std::vector<EnvVar> env(const char* name) {
    std::vector<EnvVar> out;
    const Json* v = find(name, false);
    if (!v) return out;
    if (!v->is_object()) return bad(name, "must be an object of NAME: value strings"), out;
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (it.key().find('\0') != std::string::npos)
        return bad(name, "has a variable name that contains a NUL byte"), out;
      if (it.key().empty()) return bad(name, "has an empty variable name"), out;
      if (it.key().find('=') != std::string::npos)
        return bad(std::string(name) + "." + it.key(), "is not a variable name (it contains '=')"), out;
      if (!it.value().is_string()) return bad(std::string(name) + "." + it.key(), "must be a string"), out;
      if (!no_nul(std::string(name) + "." + it.key(), it.value().get_ref<const std::string&>())) return out;
      out.push_back({it.key(), it.value().get<std::string>()});
    }
    return out;
  }
  // memory_max (bytes, or a string such as "512M"), pids_max, cpu_max
  // (cores): the job's limits, checked as the CLI checks them.
  Limits limits() {
    Limits l;
    if (const Json* v = find("memory_max", false)) {
      std::string text = v->is_string() ? v->get<std::string>()
                         : v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0)
                             ? std::to_string(v->get<uint64_t>())
                             : std::string();
      if (text.empty()) bad("memory_max", "must be a number of bytes or a string such as \"512M\"");
      else if (auto n = parse_size(text)) l.memory_max = *n;
      else bad("memory_max", n.error());
    }
    if (const Json* v = find("pids_max", false)) {
      auto n = v->is_number_integer() ? parse_pids(std::to_string(v->get<int64_t>()))
                                      : std::expected<uint64_t, std::string>(std::unexpected("must be a whole number of processes"));
      if (n) l.pids_max = *n;
      else bad("pids_max", n.error());
    }
    if (const Json* v = find("cpu_max", false)) {
      auto c = v->is_number() ? check_cores(v->get<double>())
                              : std::expected<double, std::string>(std::unexpected("must be a number of cores (e.g. 0.5)"));
      if (c) l.cpu_max = *c;
      else bad("cpu_max", c.error());
    }
    return l;
  }
  // Fields the tool does not take are an error: a misspelt one would
  // otherwise be silently ignored.
  void only(std::initializer_list<const char*> names) {
    if (error_) return;
    for (auto it = obj_.begin(); it != obj_.end(); ++it)
      if (std::none_of(names.begin(), names.end(), [&](const char* n) { return it.key() == n; }))
        return bad(it.key(), "is not an argument of this tool");
  }
};

CreateParams shell_job(Args& a) {
  CreateParams c;
  c.command = "/bin/sh";
  std::string line = a.c_str("command", true).value_or("");
  c.args = {"-c", line};
  c.cwd = a.c_str("cwd", false);
  c.env = a.env("env");
  return c;
}

std::optional<Tool> tool_named(const std::string& n) {
  static const std::pair<const char*, Tool> names[] = {
      {"run", Tool::run},   {"start", Tool::start}, {"output", Tool::output}, {"wait", Tool::wait},
      {"write", Tool::write}, {"kill", Tool::kill}, {"list", Tool::list}, {"wait_for_port", Tool::wait_for_port}};
  for (auto& [name, t] : names)
    if (n == name) return t;
  return std::nullopt;
}

size_t utf8_start_at_or_after(const std::string& s, size_t i) {
  while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  return i;
}

// Long output keeps its head (a third) and its tail, cut at characters.
std::pair<std::string, bool> head_and_tail(const std::string& s) {
  if (s.size() <= kOutputLimit) return {s, false};
  size_t head = utf8_start_at_or_after(s, kOutputLimit / 3);
  size_t tail = utf8_start_at_or_after(s, s.size() - (kOutputLimit - kOutputLimit / 3));
  std::string out = s.substr(0, head);
  out += "\n[... " + std::to_string(tail - head) + " bytes left out ...]\n";
  out += s.substr(tail);
  return {out, true};
}

Json nullable(const Json& v) { return v.is_null() ? Json(nullptr) : v; }

std::string ending_words(const Json& exit_code, const Json& signal) {
  if (!exit_code.is_null()) return "exit code " + std::to_string(exit_code.get<int>());
  if (!signal.is_null()) return "killed by " + signal.get<std::string>();
  return "ended";
}

Json text_result(const std::string& text, const Json& structured) {
  return {{"content", Json::array({{{"type", "text"}, {"text", text}}})},
          {"structuredContent", structured},
          {"isError", false}};
}

}  // namespace

std::string negotiate_version(const Json& requested) {
  if (requested.is_string())
    for (const char* v : kSupportedVersions)
      if (requested.get<std::string>() == v) return v;
  return kLatestVersion;
}

std::variant<Message, BadRequest> parse_message(std::string_view line) {
  MessageJson message = parse_message_json(line);
  Json& j = message.json;
  if (j.is_discarded()) return BadRequest{nullptr, {rpc::kParseError, "parse error: not valid JSON"}};
  if (!j.is_object()) return BadRequest{nullptr, {rpc::kInvalidRequest, "invalid request: not a JSON object"}};
  Message m;
  m.notification = true;
  if (auto it = j.find("id"); it != j.end()) {
    if (!it->is_string() && !it->is_number_integer())
      return BadRequest{nullptr, {rpc::kInvalidRequest, "invalid request: 'id' must be a string or an integer"}};
    m.id = *it;
    m.notification = false;
  }
  auto ver = j.find("jsonrpc");
  if (ver == j.end() || *ver != "2.0")
    return BadRequest{m.id, {rpc::kInvalidRequest, "invalid request: 'jsonrpc' must be \"2.0\""}};
  auto method = j.find("method");
  if (method == j.end() || !method->is_string()) {
    // A response to a request of ours (we send none), or junk.
    if (j.contains("result") || j.contains("error")) return BadRequest{nullptr, {}, false};
    return BadRequest{m.id, {rpc::kInvalidRequest, "invalid request: 'method' must be a string"}};
  }
  // A request or a notification from here on: a notification is not answered.
  const bool answer = !m.notification;
  if (message.too_deep)
    return BadRequest{m.id, {rpc::kInvalidRequest, "invalid request: nested more than " + std::to_string(kMaxDepth) +
                                                       " levels deep"}, answer};
  m.method = method->get<std::string>();
  if (auto p = j.find("params"); p != j.end() && !p->is_null()) {
    if (!p->is_object())
      return BadRequest{m.id, {rpc::kInvalidParams, "invalid params: 'params' must be an object"}, answer};
    m.params = std::move(*p);
  }
  return m;
}

Json initialize_result(const Json& params) {
  Json requested = params.is_object() && params.contains("protocolVersion") ? params["protocolVersion"] : Json();
  return {{"protocolVersion", negotiate_version(requested)},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", "pmon"}, {"title", "pmon: commands that leave nothing behind"}, {"version", PMON_VERSION}}},
          {"instructions",
           "Run shell commands with run (it waits; nothing the command starts outlives it) and long-running ones "
           "(dev servers, watchers) with start, then output, wait, write, wait_for_port and kill. Every job "
           "is stopped when this session ends."}};
}

Json tools_list() {
  static const Json tools = Json::parse(kTools);
  return {{"tools", tools}};
}

std::variant<ToolCall, CallError> parse_tool_call(const Json& params) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) return CallError{true, "invalid params: 'name' must be a string"};
  auto tool = tool_named(name->get<std::string>());
  if (!tool) return CallError{true, "unknown tool '" + name->get<std::string>() + "'"};
  Json none = Json::object();
  auto a_it = params.find("arguments");
  if (a_it != params.end() && !a_it->is_null() && !a_it->is_object())
    return CallError{false, "invalid arguments: 'arguments' must be an object"};
  const Json& obj = (a_it == params.end() || a_it->is_null()) ? none : *a_it;
  Args a(obj);
  ToolCall call;
  call.tool = *tool;
  switch (*tool) {
    case Tool::run: {
      a.only({"command", "cwd", "env", "timeout_s", "background_after_s", "memory_max", "pids_max", "cpu_max"});
      RunArgs r;
      r.create = shell_job(a);
      r.create.limits = a.limits();
      r.create.timeout_ms = a.seconds_ms("timeout_s").value_or(120'000);
      if (r.create.timeout_ms == 0) r.create.timeout_ms.reset();
      r.background_after_ms = a.seconds_ms("background_after_s");
      call.args = std::move(r);
      break;
    }
    case Tool::start: {
      a.only({"command", "cwd", "env", "pty", "name", "memory_max", "pids_max", "cpu_max"});
      CreateParams c = shell_job(a);
      c.limits = a.limits();
      if (a.flag("pty")) c.pty = PtySize{};
      c.name = a.str("name", false);
      call.args = std::move(c);
      break;
    }
    case Tool::output: {
      a.only({"id", "since"});
      OutputParams o{a.str("id", true).value_or(""), std::nullopt, std::nullopt, std::nullopt};
      o.since = a.uint("since", 0, std::numeric_limits<int64_t>::max());
      call.args = o;
      break;
    }
    case Tool::wait: {
      a.only({"id", "timeout_s"});
      WaitForExitParams w{a.str("id", true).value_or(""), std::nullopt};
      w.timeout_ms = a.seconds_ms("timeout_s");
      call.args = w;
      break;
    }
    case Tool::write: {
      a.only({"id", "data", "eof"});
      WriteParams w;
      w.terminal_id = a.str("id", true).value_or("");
      w.data = a.str("data", true).value_or("");
      w.eof = a.flag("eof");
      call.args = std::move(w);
      break;
    }
    case Tool::kill:
      a.only({"id"});
      call.args = TerminalParams{a.str("id", true).value_or("")};
      break;
    case Tool::list:
      a.only({});
      call.args = ListParams{};
      break;
    case Tool::wait_for_port: {
      a.only({"id", "port", "timeout_s"});
      WaitForPortParams w;
      w.terminal_id = a.str("id", true).value_or("");
      if (auto p = a.uint("port", 1, 65535)) w.port = static_cast<uint16_t>(*p);
      w.timeout_ms = a.seconds_ms("timeout_s");
      call.args = w;
      break;
    }
  }
  if (a.error()) return CallError{false, *a.error()};
  if (auto* c = std::get_if<RunArgs>(&call.args); c && c->create.args[1].empty())
    return CallError{false, "invalid arguments: 'command' must not be empty"};
  if (auto* c = std::get_if<CreateParams>(&call.args); c && c->args[1].empty())
    return CallError{false, "invalid arguments: 'command' must not be empty"};
  return call;
}

Json tool_error(const std::string& message) {
  return {{"content", Json::array({{{"type", "text"}, {"text", message}}})}, {"isError", true}};
}

Json tool_result(Tool tool, const Json& a) {
  switch (tool) {
    case Tool::run: {
      auto [out, cut] = head_and_tail(a.value("output", std::string()));
      const bool truncated = cut || a.value("truncated", false);
      if (a.value("running", false)) {
        Json s = {{"running", true}, {"id", a["terminalId"]}, {"output", out}, {"truncated", truncated}};
        std::string text = out;
        if (!text.empty() && text.back() != '\n') text += '\n';
        text += "[still running as job " + a["terminalId"].get<std::string>() +
                "; use output, wait or kill with this id]";
        return text_result(text, s);
      }
      Json leftovers = Json::array();
      for (const Json& l : a["leftovers"])
        leftovers.push_back({{"pid", l["pid"]}, {"command", l.value("cmdline", std::string())},
                             {"action", l.value("action", std::string())}});
      Json s = {{"running", false},
                {"output", out},
                {"truncated", truncated},
                {"exit_code", nullable(a["exit_code"])},
                {"signal", nullable(a["signal"])},
                {"timed_out", a["timed_out"]},
                {"leftovers", leftovers},
                {"cleanup_verified", a["cleanup_verified"]},
                {"duration_ms", a["duration_ms"]},
                {"oom_killed", a.value("oom_killed", Json(nullptr))},
                {"pids_max_hit", a.value("pids_max_hit", Json(nullptr))}};
      std::string text = out;
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += "[" + std::string(a["timed_out"].get<bool>() ? "timed out, " : "") +
              ending_words(a["exit_code"], a["signal"]);
      if (!leftovers.empty()) {
        text += "; stopped " + std::to_string(leftovers.size()) + " process" + (leftovers.size() > 1 ? "es" : "") +
                " it left running:";
        for (const Json& l : leftovers) text += " " + l["command"].get<std::string>() + " (pid " + std::to_string(l["pid"].get<int>()) + ")";
      }
      if (s["oom_killed"] == true) text += "; killed for going past memory_max";
      if (s["pids_max_hit"] == true) text += "; some forks failed at pids_max";
      if (!a["cleanup_verified"].get<bool>()) text += "; WARNING: some of its processes could not be confirmed gone";
      text += "]";
      return text_result(text, s);
    }
    case Tool::start:
      return text_result("started job " + a["terminalId"].get<std::string>(), {{"id", a["terminalId"]}});
    case Tool::output: {
      const Json& st = a["exitStatus"];
      Json s = {{"output", a["output"]}, {"truncated", a["truncated"]}, {"next", a["next"]},
                {"more", a.value("more", false)}, {"running", st.is_null()}};
      s["exit_code"] = st.is_null() ? Json(nullptr) : nullable(st["exitCode"]);
      s["signal"] = st.is_null() ? Json(nullptr) : nullable(st["signal"]);
      std::string text = a["output"].get<std::string>();
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += "[" + std::string(st.is_null() ? "running" : ending_words(st["exitCode"], st["signal"])) +
              "; " + (a.value("more", false) ? "more from next " : "next ") + std::to_string(a["next"].get<uint64_t>()) +
              "]";
      return text_result(text, s);
    }
    case Tool::wait: {
      const bool running = a.value("running", false);
      Json s = {{"running", running}, {"exit_code", nullable(a["exitCode"])}, {"signal", nullable(a["signal"])}};
      return text_result(running ? "still running" : ending_words(a["exitCode"], a["signal"]), s);
    }
    case Tool::write: {
      uint64_t n = a.value("written", uint64_t{0});
      return text_result("wrote " + std::to_string(n) + " bytes", {{"written", n}});
    }
    case Tool::kill: {
      const bool ok = a.value("cleanupVerified", false);
      return text_result(ok ? "stopped; nothing of it is left" : "stopped, but not every process could be confirmed gone",
                         {{"cleanup_verified", ok}});
    }
    case Tool::list: {
      Json jobs = Json::array();
      std::string text;
      for (const Json& t : a["terminals"]) {
        Json ports = Json::array();
        for (const Json& p : t["ports"]) ports.push_back(p["port"]);
        std::string cmd;
        const Json& c = t["command"];
        // Shell jobs show their command line, others their argv.
        if (c.size() == 3 && c[0] == "/bin/sh" && c[1] == "-c") cmd = c[2].get<std::string>();
        else
          for (const Json& w : c) cmd += (cmd.empty() ? "" : " ") + w.get<std::string>();
        const Json& st = t["exitStatus"];
        Json o = {{"id", t["terminalId"]}, {"name", t["name"]}, {"command", cmd}, {"status", t["status"]},
                  {"pid", t["pid"]}, {"ports", ports},
                  {"exit_code", st.is_null() ? Json(nullptr) : nullable(st["exitCode"])},
                  {"signal", st.is_null() ? Json(nullptr) : nullable(st["signal"])}};
        text += t["terminalId"].get<std::string>() + "  " + t["status"].get<std::string>() + "  " + cmd;
        if (!ports.empty()) {
          text += "  ports";
          for (const Json& p : ports) text += " " + std::to_string(p.get<int>());
        }
        text += "\n";
        jobs.push_back(std::move(o));
      }
      if (text.empty()) text = "no jobs\n";
      return text_result(text, {{"jobs", jobs}});
    }
    case Tool::wait_for_port: {
      Json s = {{"port", a["port"]}, {"address", a["address"]}, {"pid", a["pid"]}};
      return text_result("listening on " + a["address"].get<std::string>() + " port " +
                             std::to_string(a["port"].get<int>()) + " (pid " + std::to_string(a["pid"].get<int>()) + ")",
                         s);
    }
  }
  return tool_error("internal error: unknown tool");
}

}  // namespace pmon::serve::mcp
