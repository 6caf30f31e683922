// SPDX-License-Identifier: Apache-2.0
// Fuzz target: one line of an MCP client, as pmon mcp reads it.
// mcp::parse_message, then what the service does with the message before
// a job would start: a tools/call's arguments through parse_tool_call (a
// bad one becomes a tool error), initialize's result, the request id of a
// notifications/cancelled compared as cancel_request compares it, and the
// reply line of each. The message's Json is checked against nlohmann's
// own parser as in the other target.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_check.h"
#include "serve/mcp.h"

using namespace pmon::serve;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  fuzz::check_message_json(line);
  auto parsed = mcp::parse_message(line);
  if (auto* bad = std::get_if<BadRequest>(&parsed)) {
    if (!bad->answer) return 0;
    fuzz::check(!bad->error.message.empty() && bad->error.code != 0, "an answered error without a code or message");
    fuzz::check(bad->id.is_null() || bad->id.is_string() || bad->id.is_number_integer(), "a bad id kept");
    fuzz::check_reply(error_line(bad->id, bad->error), bad->id);
    return 0;
  }
  const mcp::Message& m = std::get<mcp::Message>(parsed);
  fuzz::check(m.params.is_object(), "params that are no object");
  fuzz::check(m.notification == m.id.is_null(), "a notification with an id, or a request without one");
  if (m.notification) {
    if (m.method == "notifications/cancelled" && m.params.contains("requestId")) {
      const Json& id = m.params["requestId"];
      const Json copy = id;
      fuzz::check(copy == id, "a request id unequal to its copy");
    }
    return 0;
  }
  if (m.method == "initialize") {
    const Json r = mcp::initialize_result(m.params);
    fuzz::check(r["protocolVersion"].is_string(), "initialize without a protocol version");
    fuzz::check_reply(result_line(m.id, r), m.id);
  } else if (m.method == "tools/call") {
    auto call = mcp::parse_tool_call(m.params);
    if (auto* err = std::get_if<mcp::CallError>(&call)) {
      fuzz::check(!err->message.empty(), "a call error without a message");
      fuzz::check_reply(err->protocol ? error_line(m.id, {rpc::kInvalidParams, err->message})
                                      : result_line(m.id, mcp::tool_error(err->message)),
                        m.id);
    } else {
      const mcp::ToolCall& c = std::get<mcp::ToolCall>(call);
      const CreateParams* create = nullptr;
      if (auto* r = std::get_if<mcp::RunArgs>(&c.args)) create = &r->create;
      if (auto* s = std::get_if<CreateParams>(&c.args)) create = s;
      if (create) {
        fuzz::check(create->command == "/bin/sh" && create->args.size() == 2 && !create->args[1].empty(),
                    "a shell job without its command line");
        fuzz::check(create->args[1].find('\0') == std::string::npos, "a NUL byte in command");
        if (create->cwd) fuzz::check(create->cwd->find('\0') == std::string::npos, "a NUL byte in cwd");
        for (const EnvVar& e : create->env)
          fuzz::check(!e.name.empty() && e.name.find_first_of(std::string_view("=\0", 2)) == std::string::npos &&
                          e.value.find('\0') == std::string::npos,
                      "a bad env entry");
      }
    }
  } else if (m.method == "tools/list" || m.method == "ping") {
    fuzz::check_reply(result_line(m.id, Json::object()), m.id);
  } else {
    fuzz::check_reply(error_line(m.id, {rpc::kMethodNotFound, "unknown method '" + m.method + "'"}), m.id);
  }
  return 0;
}
