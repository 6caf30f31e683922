// SPDX-License-Identifier: Apache-2.0
#include "serve/mcp_adapter.h"

#include <algorithm>

namespace pmon::serve {

void McpAdapter::on_line(Conn& c, std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  const uint64_t cid = c.id;
  auto parsed = mcp::parse_message(line);
  if (auto* bad = std::get_if<BadRequest>(&parsed)) {
    if (bad->answer) conns_.send(cid, error_line(bad->id, bad->error));
    return;
  }
  const mcp::Message& m = std::get<mcp::Message>(parsed);
  if (m.notification) {
    // notifications/cancelled: the request is not answered; a run it was
    // waiting for is stopped (the model no longer wants it).
    if (m.method == "notifications/cancelled" && m.params.contains("requestId"))
      jobs_.cancel(cid, m.params["requestId"]);
    return;  // notifications/initialized and any other: nothing to answer
  }
  auto reply = [&](const Json& result) { conns_.send(cid, result_line(m.id, result)); };
  auto fail = [&](const RpcError& e) { conns_.send(cid, error_line(m.id, e)); };
  if (m.method == "initialize") return reply(mcp::initialize_result(m.params));
  if (m.method == "ping") return reply(Json::object());
  if (m.method == "logging/setLevel") {
    const int level = mcp::log_level(m.params);
    if (level < 0) return fail({rpc::kInvalidParams, mcp::kLogLevelWords});
    c.mcp_log_level = level;
    return reply(Json::object());
  }
  if (m.method == "tools/list") return reply(mcp::tools_list());
  if (m.method != "tools/call") return fail({rpc::kMethodNotFound, "unknown method '" + m.method + "'"});
  if (jobs_.shutting_down()) return reply(mcp::tool_error("pmon is stopping"));
  auto parsed_call = mcp::parse_tool_call(m.params);
  if (auto* err = std::get_if<mcp::CallError>(&parsed_call))
    return err->protocol ? fail({rpc::kInvalidParams, err->message}) : reply(mcp::tool_error(err->message));
  Reply r = call(c, m.id, std::get<mcp::ToolCall>(parsed_call));
  if (auto* res = std::get_if<Json>(&r)) reply(*res);
}

void McpAdapter::job_ended(Job& j) {
  if (std::any_of(j.waiters.begin(), j.waiters.end(), [](const Waiter& w) { return w.kind == Waiter::Kind::run; }))
    return;
  Conn* c = conns_.find(j.creator);
  if (!c || c->mcp_log_level > mcp::kInfo) return;
  const RunResult& r = j.call->result();
  conns_.send(j.creator, notification_line("notifications/message",
                                           mcp::job_ended_message(j.id, j.name, {r.exit_code, r.signal},
                                                                  r.timed_out, j.ended_by, r.cleanup_verified)));
}

McpAdapter::Reply McpAdapter::call(Conn& c, const Json& id, const mcp::ToolCall& call) {
  return std::visit([&](const auto& args) { return handle(c, id, args); }, call.args);
}

// run: a job whose answer is its summary when it ends, or, past
// background_after, what it wrote so far (it then goes on as a job).
McpAdapter::Reply McpAdapter::handle(Conn& c, const Json& id, const mcp::RunArgs& a) {
  if (auto j = jobs_.run(asker(c, id), a.create, a.background_after_ms); !j) return mcp::tool_error(j.error());
  return Later{};
}

McpAdapter::Reply McpAdapter::handle(Conn& c, const Json& id, const CreateParams& p) {
  auto s = jobs_.start(asker(c, id), p);
  if (!s) return mcp::tool_error(s.error());
  if (!*s) return Later{};  // once the job of its name is gone (created)
  return mcp::start_result(**s);
}

void McpAdapter::created(uint64_t conn, const Json& id, const std::expected<Started, Error>& r) {
  conns_.send(conn, result_line(id, r ? mcp::start_result(*r) : mcp::tool_error(r.error())));
}

McpAdapter::Reply McpAdapter::handle(Conn&, const Json&, const OutputParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  jobs_.catch_up(**j);
  Job& job = **j;
  auto v = view_of(job, p.view, static_cast<size_t>(p.max_bytes));
  if (!v) return mcp::tool_error(v.error());
  return mcp::view_output_result(*v, job.done ? std::optional(job.exit_status()) : std::nullopt,
                                 !job.done && job.waiting_for_input(), job.spool ? job.spool->path() : "");
}

McpAdapter::Reply McpAdapter::handle(Conn& c, const Json& id, const WaitForExitParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  auto status = jobs_.wait_exit(asker(c, id), **j, p.timeout_ms);
  if (!status) return mcp::tool_error(status.error());
  if (!*status) return Later{};
  return mcp::wait_result(*status);
}

McpAdapter::Reply McpAdapter::handle(Conn&, const Json&, const WriteParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  if (auto e = jobs_.write(**j, p.data, p.eof)) return mcp::tool_error(*e);
  return mcp::write_result(p.data.size());
}

// kill
McpAdapter::Reply McpAdapter::handle(Conn& c, const Json& id, const mcp::KillArgs& p) {
  auto j = p.id ? jobs_.get(*p.id) : jobs_.find_own(asker(c, id), p.by);
  if (!j) return mcp::tool_error(j.error());
  auto stopped = jobs_.kill(asker(c, id), **j, false);
  if (!stopped) return mcp::tool_error(stopped.error());
  if (!*stopped) return Later{};
  return mcp::kill_result(**stopped);
}

McpAdapter::Reply McpAdapter::handle(Conn&, const Json&, const ListParams& p) {
  return mcp::list_result(jobs_.list(p.session_id));
}

McpAdapter::Reply McpAdapter::handle(Conn& c, const Json& id, const WaitForPortParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  if (auto e = jobs_.wait_port(asker(c, id), **j, p.port, p.timeout_ms)) return mcp::tool_error(*e);
  return Later{};
}

// A long output's head and tail (its spool's, or what its buffer keeps),
// ANSI stripped, lines cut, said to be cut.
mcp::RunSummary McpAdapter::run_summary(Job& j) {
  mcp::RunSummary s;
  s.id = j.id;
  if (auto v = view_of(j, agent_view(), kAgentMaxText)) {
    s.output = std::move(v->text);
    s.truncated = v->truncated || v->left_out > 0;
    s.left_out = v->left_out;
  }
  if (j.spool && !j.done) s.spool_path = j.spool->path();
  if (!j.done) return s;
  s.exit = j.exit_status();
  s.report = jobs_.report(j);
  s.cleanup_verified = j.call->result().cleanup_verified;
  return s;
}

void McpAdapter::answer(const Waiter& w, Job& job, Due due) {
  Json result;
  if (auto* status = std::get_if<ExitStatus>(&due)) result = mcp::wait_result(*status);
  else if (std::holds_alternative<StillRunning>(due)) result = mcp::wait_result(std::nullopt, job.waiting_for_input());
  else if (auto* stopped = std::get_if<Stopped>(&due)) result = mcp::kill_result(*stopped);
  else if (auto* read = std::get_if<OutputRead>(&due)) {
    read->waiting_for_input = job.waiting_for_input();
    result = mcp::output_result(*read);
  }
  else if (auto* port = std::get_if<ListeningPort>(&due)) result = mcp::port_result(*port);
  else if (auto* err = std::get_if<Error>(&due)) result = mcp::tool_error(*err);
  else result = mcp::run_result(run_summary(job));
  conns_.send(w.conn, result_line(w.id, result));
}

}  // namespace pmon::serve
