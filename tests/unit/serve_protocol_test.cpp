// SPDX-License-Identifier: Apache-2.0
// The JSON-RPC layer of pmon serve: every line becomes a typed request or
// the error to answer, naming the field that is wrong.
#include <gtest/gtest.h>
#include <signal.h>

#include "jobs/job_api.h"
#include "serve/protocol.h"

namespace pmon::serve {
namespace {

BadRequest bad(std::string_view line) {
  auto r = parse_request(line);
  EXPECT_TRUE(std::holds_alternative<BadRequest>(r)) << line;
  return std::holds_alternative<BadRequest>(r) ? std::get<BadRequest>(r) : BadRequest{};
}

Request good(std::string_view line) {
  auto r = parse_request(line);
  EXPECT_TRUE(std::holds_alternative<Request>(r))
      << line << ": " << (std::holds_alternative<BadRequest>(r) ? std::get<BadRequest>(r).error.message : "");
  return std::holds_alternative<Request>(r) ? std::get<Request>(r) : Request{};
}

TEST(ServeProtocol, CreateCarriesEveryField) {
  Request r = good(R"({"jsonrpc":"2.0","id":"a","method":"terminal/create","params":{"sessionId":"s",
    "command":"ls","args":["-l","/"],"env":[{"name":"A","value":"1"}],"cwd":"/tmp","outputByteLimit":10,
    "timeoutMs":500,"pty":{"rows":30,"cols":100},"keep":true,"waitTree":true,"name":"n"}})");
  EXPECT_EQ(r.id, "a");
  EXPECT_FALSE(r.notification);
  ASSERT_TRUE(std::holds_alternative<CreateParams>(r.params));
  const auto& c = std::get<CreateParams>(r.params);
  EXPECT_EQ(c.session_id, "s");
  EXPECT_EQ(c.command, "ls");
  EXPECT_EQ(c.args, (std::vector<std::string>{"-l", "/"}));
  ASSERT_EQ(c.env.size(), 1u);
  EXPECT_EQ(c.env[0].name, "A");
  EXPECT_EQ(c.env[0].value, "1");
  EXPECT_EQ(c.cwd, "/tmp");
  EXPECT_EQ(c.output_byte_limit, 10u);
  EXPECT_EQ(c.timeout_ms, 500u);
  ASSERT_TRUE(c.pty);
  EXPECT_EQ(c.pty->rows, 30);
  EXPECT_EQ(c.pty->cols, 100);
  EXPECT_TRUE(c.keep);
  EXPECT_TRUE(c.wait_tree);
  EXPECT_EQ(c.name, "n");
}

TEST(ServeProtocol, CreateForChildProcessShapedClients) {
  Request r = good(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"ls",
    "separateStderr":true,"clearEnv":true,"killSignal":"INT"}})");
  const auto& c = std::get<CreateParams>(r.params);
  EXPECT_TRUE(c.separate_stderr);
  EXPECT_TRUE(c.clear_env);
  EXPECT_EQ(c.kill_signal, SIGINT);
  Request n = good(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"ls","killSignal":9}})");
  EXPECT_EQ(std::get<CreateParams>(n.params).kill_signal, SIGKILL);
  Request d = good(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"ls"}})");
  EXPECT_FALSE(std::get<CreateParams>(d.params).separate_stderr);
  EXPECT_FALSE(std::get<CreateParams>(d.params).kill_signal);
  EXPECT_EQ(bad(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"ls","killSignal":"NOPE"}})")
                .error.message,
            "invalid params: 'killSignal' must be a signal name or number");
  Request o = good(R"({"jsonrpc":"2.0","id":1,"method":"terminal/output","params":{"terminalId":"t1","stderrSince":4}})");
  EXPECT_EQ(std::get<OutputParams>(o.params).stderr_since, 4u);
}

TEST(ServeProtocol, DefaultsAndNotifications) {
  Request r = good(R"({"jsonrpc":"2.0","method":"terminal/create","params":{"command":"true"}})");
  EXPECT_TRUE(r.notification);
  const auto& c = std::get<CreateParams>(r.params);
  EXPECT_EQ(c.output_byte_limit, 1u << 20);
  EXPECT_FALSE(c.keep);
  EXPECT_FALSE(c.pty);
  // Its stdin is /dev/null unless a pipe is asked for.
  EXPECT_TRUE(c.stdin_null);
  Request p = good(R"({"jsonrpc":"2.0","id":2,"method":"terminal/create","params":{"command":"cat","stdin":"pipe"}})");
  EXPECT_FALSE(std::get<CreateParams>(p.params).stdin_null);
  Request n = good(R"({"jsonrpc":"2.0","id":2,"method":"terminal/create","params":{"command":"cat","stdin":"null"}})");
  EXPECT_TRUE(std::get<CreateParams>(n.params).stdin_null);
  EXPECT_EQ(bad(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"cat","stdin":"tty"}})")
                .error.message,
            "invalid params: 'stdin' must be \"null\" (the default: /dev/null, a read gets end of file at once) or "
            "\"pipe\" (terminal/write writes to it)");
  Request l = good(R"({"jsonrpc":"2.0","id":3,"method":"terminal/list"})");
  EXPECT_TRUE(std::holds_alternative<ListParams>(l.params));
}

TEST(ServeProtocol, ErrorsNameWhatIsWrong) {
  EXPECT_EQ(bad("{nope").error.code, rpc::kParseError);
  EXPECT_EQ(bad("[]").error.code, rpc::kInvalidRequest);
  EXPECT_EQ(bad(R"({"id":1,"method":"terminal/list"})").error.code, rpc::kInvalidRequest);
  BadRequest b = bad(R"({"jsonrpc":"2.0","id":{"x":1},"method":"terminal/list"})");
  EXPECT_EQ(b.error.code, rpc::kInvalidRequest);
  EXPECT_TRUE(b.id.is_null());
  b = bad(R"({"jsonrpc":"2.0","id":7,"method":"terminal/nope"})");
  EXPECT_EQ(b.error.code, rpc::kMethodNotFound);
  EXPECT_EQ(b.id, 7);
  struct Case {
    const char* params;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({})", "invalid params: 'command' is required"},
           Case{R"({"command":""})", "invalid params: 'command' must not be empty"},
           Case{R"({"command":5})", "invalid params: 'command' must be a string"},
           Case{R"({"command":"x","args":"a"})", "invalid params: 'args' must be an array of strings"},
           Case{R"({"command":"x","args":["a",1]})", "invalid params: 'args[1]' must be a string"},
           Case{R"({"command":"x","env":[{"name":"A=B","value":""}]})",
                "invalid params: 'env[0].name' must be a non-empty string without '='"},
           Case{R"({"command":"x","outputByteLimit":-1})",
                "invalid params: 'outputByteLimit' must be a non-negative integer"},
           Case{R"({"command":"x","pty":{"rows":0,"cols":80}})",
                "invalid params: 'pty' rows and cols must be at least 1"},
           Case{R"({"command":"x","pty":{"rows":24}})", "invalid params: 'pty.cols' is required"},
           Case{R"({"command":"x","keep":"yes"})", "invalid params: 'keep' must be true or false"},
       }) {
    std::string line = std::string(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":)") + c.params + "}";
    BadRequest e = bad(line);
    EXPECT_EQ(e.error.code, rpc::kInvalidParams) << c.params;
    EXPECT_EQ(e.error.message, c.message) << c.params;
  }
  EXPECT_EQ(bad(R"({"jsonrpc":"2.0","id":1,"method":"terminal/output","params":{}})").error.message,
            "invalid params: 'terminalId' is required");
  EXPECT_EQ(bad(R"({"jsonrpc":"2.0","id":1,"method":"terminal/resize","params":{"terminalId":"t1","rows":3}})")
                .error.message,
            "invalid params: 'cols' is required");
  EXPECT_EQ(bad(R"({"jsonrpc":"2.0","id":1,"method":"terminal/list","params":[1]})").error.code,
            rpc::kInvalidParams);
}

TEST(ServeProtocol, NestingPastTheLimitIsCutWhileReading) {
  auto nested = [](size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  MessageJson at_limit = parse_message_json(nested(kMaxDepth));
  EXPECT_FALSE(at_limit.too_deep);
  EXPECT_EQ(at_limit.json.dump(), nested(kMaxDepth));
  MessageJson past = parse_message_json(nested(kMaxDepth + 1));
  EXPECT_TRUE(past.too_deep);  // the deepest array read as null
  EXPECT_EQ(past.json.dump(), std::string(kMaxDepth, '[') + "null" + std::string(kMaxDepth, ']'));
  // 100000 deep: read without recursion, and what is kept can be copied,
  // dumped and compared (each recurses).
  MessageJson deep = parse_message_json(R"({"a":1,"b":)" + nested(100000) + R"(,"c":{"d":[true]}})");
  ASSERT_TRUE(deep.too_deep);
  Json copy = deep.json;
  EXPECT_EQ(copy, deep.json);
  EXPECT_EQ(copy["a"], 1);
  EXPECT_EQ(copy["c"]["d"][0], true);
  EXPECT_EQ(copy["b"].dump(), std::string(kMaxDepth - 1, '[') + "null" + std::string(kMaxDepth - 1, ']'));
  EXPECT_TRUE(parse_message_json(std::string(100000, '[')).json.is_discarded());
  EXPECT_TRUE(parse_message_json(R"({"a":[1,2})").json.is_discarded());
  EXPECT_TRUE(parse_message_json("").json.is_discarded());
  // The same Json as nlohmann's parser makes, a repeated key's last value kept.
  const char* text = R"({"k":[1,-2,3.5,"s\u00e9\n",null,false,{}],"o":{"x":{"y":[]}},"k2":1,"k2":2})";
  EXPECT_EQ(parse_message_json(text).json, Json::parse(text));
}

TEST(ServeProtocol, ADeepRequestIsRefusedWithItsId) {
  const std::string deep(100000, '[');
  BadRequest b = bad(R"({"jsonrpc":"2.0","id":9,"method":"terminal/create","params":{"command":"ls","args":)" + deep +
                     std::string(100000, ']') + "}}");
  EXPECT_EQ(b.error.code, rpc::kInvalidRequest);
  EXPECT_EQ(b.error.message, "invalid request: nested more than 64 levels deep");
  EXPECT_EQ(b.id, 9);
  EXPECT_TRUE(b.answer);
  // The id itself too deep: no id can be read (null), and it is answered.
  b = bad(R"({"jsonrpc":"2.0","id":)" + deep + std::string(100000, ']') + R"(,"method":"terminal/list"})");
  EXPECT_EQ(b.error.code, rpc::kInvalidRequest);
  EXPECT_TRUE(b.id.is_null());
  EXPECT_TRUE(b.answer);
  // Not even JSON (never closed): a parse error.
  EXPECT_EQ(bad(R"({"jsonrpc":"2.0","id":1,"method":"terminal/list","params":{"a":)" + deep).error.code,
            rpc::kParseError);
}

TEST(ServeProtocol, ANotificationIsNeverAnswered) {
  for (const char* line : {
           R"({"jsonrpc":"2.0","method":"terminal/nope"})",
           R"({"jsonrpc":"2.0","method":"terminal/create","params":{"command":""}})",
           R"({"jsonrpc":"2.0","method":"terminal/create","params":{"command":"ls","args":["a\u0000b"]}})",
           R"({"jsonrpc":"2.0","method":"terminal/list","params":[1]})",
           R"({"jsonrpc":"2.0","method":"terminal/output","params":{}})",
       }) {
    BadRequest b = bad(line);
    EXPECT_FALSE(b.answer) << line;
    EXPECT_TRUE(b.id.is_null()) << line;
  }
  const std::string deep = R"({"jsonrpc":"2.0","method":"terminal/list","params":{"a":)" + std::string(1000, '[') +
                           std::string(1000, ']') + "}}";
  EXPECT_FALSE(bad(deep).answer);
  // No request at all, or with an id (null too): answered.
  for (const char* line : {
           "{nope", "[1]", R"({"method":"terminal/list"})", R"({"jsonrpc":"2.0","method":7})",
           R"({"jsonrpc":"2.0","id":[1],"method":"terminal/list"})",
           R"({"jsonrpc":"2.0","id":null,"method":"terminal/nope"})",
           R"({"jsonrpc":"2.0","id":4,"method":"terminal/output","params":{}})",
       })
    EXPECT_TRUE(bad(line).answer) << line;
}

TEST(ServeProtocol, ANulByteIsRefusedWhereItWouldCutAString) {
  struct Case {
    const char* params;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"command":"ls\u0000rm"})", "invalid params: 'command' contains a NUL byte"},
           Case{R"({"command":"ls","args":["-l","/","x\u0000y"]})", "invalid params: 'args[2]' contains a NUL byte"},
           Case{R"({"command":"ls","cwd":"/tmp\u0000/x"})", "invalid params: 'cwd' contains a NUL byte"},
           Case{R"({"command":"ls","env":[{"name":"A","value":"1"},{"name":"B\u0000C","value":"2"}]})",
                "invalid params: 'env[1].name' contains a NUL byte"},
           Case{R"({"command":"ls","env":[{"name":"A","value":"1\u0000;2"}]})",
                "invalid params: 'env[0].value' contains a NUL byte"},
           Case{R"({"command":"ls","env":[{"name":"","value":"1"}]})",
                "invalid params: 'env[0].name' must be a non-empty string without '='"},
       }) {
    BadRequest e = bad(std::string(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":)") + c.params + "}");
    EXPECT_EQ(e.error.code, rpc::kInvalidParams) << c.params;
    EXPECT_EQ(e.error.message, c.message) << c.params;
  }
  // Where a NUL is data, it is kept: what a job is sent on stdin.
  Request w = good(R"({"jsonrpc":"2.0","id":1,"method":"terminal/write","params":{"terminalId":"t1","data":"a\u0000b"}})");
  EXPECT_EQ(std::get<WriteParams>(w.params).data, std::string("a\0b", 3));
}

TEST(ServeProtocol, RepliesAreOneLine) {
  EXPECT_EQ(result_line(1, {{"a", 1}}), "{\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"a\":1}}\n");
  EXPECT_EQ(error_line(nullptr, {rpc::kParseError, "x"}),
            "{\"error\":{\"code\":-32700,\"message\":\"x\"},\"id\":null,\"jsonrpc\":\"2.0\"}\n");
  // Invalid UTF-8 in a value never breaks the line.
  std::string line = result_line(1, {{"o", std::string("\xff\n")}});
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(exit_status_json(std::nullopt, 9)["signal"], "SIGKILL");
}

TEST(ServeProtocol, CreateReadsAReadinessProbe) {
  Request r = good(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"x",)"
                   R"("ready":{"port":8080,"http":"/","timeoutMs":500,"stopOnTimeout":true}}})");
  const auto& c = std::get<CreateParams>(r.params);
  ASSERT_TRUE(c.ready.has_value());
  EXPECT_EQ(c.ready->port, 8080);
  EXPECT_EQ(c.ready->http, "/");
  EXPECT_EQ(c.ready->timeout_ms, 500u);
  EXPECT_TRUE(c.ready->stop_on_timeout);
  Request d = good(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"x","ready":{"line":"a+"}}})");
  EXPECT_EQ(std::get<CreateParams>(d.params).ready->timeout_ms, 30'000u);
  EXPECT_FALSE(std::get<CreateParams>(d.params).ready->stop_on_timeout);
  struct Case {
    const char* ready;
    const char* message;
  };
  for (const Case& c : {
           Case{R"({"line":"(x"})", "invalid params: 'ready.line' is not a valid regular expression: missing ): (x"},
           Case{R"({"line":""})", "invalid params: 'ready.line' must not be empty"},
           Case{R"({})", "invalid params: 'ready.port' or 'ready.http' or 'ready.line' is needed: what ready means"},
           Case{R"({"port":0})", "invalid params: 'ready.port' must be an integer from 1 to 65535"},
           Case{R"({"http":"/a b"})",
                "invalid params: 'ready.http' must be a path such as \"/health\" (starting with '/', no spaces)"},
           Case{R"({"line":"x","http":"/"})",
                "invalid params: 'ready.line' goes alone: give a line, a port, an http path, or a port with an http "
                "path"},
           Case{R"({"port":1,"timeout":5})",
                "invalid params: 'ready.timeout' is not a field of ready (port, http, line, timeoutMs, stopOnTimeout)"},
           Case{R"({"port":1,"timeoutMs":0})", "invalid params: 'ready.timeoutMs' must be an integer from 1 to 1099511627776"},
           Case{R"(5)", "invalid params: 'ready' must be an object {port?, http?, line?, timeoutMs?}"},
       }) {
    BadRequest e = bad(std::string(R"({"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"x","ready":)") +
                       c.ready + "}}");
    EXPECT_EQ(e.error.code, rpc::kInvalidParams) << c.ready;
    EXPECT_EQ(e.error.message, c.message) << c.ready;
  }
}

TEST(ServeProtocol, SessionKeysInEitherCase) {
  JobInfo::InSession in;
  in.cgroup = "/pmon-session-n-x";
  in.envelope.limits.memory_max = 1024;
  in.envelope.set_by = "--session-memory-max";
  in.session.memory_peak = 7;
  in.session.oom_kill = 1;
  in.job.pids_max_events = 2;
  const Json camel = session_json(in);
  EXPECT_EQ(camel["envelope"]["memoryMax"], 1024);
  EXPECT_EQ(camel["envelope"]["setBy"], "--session-memory-max");
  EXPECT_TRUE(camel["envelope"]["pidsMax"].is_null());
  EXPECT_EQ(camel["usage"]["memoryPeak"], 7);
  EXPECT_EQ(camel["usage"]["memoryEvents"]["oomKill"], 1);
  EXPECT_EQ(camel["jobUsage"]["pidsEventsMax"], 2);
  EXPECT_TRUE(camel["jobUsage"]["cpuPressureAvg10"].is_null());
  const Json snake = session_json(in, KeyCase::snake);
  EXPECT_EQ(snake["envelope"]["memory_max"], 1024);
  EXPECT_EQ(snake["envelope"]["set_by"], "--session-memory-max");
  EXPECT_EQ(snake["usage"]["memory_peak"], 7);
  EXPECT_EQ(snake["usage"]["memory_events"]["oom_kill"], 1);
  EXPECT_EQ(snake["job_usage"]["pids_events_max"], 2);
  EXPECT_TRUE(snake["job_usage"]["cpu_pressure_avg10"].is_null());
  // The same fields, no more, in both.
  EXPECT_EQ(camel["usage"].size(), snake["usage"].size());
  EXPECT_EQ(camel.size(), snake.size());
}

// A job's error goes to the client as data beside its line, and comes back
// from it the same: the CLI words it from that, not from the message.
TEST(ErrorData, AJobsErrorsRoundTripAndOthersHaveNone) {
  std::vector<Error> errors;
  for (Errc c : {Errc::unknown_job, Errc::no_pty, Errc::job_ended, Errc::still_running, Errc::owner_stopping})
    errors.push_back(Error::of(c, "t7"));
  Error e = Error::of(Errc::no_stdin, "t7");
  e.text = "null";
  errors.push_back(e);
  e = Error::of(Errc::stdin_full, "t7");
  e.text = "65536";
  errors.push_back(e);
  e = Error::of(Errc::cannot_resize, "t7");
  e.text = "it has ended";
  errors.push_back(e);
  e = Error::of(Errc::never_listened, "t7");
  e.port = 8080;
  errors.push_back(e);
  e = Error::of(Errc::did_not_listen, "t7");
  e.ms = 1500;
  errors.push_back(e);
  e = Error{};
  e.code = Errc::no_such_job;
  e.text = "web";
  e.port = 3000;
  errors.push_back(e);
  e = Error{};
  e.code = Errc::too_many_jobs;
  e.text = "1024";
  errors.push_back(e);
  for (const Error& in : errors) {
    const Json data = error_data(in);
    ASSERT_TRUE(data.is_object()) << words(in, "terminal");
    std::optional<Error> out = error_from_data(data);
    ASSERT_TRUE(out) << data.dump();
    EXPECT_EQ(words(*out, "job"), words(in, "job")) << data.dump();
    EXPECT_EQ(words(*out, "terminal"), words(in, "terminal")) << data.dump();
  }
  EXPECT_EQ(error_data(Error::of(Errc::unknown_job, "x"))["reason"], "unknownTerminal");
  EXPECT_TRUE(error_data(Error::line("cannot run 'x': command not found", Errc::not_found)).is_null());
  EXPECT_FALSE(error_from_data(Json{{"reason", "noSuchReason"}}));
  EXPECT_FALSE(error_from_data(Json("unknownTerminal")));
}

}  // namespace
}  // namespace pmon::serve
