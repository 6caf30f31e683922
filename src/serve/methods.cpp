// SPDX-License-Identifier: Apache-2.0
#include "serve/methods.h"

#include <memory>
#include <new>

#include "jobs/job_list.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

// A grep view or a list is made in the handler for at most this long; what
// takes longer goes on in slices of the loop (Connections::defer).
constexpr int64_t kInlineNs = 1'000'000;

RpcError rpc_error(const Error& e) {
  return {callers_fault(e) ? rpc::kInvalidParams : rpc::kServerError, words(e, "terminal"), error_data(e)};
}

Json started_json(const Started& s) {
  Json o = {{"terminalId", s.id}, {"existing", s.existing}};
  if (s.ready) {
    o["ready"] = s.ready->ready;
    if (s.ready->ready) o["readyMs"] = s.ready->ms;
    else o["readyError"] = s.ready->error;
  }
  return o;
}

// An output read with head, tail, offset, grep...: the text, where it
// came from, and what was left out.
Json view_json(const ViewResult& v, Job& job) {
  Json res = {{"output", v.text}, {"truncated", v.truncated}, {"from", v.from},      {"next", v.next},
              {"more", v.more},   {"leftOut", v.left_out},   {"total", v.total}};
  if (v.matches) res["matches"] = *v.matches, res["shown"] = v.shown;
  add_spool_paths(res, job);
  res["exitStatus"] = job.done ? exit_status_json(job.exit_status()) : Json(nullptr);
  if (!job.done) res["waitingForInput"] = job.waiting_for_input();
  return res;
}

}  // namespace

void Methods::on_line(Conn& c, std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  const uint64_t cid = c.id;
  auto parsed = parse_request(line);
  if (auto* bad = std::get_if<BadRequest>(&parsed)) {
    if (bad->answer) conns_.send(cid, error_line(bad->id, bad->error));
    return;
  }
  Request& r = std::get<Request>(parsed);
  // A notification is never answered, not even later (a wait_for_exit or
  // kill it asked for): the answers owed to this id come out empty.
  if (r.notification) r.id = Json(Json::value_t::discarded);
  Reply a = jobs_.shutting_down() ? Reply(RpcError{rpc::kServerError, "the service is stopping"})
                                  : std::visit([&](const auto& p) { return handle(c, r.id, p); }, r.params);
  if (r.notification) return;
  send(cid, r.id, std::move(a));
}

void Methods::send(uint64_t cid, const Json& id, Reply a) {
  if (auto* res = std::get_if<Json>(&a)) conns_.send(cid, result_line(id, *res));
  else if (auto* err = std::get_if<Error>(&a)) conns_.send(cid, error_line(id, rpc_error(*err)));
  else if (auto* rerr = std::get_if<RpcError>(&a)) conns_.send(cid, error_line(id, *rerr));
  else if (auto* l = std::get_if<Line>(&a)) conns_.send(cid, std::move(l->text));
  else if (auto* with = std::get_if<WithFd>(&a)) conns_.send(cid, result_line(id, with->result), std::move(with->fd));
}

Methods::Reply Methods::handle(Conn& c, const Json& id, const CreateParams& p) {
  auto s = jobs_.start(asker(c, id), p);
  if (!s) return s.error();
  if (!*s) return Later{};  // once the job of its name is gone (created)
  return started_json(**s);
}

Methods::Reply Methods::handle(Conn& c, const Json& id, const FindParams& p) {
  auto j = jobs_.find_own(asker(c, id), p);
  if (!j) return j.error();
  return Json{{"terminalId", (*j)->id}};
}

void Methods::created(const Asker& a, const std::expected<Started, Error>& r) {
  const uint64_t conn = a.conn;
  const Json& id = a.id;
  if (id.is_discarded()) return;
  conns_.send(conn, r ? result_line(id, started_json(*r)) : error_line(id, rpc_error(r.error())));
}

Methods::Reply Methods::handle(Conn& c, const Json& id, const OutputParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return j.error();
  Job& job = **j;
  jobs_.catch_up(job);
  if (p.stream) {
    if (!c.passes_fds)
      return RpcError{rpc::kInvalidParams,
                      "invalid params: 'stream' needs a Unix socket connection (pmon serve --listen); "
                      "read without it"};
    if (p.stderr_since)
      return RpcError{rpc::kInvalidParams, "invalid params: 'stream' reads the job's output, not its stderr; "
                                           "read stderr with 'stderrSince' and no 'stream'"};
    auto s = jobs_.open_stream(c.id, job, p.since, p.follow);
    if (!s) return s.error();
    return WithFd{{{"stream", true}, {"since", s->since}, {"truncated", s->truncated}}, Fd(s->fd)};
  }
  if (p.view.any()) {
    // (a byte of a view can be six in the reply: \u00XX)
    const size_t most = std::min(jobs_.answers().reply_bytes(p.max_bytes), jobs_.answers().reply_json_cap() / 6);
    if (!p.view.grep) {
      auto v = view_of(job, p.view, most);
      if (!v) return v.error();
      return view_json(*v, job);
    }
    auto g = GrepScan::begin(view_source(job), p.view, most);
    if (!g) return g.error();
    if (g->step(view_source(job), sys::monotonic_ns() + kInlineNs)) return view_json(g->result(), job);
    auto scan = std::make_shared<GrepScan>(std::move(*g));
    const auto step = [this, scan, tid = p.terminal_id](int64_t until) -> std::optional<Reply> {
      auto j = jobs_.get(tid);  // (released meanwhile: its error)
      if (!j) return Reply(j.error());
      if (!scan->step(view_source(**j), until)) return std::nullopt;
      return Reply(view_json(scan->result(), **j));
    };
    if (defer(c, id, most + GrepScan::kHeld, step)) return Later{};
    (void)scan->step(view_source(job), kForever);  // no room to hold it meanwhile: made whole now
    return view_json(scan->result(), job);
  }
  if (!p.wait_ms || job.done || job.has_new_output(p.since, p.stderr_since)) {
    if (id.is_discarded()) return Later{};  // a notification's: nothing is read
    return Line{output_line(id, jobs_.read_output(job, p.since, p.stderr_since, p.max_bytes))};
  }
  if (auto e = jobs_.wait_output(asker(c, id), job, p)) return *e;
  return Later{};
}

Methods::Reply Methods::handle(Conn& c, const Json& id, const WaitForExitParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return j.error();
  auto status = jobs_.wait_exit(asker(c, id), **j, p.timeout_ms);
  if (!status) return status.error();
  if (!*status) return Later{};
  return wait_result(**status, (*j)->end_facts());
}

Methods::Reply Methods::handle(Conn&, const Json&, const WriteParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return j.error();
  if (auto e = jobs_.write(**j, p.data, p.eof)) return *e;
  return Json::object();
}

Methods::Reply Methods::handle(Conn&, const Json&, const ResizeParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return j.error();
  if (auto e = jobs_.resize(**j, p.size)) return *e;
  return Json::object();
}

Methods::Reply Methods::handle(Conn& c, const Json& id, const KillParams& p) { return stop(c, id, p, false); }
Methods::Reply Methods::handle(Conn& c, const Json& id, const ReleaseParams& p) { return stop(c, id, p, true); }

Methods::Reply Methods::stop(Conn& c, const Json& id, const TerminalParams& p, bool release) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return j.error();
  auto stopped = jobs_.kill(asker(c, id), **j, release);
  if (!stopped) return stopped.error();
  if (!*stopped) return Later{};
  return Json{{"cleanupVerified", (*stopped)->cleanup_verified}};
}

Methods::Reply Methods::handle(Conn& c, const Json& id, const ListParams& p) {
  auto list = std::make_shared<JobList>(jobs_, p.session_id);
  auto result = [list] {
    Json arr = Json::array();
    for (const JobInfo& j : list->result()) arr.push_back(job_json(j));
    return Json{{"terminals", arr}};
  };
  if (list->step(sys::monotonic_ns() + kInlineNs)) return result();
  const auto step = [list, result](int64_t until) -> std::optional<Reply> {
    if (!list->step(until)) return std::nullopt;
    return Reply(result());
  };
  // (about what an entry takes, commands and paths included)
  if (defer(c, id, (size_t{64} << 10) + list->size() * 4096, step)) return Later{};
  (void)list->step(kForever);
  return result();
}

bool Methods::defer(Conn& c, const Json& id, size_t bytes, std::function<std::optional<Reply>(int64_t)> step) {
  auto ticket = std::make_shared<RequestBudget::Ticket>(conns_.waiting().take(c.waiting, bytes, nullptr));
  if (!*ticket) return false;
  conns_.defer(c.id, [this, cid = c.id, id, step = std::move(step), ticket](int64_t until) {
    std::optional<Reply> r;
    try {
      r = step(until);
      if (!r) return false;
    } catch (const std::bad_alloc&) {
      r = Reply(RpcError{rpc::kServerError, "out of memory while handling this request; try again later"});
    }
    if (!id.is_discarded()) send(cid, id, std::move(*r));
    return true;
  });
  return true;
}

Methods::Reply Methods::handle(Conn&, const Json& id, const ReportParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return j.error();
  auto text = jobs_.report_text(**j);
  if (!text) return text.error();
  return Line{result_line_of_text(id, **text)};
}

Methods::Reply Methods::handle(Conn& c, const Json& id, const WaitForPortParams& p) {
  auto j = jobs_.get(p.terminal_id);
  if (!j) return j.error();
  if (auto e = jobs_.wait_port(asker(c, id), **j, p.port, p.timeout_ms)) return *e;
  return Later{};
}

// Answered at once; the stops are verified as each job ends (its report).
Methods::Reply Methods::handle(Conn& c, const Json&, const SessionCloseParams& p) {
  return Json{{"stopping", jobs_.close_session(c.id, p.session_id)}};
}

std::string Methods::output_line(const Json& id, OutputRead read) {
  std::string line = output_result_line(id, read.out, read.err ? &*read.err : nullptr, exit_status_json(read.exit),
                                        read.exit ? std::nullopt : std::optional(read.waiting_for_input),
                                        conns_.take_line_spare());
  jobs_.answers().recycle(std::move(read.out.text));
  return line;
}

void Methods::answer(const Waiter& w, Job& job, Due due) {
  if (w.id.is_discarded()) return;  // a notification's (on_line)
  std::string line;
  if (auto* status = std::get_if<ExitStatus>(&due)) {
    line = result_line(w.id, wait_result(*status, job.end_facts()));
  } else if (std::holds_alternative<StillRunning>(due)) {
    line = result_line(w.id, still_running_result(job.waiting_for_input()));
  } else if (auto* stopped = std::get_if<Stopped>(&due)) {
    line = result_line(w.id, {{"cleanupVerified", stopped->cleanup_verified}});
  } else if (auto* read = std::get_if<OutputRead>(&due)) {
    line = output_line(w.id, std::move(*read));
  } else if (auto* port = std::get_if<ListeningPort>(&due)) {
    line = result_line(w.id, port_json(*port));
  } else if (auto* err = std::get_if<Error>(&due)) {
    line = error_line(w.id, rpc_error(*err));
  }
  conns_.send(w.conn, std::move(line));
}

void Methods::job_ended(Job& j) {
  const RunResult& r = j.call->result();
  Json note = {{"terminalId", j.id},
               {"exitStatus", exit_status_json(r.exit_code, r.signal)},
               {"cleanupVerified", r.cleanup_verified}};
  add_end_facts(note, j.end_facts());
  if (j.session) note["sessionId"] = *j.session;
  conns_.send(j.creator, notification_line("terminal/exited", note));
}

}  // namespace pmon::serve
