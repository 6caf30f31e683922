// SPDX-License-Identifier: Apache-2.0
#include "serve/fields.h"

#include <algorithm>
#include <limits>

#include <re2/re2.h>

#include "core/units.h"

namespace pmon::serve {

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
  if (error_) return;
  error_ = what_ + ": '" + prefix_ + name + "' " + why;
  problem_ = Problem{prefix_ + name, why};
}

bool FieldReader::no_nul(const std::string& name, const std::string& value) {
  if (value.find('\0') == std::string::npos) return true;
  bad(name, "contains a NUL byte");
  return false;
}

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

std::optional<uint64_t> FieldReader::uint(const char* name, bool required, uint64_t max) {
  const Json* v = find(name, required);
  if (!v) return std::nullopt;
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
    return bad(name, "must be a non-negative integer"), std::nullopt;
  uint64_t n = v->get<uint64_t>();
  if (n > max) return bad(name, "must be at most " + std::to_string(max)), std::nullopt;
  return n;
}

std::optional<uint64_t> FieldReader::in_range(const char* name, uint64_t min, uint64_t max) {
  const Json* v = find(name, false);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() || v->get<int64_t>() < static_cast<int64_t>(min) || v->get<uint64_t>() > max)
    return bad(name, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max)), std::nullopt;
  return v->get<uint64_t>();
}

std::optional<uint64_t> FieldReader::seconds_ms(const char* name, uint64_t max_seconds) {
  const Json* v = find(name, false);
  if (!v) return std::nullopt;
  if (!v->is_number() || v->get<double>() < 0 || v->get<double>() > static_cast<double>(max_seconds))
    return bad(name, "must be a number of seconds, at least 0"), std::nullopt;
  return static_cast<uint64_t>(v->get<double>() * 1000.0 + 0.5);
}

std::vector<std::string> FieldReader::strings(const char* name) {
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

std::vector<EnvVar> FieldReader::env_list(const char* name) {
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

std::vector<EnvVar> FieldReader::env_object(const char* name) {
  std::vector<EnvVar> out;
  const Json* v = find(name, false);
  if (!v) return out;
  if (!v->is_object()) return bad(name, "must be an object of NAME: value strings"), out;
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string at = std::string(name) + "." + it.key();
    if (it.key().find('\0') != std::string::npos) return bad(name, "has a variable name that contains a NUL byte"), out;
    if (it.key().empty()) return bad(name, "has an empty variable name"), out;
    if (it.key().find('=') != std::string::npos) return bad(at, "is not a variable name (it contains '=')"), out;
    if (!it.value().is_string()) return bad(at, "must be a string"), out;
    if (!no_nul(at, it.value().get_ref<const std::string&>())) return out;
    out.push_back({it.key(), it.value().get<std::string>()});
  }
  return out;
}

std::optional<int> FieldReader::signal(const char* name) {
  const Json* v = find(name, false);
  if (!v) return std::nullopt;
  std::optional<int> sig;
  if (v->is_string()) sig = parse_signal(v->get<std::string>());
  else if (v->is_number_integer()) sig = parse_signal(std::to_string(v->get<int64_t>()));
  if (!sig) return bad(name, "must be a signal name or number"), std::nullopt;
  return sig;
}

std::optional<uint64_t> FieldReader::bytes(const char* name) {
  const Json* v = find(name, false);
  if (!v) return std::nullopt;
  std::string text;
  if (v->is_string()) text = v->get<std::string>();
  else if (v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0))
    text = std::to_string(v->get<uint64_t>());
  else return bad(name, "must be a number of bytes or a string such as \"512M\""), std::nullopt;
  auto n = parse_size(text);
  if (!n) return bad(name, describe(n.error())), std::nullopt;
  return *n;
}

std::optional<uint64_t> FieldReader::pids(const char* name) {
  const Json* v = find(name, false);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return bad(name, "must be a whole number of processes"), std::nullopt;
  auto n = parse_pids(std::to_string(v->get<int64_t>()));
  if (!n) return bad(name, describe(n.error())), std::nullopt;
  return *n;
}

std::optional<double> FieldReader::cores(const char* name) {
  const Json* v = find(name, false);
  if (!v) return std::nullopt;
  if (!v->is_number()) return bad(name, "must be a number of cores (e.g. 0.5)"), std::nullopt;
  auto c = check_cores(v->get<double>());
  if (!c) return bad(name, describe(c.error())), std::nullopt;
  return *c;
}

Limits FieldReader::limits(const char* memory, const char* memory_high, const char* pids_name, const char* cpu) {
  Limits l;
  l.memory_max = bytes(memory);
  l.memory_high = bytes(memory_high);
  if (!error_ && l.memory_max && l.memory_high && *l.memory_high >= *l.memory_max)
    bad(memory_high, std::string("must be below '") + memory + "' (past it the call is killed before it could be slowed down)");
  l.pids_max = pids(pids_name);
  l.cpu_max = cores(cpu);
  return l;
}

std::optional<PtySize> FieldReader::pty_size(const char* name, bool required) {
  const Json* v = find(name, required);
  if (!v) return std::nullopt;
  if (!v->is_object()) return bad(name, "must be an object {rows, cols}"), std::nullopt;
  FieldReader inner(*v, what_);
  inner.prefix_ = std::string(name) + ".";
  auto rows = inner.uint("rows", true, 65535);
  auto cols = inner.uint("cols", true, 65535);
  if (inner.error_) return error_ = inner.error_, problem_ = inner.problem_, std::nullopt;
  if (*rows == 0 || *cols == 0) return bad(name, "rows and cols must be at least 1"), std::nullopt;
  return PtySize{static_cast<uint16_t>(*rows), static_cast<uint16_t>(*cols)};
}

std::optional<ReadyProbe> FieldReader::check_ready(ReadyProbe r, bool port, bool http, bool line,
                                                    const char* const names[3]) {
  if (error_) return std::nullopt;
  const std::string p = names[0], h = names[1], l = names[2];
  if (!port && !http && !line) return bad(p, "or '" + prefix_ + h + "' or '" + prefix_ + l + "' is needed: what ready means"), std::nullopt;
  if (line && (port || http))
    return bad(l, "goes alone: give a line, a port, an http path, or a port with an http path"), std::nullopt;
  if (http) {
    const std::string& path = *r.http;
    const bool ok = path.starts_with('/') &&
                    std::all_of(path.begin(), path.end(), [](char c) { return c > ' ' && c < 0x7f; });
    if (!ok) return bad(h, "must be a path such as \"/health\" (starting with '/', no spaces)"), std::nullopt;
  }
  if (line) {
    if (r.line->empty()) return bad(l, "must not be empty"), std::nullopt;
    RE2::Options o;
    o.set_log_errors(false);
    RE2 re(*r.line, o);
    if (!re.ok()) return bad(l, "is not a valid regular expression: " + re.error()), std::nullopt;
  }
  return r;
}

std::optional<ReadyProbe> FieldReader::ready(const char* name) {
  const Json* v = find(name, false);
  if (!v) return std::nullopt;
  if (!v->is_object()) return bad(name, "must be an object {port?, http?, line?, timeoutMs?}"), std::nullopt;
  FieldReader inner(*v, what_);
  inner.prefix_ = prefix_ + name + ".";
  inner.only(Json{{"port", 0}, {"http", 0}, {"line", 0}, {"timeoutMs", 0}, {"stopOnTimeout", 0}},
             "is not a field of ready (port, http, line, timeoutMs, stopOnTimeout)");
  ReadyProbe r;
  if (auto port = inner.in_range("port", 1, 65535)) r.port = static_cast<uint16_t>(*port);
  r.http = inner.str("http", false);
  r.line = inner.str("line", false);
  if (auto t = inner.in_range("timeoutMs", 1, uint64_t{1} << 40)) r.timeout_ms = *t;
  r.stop_on_timeout = inner.flag("stopOnTimeout");
  static const char* const kNames[3] = {"port", "http", "line"};
  const bool has_port = r.port.has_value(), has_http = r.http.has_value(), has_line = r.line.has_value();
  auto out = inner.check_ready(std::move(r), has_port, has_http, has_line, kNames);
  if (inner.error_) return error_ = inner.error_, problem_ = inner.problem_, std::nullopt;
  return out;
}

std::optional<ReadyProbe> FieldReader::ready_flat(const char* port, const char* http, const char* line,
                                                  const char* timeout_s) {
  ReadyProbe r;
  if (auto p = in_range(port, 1, 65535)) r.port = static_cast<uint16_t>(*p);
  r.http = str(http, false);
  r.line = str(line, false);
  auto t = seconds_ms(timeout_s, uint64_t{1} << 30);
  if (error_ || (!r.port && !r.http && !r.line)) {
    if (!error_ && t) bad(timeout_s, std::string("needs '") + port + "', '" + http + "' or '" + line + "'");
    return std::nullopt;
  }
  if (t) r.timeout_ms = std::max<uint64_t>(*t, 1);
  const char* const names[3] = {port, http, line};
  const bool has_port = r.port.has_value(), has_http = r.http.has_value(), has_line = r.line.has_value();
  return check_ready(std::move(r), has_port, has_http, has_line, names);
}

void FieldReader::only(const Json& known, const char* why) {
  if (error_) return;
  for (auto it = obj_.begin(); it != obj_.end(); ++it)
    if (!known.contains(it.key())) return bad(it.key(), why);
}

void read_view(FieldReader& f, OutputParams& o, const ViewFieldNames& n, bool strip_default) {
  constexpr uint64_t kMaxPart = OutputParams::kMaxMaxBytes;
  ViewParams& v = o.view;
  v.head = f.uint(n.head, false, kMaxPart);
  v.tail = f.uint(n.tail, false, kMaxPart);
  if (!f.error() && v.head && v.tail && *v.head + *v.tail > kMaxPart)
    f.bad(n.tail, "and '" + std::string(n.head) + "' together must be at most " + std::to_string(kMaxPart));
  v.offset = f.uint(n.offset, false, std::numeric_limits<int64_t>::max());
  v.length = f.uint(n.length, false, std::numeric_limits<int64_t>::max());
  if (!f.error() && v.length == 0u) f.bad(n.length, "must be at least 1");
  if (!f.error() && v.length && (v.head || v.tail))
    f.bad(n.length, "goes with neither head nor tail (they take the first and last bytes of the range from offset)");
  v.grep = f.str(n.grep, false);
  if (!f.error() && v.grep && v.grep->empty()) f.bad(n.grep, "must not be empty");
  if (!f.error() && v.grep && (v.head || v.tail)) f.bad(n.grep, "goes with neither head nor tail");
  v.strip_ansi = f.flag(n.strip_ansi, strip_default);
  v.max_line_bytes = f.uint(n.max_line_bytes, false, uint64_t{1} << 30);
  if (!f.error() && v.max_line_bytes == 0u) f.bad(n.max_line_bytes, "must be at least 1");
}

}  // namespace pmon::serve
