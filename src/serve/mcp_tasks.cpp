// SPDX-License-Identifier: Apache-2.0
// pmon mcp's tasks in the protocol's words: whether a call asks for one,
// its id, and a task's fields as either revision names them.
#include <time.h>

#include <chrono>
#include <cstdio>

#include "serve/mcp.h"

namespace pmon::serve::mcp {

bool wants_task(const Json& params, const Revision& rev) {
  if (rev.modern) return rev.tasks;
  auto task = params.find("task");
  return task != params.end() && task->is_object();
}

std::expected<std::string, RpcError> task_id(const Json& params) {
  auto id = params.find("taskId");
  if (id == params.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
    return std::unexpected(RpcError{rpc::kInvalidParams, "invalid params: 'taskId' must be a task's id (a string)"});
  return id->get<std::string>();
}

RpcError unknown_task(const std::string& id) {
  return {rpc::kInvalidParams, "invalid params: no task '" + id + "' (its job may have been removed)"};
}

namespace {

// ISO 8601 in UTC, to the millisecond.
std::string iso8601(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  const size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

const char* status_word(TaskStatus s) {
  switch (s) {
    case TaskStatus::working: return "working";
    case TaskStatus::completed: return "completed";
    case TaskStatus::cancelled: return "cancelled";
  }
  return "working";
}

}  // namespace

Json task_fields(const TaskState& t, bool modern) {
  Json task = {{"taskId", t.id},
               {"status", status_word(t.status)},
               {"createdAt", iso8601(t.created)},
               {"lastUpdatedAt", iso8601(t.updated)},
               {modern ? "ttlMs" : "ttl", nullptr},
               {modern ? "pollIntervalMs" : "pollInterval", kTaskPollMs}};
  if (!t.message.empty()) task["statusMessage"] = t.message;
  return task;
}

Json create_task_result(const TaskState& t, bool modern) {
  if (!modern) return {{"task", task_fields(t, false)}};
  Json r = task_fields(t, true);
  r["resultType"] = "task";
  return r;
}

Json related_result(Json result, const std::string& task) {
  result["_meta"][kRelatedTask] = {{"taskId", task}};
  return result;
}

}  // namespace pmon::serve::mcp
