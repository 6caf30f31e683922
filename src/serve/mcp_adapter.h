// SPDX-License-Identifier: Apache-2.0
// The MCP front end of pmon serve (pmon mcp): each line read as an MCP
// message (serve/mcp.h), a tool call answered by the handler for its
// arguments' type on the job table, and the typed result worded as that
// tool's result. Requests that wait are answered here too, as the job
// table finds them due.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "serve/front_end.h"
#include "serve/mcp.h"

namespace pmon::serve {

class McpAdapter final : public FrontEnd {
 public:
  using FrontEnd::FrontEnd;

  void on_line(Conn& c, std::string_view line) override;
  void answer(const Waiter& w, Job& job, Due due) override;
  // A started job's end (and a run's gone on in the background): a log
  // message (notifications/message, level info, logger "pmon") its client
  // can act on without asking; a run still waiting says it in its answer.
  void job_ended(Job& job) override;
  void created(const Asker& a, const std::expected<Started, Error>& r) override;
  void forgotten(const Job& job) override;

 private:
  // How an answer owed to a request is shaped (kept in Asker::shape).
  // `create`: a tool call asked for as a task (a started job, or a run
  // gone on past its background time, answered as the task it now is);
  // `cancel`: tasks/cancel, answered once the tree is verified gone;
  // `result`: tasks/result, answered with the tool's result once the job
  // is over. `stateless`: the request speaks the stateless revision.
  enum class TaskReply : uint8_t { none, create, cancel, result };
  struct Shape {
    bool stateless = false;
    TaskReply task = TaskReply::none;
  };
  static uint8_t shape_tag(Shape s) { return static_cast<uint8_t>(static_cast<uint8_t>(s.task) << 1 | s.stateless); }
  static Shape shape_of(uint8_t tag) { return {(tag & 1) != 0, static_cast<TaskReply>(tag >> 1)}; }
  static Asker shaped(Asker a, Shape s) {
    a.shape = shape_tag(s);
    return a;
  }

  // A tool's result now, or later (a waiter answers it).
  struct Later {};
  using Reply = std::variant<Later, Json>;

  Reply call(const Asker& who, const mcp::ToolCall& call);
  // One handler a tool (the type of its arguments says which).
  Reply handle(const Asker& who, const mcp::RunArgs& a);
  Reply handle(const Asker& who, const CreateParams& p);
  Reply handle(const Asker& who, const OutputParams& p);
  Reply handle(const Asker& who, const WaitForExitParams& p);
  Reply handle(const Asker& who, const WriteParams& p);
  Reply handle(const Asker& who, const mcp::KillArgs& p);
  Reply handle(const Asker& who, const ListParams& p);
  Reply handle(const Asker& who, const WaitForPortParams& p);

  // A run's answer: the newest of its output, and its end once over.
  mcp::RunSummary run_summary(Job& j);
  // An ended job's session figures (its report's), or null.
  Json session_of(Job& j);

  // tasks/get, tasks/update, tasks/cancel (and earlier revisions'
  // tasks/result, tasks/list): the job of the task's id.
  void on_task(Conn& c, const mcp::Message& m, const mcp::Revision& rev);
  // A job as a task: working while it runs; once over, completed, or
  // cancelled when a client stopped it; its message says which.
  mcp::TaskState task_state(Job& j);
  // The answer to a tool call asked for as a task: the job is a task now.
  Json as_task(Job& j, bool modern);
  // tasks/cancel's answer once the job is over: an acknowledgement
  // (2026-07-28), or the task (earlier).
  Json cancelled(Job& j, bool modern);

  // The jobs answered as tasks (tasks/list lists them), by their number
  // (the order they were created in): job id.
  std::map<uint64_t, std::string> tasks_;
};

}  // namespace pmon::serve
