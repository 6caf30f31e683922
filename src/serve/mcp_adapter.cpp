// SPDX-License-Identifier: Apache-2.0
#include "serve/mcp_adapter.h"

#include <algorithm>

#include "jobs/job_list.h"

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
  // Each request says its revision (2026-07-28: in its _meta); nothing is
  // taken from the requests before it on this connection.
  const mcp::Revision rev = mcp::revision_of(m.params);
  auto reply = [&](Json result) {
    conns_.send(cid, result_line(m.id, rev.modern ? mcp::complete(std::move(result)) : std::move(result)));
  };
  auto fail = [&](const RpcError& e) { conns_.send(cid, error_line(m.id, e)); };
  if (rev.bad) return fail(*rev.bad);
  if (m.method == "server/discover") return reply(mcp::discover_result());
  if (rev.modern && (m.method == "initialize" || m.method == "ping" || m.method == "logging/setLevel"))
    return fail({rpc::kMethodNotFound, "'" + m.method + "' is not part of protocol revision " + mcp::kModernVersion});
  if (m.method == "initialize") return reply(mcp::initialize_result(m.params));
  if (m.method == "ping") return reply(Json::object());
  if (m.method == "logging/setLevel") {
    const int level = mcp::log_level(m.params);
    if (level < 0) return fail({rpc::kInvalidParams, mcp::kLogLevelWords});
    c.mcp_log_level = level;
    return reply(Json::object());
  }
  if (m.method == "tools/list") return reply(mcp::tools_list(rev.modern, mcp::envelope_words(jobs_.session() ? &jobs_.session()->envelope() : nullptr)));
  if (m.method.starts_with("tasks/")) return on_task(c, m, rev);
  if (m.method != "tools/call") return fail({rpc::kMethodNotFound, "unknown method '" + m.method + "'"});
  if (jobs_.shutting_down()) return reply(mcp::tool_error("pmon is stopping"));
  auto parsed_call = mcp::parse_tool_call(m.params);
  if (auto* err = std::get_if<mcp::CallError>(&parsed_call))
    return err->protocol ? fail({rpc::kInvalidParams, err->message}) : reply(mcp::tool_error(err->message));
  mcp::ToolCall& tc = std::get<mcp::ToolCall>(parsed_call);
  // A client of the stateless revision gets no log messages (it has none).
  if (rev.modern)
    std::visit(
        [](auto& args) {
          if constexpr (std::is_same_v<std::decay_t<decltype(args)>, CreateParams>) args.tell_end = false;
          if constexpr (std::is_same_v<std::decay_t<decltype(args)>, mcp::RunArgs>) args.create.tell_end = false;
        },
        tc.args);
  Shape shape{rev.modern};
  // As a task: a start at once; a run once it goes on past its background
  // time, which an earlier revision's client, asking for a task, wants now.
  if (mcp::wants_task(m.params, rev)) {
    shape.task = TaskReply::create;
    if (auto* run = std::get_if<mcp::RunArgs>(&tc.args); run && !rev.modern) run->background_after_ms = 0;
  }
  Reply r = call(shaped(asker(c, m.id), shape), tc);
  if (auto* res = std::get_if<Json>(&r)) reply(*res);
}

void McpAdapter::job_ended(Job& j) {
  if (!j.tell_end) return;
  if (std::any_of(j.waiters.begin(), j.waiters.end(), [](const Waiter& w) { return w.kind == Waiter::Kind::run; }))
    return;
  Conn* c = conns_.find(j.creator);
  if (!c || c->mcp_log_level > mcp::kInfo) return;
  const RunResult& r = j.call->result();
  j.end_told = true;
  conns_.send(j.creator, notification_line("notifications/message",
                                           mcp::job_ended_message(j.id, j.name, {r.exit_code, r.signal},
                                                                  j.end_facts(), r.cleanup_verified)));
}

McpAdapter::Reply McpAdapter::call(const Asker& who, const mcp::ToolCall& call) {
  return std::visit([&](const auto& args) { return handle(who, args); }, call.args);
}

// run: a job whose answer is its summary when it ends, or, past
// background_after, what it wrote so far (it then goes on as a job).
McpAdapter::Reply McpAdapter::handle(const Asker& who, const mcp::RunArgs& a) {
  if (auto j = jobs_.run(who, a.create, a.background_after_ms); !j) return mcp::tool_error(j.error());
  return Later{};
}

McpAdapter::Reply McpAdapter::handle(const Asker& who, const CreateParams& p) {
  auto s = jobs_.start(who, p);
  if (!s) return mcp::tool_error(s.error());
  if (!*s) return Later{};  // once the job of its name is gone (created)
  if (const Shape shape = shape_of(who.shape); shape.task == TaskReply::create)
    if (auto j = jobs_.get((*s)->id)) return as_task(**j, shape.stateless);
  return mcp::start_result(**s);
}

void McpAdapter::created(const Asker& a, const std::expected<Started, Error>& r) {
  const Shape shape = shape_of(a.shape);
  Json result = r ? mcp::start_result(*r) : mcp::tool_error(r.error());
  if (r && shape.task == TaskReply::create)
    if (auto j = jobs_.get(r->id)) result = as_task(**j, shape.stateless);
  conns_.send(a.conn, result_line(a.id, shape.stateless ? mcp::complete(std::move(result)) : std::move(result)));
}

void McpAdapter::forgotten(const Job& job) { tasks_.erase(job.num); }

McpAdapter::Reply McpAdapter::handle(const Asker&, const OutputParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  jobs_.catch_up(**j);
  Job& job = **j;
  auto v = view_of(job, p.view, static_cast<size_t>(p.max_bytes));
  if (!v) return mcp::tool_error(v.error());
  if (job.done) job.end_told = true;
  return mcp::view_output_result(*v, job.done ? std::optional(job.exit_status()) : std::nullopt,
                                 !job.done && job.waiting_for_input(), spool_path(job));
}

McpAdapter::Reply McpAdapter::handle(const Asker& who, const WaitForExitParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  auto status = jobs_.wait_exit(who, **j, p.timeout_ms);
  if (!status) return mcp::tool_error(status.error());
  if (!*status) return Later{};
  (*j)->end_told = true;
  return mcp::wait_result(*status, false, (*j)->end_facts(), session_of(**j));
}

McpAdapter::Reply McpAdapter::handle(const Asker&, const WriteParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  if (auto e = jobs_.write(**j, p.data, p.eof)) return mcp::tool_error(*e);
  return mcp::write_result(p.data.size());
}

// kill
McpAdapter::Reply McpAdapter::handle(const Asker& who, const mcp::KillArgs& p) {
  auto j = p.id ? jobs_.get(*p.id) : jobs_.find_own(who, p.by);
  if (!j) return mcp::tool_error(j.error());
  auto stopped = jobs_.kill(who, **j, false);
  if (!stopped) return mcp::tool_error(stopped.error());
  if (!*stopped) return Later{};
  (*j)->end_told = true;
  return mcp::kill_result(**stopped);
}

McpAdapter::Reply McpAdapter::handle(const Asker&, const ListParams& p) {
  return mcp::list_result(JobList(jobs_, p.session_id).all());
}

McpAdapter::Reply McpAdapter::handle(const Asker& who, const WaitForPortParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return mcp::tool_error(j.error());
  if (auto e = jobs_.wait_port(who, **j, p.port, p.timeout_ms)) return mcp::tool_error(*e);
  return Later{};
}

// A long output's head and tail (its spool's, or what its buffer keeps),
// ANSI stripped, lines cut, said to be cut.
Json McpAdapter::session_of(Job& j) {
  if (!j.done || jobs_.session() == nullptr) return nullptr;
  Json report = jobs_.report(j);
  auto s = report.find("session");
  return s == report.end() ? Json(nullptr) : *s;
}

mcp::RunSummary McpAdapter::run_summary(Job& j) {
  mcp::RunSummary s;
  s.id = j.id;
  if (auto v = view_of(j, agent_view(), kAgentMaxText)) {
    s.output = std::move(v->text);
    s.truncated = v->truncated || v->left_out > 0;
    s.left_out = v->left_out;
  }
  if (!j.done) s.spool_path = spool_path(j);
  if (!j.done) return s;
  s.exit = j.exit_status();
  s.report = jobs_.report(j);
  s.cleanup_verified = j.call->result().cleanup_verified;
  return s;
}

void McpAdapter::answer(const Waiter& w, Job& job, Due due) {
  if (job.done) job.end_told = true;
  const Shape shape = shape_of(w.shape);
  Json result;
  if (shape.task == TaskReply::cancel && !std::holds_alternative<Error>(due)) result = cancelled(job, shape.stateless);
  else if (shape.task == TaskReply::result && !std::holds_alternative<Error>(due))
    result = mcp::related_result(mcp::run_result(run_summary(job)), job.id);
  else if (shape.task == TaskReply::create && w.kind == Waiter::Kind::run && (!job.done || !shape.stateless))
    result = as_task(job, shape.stateless);
  else if (auto* status = std::get_if<ExitStatus>(&due))
    result = mcp::wait_result(*status, false, job.end_facts(), session_of(job));
  else if (std::holds_alternative<StillRunning>(due)) result = mcp::wait_result(std::nullopt, job.waiting_for_input());
  else if (auto* stopped = std::get_if<Stopped>(&due)) result = mcp::kill_result(*stopped);
  else if (auto* read = std::get_if<OutputRead>(&due)) result = mcp::output_result(*read);
  else if (auto* port = std::get_if<ListeningPort>(&due)) result = mcp::port_result(*port);
  else if (auto* err = std::get_if<Error>(&due)) result = mcp::tool_error(*err);
  else result = mcp::run_result(run_summary(job));
  conns_.send(w.conn, result_line(w.id, shape.stateless ? mcp::complete(std::move(result)) : std::move(result)));
}

mcp::TaskState McpAdapter::task_state(Job& j) {
  mcp::TaskState t;
  t.id = j.id;
  t.created = j.started;
  t.updated = j.done ? j.ended : j.started;
  if (!j.done) {
    t.message = "job " + j.id + (j.stopping()            ? " is stopping"
                                 : j.waiting_for_input() ? " is running, " + std::string(mcp::kWaitingWords)
                                                         : " is running");
    return t;
  }
  const RunResult& r = j.call->result();
  t.status = j.ended_by && words_of(*j.ended_by).task_cancelled ? mcp::TaskStatus::cancelled
                                                                 : mcp::TaskStatus::completed;
  t.message = mcp::job_ended_message(j.id, j.name, {r.exit_code, r.signal}, j.end_facts(),
                                     r.cleanup_verified)["data"]["text"];
  return t;
}

Json McpAdapter::as_task(Job& j, bool modern) {
  tasks_.emplace(j.num, j.id);
  return mcp::create_task_result(task_state(j), modern);
}

Json McpAdapter::cancelled(Job& j, bool modern) {
  return modern ? Json::object() : mcp::task_fields(task_state(j), false);
}

void McpAdapter::on_task(Conn& c, const mcp::Message& m, const mcp::Revision& rev) {
  const uint64_t cid = c.id;
  auto reply = [&](Json result) {
    conns_.send(cid, result_line(m.id, rev.modern ? mcp::complete(std::move(result)) : std::move(result)));
  };
  auto fail = [&](const RpcError& e) { conns_.send(cid, error_line(m.id, e)); };
  const bool modern_method = m.method == "tasks/update";
  const bool legacy_method = m.method == "tasks/result" || m.method == "tasks/list";
  if (!(m.method == "tasks/get" || m.method == "tasks/cancel" || modern_method || legacy_method) ||
      (rev.modern && legacy_method) || (!rev.modern && modern_method))
    return fail({rpc::kMethodNotFound, "unknown method '" + m.method + "'"});
  if (rev.modern && !rev.tasks)
    return fail({mcp::kMissingCapability, "Missing required client capability",
                 {{"requiredCapabilities", {{"extensions", {{mcp::kTasksExtension, Json::object()}}}}}}});
  if (m.method == "tasks/list") {
    Json tasks = Json::array();
    for (const auto& [num, id] : tasks_)
      if (auto j = jobs_.get(id); j && (*j)->creator == cid) tasks.push_back(mcp::task_fields(task_state(**j), false));
    return reply({{"tasks", tasks}});
  }
  auto id = mcp::task_id(m.params);
  if (!id) return fail(id.error());
  auto found = jobs_.get(*id);
  if (!found) return fail(mcp::unknown_task(*id));
  Job& j = **found;
  jobs_.catch_up(j);
  const Asker who = asker(c, m.id);
  if (m.method == "tasks/get") {
    Json t = mcp::task_fields(task_state(j), rev.modern);
    // 2026-07-28: a complete task carries its result.
    if (rev.modern && j.done) t["result"] = mcp::complete(mcp::run_result(run_summary(j)));
    return reply(std::move(t));
  }
  if (m.method == "tasks/update") return reply(Json::object());  // a job never asks for input this way
  if (m.method == "tasks/result") {
    if (j.done) return reply(mcp::related_result(mcp::run_result(run_summary(j)), j.id));
    auto status = jobs_.wait_exit(shaped(who, {rev.modern, TaskReply::result}), j, std::nullopt);
    if (!status) return reply(mcp::tool_error(status.error()));
    if (*status) return reply(mcp::related_result(mcp::run_result(run_summary(j)), j.id));
    return;  // answered once it is over
  }
  // tasks/cancel: the whole tree stopped and verified gone, then answered.
  if (j.done) {
    if (rev.modern) return reply(Json::object());
    return fail({rpc::kInvalidParams, "invalid params: task '" + j.id + "' is already over; there is nothing to cancel"});
  }
  auto stopped = jobs_.kill(shaped(who, {rev.modern, TaskReply::cancel}), j, false);
  if (!stopped) return fail({rpc::kServerError, words(stopped.error(), "task")});
  if (*stopped) return reply(cancelled(j, rev.modern));
}

}  // namespace pmon::serve
