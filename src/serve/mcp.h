// pmon mcp: the Model Context Protocol front end of the job service. The
// same jobs as terminal/* (one engine, service.cpp); here only what MCP
// adds: the handshake, the tool list with its schemas, a tool call parsed
// into the engine's typed params, and the engine's answers shaped as tool
// results (text for the model plus structuredContent). Data in, data out.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "serve/protocol.h"

namespace pmon::serve::mcp {

// The newest revision we speak, and every one a client may ask for: the
// official TypeScript SDK's LATEST_PROTOCOL_VERSION and
// SUPPORTED_PROTOCOL_VERSIONS. A client asking for another one gets the
// newest (the SDK client then decides whether it can go on).
inline constexpr const char* kLatestVersion = "2025-11-25";
std::string negotiate_version(const Json& requested);

// One JSON-RPC message of an MCP client.
struct Message {
  Json id;  // null for a notification
  bool notification = false;
  std::string method;
  Json params = Json::object();
};
std::variant<Message, BadRequest> parse_message(std::string_view line);

Json initialize_result(const Json& params);
Json tools_list();

enum class Tool { run, start, output, wait, write, kill, list, wait_for_port };

struct RunArgs {
  CreateParams create;
  std::optional<uint64_t> background_after_ms;
};

using ToolArgs = std::variant<RunArgs, CreateParams, OutputParams, WaitForExitParams, WriteParams,
                              TerminalParams, ListParams, WaitForPortParams>;

struct ToolCall {
  Tool tool = Tool::list;
  ToolArgs args;
};

// What is wrong with a tools/call: an unknown tool is a protocol error
// (-32602), bad arguments are a tool error the model can read and fix.
struct CallError {
  bool protocol = false;
  std::string message;
};

std::variant<ToolCall, CallError> parse_tool_call(const Json& params);

// A tool's CallToolResult from the engine's answer to it (the JSON of the
// matching terminal/* result; for run, the service's run summary).
Json tool_result(Tool tool, const Json& answer);
// A tool error: isError with one line of text.
Json tool_error(const std::string& message);

// Output longer than this is cut to its head and its tail.
inline constexpr size_t kOutputLimit = 30000;

}  // namespace pmon::serve::mcp
