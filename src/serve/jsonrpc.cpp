// SPDX-License-Identifier: Apache-2.0
#include "serve/jsonrpc.h"

#include <vector>

#include "jobs/json_text.h"

namespace pmon::serve {

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

std::variant<Envelope, BadRequest> parse_envelope(std::string_view line, const EnvelopeRules& rules) {
  MessageJson message = parse_message_json(line);
  Json& j = message.json;
  if (j.is_discarded()) return BadRequest{nullptr, {rpc::kParseError, "parse error: not valid JSON"}};
  if (!j.is_object()) return BadRequest{nullptr, {rpc::kInvalidRequest, "invalid request: not a JSON object"}};
  Envelope e;
  e.id = nullptr;
  e.notification = true;
  if (auto it = j.find("id"); it != j.end()) {
    if (!it->is_string() && !it->is_number_integer() && !(rules.null_id && it->is_null()))
      return BadRequest{nullptr, {rpc::kInvalidRequest, "invalid request: 'id' must be a string or an integer"}};
    e.id = *it;
    e.notification = false;
  }
  auto ver = j.find("jsonrpc");
  if (ver == j.end() || *ver != "2.0")
    return BadRequest{e.id, {rpc::kInvalidRequest, "invalid request: 'jsonrpc' must be \"2.0\""}};
  auto method = j.find("method");
  if (method == j.end() || !method->is_string()) {
    // A response to a request of ours (we send none), or junk.
    if (rules.responses_ignored && (j.contains("result") || j.contains("error"))) return BadRequest{nullptr, {}, false};
    return BadRequest{e.id, {rpc::kInvalidRequest, "invalid request: 'method' must be a string"}};
  }
  // A request or a notification from here on: a notification is not answered.
  const bool answer = !e.notification;
  if (message.too_deep)
    return BadRequest{e.id, {rpc::kInvalidRequest, "invalid request: nested more than " + std::to_string(kMaxDepth) +
                                                       " levels deep"}, answer};
  e.method = std::move(method->get_ref<std::string&>());
  if (auto p = j.find("params"); p != j.end()) {
    e.has_params = true;
    e.params = std::move(*p);
  }
  return e;
}

std::variant<Json, BadRequest> Envelope::take_params(bool null_is_none) {
  if (!has_params || (null_is_none && params.is_null())) return Json::object();
  if (!params.is_object())
    return BadRequest{id, {rpc::kInvalidParams, "invalid params: 'params' must be an object"}, !notification};
  return std::move(params);
}

// What dump() makes of {"jsonrpc", "id", "result"} (keys sorted), written
// around the result's own dump: no copy of a large result (a report).
std::string result_line(const Json& id, const Json& result) { return result_line_of_text(id, dump_text(result)); }

std::string result_line_of_text(const Json& id, std::string_view result) {
  std::string line = "{\"id\":";
  line += dump_text(id);
  line += ",\"jsonrpc\":\"2.0\",\"result\":";
  line += result;
  line += "}\n";
  return line;
}

std::string error_line(const Json& id, const RpcError& error) {
  Json j = {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", error.code}, {"message", error.message}}}};
  if (!error.data.is_null()) j["error"]["data"] = error.data;
  return dump_text(j) + "\n";
}

std::string notification_line(std::string_view method, const Json& params) {
  std::string line = "{\"jsonrpc\":\"2.0\",\"method\":";
  line += dump_text(Json(method));
  line += ",\"params\":";
  line += dump_text(params);
  line += "}\n";
  return line;
}

}  // namespace pmon::serve
