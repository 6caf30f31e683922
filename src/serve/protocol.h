// SPDX-License-Identifier: Apache-2.0
// The terminal/* methods of pmon serve (JSON-RPC 2.0, one message per
// line): one row a method in kMethods, from which the parsing of a line
// into a typed request (validated in one place, naming the bad field) is
// made, and the JSON-RPC words of the job table's typed results. Data in,
// data out: nothing here touches a socket or a job (serve/methods.h
// answers each request on the job table).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "jobs/job_api.h"
#include "jobs/output_buffer.h"
#include "serve/fields.h"
#include "serve/jsonrpc.h"
#include "serve/table.h"

namespace pmon::serve {

// terminal/kill, terminal/release, terminal/report: a job by its id.
struct KillParams : TerminalParams {};
struct ReleaseParams : TerminalParams {};
struct ReportParams : TerminalParams {};

// One method: its name, the type of its params (each type is one method's,
// read by its read_params overload and answered by the front end's
// overload for it), and what it takes and answers as the README says.
template <class P>
struct Method {
  std::string_view name;
  std::string_view params;  // the fields, "?" after those that may be left out
  std::string_view result;
};

inline constexpr std::tuple kMethods{
    Method<CreateParams>{"terminal/create",
                         "command, args?, env?, cwd?, sessionId?, outputByteLimit?, outputBackpressure?, "
                         "timeoutMs?, idleTimeoutMs?, pty?, keep?, name?, replace?, waitTree?, separateStderr?, "
                         "clearEnv?, killSignal?, memoryMax?, memoryHigh?, pidsMax?, cpuMax?, ready?, stdin?, spoolByteLimit?",
                         "terminalId, existing, ready?, readyMs?, readyError?"},
    Method<OutputParams>{"terminal/output",
                         "terminalId, since?, stderrSince?, waitMs?, maxBytes?, stream?, follow?, head?, tail?, "
                         "offset?, length?, grep?, stripAnsi?, maxLineBytes?",
                         "output, truncated, next, more, exitStatus, waitingForInput?, stderr?; or with stream: "
                         "since, truncated; or with a view: from, leftOut, total, matches?, spoolPath"},
    Method<WaitForExitParams>{"terminal/wait_for_exit", "terminalId, timeoutMs?",
                              "exitCode, signal, timedOut?, stoppedBy?, oomKilled?, pidsMaxHit?, running?, "
                              "waitingForInput?"},
    Method<WriteParams>{"terminal/write", "terminalId, data?, eof?", "{}"},
    Method<ResizeParams>{"terminal/resize", "terminalId, rows, cols", "{}"},
    Method<KillParams>{"terminal/kill", "terminalId", "cleanupVerified"},
    Method<ReleaseParams>{"terminal/release", "terminalId", "cleanupVerified"},
    Method<ListParams>{"terminal/list", "sessionId?", "terminals"},
    Method<FindParams>{"terminal/find", "name?, port?, sessionId?", "terminalId"},
    Method<ReportParams>{"terminal/report", "terminalId", "the job's report"},
    Method<WaitForPortParams>{"terminal/wait_for_port", "terminalId, port?, timeoutMs?", "port, address, v6, pid"},
    Method<SessionCloseParams>{"session/close", "sessionId", "stopping"},
};

// Every method's params, one type a method.
using Params = variant_of<decltype(kMethods)>;

struct Request {
  Json id;  // null for a notification
  bool notification = false;
  Params params;
};

std::variant<Request, BadRequest> parse_request(std::string_view line);

// A row of kMethods without its type, for the documentation.
struct MethodDoc {
  std::string_view name, params, result;
};
std::vector<MethodDoc> method_docs();

// --- the results, in JSON-RPC's words ---

// What a job's exit status reads as: {exitCode, signal}, one of them null.
Json exit_status_json(std::optional<int> exit_code, std::optional<int> signal);
Json exit_status_json(const std::optional<ExitStatus>& status);  // null: running

// terminal/output's result: {output, truncated, next, more, exitStatus}, and
// {stderr: {output, truncated, next, more}} for a job with separateStderr;
// while the job runs, waitingForInput (given: none once it is over).
Json output_result(const OutputBuffer::Read& out, const OutputBuffer::Read* err, const Json& exit_status,
                   std::optional<bool> waiting_for_input = std::nullopt);
// result_line(id, output_result(...)) to the byte, written straight from
// the text (no Json copy of it, no nlohmann escaping): the fast path of
// the one reply that can be megabytes long.
// `storage`: a string whose allocation the line may reuse.
std::string output_result_line(const Json& id, const OutputBuffer::Read& out, const OutputBuffer::Read* err,
                               const Json& exit_status, std::optional<bool> waiting_for_input = std::nullopt,
                               std::string storage = {});

// Why a job ended, beside its exit status (terminal/list, terminal/exited,
// terminal/wait_for_exit): timedOut, stoppedBy (null: it ended by itself),
// oomKilled and pidsMaxHit (null: no such limit, or not over yet).
void add_end_facts(Json& o, const EndFacts& f);
// terminal/wait_for_exit's result: the job is over ({exitCode, signal} and
// why it ended), or still runs ({exitCode: null, signal: null, running:
// true, waitingForInput}).
Json wait_result(const ExitStatus& status, const EndFacts& end);
Json still_running_result(bool waiting_for_input);

Json port_json(const ListeningPort& l);
Json job_json(const JobInfo& j);
// A job's session (JobInfo::in_session): the envelope and what the session
// and the job have used, its keys in camelCase (the job service's:
// jobUsage, memoryMax) or snake_case (MCP's: job_usage, memory_max).
enum class KeyCase { camel, snake };
Json session_json(const JobInfo::InSession& s, KeyCase k = KeyCase::camel);

}  // namespace pmon::serve
