// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_list.h"

#include <fcntl.h>

#include "jobs/job_table.h"
#include "jobs/poller.h"
#include "sys/syscalls.h"

namespace pmon::serve {

JobList::JobList(JobTable& jobs, const std::optional<std::string>& session)
    : jobs_(jobs), ids_(jobs.job_ids(session)) {}

bool JobList::step(int64_t until) {
  while (next_ < ids_.size()) {
    auto j = jobs_.get(ids_[next_]);
    if (!j) {  // forgotten meanwhile
      scan_.reset();
      ++next_;
      continue;
    }
    Job& job = **j;
    if (!scan_) {
      if (until != kForever && sys::monotonic_ns() >= until) return false;
      scan_.emplace();
      scan_->pids = job.running_pids();
    }
    // (the tables of this scan interval, however many steps it takes)
    if (!jobs_.answers().port_tables().scan(*scan_, until)) return false;
    out_.push_back(job.info(scan_->pids, job.done ? std::vector<ListeningPort>() : std::move(scan_->found)));
    if (const confine::SessionCgroup* s = jobs_.session(); s != nullptr && !job.done) {
      JobInfo::InSession in{s->path(), s->envelope(), s->usage(), {}};
      if (const auto& leaf = job.call->cgroup()) {
        Fd dir(::open(leaf->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (dir) in.job = read_usage(dir.get());
      }
      out_.back().in_session = std::move(in);
    }
    if (job.done) job.end_told = true;
    scan_.reset();
    ++next_;
  }
  return true;
}

std::vector<JobInfo> JobList::all() && {
  (void)step(kForever);
  return std::move(out_);
}

}  // namespace pmon::serve
