#include "serve/protocol.h"

#include <limits>
#include <map>

#include "core/units.h"
#include "serve/json_text.h"

namespace pmon::serve {

namespace {

// The fields of one params object.
class Fields : public FieldReader {
 public:
  using FieldReader::FieldReader;

  std::optional<uint64_t> uint(const char* name, bool required, uint64_t max) {
    const Json* v = find(name, required);
    if (!v) return std::nullopt;
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
      return bad(name, "must be a non-negative integer"), std::nullopt;
    uint64_t n = v->get<uint64_t>();
    if (n > max) return bad(name, "must be at most " + std::to_string(max)), std::nullopt;
    return n;
  }

  std::vector<std::string> strings(const char* name) {
    std::vector<std::string> out;
    const Json* v = find(name, false);
    if (!v) return out;
    if (!v->is_array()) return bad(name, "must be an array of strings"), out;
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string at = std::string(name) + "[" + std::to_string(i) + "]";
      if (!(*v)[i].is_string()) return bad(at, "must be a string"), out;
      if (!no_nul(at, (*v)[i].get_ref<const std::string&>())) return out;
      out.push_back((*v)[i].get<std::string>());
    }
    return out;
  }

  std::vector<EnvVar> env(const char* name) {
    std::vector<EnvVar> out;
    const Json* v = find(name, false);
    if (!v) return out;
    if (!v->is_array()) return bad(name, "must be an array of {name, value}"), out;
    for (size_t i = 0; i < v->size(); ++i) {
      std::string at = std::string(name) + "[" + std::to_string(i) + "]";
      const Json& e = (*v)[i];
      if (!e.is_object()) return bad(at, "must be an object {name, value}"), out;
      auto n = e.find("name");
      auto val = e.find("value");
      if (n == e.end() || !n->is_string() || n->get<std::string>().empty() ||
          n->get<std::string>().find('=') != std::string::npos)
        return bad(at + ".name", "must be a non-empty string without '='"), out;
      if (val == e.end() || !val->is_string()) return bad(at + ".value", "must be a string"), out;
      if (!no_nul(at + ".name", n->get_ref<const std::string&>()) ||
          !no_nul(at + ".value", val->get_ref<const std::string&>()))
        return out;
      out.push_back({n->get<std::string>(), val->get<std::string>()});
    }
    return out;
  }

  // A signal by name ("TERM", "SIGTERM") or number.
  std::optional<int> signal(const char* name) {
    const Json* v = find(name, false);
    if (!v) return std::nullopt;
    std::optional<int> sig;
    if (v->is_string()) sig = parse_signal(v->get<std::string>());
    else if (v->is_number_integer()) sig = parse_signal(std::to_string(v->get<int64_t>()));
    if (!sig) return bad(name, "must be a signal name or number"), std::nullopt;
    return sig;
  }

  // A size in bytes: a whole number, or a string with K, M, G (parse_size).
  std::optional<uint64_t> bytes(const char* name) {
    const Json* v = find(name, false);
    if (!v) return std::nullopt;
    std::string text;
    if (v->is_string()) text = v->get<std::string>();
    else if (v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0))
      text = std::to_string(v->get<uint64_t>());
    else return bad(name, "must be a number of bytes or a string such as \"512M\""), std::nullopt;
    auto n = parse_size(text);
    if (!n) return bad(name, n.error()), std::nullopt;
    return *n;
  }

  std::optional<uint64_t> pids(const char* name) {
    const Json* v = find(name, false);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) return bad(name, "must be a whole number of processes"), std::nullopt;
    auto n = parse_pids(std::to_string(v->get<int64_t>()));
    if (!n) return bad(name, n.error()), std::nullopt;
    return *n;
  }

  std::optional<double> cores(const char* name) {
    const Json* v = find(name, false);
    if (!v) return std::nullopt;
    if (!v->is_number()) return bad(name, "must be a number of cores (e.g. 0.5)"), std::nullopt;
    auto c = check_cores(v->get<double>());
    if (!c) return bad(name, c.error()), std::nullopt;
    return *c;
  }

  std::optional<PtySize> size(const char* name, bool required) {
    const Json* v = find(name, required);
    if (!v) return std::nullopt;
    if (!v->is_object()) return bad(name, "must be an object {rows, cols}"), std::nullopt;
    Fields inner(*v);
    inner.prefix_ = std::string(name) + ".";
    auto rows = inner.uint("rows", true, 65535);
    auto cols = inner.uint("cols", true, 65535);
    if (inner.error_) return error_ = inner.error_, std::nullopt;
    if (*rows == 0 || *cols == 0) return bad(name, "rows and cols must be at least 1"), std::nullopt;
    return PtySize{static_cast<uint16_t>(*rows), static_cast<uint16_t>(*cols)};
  }
};

constexpr uint64_t kMaxMs = uint64_t{1} << 40;
constexpr uint64_t kMaxOutputLimit = uint64_t{1} << 30;

std::optional<Params> parse_params(Method m, const Json& p, std::string& err) {
  Fields f(p);
  Params out;
  auto id = [&] { return f.str("terminalId", true).value_or(""); };
  switch (m) {
    case Method::create: {
      CreateParams c;
      c.session_id = f.str("sessionId", false);
      c.command = f.c_str("command", true).value_or("");
      if (!f.error() && c.command.empty()) {
        err = "invalid params: 'command' must not be empty";
        return std::nullopt;
      }
      c.args = f.strings("args");
      c.env = f.env("env");
      c.cwd = f.c_str("cwd", false);
      c.output_byte_limit = f.uint("outputByteLimit", false, kMaxOutputLimit).value_or(1 << 20);
      c.output_backpressure = f.flag("outputBackpressure");
      c.timeout_ms = f.uint("timeoutMs", false, kMaxMs);
      c.pty = f.size("pty", false);
      c.keep = f.flag("keep");
      c.wait_tree = f.flag("waitTree");
      c.name = f.str("name", false);
      c.separate_stderr = f.flag("separateStderr");
      c.clear_env = f.flag("clearEnv");
      c.kill_signal = f.signal("killSignal");
      c.limits.memory_max = f.bytes("memoryMax");
      c.limits.pids_max = f.pids("pidsMax");
      c.limits.cpu_max = f.cores("cpuMax");
      out = std::move(c);
      break;
    }
    case Method::kill:
    case Method::release:
    case Method::report: out = TerminalParams{id()}; break;
    case Method::output: {
      OutputParams o{id(), std::nullopt, std::nullopt, std::nullopt};
      o.since = f.uint("since", false, std::numeric_limits<uint64_t>::max());
      o.stderr_since = f.uint("stderrSince", false, std::numeric_limits<uint64_t>::max());
      o.wait_ms = f.uint("waitMs", false, kMaxMs);
      o.stream = f.flag("stream");
      o.follow = f.flag("follow", true);
      o.max_bytes = f.uint("maxBytes", false, OutputParams::kMaxMaxBytes).value_or(OutputParams::kDefaultMaxBytes);
      if (!f.error() && o.max_bytes == 0) {
        err = "invalid params: 'maxBytes' must be at least 1";
        return std::nullopt;
      }
      out = o;
      break;
    }
    case Method::wait_for_exit: {
      WaitForExitParams w{id(), std::nullopt};
      w.timeout_ms = f.uint("timeoutMs", false, kMaxMs);
      out = w;
      break;
    }
    case Method::write: {
      WriteParams w;
      w.terminal_id = id();
      w.data = f.str("data", false).value_or("");
      w.eof = f.flag("eof");
      out = std::move(w);
      break;
    }
    case Method::resize: {
      ResizeParams r;
      r.terminal_id = id();
      // ACP-style flat {rows, cols}.
      auto rows = f.uint("rows", true, 65535);
      auto cols = f.uint("cols", true, 65535);
      if (rows && cols) r.size = {static_cast<uint16_t>(*rows), static_cast<uint16_t>(*cols)};
      out = r;
      break;
    }
    case Method::wait_for_port: {
      WaitForPortParams w;
      w.terminal_id = id();
      auto port = f.uint("port", false, 65535);
      if (port) w.port = static_cast<uint16_t>(*port);
      w.timeout_ms = f.uint("timeoutMs", false, kMaxMs);
      out = w;
      break;
    }
    case Method::list: out = ListParams{f.str("sessionId", false)}; break;
    case Method::session_close: out = SessionCloseParams{f.str("sessionId", true).value_or("")}; break;
  }
  if (f.error()) {
    err = *f.error();
    return std::nullopt;
  }
  return out;
}

const std::map<std::string, Method, std::less<>>& methods() {
  static const std::map<std::string, Method, std::less<>> m = {
      {"terminal/create", Method::create},
      {"terminal/output", Method::output},
      {"terminal/wait_for_exit", Method::wait_for_exit},
      {"terminal/write", Method::write},
      {"terminal/resize", Method::resize},
      {"terminal/kill", Method::kill},
      {"terminal/release", Method::release},
      {"terminal/list", Method::list},
      {"terminal/report", Method::report},
      {"terminal/wait_for_port", Method::wait_for_port},
      {"session/close", Method::session_close},
  };
  return m;
}

}  // namespace

std::optional<std::string> FieldReader::str(const char* name, bool required) {
  const Json* v = find(name, required);
  if (!v) return std::nullopt;
  if (!v->is_string()) return bad(name, "must be a string"), std::nullopt;
  return v->get<std::string>();
}

std::optional<std::string> FieldReader::c_str(const char* name, bool required) {
  auto s = str(name, required);
  if (s && !no_nul(name, *s)) return std::nullopt;
  return s;
}

bool FieldReader::flag(const char* name, bool absent) {
  const Json* v = find(name, false);
  if (!v) return absent;
  if (!v->is_boolean()) return bad(name, "must be true or false"), false;
  return v->get<bool>();
}

const Json* FieldReader::find(const char* name, bool required) {
  if (error_) return nullptr;
  auto it = obj_.find(name);
  if (it == obj_.end() || it->is_null()) {
    if (required) bad(name, "is required");
    return nullptr;
  }
  return &*it;
}

void FieldReader::bad(const std::string& name, const std::string& why) {
  if (!error_) error_ = what_ + ": '" + prefix_ + name + "' " + why;
}

bool FieldReader::no_nul(const std::string& name, const std::string& value) {
  if (value.find('\0') == std::string::npos) return true;
  bad(name, "contains a NUL byte");
  return false;
}

namespace {

// Builds a message's Json as nlohmann's own parser does (a repeated key:
// the last one wins), from its SAX events; a container past kMaxDepth is
// kept as null and what it holds skipped.
class DepthLimitedBuilder {
 public:
  explicit DepthLimitedBuilder(MessageJson& out) : out_(out) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return put(Json(v)); }
  // (The lexer's buffer: taken, not copied; it is cleared before the next token.)
  bool string(Json::string_t& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return put(Json(std::move(v))); }  // (not in JSON text)
  bool key(Json::string_t& k) {
    if (skipping_ == 0) key_ = std::move(k);
    return true;
  }
  bool start_object(size_t) { return open(Json::value_t::object); }
  bool start_array(size_t) { return open(Json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  template <class Exception>
  bool parse_error(size_t, const std::string&, const Exception&) {
    return false;
  }

 private:
  // Puts v where the next value goes (the root, the end of the open array,
  // the open object's key) and returns where it is. An open container is
  // always the last thing put into its parent, and nothing is put into the
  // parent while it is open: the pointers on open_ stay valid.
  Json* place(Json v) {
    if (open_.empty()) return &(out_.json = std::move(v));
    Json& top = *open_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    return &(top[key_] = std::move(v));
  }
  bool put(Json v) {
    if (skipping_ == 0) place(std::move(v));
    return true;
  }
  bool open(Json::value_t kind) {
    if (skipping_ == 0 && open_.size() < kMaxDepth) {
      open_.push_back(place(Json(kind)));
      return true;
    }
    if (skipping_ == 0) {
      place(Json(nullptr));
      out_.too_deep = true;
    }
    ++skipping_;
    return true;
  }
  bool close() {
    if (skipping_ > 0) --skipping_;
    else open_.pop_back();
    return true;
  }

  MessageJson& out_;
  std::vector<Json*> open_;
  std::string key_;
  size_t skipping_ = 0;  // how deep inside a skipped container
};

}  // namespace

MessageJson parse_message_json(std::string_view line) {
  MessageJson m;
  DepthLimitedBuilder b(m);
  if (!Json::sax_parse(line, &b)) m = {Json(Json::value_t::discarded), false};
  return m;
}

std::variant<Request, BadRequest> parse_request(std::string_view line) {
  MessageJson message = parse_message_json(line);
  const Json& j = message.json;
  if (j.is_discarded()) return BadRequest{nullptr, {rpc::kParseError, "parse error: not valid JSON"}};
  if (!j.is_object()) return BadRequest{nullptr, {rpc::kInvalidRequest, "invalid request: not a JSON object"}};
  Json id = nullptr;
  bool notification = true;
  if (auto it = j.find("id"); it != j.end()) {
    if (!it->is_string() && !it->is_number_integer() && !it->is_null())
      return BadRequest{nullptr, {rpc::kInvalidRequest, "invalid request: 'id' must be a string or an integer"}};
    id = *it;
    notification = false;
  }
  auto ver = j.find("jsonrpc");
  if (ver == j.end() || *ver != "2.0")
    return BadRequest{id, {rpc::kInvalidRequest, "invalid request: 'jsonrpc' must be \"2.0\""}};
  auto m = j.find("method");
  if (m == j.end() || !m->is_string())
    return BadRequest{id, {rpc::kInvalidRequest, "invalid request: 'method' must be a string"}};
  // A request or a notification from here on: a notification is not answered.
  const bool answer = !notification;
  if (message.too_deep)
    return BadRequest{id, {rpc::kInvalidRequest, "invalid request: nested more than " + std::to_string(kMaxDepth) +
                                                     " levels deep"}, answer};
  const std::string& name = m->get_ref<const std::string&>();
  auto known = methods().find(name);
  if (known == methods().end())
    return BadRequest{id, {rpc::kMethodNotFound, "unknown method '" + name + "'"}, answer};
  static const Json no_params = Json::object();
  const Json* params = &no_params;
  if (auto p = j.find("params"); p != j.end()) {
    if (!p->is_object())
      return BadRequest{id, {rpc::kInvalidParams, "invalid params: 'params' must be an object"}, answer};
    params = &*p;
  }
  std::string err;
  auto typed = parse_params(known->second, *params, err);
  if (!typed) return BadRequest{id, {rpc::kInvalidParams, err}, answer};
  Request r;
  r.id = id;
  r.notification = notification;
  r.method = known->second;
  r.params = std::move(*typed);
  return r;
}

// What dump() makes of {"jsonrpc", "id", "result"} (keys sorted), written
// around the result's own dump: no copy of a large result (a report).
std::string result_line(const Json& id, const Json& result) {
  return result_line_of_text(id, result.dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::string result_line_of_text(const Json& id, std::string_view result) {
  std::string line = "{\"id\":";
  line += id.dump(-1, ' ', false, Json::error_handler_t::replace);
  line += ",\"jsonrpc\":\"2.0\",\"result\":";
  line += result;
  line += "}\n";
  return line;
}

std::string error_line(const Json& id, const RpcError& error) {
  Json j = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", error.code}, {"message", error.message}}}};
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string notification_line(std::string_view method, const Json& params) {
  std::string line = "{\"jsonrpc\":\"2.0\",\"method\":";
  line += Json(method).dump(-1, ' ', false, Json::error_handler_t::replace);
  line += ",\"params\":";
  line += params.dump(-1, ' ', false, Json::error_handler_t::replace);
  line += "}\n";
  return line;
}

Json exit_status_json(std::optional<int> exit_code, std::optional<int> signal) {
  Json j = Json::object();
  j["exitCode"] = exit_code ? Json(*exit_code) : Json(nullptr);
  j["signal"] = signal ? Json(signal_name(*signal)) : Json(nullptr);
  return j;
}

Json output_result(const OutputBuffer::Read& out, const OutputBuffer::Read* err, const Json& exit_status) {
  Json res = {{"output", out.text}, {"truncated", out.truncated}, {"next", out.next}, {"more", out.more}};
  if (err)
    res["stderr"] = {{"output", err->text}, {"truncated", err->truncated}, {"next", err->next}, {"more", err->more}};
  res["exitStatus"] = exit_status;
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
                               const Json& exit_status, std::string storage) {
  std::string line = std::move(storage);
  line.clear();
  const size_t text = out.text.size() + (err ? err->text.size() : 0);
  line.reserve(text + text / 16 + 200);  // (room for some escapes)
  line += "{\"id\":";
  line += id.dump(-1, ' ', false, Json::error_handler_t::replace);
  line += ",\"jsonrpc\":\"2.0\",\"result\":{\"exitStatus\":";
  line += exit_status.dump(-1, ' ', false, Json::error_handler_t::replace);
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
  line += "}}\n";
  return line;
}

}  // namespace pmon::serve
