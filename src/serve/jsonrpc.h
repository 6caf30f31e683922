// SPDX-License-Identifier: Apache-2.0
// JSON-RPC 2.0 as pmon serve and pmon mcp read and write it, one message
// per line: a line read into its envelope (id, method, params) with the
// nesting of what it holds bounded, and the lines of replies. What the
// methods are is each front end's (serve/protocol.h, serve/mcp.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

namespace pmon::serve {

using Json = nlohmann::json;

namespace rpc {
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kServerError = -32000;  // unknown terminal, spawn failure, ...
}  // namespace rpc

struct RpcError {
  int code = rpc::kServerError;
  std::string message;
  Json data = nullptr;  // sent when not null
};

// A line that is no valid request: the error to answer, and the id when
// the line had a readable one. A notification (no id) is never answered,
// whatever is wrong with it; a line that is no request at all (not JSON,
// no "jsonrpc": "2.0" or string "method") is, with the id it has or null.
struct BadRequest {
  Json id;
  RpcError error;
  bool answer = true;  // false: nothing is sent back
};

// The most arrays and objects a message may nest, the message itself
// being the first. Deeper ones are refused while the line is read, before
// anything copies, dumps or compares them: nlohmann::json does all three
// by recursion, and a message nested 100000 deep would use up the stack.
inline constexpr size_t kMaxDepth = 64;

// One message line as JSON (`json` is discarded when the line is not JSON).
// No value in it is deeper than kMaxDepth: an array or object past that is
// read as null (what it holds is skipped), and `too_deep` is set.
struct MessageJson {
  Json json;
  bool too_deep = false;
};
MessageJson parse_message_json(std::string_view line);

// A request or notification as JSON-RPC frames it; its method is not yet
// looked up, nor its params checked (each front end does both, in that order).
struct Envelope {
  Json id;  // null for a notification
  bool notification = false;
  std::string method;
  bool has_params = false;
  Json params;

  // The params as an object (none: an empty one), or the error that they
  // are not one; `null_is_none`: "params": null counts as none.
  std::variant<Json, BadRequest> take_params(bool null_is_none);
};

// Where the two front ends read the envelope differently.
struct EnvelopeRules {
  bool null_id = true;            // "id": null is a request's id (else refused)
  bool responses_ignored = false; // a line with "result" or "error" and no method is not answered
};
std::variant<Envelope, BadRequest> parse_envelope(std::string_view line, const EnvelopeRules& rules);

// One line each, ending in '\n'.
std::string result_line(const Json& id, const Json& result);
// The same around a result already dumped (with Json::error_handler_t::replace).
std::string result_line_of_text(const Json& id, std::string_view result);
std::string error_line(const Json& id, const RpcError& error);
std::string notification_line(std::string_view method, const Json& params);

}  // namespace pmon::serve
