// SPDX-License-Identifier: Apache-2.0
#include "serve/mcp.h"

// The version 'pmon --version' prints (the fuzz build defines its own).
#ifndef PMON_VERSION
#include "pmon_version.h"
#endif

#include <algorithm>
#include <cstdio>
#include <array>
#include <limits>
#include <map>

#include "core/units.h"
#include "serve/fields.h"
#include "serve/protocol.h"

namespace pmon::serve::mcp {

namespace {

constexpr std::array<const char*, 5> kSupportedVersions = {kLatestVersion, "2025-06-18", "2025-03-26",
                                                           "2024-11-05", "2024-10-07"};
constexpr uint64_t kMaxSeconds = uint64_t{1} << 30;

// The arguments of one tool call, checked against its input schema: a
// field it does not name is an error, and so is one it requires missing.
class Args : public FieldReader {
 public:
  Args(const Json& obj, const Json& input_schema) : FieldReader(obj, "invalid arguments"), schema_(input_schema) {
    only(schema_.at("properties"), "is not an argument of this tool");
  }
  bool required(const char* name) const {
    auto req = schema_.find("required");
    return req != schema_.end() && std::find(req->begin(), req->end(), name) != req->end();
  }
  std::optional<std::string> text(const char* name) { return str(name, required(name)); }
  std::optional<std::string> c_text(const char* name) { return c_str(name, required(name)); }
  std::optional<uint64_t> seconds(const char* name) { return seconds_ms(name, kMaxSeconds); }

 private:
  const Json& schema_;
};

// A shell line as a job, with its limits.
CreateParams shell_job(Args& a) {
  CreateParams c;
  c.command = "/bin/sh";
  std::string line = a.c_text("command").value_or("");
  c.args = {"-c", line};
  c.cwd = a.c_text("cwd");
  c.env = a.env_object("env");
  c.limits = a.limits("memory_max", "memory_high", "pids_max", "cpu_max");
  c.idle_timeout_ms = a.seconds("idle_timeout_s");
  if (c.idle_timeout_ms == 0u) c.idle_timeout_ms.reset();
  return c;
}

void read_args(Args& a, RunArgs& r) {
  r.create = shell_job(a);
  r.create.timeout_ms = a.seconds("timeout_s").value_or(120'000);
  if (r.create.timeout_ms == 0) r.create.timeout_ms.reset();
  r.background_after_ms = a.seconds("background_after_s");
  if (!a.error() && r.create.args[1].empty()) a.bad("command", "must not be empty");
}

void read_args(Args& a, CreateParams& c) {
  c = shell_job(a);
  if (auto s = a.seconds("timeout_s"); s && *s > 0) c.timeout_ms = s;  // none unless given: a job runs on
  if (a.flag("pty")) c.pty = PtySize{};
  // A model cannot type into a job it did not ask a pipe for: a read gets
  // end of file instead of waiting for ever.
  c.stdin_null = true;
  if (auto in = a.text("stdin"); in && !a.error()) {
    if (*in == "pipe") c.stdin_null = false;
    else if (*in != "null")
      a.bad("stdin", "must be \"null\" (the default: a read gets end of file) or \"pipe\" (write sends it input)");
  }
  c.name = a.text("name");
  c.replace = a.flag("replace");
  if (!a.error() && c.replace && !c.name) a.bad("replace", "needs a name (the job it replaces is the one of that name)");
  c.ready = a.ready_flat("ready_port", "ready_http", "ready_line", "ready_timeout_s");
  if (!a.error() && c.args[1].empty()) a.bad("command", "must not be empty");
}

// What a model gets unless it asks otherwise: head and tail, lines cut;
// `since` is where the range starts (as `offset`).
void agent_view_defaults(Args& a, OutputParams& o) {
  ViewParams& v = o.view;
  if (!a.error() && o.since && v.offset) a.bad("since", "goes alone: give since or offset");
  if (o.since) v.offset = o.since, o.since.reset();
  if (!v.head && !v.tail && !v.length && !v.grep) v.head = kAgentHead, v.tail = kAgentTail;
  if (!v.max_line_bytes) v.max_line_bytes = kAgentMaxLine;
  o.max_bytes = kAgentMaxText;
}

void read_args(Args& a, OutputParams& o) {
  o.terminal_id = a.text("id").value_or("");
  o.since = a.in_range("since", 0, std::numeric_limits<int64_t>::max());
  read_view(a, o, {"head", "tail", "offset", "length", "grep", "strip_ansi", "max_line_bytes"}, true);
  agent_view_defaults(a, o);
}

void read_args(Args& a, WaitForExitParams& w) {
  w.terminal_id = a.text("id").value_or("");
  w.timeout_ms = a.seconds("timeout_s");
}

void read_args(Args& a, WriteParams& w) {
  w.terminal_id = a.text("id").value_or("");
  w.data = a.text("data").value_or("");
  w.eof = a.flag("eof");
}

void read_args(Args& a, KillArgs& k) {
  k.id = a.text("id");
  k.by.name = a.text("name");
  if (auto p = a.in_range("port", 1, 65535)) k.by.port = static_cast<uint16_t>(*p);
  if (!a.error() && !k.id && !k.by.name && !k.by.port) a.bad("id", "or 'name' or 'port' is needed: the job to kill");
  if (!a.error() && k.id && (k.by.name || k.by.port)) a.bad("id", "goes alone: give the id, or a name or port");
}

void read_args(Args&, ListParams&) {}

void read_args(Args& a, WaitForPortParams& w) {
  w.terminal_id = a.text("id").value_or("");
  if (auto p = a.in_range("port", 1, 65535)) w.port = static_cast<uint16_t>(*p);
  w.timeout_ms = a.seconds("timeout_s");
}

// Each tool: its spec as a value, and how its arguments are read.
struct ToolRow {
  Json spec;
  ToolArgs (*read)(Args&);
};

template <class A>
ToolArgs read_as(Args& a) {
  A args{};
  read_args(a, args);
  return args;
}

const std::map<std::string_view, ToolRow, std::less<>>& tool_rows() {
  static const auto rows = by_name<ToolRow>(kTools, [](const auto& t) {
    return ToolRow{Json::parse(t.spec), &read_as<row_type<decltype(t)>>};
  });
  return rows;
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

Json exit_code_json(const std::optional<ExitStatus>& e) {
  return e && e->exit_code ? Json(*e->exit_code) : Json(nullptr);
}
Json signal_json(const std::optional<ExitStatus>& e) {
  return e && e->signal ? Json(signal_name(*e->signal)) : Json(nullptr);
}

std::string ending_words(const ExitStatus& e) {
  if (e.exit_code) return "exit code " + std::to_string(*e.exit_code);
  if (e.signal) return "killed by " + signal_name(*e.signal);
  return "ended";
}

// Why a job ended, beside its exit_code and signal (EndFacts).
void add_end_fields(Json& s, const EndFacts& f) {
  s["timed_out"] = f.timed_out;
  s["stopped_by"] = f.stopped_by_word().empty() ? Json(nullptr) : Json(std::string(f.stopped_by_word()));
  s["oom_killed"] = f.oom_killed ? Json(*f.oom_killed) : Json(nullptr);
  s["pids_max_hit"] = f.pids_max_hit ? Json(*f.pids_max_hit) : Json(nullptr);
}

// The same in words, after ending_words: " (stopped: kill)", the limits hit.
std::string end_words(const EndFacts& f) {
  std::string w;
  if (!f.stopped_by_word().empty()) w += " (stopped: " + std::string(f.stopped_by_word()) + ")";
  if (f.oom_killed == true) w += "; killed for going past memory_max";
  if (f.pids_max_hit == true) w += "; some forks failed at pids_max";
  return w;
}

// The text for the model after some output: on a line of its own.
std::string after_output(std::string text, const std::string& note) {
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + note;
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

Revision revision_of(const Json& params) {
  Revision r;
  if (!params.is_object()) return r;
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return r;
  auto version = meta->find(kMetaVersion);
  if (version == meta->end()) return r;  // a client of an earlier revision
  if (!version->is_string()) {
    r.bad = RpcError{rpc::kInvalidParams, std::string("invalid params: '_meta.") + kMetaVersion + "' must be a string"};
    return r;
  }
  const std::string& v = version->get_ref<const std::string&>();
  if (v == kModernVersion) {
    r.modern = true;
    auto caps = meta->find(kMetaCapabilities);
    if (caps == meta->end() || !caps->is_object()) {
      r.bad = RpcError{rpc::kInvalidParams,
                       std::string("invalid params: '_meta.") + kMetaCapabilities + "' must be an object"};
      return r;
    }
    auto ext = caps->find("extensions");
    r.tasks = ext != caps->end() && ext->is_object() && ext->contains(kTasksExtension);
    return r;
  }
  for (const char* legacy : kSupportedVersions)
    if (v == legacy) return r;  // said in _meta, but an earlier revision: as before
  Json supported = Json::array({kModernVersion});
  for (const char* legacy : kSupportedVersions) supported.push_back(legacy);
  r.bad = RpcError{kUnsupportedProtocolVersion, "unsupported protocol version '" + v + "'",
                   {{"requested", v}, {"supported", supported}}};
  return r;
}

Json complete(Json result) {
  if (!result.contains("resultType")) result["resultType"] = "complete";  // a task says "task"
  return result;
}

std::variant<Message, BadRequest> parse_message(std::string_view line) {
  auto parsed = parse_envelope(line, {.null_id = false, .responses_ignored = true});
  if (auto* bad = std::get_if<BadRequest>(&parsed)) return std::move(*bad);
  Envelope& e = std::get<Envelope>(parsed);
  auto params = e.take_params(true);
  if (auto* bad = std::get_if<BadRequest>(&params)) return std::move(*bad);
  return Message{std::move(e.id), e.notification, std::move(e.method), std::move(std::get<Json>(params))};
}

namespace {
// The tools and what discover says never change while pmon runs.
constexpr uint64_t kListTtlMs = 3'600'000;

const Json& server_info() {
  static const Json info = {
      {"name", "pmon"}, {"title", "pmon: commands that leave nothing behind"}, {"version", PMON_VERSION}};
  return info;
}
constexpr const char* kInstructions =
    "Run shell commands with run (it waits; nothing the command starts outlives it) and long-running ones "
    "(dev servers, watchers) with start, then output, wait, write, wait_for_port and kill. Every job "
    "is stopped when this session ends.";
}  // namespace

Json initialize_result(const Json& params) {
  Json requested = params.is_object() && params.contains("protocolVersion") ? params["protocolVersion"] : Json();
  return {{"protocolVersion", negotiate_version(requested)},
          {"capabilities",
           {{"tools", {{"listChanged", false}}},
            {"logging", Json::object()},
            {"tasks",
             {{"list", Json::object()},
              {"cancel", Json::object()},
              {"requests", {{"tools", {{"call", Json::object()}}}}}}}}},
          {"serverInfo", server_info()},
          {"instructions", kInstructions}};
}

Json discover_result() {
  Json versions = Json::array({kModernVersion});
  for (const char* legacy : kSupportedVersions) versions.push_back(legacy);
  // The tools never change while pmon runs; what this client's session
  // holds (its jobs) is not in it.
  return complete({{"supportedVersions", versions},
                   {"capabilities",
                    {{"tools", {{"listChanged", false}}}, {"extensions", {{kTasksExtension, Json::object()}}}}},
                   {"instructions", kInstructions},
                   {"ttlMs", kListTtlMs},
                   {"cacheScope", "private"},
                   {"_meta", {{"io.modelcontextprotocol/serverInfo", server_info()}}}});
}

// Each tool's spec with its name, in the table's order.
// Earlier revisions: run and start may be called as tasks (2026-07-28 has
// no such field: the server decides, the extension's capability allows).
Json tools_list(bool stateless, const std::string& envelope) {
  static const auto list = [](bool task_support) {
    return std::apply(
        [&](const auto&... t) {
          Json out = Json::array();
          for (std::string_view name : {t.name...}) {
            Json tool = tool_rows().at(name).spec;
            tool["name"] = name;
            if (task_support && (name == "run" || name == "start")) tool["execution"] = {{"taskSupport", "optional"}};
            out.push_back(std::move(tool));
          }
          return out;
        },
        kTools);
  };
  static const Json legacy = list(true), modern = list(false);
  Json tools = stateless ? modern : legacy;
  if (!envelope.empty())
    for (Json& t : tools)
      if (t["name"] == "run" || t["name"] == "start") t["description"] = t["description"].get<std::string>() + envelope;
  if (!stateless) return {{"tools", std::move(tools)}};
  return complete({{"tools", std::move(tools)}, {"ttlMs", kListTtlMs}, {"cacheScope", "private"}});
}

std::variant<ToolCall, CallError> parse_tool_call(const Json& params) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) return CallError{true, "invalid params: 'name' must be a string"};
  auto row = tool_rows().find(name->get_ref<const std::string&>());
  if (row == tool_rows().end()) return CallError{true, "unknown tool '" + name->get<std::string>() + "'"};
  Json none = Json::object();
  auto a_it = params.find("arguments");
  if (a_it != params.end() && !a_it->is_null() && !a_it->is_object())
    return CallError{false, "invalid arguments: 'arguments' must be an object"};
  const Json& obj = (a_it == params.end() || a_it->is_null()) ? none : *a_it;
  Args a(obj, row->second.spec["inputSchema"]);
  ToolCall call{row->second.read(a)};
  if (a.error()) return CallError{false, *a.error()};
  return call;
}

Json tool_error(const std::string& message) {
  return {{"content", Json::array({{{"type", "text"}, {"text", message}}})}, {"isError", true}};
}

Json tool_error(const Error& e) { return tool_error(words(e, "job")); }

// A call's end in its session, as a model reads it: what the session's
// envelope did to it, and how much of it is used.
Json run_result(const RunSummary& a) {
  auto [out, cut] = head_and_tail(a.output);
  const bool truncated = cut || a.truncated;
  if (!a.exit) {
    Json s = {{"running", true}, {"id", a.id}, {"output", out}, {"truncated", truncated}, {"left_out", a.left_out}};
    std::string cut_words;
    if (a.left_out) cut_words = "; " + std::to_string(a.left_out) + " bytes left out in the middle";
    if (!a.spool_path.empty()) s["spool_path"] = a.spool_path, cut_words += "; all of it is in " + a.spool_path;
    return text_result(after_output(out, "[still running as job " + a.id + cut_words +
                                             "; use output, wait or kill with this id]"),
                       s);
  }
  Json leftovers = Json::array();
  if (a.report.contains("leftovers"))
    for (const Json& l : a.report["leftovers"])
      leftovers.push_back({{"pid", l["pid"]}, {"command", l.value("cmdline", std::string())},
                           {"action", l.value("action", std::string())}});
  const bool timed_out = a.report.value("timed_out", false);
  const bool idle = timed_out && a.report.contains("stop") &&
                    a.report["stop"].value("reason", Json()) == words_of(CallEnd::idle_timeout).stop_reason;
  Json s = {{"running", false},
            {"output", out},
            {"truncated", truncated},
            {"exit_code", exit_code_json(a.exit)},
            {"signal", signal_json(a.exit)},
            {"timed_out", timed_out},
            {"idle_timed_out", idle},
            {"leftovers", leftovers},
            {"cleanup_verified", a.cleanup_verified},
            {"duration_ms", a.report.value("duration_ms", 0.0)},
            {"oom_killed", a.report.value("oom_killed", Json(nullptr))},
            {"pids_max_hit", a.report.value("pids_max_hit", Json(nullptr))},
            {"stopped_by", a.report.contains("job") ? a.report["job"].value("stoppedBy", Json(nullptr)) : Json(nullptr)},
            {"left_out", a.left_out}};
  std::string note =
      "[" + std::string(idle ? "no output for idle_timeout_s, stopped, " : timed_out ? "timed out, " : "") +
      ending_words(*a.exit);
  if (!leftovers.empty()) {
    note += "; stopped " + std::to_string(leftovers.size()) + " process" + (leftovers.size() > 1 ? "es" : "") +
            " it left running:";
    for (const Json& l : leftovers)
      note += " " + l["command"].get<std::string>() + " (pid " + std::to_string(l["pid"].get<int>()) + ")";
  }
  const bool in_session = a.report.contains("session") && a.report["session"].is_object();
  if (in_session) {
    s["session"] = a.report["session"];
    note += "; " + session_note(a.report["session"], s["oom_killed"] == true);
  } else if (s["oom_killed"] == true) {
    note += "; killed for going past memory_max";
  }
  if (s["pids_max_hit"] == true) note += "; some forks failed at pids_max";
  if (a.left_out) note += "; " + std::to_string(a.left_out) + " bytes of output left out in the middle";
  if (!a.cleanup_verified) note += "; WARNING: some of its processes could not be confirmed gone";
  return text_result(after_output(out, note + "]"), s);
}

Json start_result(const Started& s) {
  if (s.ready && !s.existing) {
    Json sc = {{"id", s.id}, {"ready", s.ready->ready}};
    if (s.ready->ready) sc["ready_ms"] = s.ready->ms;
    else sc["ready_error"] = s.ready->error;
    return text_result(s.ready->ready ? "started job " + s.id + "; ready after " + std::to_string(s.ready->ms) + " ms"
                                      : "started job " + s.id + ", but it is not ready: " + s.ready->error +
                                            " (its output may say why)",
                       sc);
  }
  if (!s.existing) return text_result("started job " + s.id, {{"id", s.id}});
  Json sc = {{"id", s.id}, {"already_running", true}};
  if (s.ready) sc["ready"] = s.ready->ready;
  return text_result("job " + s.id + " of that name is already running; nothing new was started (replace: true "
                     "stops it and starts the command anew)",
                     sc);
}

Json output_result(const OutputRead& r) {
  Json s = {{"output", r.out.text}, {"truncated", r.out.truncated}, {"next", r.out.next},
            {"more", r.out.more},   {"running", !r.exit},           {"exit_code", exit_code_json(r.exit)},
            {"signal", signal_json(r.exit)}};
  if (!r.exit) s["waiting_for_input"] = r.waiting_for_input;
  const std::string state = r.exit ? ending_words(*r.exit)
                            : r.waiting_for_input ? std::string(kWaitingWords)
                                                  : std::string("running");
  return text_result(after_output(r.out.text, "[" + state + "; " + (r.out.more ? "more from next " : "next ") +
                                                  std::to_string(r.out.next) + "]"),
                     s);
}

Json view_output_result(const ViewResult& v, const std::optional<ExitStatus>& exit, bool waiting_for_input,
                        const std::string& spool_path) {
  Json s = {{"output", v.text},  {"truncated", v.truncated}, {"from", v.from},
            {"next", v.next},    {"more", v.more},           {"left_out", v.left_out},
            {"total", v.total},  {"running", !exit},         {"exit_code", exit_code_json(exit)},
            {"signal", signal_json(exit)}, {"spool_path", spool_path.empty() ? Json(nullptr) : Json(spool_path)}};
  if (!exit) s["waiting_for_input"] = waiting_for_input;
  if (v.matches) s["matches"] = *v.matches;
  std::string note = exit ? ending_words(*exit) : waiting_for_input ? std::string(kWaitingWords) : std::string("running");
  if (v.matches)
    note += "; " + std::to_string(*v.matches) + " matching line" + (*v.matches == 1 ? "" : "s") +
            (v.shown < *v.matches ? ", " + std::to_string(v.shown) + " shown" : "");
  if (v.truncated) note += "; bytes before " + std::to_string(v.from) + " are no longer kept";
  if (v.left_out) note += "; " + std::to_string(v.left_out) + " bytes left out in the middle";
  if (!spool_path.empty() && (v.left_out || v.more || v.truncated || v.matches))
    note += "; all of it is in " + spool_path + " (or use grep, or offset and length)";
  note += std::string("; ") + (v.more ? "more from next " : "next ") + std::to_string(v.next);
  return text_result(after_output(v.text, "[" + note + "]"), s);
}

Json wait_result(const std::optional<ExitStatus>& exit, bool waiting_for_input, const EndFacts& end,
                 const Json& session) {
  Json s = {{"running", !exit}, {"exit_code", exit_code_json(exit)}, {"signal", signal_json(exit)}};
  if (!exit) s["waiting_for_input"] = waiting_for_input;
  else add_end_fields(s, end);
  std::string in_session;
  if (exit && session.is_object()) {
    s["session"] = session;
    in_session = "; " + session_note(session, end.oom_killed == true);
  }
  return text_result(exit ? ending_words(*exit) + end_words(end) + in_session
                     : waiting_for_input ? "still running, and " + std::string(kWaitingWords)
                                         : std::string("still running"),
                     s);
}

int log_level(const Json& params) {
  static constexpr std::string_view kLevels[] = {"debug", "info",     "notice", "warning",
                                                 "error", "critical", "alert",  "emergency"};
  if (!params.is_object() || !params.contains("level") || !params["level"].is_string()) return -1;
  const std::string& level = params["level"].get_ref<const std::string&>();
  for (int i = 0; i < 8; ++i)
    if (level == kLevels[i]) return i;
  return -1;
}

Json job_ended_message(const std::string& id, const std::string& name, const ExitStatus& exit, const EndFacts& end,
                       bool cleanup_verified) {
  std::string text = "job " + id + (name.empty() ? "" : " (" + name + ")") + " ended: " + ending_words(exit);
  text += end_words(end);
  text += cleanup_verified ? "; nothing it started is left" : "; not every process could be confirmed gone";
  Json data = {{"event", "job_ended"},
               {"id", id},
               {"exit_code", exit_code_json(exit)},
               {"signal", signal_json(exit)},
               {"cleanup_verified", cleanup_verified},
               {"text", text}};
  add_end_fields(data, end);
  if (!name.empty()) data["name"] = name;
  return {{"level", "info"}, {"logger", "pmon"}, {"data", data}};
}

Json write_result(uint64_t written) {
  return text_result("wrote " + std::to_string(written) + " bytes", {{"written", written}});
}

Json kill_result(const Stopped& s) {
  return text_result(s.cleanup_verified ? "stopped; nothing of it is left"
                                        : "stopped, but not every process could be confirmed gone",
                     {{"cleanup_verified", s.cleanup_verified}});
}

Json list_result(const std::vector<JobInfo>& jobs) {
  Json list = Json::array();
  std::string text;
  const JobInfo::InSession* session = nullptr;
  for (const JobInfo& t : jobs) {
    Json ports = Json::array();
    for (const ListeningPort& p : t.ports) ports.push_back(p.port);
    std::string cmd;
    // Shell jobs show their command line, others their argv.
    if (t.command.size() == 3 && t.command[0] == "/bin/sh" && t.command[1] == "-c") cmd = t.command[2];
    else
      for (const std::string& w : t.command) cmd += (cmd.empty() ? "" : " ") + w;
    Json job = {{"id", t.id}, {"name", t.name.empty() ? Json(nullptr) : Json(t.name)}, {"command", cmd},
                {"status", t.status}, {"pid", t.pid}, {"ports", ports}, {"exit_code", exit_code_json(t.exit)},
                {"signal", signal_json(t.exit)}, {"waiting_for_input", t.waiting_for_input}};
    add_end_fields(job, t.end);
    if (t.in_session) {
      job["memory_peak"] = t.in_session->job.memory_peak ? Json(*t.in_session->job.memory_peak) : Json(nullptr);
      job["oom_kill"] = t.in_session->job.oom_kill ? Json(*t.in_session->job.oom_kill) : Json(nullptr);
      if (session == nullptr || t.status == std::string_view("running")) session = &*t.in_session;
    }
    list.push_back(std::move(job));
    text += t.id + "  " + (t.waiting_for_input ? std::string("waiting for input") : std::string(t.status));
    if (!t.end.stopped_by_word().empty()) text += " (stopped: " + std::string(t.end.stopped_by_word()) + ")";
    text += "  " + cmd;
    if (!t.ports.empty()) {
      text += "  ports";
      for (const ListeningPort& p : t.ports) text += " " + std::to_string(p.port);
    }
    text += "\n";
  }
  if (text.empty()) text = "no jobs\n";
  if (session != nullptr) return text_result(text + session_line(*session), {{"jobs", list}, {"session", session_json(*session, KeyCase::snake)}});
  return text_result(text, {{"jobs", list}});
}

Json port_result(const ListeningPort& l) {
  return text_result("listening on " + l.address + " port " + std::to_string(l.port) + " (pid " +
                         std::to_string(l.pid) + ")",
                     {{"port", l.port}, {"address", l.address}, {"pid", l.pid}});
}

}  // namespace pmon::serve::mcp
