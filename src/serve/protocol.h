// JSON-RPC 2.0 of pmon serve, one message per line: parsing a line into a
// typed request, validated in one place (naming the bad field), and the
// replies as text. Data in, data out: nothing here touches a socket.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "confine/limits.h"
#include "serve/output_buffer.h"

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
};

struct PtySize {
  uint16_t rows = 24;
  uint16_t cols = 80;
};

struct EnvVar {
  std::string name;
  std::string value;
};

struct CreateParams {
  std::optional<std::string> session_id;
  std::string command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::optional<std::string> cwd;
  uint64_t output_byte_limit = 1 << 20;
  // pmon's: the job's pipe is not read while outputByteLimit bytes of it
  // are kept that no read has returned yet (its writes block meanwhile),
  // so a reader that keeps up loses nothing.
  bool output_backpressure = false;
  std::optional<uint64_t> timeout_ms;
  std::optional<PtySize> pty;
  bool keep = false;
  bool wait_tree = false;
  std::optional<std::string> name;
  // pmon's, for clients shaped like child_process: stderr kept in a buffer of
  // its own (terminal/output then returns it apart), the environment given
  // whole instead of laid over the service's, the first signal of a stop.
  bool separate_stderr = false;
  bool clear_env = false;
  std::optional<int> kill_signal;
  // memoryMax (bytes, or "512M"), pidsMax, cpuMax (cores): the job's limits.
  Limits limits;
};

// terminal/kill, terminal/release, terminal/report.
struct TerminalParams {
  std::string terminal_id;
};
struct OutputParams {
  std::string terminal_id;
  std::optional<uint64_t> since;
  std::optional<uint64_t> stderr_since;  // a job created with separateStderr
  // pmon's: with nothing new past `since` on a running job, wait up to this
  // long for more (or its end) before answering.
  std::optional<uint64_t> wait_ms;
  // pmon's: the bytes from `since` on, as the job wrote them, into a pipe
  // whose read end comes with the reply (a Unix socket connection only);
  // with `follow` until the job's output ends, else what is there now.
  bool stream = false;
  bool follow = true;
  // pmon's: at most this many bytes of each stream in one reply (`more`
  // says when kept bytes were left for the next read, from `next`).
  uint64_t max_bytes = kDefaultMaxBytes;
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{4} << 20;
  static constexpr uint64_t kMaxMaxBytes = uint64_t{16} << 20;
};
struct WaitForExitParams {
  std::string terminal_id;
  std::optional<uint64_t> timeout_ms;
};
struct WriteParams {
  std::string terminal_id;
  std::string data;
  bool eof = false;
};
struct ResizeParams {
  std::string terminal_id;
  PtySize size;
};
struct WaitForPortParams {
  std::string terminal_id;
  std::optional<uint16_t> port;
  std::optional<uint64_t> timeout_ms;
};
struct ListParams {
  std::optional<std::string> session_id;
};
struct SessionCloseParams {
  std::string session_id;
};

enum class Method {
  create, output, wait_for_exit, write, resize, kill, release, list, report, wait_for_port,
  session_close
};

using Params = std::variant<CreateParams, TerminalParams, OutputParams, WaitForExitParams,
                            WriteParams, ResizeParams, WaitForPortParams, ListParams,
                            SessionCloseParams>;

struct Request {
  Json id;            // null for a notification
  bool notification = false;
  Method method = Method::list;
  Params params;
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

std::variant<Request, BadRequest> parse_request(std::string_view line);

// Reads the fields of one JSON object (request params, a tool's
// arguments); the first problem is kept, naming the field:
// "<what>: '<prefix><name>' <why>".
class FieldReader {
 public:
  explicit FieldReader(const Json& obj, std::string what = "invalid params")
      : obj_(obj), what_(std::move(what)) {}
  const std::optional<std::string>& error() const { return error_; }

  std::optional<std::string> str(const char* name, bool required);
  // A string the kernel gets as a C string (a command, a path, an
  // environment entry): a NUL byte in it would cut it short, so it is refused.
  std::optional<std::string> c_str(const char* name, bool required);
  bool flag(const char* name, bool absent = false);

 protected:
  // The field, or null when absent or null (an error when required).
  const Json* find(const char* name, bool required);
  void bad(const std::string& name, const std::string& why);
  // Refuses `value` of field `name` when it has a NUL byte; true when it has none.
  bool no_nul(const std::string& name, const std::string& value);

  const Json& obj_;
  std::string what_;
  std::string prefix_;  // for the fields of a nested object: "pty."
  std::optional<std::string> error_;
};

// One line each, ending in '\n'.
std::string result_line(const Json& id, const Json& result);
// The same around a result already dumped (with Json::error_handler_t::replace).
std::string result_line_of_text(const Json& id, std::string_view result);
std::string error_line(const Json& id, const RpcError& error);
std::string notification_line(std::string_view method, const Json& params);

// What a job's exit status reads as: {exitCode, signal}, one of them null.
Json exit_status_json(std::optional<int> exit_code, std::optional<int> signal);

// terminal/output's result: {output, truncated, next, more, exitStatus}, and
// {stderr: {output, truncated, next, more}} for a job with separateStderr.
Json output_result(const OutputBuffer::Read& out, const OutputBuffer::Read* err, const Json& exit_status);
// result_line(id, output_result(...)) to the byte, written straight from
// the text (no Json copy of it, no nlohmann escaping): the fast path of
// the one reply that can be megabytes long.
// `storage`: a string whose allocation the line may reuse.
std::string output_result_line(const Json& id, const OutputBuffer::Read& out, const OutputBuffer::Read* err,
                               const Json& exit_status, std::string storage = {});

}  // namespace pmon::serve
