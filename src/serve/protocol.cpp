// SPDX-License-Identifier: Apache-2.0
#include "serve/protocol.h"

#include <ctime>
#include <limits>
#include <map>

#include "core/units.h"
#include "jobs/json_text.h"

namespace pmon::serve {

namespace {

constexpr uint64_t kMaxMs = uint64_t{1} << 40;
constexpr uint64_t kMaxOutputLimit = uint64_t{1} << 30;
constexpr uint64_t kMaxSpoolLimit = uint64_t{1} << 40;

// Each method's params, read in the order of its fields; the first problem
// is kept (later reads then do nothing).
void read_params(FieldReader& f, CreateParams& c) {
  c.session_id = f.str("sessionId", false);
  c.command = f.c_str("command", true).value_or("");
  if (!f.error() && c.command.empty()) return f.bad("command", "must not be empty");
  c.args = f.strings("args");
  c.env = f.env_list("env");
  c.cwd = f.c_str("cwd", false);
  c.output_byte_limit = f.uint("outputByteLimit", false, kMaxOutputLimit).value_or(1 << 20);
  c.output_backpressure = f.flag("outputBackpressure");
  c.timeout_ms = f.uint("timeoutMs", false, kMaxMs);
  c.idle_timeout_ms = f.uint("idleTimeoutMs", false, kMaxMs);
  if (!f.error() && c.idle_timeout_ms == 0u) return f.bad("idleTimeoutMs", "must be at least 1 (leave it out for none)");
  c.pty = f.pty_size("pty", false);
  c.keep = f.flag("keep");
  c.wait_tree = f.flag("waitTree");
  c.name = f.str("name", false);
  c.replace = f.flag("replace");
  if (!f.error() && c.replace && !c.name) return f.bad("replace", "needs a name (the job it replaces is the one of that name)");
  c.separate_stderr = f.flag("separateStderr");
  // /dev/null unless a pipe is asked for (CreateParams::stdin_null).
  if (auto in = f.str("stdin", false); in && !f.error()) {
    if (*in == "pipe") c.stdin_null = false;
    else if (*in != "null")
      return f.bad("stdin", "must be \"null\" (the default: /dev/null, a read gets end of file at once) or \"pipe\" "
                            "(terminal/write writes to it)");
  }
  c.clear_env = f.flag("clearEnv");
  c.kill_signal = f.signal("killSignal");
  c.limits = f.limits("memoryMax", "memoryHigh", "pidsMax", "cpuMax");
  c.ready = f.ready("ready");
  c.spool_byte_limit = f.uint("spoolByteLimit", false, kMaxSpoolLimit);
}

void read_params(FieldReader& f, TerminalParams& t) { t.terminal_id = f.str("terminalId", true).value_or(""); }

void read_params(FieldReader& f, OutputParams& o) {
  o.terminal_id = f.str("terminalId", true).value_or("");
  o.since = f.uint("since", false, std::numeric_limits<uint64_t>::max());
  o.stderr_since = f.uint("stderrSince", false, std::numeric_limits<uint64_t>::max());
  o.wait_ms = f.uint("waitMs", false, kMaxMs);
  o.stream = f.flag("stream");
  o.follow = f.flag("follow", true);
  o.max_bytes = f.uint("maxBytes", false, OutputParams::kMaxMaxBytes).value_or(OutputParams::kDefaultMaxBytes);
  if (!f.error() && o.max_bytes == 0) f.bad("maxBytes", "must be at least 1");
  read_view(f, o, {"head", "tail", "offset", "length", "grep", "stripAnsi", "maxLineBytes"});
  if (!f.error() && o.view.any()) {
    if (o.since) f.bad("since", "goes with none of head, tail, offset, length, grep, stripAnsi, maxLineBytes (page with 'offset')");
    else if (o.stderr_since) f.bad("stderrSince", "goes with none of head, tail, offset, length, grep, stripAnsi, maxLineBytes");
    else if (o.stream) f.bad("stream", "gives raw bytes; it goes with none of head, tail, offset, length, grep, stripAnsi, maxLineBytes");
    else if (o.wait_ms) f.bad("waitMs", "goes with none of head, tail, offset, length, grep, stripAnsi, maxLineBytes");
  }
}

void read_params(FieldReader& f, WaitForExitParams& w) {
  w.terminal_id = f.str("terminalId", true).value_or("");
  w.timeout_ms = f.uint("timeoutMs", false, kMaxMs);
}

void read_params(FieldReader& f, WriteParams& w) {
  w.terminal_id = f.str("terminalId", true).value_or("");
  w.data = f.str("data", false).value_or("");
  w.eof = f.flag("eof");
}

// ACP-style flat {rows, cols}.
void read_params(FieldReader& f, ResizeParams& r) {
  r.terminal_id = f.str("terminalId", true).value_or("");
  auto rows = f.uint("rows", true, 65535);
  auto cols = f.uint("cols", true, 65535);
  if (rows && cols) r.size = {static_cast<uint16_t>(*rows), static_cast<uint16_t>(*cols)};
}

void read_params(FieldReader& f, WaitForPortParams& w) {
  w.terminal_id = f.str("terminalId", true).value_or("");
  if (auto port = f.uint("port", false, 65535)) w.port = static_cast<uint16_t>(*port);
  w.timeout_ms = f.uint("timeoutMs", false, kMaxMs);
}

void read_params(FieldReader& f, ListParams& l) { l.session_id = f.str("sessionId", false); }

void read_params(FieldReader& f, FindParams& p) {
  p.name = f.str("name", false);
  if (auto port = f.uint("port", false, 65535)) p.port = static_cast<uint16_t>(*port);
  p.session_id = f.str("sessionId", false);
  if (!f.error() && !p.name && !p.port) f.bad("name", "or 'port' is needed: the job to find");
}

void read_params(FieldReader& f, SessionCloseParams& s) { s.session_id = f.str("sessionId", true).value_or(""); }

using ParamsReader = Params (*)(FieldReader&);

template <class P>
Params read_as(FieldReader& f) {
  P p{};
  read_params(f, p);
  return p;
}

const std::map<std::string_view, ParamsReader, std::less<>>& readers() {
  static const auto m =
      by_name<ParamsReader>(kMethods, [](const auto& row) -> ParamsReader { return &read_as<row_type<decltype(row)>>; });
  return m;
}

std::string iso_time(std::chrono::system_clock::time_point t) {
  std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  (void)::gmtime_r(&s, &tm);
  char buf[64];
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

template <class T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace

std::variant<Request, BadRequest> parse_request(std::string_view line) {
  auto parsed = parse_envelope(line, {.null_id = true, .responses_ignored = false});
  if (auto* bad = std::get_if<BadRequest>(&parsed)) return std::move(*bad);
  Envelope& e = std::get<Envelope>(parsed);
  const bool answer = !e.notification;
  auto known = readers().find(e.method);
  if (known == readers().end())
    return BadRequest{e.id, {rpc::kMethodNotFound, "unknown method '" + e.method + "'"}, answer};
  auto params = e.take_params(false);
  if (auto* bad = std::get_if<BadRequest>(&params)) return std::move(*bad);
  FieldReader f(std::get<Json>(params));
  Request r;
  r.params = known->second(f);
  if (f.error()) return BadRequest{e.id, {rpc::kInvalidParams, *f.error()}, answer};
  r.id = std::move(e.id);
  r.notification = e.notification;
  return r;
}

std::vector<MethodDoc> method_docs() {
  return std::apply([](const auto&... row) { return std::vector<MethodDoc>{{row.name, row.params, row.result}...}; },
                    kMethods);
}

Json exit_status_json(std::optional<int> exit_code, std::optional<int> signal) {
  Json j = Json::object();
  j["exitCode"] = exit_code ? Json(*exit_code) : Json(nullptr);
  j["signal"] = signal ? Json(signal_name(*signal)) : Json(nullptr);
  return j;
}

Json exit_status_json(const std::optional<ExitStatus>& status) {
  return status ? exit_status_json(status->exit_code, status->signal) : Json(nullptr);
}

Json output_result(const OutputBuffer::Read& out, const OutputBuffer::Read* err, const Json& exit_status,
                   std::optional<bool> waiting_for_input) {
  Json res = {{"output", out.text}, {"truncated", out.truncated}, {"next", out.next}, {"more", out.more}};
  if (err)
    res["stderr"] = {{"output", err->text}, {"truncated", err->truncated}, {"next", err->next}, {"more", err->more}};
  res["exitStatus"] = exit_status;
  if (waiting_for_input) res["waitingForInput"] = *waiting_for_input;
  return res;
}

void add_end_facts(Json& o, const EndFacts& f) {
  o["timedOut"] = f.timed_out;
  o["stoppedBy"] = f.stopped_by_word().empty() ? Json(nullptr) : Json(std::string(f.stopped_by_word()));
  o["oomKilled"] = or_null(f.oom_killed);
  o["pidsMaxHit"] = or_null(f.pids_max_hit);
}

Json wait_result(const ExitStatus& status, const EndFacts& end) {
  Json res = exit_status_json(status);
  add_end_facts(res, end);
  return res;
}

Json still_running_result(bool waiting_for_input) {
  Json res = exit_status_json(std::nullopt, std::nullopt);
  res["running"] = true;
  res["waitingForInput"] = waiting_for_input;
  return res;
}

namespace {

// `"more":B,"next":N,"output":"..."` and `"truncated":B`: dump() writes
// the keys sorted, so a job's stderr object comes between the two.
void append_next_and_output(std::string& line, const OutputBuffer::Read& r) {
  line += r.more ? "\"more\":true,\"next\":" : "\"more\":false,\"next\":";
  line += std::to_string(r.next);
  line += ",\"output\":";
  append_json_string(line, r.text);
}
void append_truncated(std::string& line, const OutputBuffer::Read& r) {
  line += r.truncated ? "\"truncated\":true" : "\"truncated\":false";
}

}  // namespace

std::string output_result_line(const Json& id, const OutputBuffer::Read& out, const OutputBuffer::Read* err,
                               const Json& exit_status, std::optional<bool> waiting_for_input, std::string storage) {
  std::string line = std::move(storage);
  line.clear();
  const size_t text = out.text.size() + (err ? err->text.size() : 0);
  line.reserve(text + text / 16 + 200);  // (room for some escapes)
  line += "{\"id\":";
  line += dump_text(id);
  line += ",\"jsonrpc\":\"2.0\",\"result\":{\"exitStatus\":";
  line += dump_text(exit_status);
  line += ',';
  append_next_and_output(line, out);
  line += ',';
  if (err) {
    line += "\"stderr\":{";
    append_next_and_output(line, *err);
    line += ',';
    append_truncated(line, *err);
    line += "},";
  }
  append_truncated(line, out);
  if (waiting_for_input) line += *waiting_for_input ? ",\"waitingForInput\":true" : ",\"waitingForInput\":false";
  line += "}}\n";
  return line;
}

Json port_json(const ListeningPort& l) {
  return {{"port", l.port}, {"address", l.address}, {"v6", l.v6}, {"pid", l.pid}};
}

namespace {

template <class T>
Json or_null_v(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// The key in the case asked for.
struct Keys {
  KeyCase k;
  std::string operator()(std::string_view camel, std::string_view snake) const {
    return std::string(k == KeyCase::camel ? camel : snake);
  }
};

Json usage_json(const CgroupUsage& u, Keys key) {
  return {{key("memoryCurrent", "memory_current"), or_null_v(u.memory_current)},
          {key("memoryPeak", "memory_peak"), or_null_v(u.memory_peak)},
          {key("memoryEvents", "memory_events"),
           {{"high", or_null_v(u.memory_high_events)},
            {"max", or_null_v(u.memory_max_events)},
            {"oom", or_null_v(u.oom)},
            {key("oomKill", "oom_kill"), or_null_v(u.oom_kill)}}},
          {key("pidsCurrent", "pids_current"), or_null_v(u.pids_current)},
          {key("pidsEventsMax", "pids_events_max"), or_null_v(u.pids_max_events)},
          {key("memoryPressureAvg10", "memory_pressure_avg10"), or_null_v(u.memory_pressure_avg10)},
          {key("cpuPressureAvg10", "cpu_pressure_avg10"), or_null_v(u.cpu_pressure_avg10)}};
}

}  // namespace

Json session_json(const JobInfo::InSession& s, KeyCase k) {
  const Limits& l = s.envelope.limits;
  const Keys key{k};
  return {{"cgroup", s.cgroup},
          {"envelope",
           {{key("memoryMax", "memory_max"), or_null_v(l.memory_max)},
            {key("memoryHigh", "memory_high"), or_null_v(l.memory_high)},
            {key("pidsMax", "pids_max"), or_null_v(l.pids_max)},
            {key("cpuMax", "cpu_max"), or_null_v(l.cpu_max)},
            {key("setBy", "set_by"), s.envelope.set_by}}},
          {"usage", usage_json(s.session, key)},
          {key("jobUsage", "job_usage"), usage_json(s.job, key)}};
}

Json job_json(const JobInfo& j) {
  Json ports = Json::array();
  for (const ListeningPort& l : j.ports) ports.push_back(port_json(l));
  Json o = {{"terminalId", j.id},
            {"name", j.name.empty() ? Json(nullptr) : Json(j.name)},
            {"command", j.command},
            {"pid", j.pid},
            {"status", j.status},
            {"started", iso_time(j.started)},
            {"keep", j.keep},
            {"pty", j.pty},
            {"sessionId", or_null(j.session)},
            {"ports", ports},
            {"waitingForInput", j.waiting_for_input},
            {"exitStatus", exit_status_json(j.exit)},
            {"cpuUsec", or_null(j.cpu_usec)},
            {"memoryPeakBytes", or_null(j.memory_peak_bytes)}};
  add_end_facts(o, j.end);
  if (j.cleanup_verified) o["cleanupVerified"] = *j.cleanup_verified;
  if (j.ready) o["ready"] = *j.ready;
  o["spoolPath"] = j.spool_path.empty() ? Json(nullptr) : Json(j.spool_path);
  if (!j.stderr_spool_path.empty()) o["stderrSpoolPath"] = j.stderr_spool_path;
  if (j.in_session) o["session"] = session_json(*j.in_session);
  return o;
}

}  // namespace pmon::serve
