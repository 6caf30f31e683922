// SPDX-License-Identifier: Apache-2.0
// The job table's side of a job's end: its main process ended (by the
// service's hand or not), what is left of it is drained and said, whoever
// waits is answered, and the jobs of a pmon call that ended are stopped.
#include <chrono>
#include <utility>

#include "jobs/call_records.h"
#include "jobs/job_table.h"
#include "sys/syscalls.h"

namespace pmon::serve {

// A job's main process ended, not by the service's hand: if the call it
// belongs to is ending or over (that call's stop reached this job's leaf
// inside its own), its report says so. Asked again when the report is made.
void JobTable::note_owner_end(Job& j) {
  if (j.ended_by) return;
  bool owner_ended = false;
  if (j.tie.owner_job != 0) {
    Job* o = job_by_num(j.tie.owner_job);
    owner_ended = !o || o->done || o->stopping();
  }
  if (j.tie.call_ended(owner_ended)) j.ended_by = Call::End::owner_ended;
}

void JobTable::stop_owned(uint64_t num) {
  if (owned_jobs_ == 0) return;
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs_)
    if (j->tie.owner_job == num && !j->done) ids.push_back(id);
  for (const std::string& id : ids)
    if (Job* j = find(id)) stops_.begin(*j, Call::End::owner_ended);
}

void JobTable::job_over(Job& j) {
  j.done = true;
  j.ended = std::chrono::system_clock::now();
  j.record.reset();  // (nothing of it is left to stop; its leaf may serve another job)
  // (Kept, unwatched: the report may still look at whether it ended.)
  if (j.tie.owner_pidfd) poller_.unwatch(j.tie.owner_pidfd.get());
  // Over on its own or stopped by a client: nothing for the call's pmon to
  // stop. Stopped because that call ended: kept for it to list (it may be
  // reading its records only now), removed with the job.
  if (j.ended_by != Call::End::owner_ended) remove_call_record(std::exchange(j.tie.record, {}));
  const RunResult& r = j.call->result();
  if (!r.cleanup_verified) all_verified_ = false;
  j.drain(scratch_);
  streams_.pump(j);
  if (j.in_watched) poller_.unwatch(j.in.get());
  j.in.reset();
  j.drop_stdin();
  if (j.ready && !j.ready->decided()) {
    feed_lines(j, sys::monotonic_ns());
    j.ready->job_ended(ended_words(j), sys::monotonic_ns());
  }
  // Killed by a signal the service did not send: by the call it belongs
  // to? (Its end says who stopped it; asked again for the report.)
  if (!j.ended_by && r.signal) note_owner_end(j);
  front_->job_ended(j);
  answers_.settle(j);
  if (opts_.mcp && !j.forget) bound_spools(j.creator);
  if (j.forget) erase(j.id);
  // A job killed by a signal nobody here sent, inside a call that may be
  // ending at this moment: its report is made when asked for (report_text).
  else if (!(!j.ended_by && r.signal && (j.tie.owner_pidfd || !j.tie.owner_leaf.empty())))
    to_report_.push_back(j.id);
}

void JobTable::erase(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Job& j = *it->second;
  if (!j.done) return;  // forgotten once over
  remove_call_record(j.tie.record);
  streams_.end_all_of(j);
  if (j.tie.owner_job != 0) --owned_jobs_;
  if (front_) front_->forgotten(j);
  job_keys_.erase(j.num);
  jobs_.erase(it);
}

}  // namespace pmon::serve
