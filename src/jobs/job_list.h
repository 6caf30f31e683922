// SPDX-License-Identifier: Apache-2.0
// What terminal/list (and MCP's list) shows: each job with the TCP ports
// its processes listen on, made a slice at a time. A job of thousands of
// processes takes tens of milliseconds to look through (each one's fds in
// /proc), which the service's loop does in turns with its other clients.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_api.h"
#include "jobs/ports.h"

namespace pmon::serve {

class JobTable;

class JobList {
 public:
  // The jobs (of `session` if given) as they are now, in the order they
  // were created; a job forgotten before its turn is left out.
  JobList(JobTable& jobs, const std::optional<std::string>& session);
  // Goes on from where the last step stopped until every job is looked at
  // (true) or the clock (sys::monotonic_ns) passes `until`.
  bool step(int64_t until);
  std::vector<JobInfo>& result() { return out_; }
  size_t size() const { return ids_.size(); }  // the jobs it lists
  // The whole list at once (pmon mcp, whose one client waits for it).
  std::vector<JobInfo> all() &&;

 private:
  JobTable& jobs_;
  std::vector<std::string> ids_;
  size_t next_ = 0;
  std::optional<PortTables::Scan> scan_;  // of ids_[next_], once begun
  std::vector<JobInfo> out_;
};

}  // namespace pmon::serve
