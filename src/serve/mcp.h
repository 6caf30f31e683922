// SPDX-License-Identifier: Apache-2.0
// pmon mcp: the Model Context Protocol front end of the job service, data
// in and data out. The same jobs as terminal/* (one engine: the job table);
// here only what MCP adds: the handshake, the tools (serve/mcp_tools.h) and
// their list, a tool call read into its tool's typed arguments, and the job
// table's typed results worded as tool results (text for the model plus
// structuredContent). serve/mcp_adapter.h answers the calls.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "jobs/job_api.h"
#include "serve/jsonrpc.h"
#include "serve/mcp_tools.h"

namespace pmon::serve::mcp {

// The newest revision we speak, and every one a client may ask for: the
// official TypeScript SDK's LATEST_PROTOCOL_VERSION and
// SUPPORTED_PROTOCOL_VERSIONS. A client asking for another one gets the
// newest (the SDK client then decides whether it can go on).
inline constexpr const char* kLatestVersion = "2025-11-25";
std::string negotiate_version(const Json& requested);

// The stateless revision: no initialize; each request says its revision and
// the client's capabilities in params._meta, and is answered on its own.
inline constexpr const char* kModernVersion = "2026-07-28";
inline constexpr int kUnsupportedProtocolVersion = -32022;
inline constexpr const char* kMetaVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";

// What a request's params._meta says of its revision.
struct Revision {
  bool modern = false;          // 2026-07-28: answered as that revision says
  bool tasks = false;           // 2026-07-28: the request's capabilities name the tasks extension
  std::optional<RpcError> bad;  // an unknown revision ({requested, supported}), or a modern request without its capabilities
};
Revision revision_of(const Json& params);

// server/discover: every revision spoken, the capabilities, who we are.
Json discover_result();

// One JSON-RPC message of an MCP client.
struct Message {
  Json id;  // null for a notification
  bool notification = false;
  std::string method;
  Json params = Json::object();
};
std::variant<Message, BadRequest> parse_message(std::string_view line);

Json initialize_result(const Json& params);
// With `stateless`, as the 2026-07-28 revision has it (cache hints).
// `envelope`: words added to the run and start tools' descriptions (the
// session's envelope, envelope_words), or "".
Json tools_list(bool stateless = false, const std::string& envelope = "");
std::string envelope_words(const pmon::Envelope* e);
// A command's end in its session, in words (the run and wait results), and
// the session's use in one line (list's): serve/mcp_session.cpp.
std::string session_note(const Json& session, bool oom_killed);
std::string session_line(const JobInfo::InSession& s);

// A result as the revision wants it: resultType "complete" unless it has
// one (a task's "task"; a client of an earlier revision reads past it).
Json complete(Json result);

struct ToolCall {
  ToolArgs args;
};

// What is wrong with a tools/call: an unknown tool is a protocol error
// (-32602), bad arguments are a tool error the model can read and fix.
struct CallError {
  bool protocol = false;
  std::string message;
};

std::variant<ToolCall, CallError> parse_tool_call(const Json& params);

// --- the results, as CallToolResults ---

// What a run answers: the newest of its output, and once it is over how it
// ended and what its report says (timed_out, leftovers, duration_ms,
// oom_killed, pids_max_hit); while it runs on as a job, its id.
struct RunSummary {
  std::string id;
  std::string output;
  bool truncated = false;
  std::optional<ExitStatus> exit;  // none: it goes on in the background
  Json report;
  bool cleanup_verified = false;
  uint64_t left_out = 0;   // bytes between the head and the tail shown
  std::string spool_path;  // the whole output, while the job runs on
};
Json run_result(const RunSummary& s);
Json start_result(const Started& s);
Json output_result(const OutputRead& r);
// The output tool's: a view of the whole output (head and tail, a page,
// grep), with the spool file that holds all of it.
Json view_output_result(const ViewResult& v, const std::optional<ExitStatus>& exit, bool waiting_for_input,
                        const std::string& spool_path);
// none: still running (and, with waiting_for_input, blocked reading its
// stdin: it waits for input, not for time); over: how, and why (`end`:
// timed_out, stopped_by, oom_killed, pids_max_hit).
// `session`: the job's report's session (a job of a session with an
// envelope), or null.
Json wait_result(const std::optional<ExitStatus>& exit, bool waiting_for_input = false, const EndFacts& end = {},
                 const Json& session = nullptr);

// Log levels (logging/setLevel), RFC 5424's order: debug 0 .. emergency 7.
inline constexpr int kInfo = 1;
inline constexpr const char* kLogLevelWords =
    "invalid params: 'level' must be one of debug, info, notice, warning, error, critical, alert, emergency";
// params.level as a number, -1 when it is none of them.
int log_level(const Json& params);
// The params of a notifications/message telling that job `id` ended.
Json job_ended_message(const std::string& id, const std::string& name, const ExitStatus& exit, const EndFacts& end,
                       bool cleanup_verified);
Json write_result(uint64_t written);
Json kill_result(const Stopped& s);
Json list_result(const std::vector<JobInfo>& jobs);
Json port_result(const ListeningPort& l);
// A tool error: isError with one line of text.
Json tool_error(const std::string& message);
// A job's id is a "job" to the model.
Json tool_error(const Error& e);

// --- tasks: a started job, or a run gone on past its background time ---
// The 2026-07-28 revision's tasks extension (tasks/get, tasks/update,
// tasks/cancel; the task's result inline once it is complete), and the
// 2025-11-25 revision's tasks (a tool call with params.task; tasks/get,
// tasks/result, tasks/list, tasks/cancel). A task's id is its job's.
inline constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";
inline constexpr const char* kRelatedTask = "io.modelcontextprotocol/related-task";
inline constexpr int kMissingCapability = -32021;
inline constexpr uint64_t kTaskPollMs = 1000;

// Whether a tools/call wants its answer as a task where the tool can give
// one: 2026-07-28, the extension in the request's capabilities; earlier,
// a `task` object in its params.
bool wants_task(const Json& params, const Revision& rev);
// params.taskId of a tasks/* request, or the error to answer.
std::expected<std::string, RpcError> task_id(const Json& params);

enum class TaskStatus { working, completed, cancelled };
struct TaskState {
  std::string id;
  TaskStatus status = TaskStatus::working;
  std::string message;  // statusMessage
  std::chrono::system_clock::time_point created, updated;
};
// The Task object as the revision spells it (ttlMs/pollIntervalMs, or
// ttl/pollInterval); kept until its job is removed: no ttl.
Json task_fields(const TaskState& t, bool modern);
// A tool call's answer that is a task: 2026-07-28 the Task with resultType
// "task"; earlier {task: Task}.
Json create_task_result(const TaskState& t, bool modern);
// The tool's result of a task, as tasks/result gives it (earlier revisions).
Json related_result(Json result, const std::string& task);
// An unknown task id: the caller's fault.
RpcError unknown_task(const std::string& id);

// Output longer than this is cut to its head and its tail.
inline constexpr size_t kOutputLimit = 30000;
// What a job blocked reading its stdin is said to do.
inline constexpr std::string_view kWaitingWords = "waiting for input on its stdin (write to it, or kill it)";

}  // namespace pmon::serve::mcp
