// SPDX-License-Identifier: Apache-2.0
// The job table's side of a job's end: its main process ended (by the
// service's hand or not), what is left of it is drained and said, whoever
// waits is answered, and the jobs of a pmon call that ended are stopped.
// Then what is kept of a job that is over: its report, made once, and
// room at the job limit for a client that cannot release its jobs.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/report.h"
#include "jobs/call_records.h"
#include "jobs/job_table.h"
#include "jobs/json_text.h"
#include "sys/proc.h"
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
  // (nothing of it is left to stop; its leaf may serve another job)
  if (std::exchange(j.recorded, false)) records_.remove(j.id);
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
  if (opts_.make_room && !j.forget) bound_spools(j.creator);
  if (j.forget) erase(j.id);
  // A job killed by a signal nobody here sent, inside a call that may be
  // ending at this moment: its report is made when asked for (report_text).
  else if (!(!j.ended_by && r.signal && (j.tie.owner_pidfd || !j.tie.owner_leaf.empty())))
    to_report_.push_back(j.id);
}

void JobTable::dismiss(Job& j, Call::End why) {
  j.forget = true;
  // (nobody waits for its files to go: a session's 1000 jobs closed at
  // once are said gone before their 1000 files are removed)
  for (Spool* s : {j.spool.get(), j.err_spool.get()})
    if (s) s->remove_later();
  if (j.done) return erase(j.id);
  // (its report is never made: a session's 1000 jobs closed at once do
  // not each read their cgroup's figures and list their processes)
  j.call->without_details();
  stops_.begin(j, why);
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
  by_num_.erase(j.num);
  unindex(j);
  jobs_.erase(it);
}

// pmon mcp has no release: a model cannot forget a job, so at the limit the
// oldest job that is over goes, first among those whose end it was told.
void JobTable::make_room() {
  const Job* oldest = nullptr;
  for (auto& [num, id] : job_keys_) {
    const Job* j = peek(id);
    if (!j || !j->done || !j->waiters.empty() || !j->streams.empty()) continue;
    if (j->end_told) {
      oldest = j;
      break;
    }
    if (!oldest) oldest = j;
  }
  if (oldest) erase(oldest->id);
}

// pmon mcp: the spools of one session's jobs that are over hold at most
// session_spool() bytes in all; the oldest ones' go first.
void JobTable::bound_spools(uint64_t conn) {
  uint64_t held = 0;
  std::vector<Job*> over;
  for (auto& [num, id] : job_keys_)
    if (const Job* seen = peek(id); seen && seen->done && seen->creator == conn &&
                 (!spool_path(*seen).empty() || !spool_path(*seen, true).empty())) {
      Job* j = find(id);
      over.push_back(j);
      held += (j->spool ? j->spool->on_disk() : 0) + (j->err_spool ? j->err_spool->on_disk() : 0);
    }
  const uint64_t bound = opts_.session_spool();
  for (Job* j : over) {
    if (held <= bound) return;
    held -= (j->spool ? j->spool->on_disk() : 0) + (j->err_spool ? j->err_spool->on_disk() : 0);
    j->spool.reset();
    j->err_spool.reset();
    j->spool_error = "removed to keep the spool files of this session's ended jobs within " +
                     std::to_string(bound >> 20) + " MiB (newer ones are kept)";
  }
}

// The section-4 report as a value: it goes out inside the reply as it is,
// no text in between (terminal/report is on every job's path).
Json JobTable::report(const Job& j) const {
  ReportContext ctx;
  ctx.passed_over = opts_.passed_over;
  ctx.weak = backend_.kind() == ConfineKind::pgroup && !j.own_pmon;
  Json rep = report_object<Json>(j.call->result(), ctx);
  if (j.own_pmon) {
    // The call was the job's own pmon's, held by its process group; that
    // pmon held the command's processes as their subreaper, and its report
    // says what it stopped.
    rep["command"] = j.command;
    rep["confinement"] = "subreaper";
    auto text = j.inner_report.empty() ? std::unexpected(std::error_code()) : sys::read_file(j.inner_report);
    Json inner = text ? Json::parse(*text, nullptr, false) : Json();
    if (inner.is_object()) {
      for (const char* k : {"leftovers", "escaped"})
        if (inner.contains(k)) rep[k] = inner[k];
      if (inner.value("cleanup_verified", true) == false) rep["cleanup_verified"] = false;
    }
  }
  const std::string_view by = j.end_facts().stopped_by_word();  // (the table's: it outlives the facts)
  rep["job"] = {{"terminalId", j.id}, {"name", j.name.empty() ? Json(nullptr) : Json(j.name)},
                {"stoppedBy", by.empty() ? Json(nullptr) : Json(std::string(by))}, {"stdin", j.stdin_kind}};
  if (j.own_pmon) rep["job"]["ownPmon"] = true;
  if (j.ready && j.ready->decided()) {
    rep["job"]["ready"] = j.ready->outcome()->ready;
    if (!j.ready->outcome()->ready) rep["job"]["readyError"] = j.ready->outcome()->error;
  }
  add_spool_paths(rep["job"], j);
  return rep;
}

std::expected<const std::string*, Error> JobTable::report_text(Job& j) {
  if (!j.done) return std::unexpected(Error::of(Errc::still_running, j.id));
  // Killed by a signal the service did not send: by the call it belongs to?
  if (j.report.empty() && !j.ended_by && j.call->result().signal) note_owner_end(j);
  if (j.report.empty()) j.report = dump_text(report(j));
  return &j.report;
}

void JobTable::make_reports() {
  std::vector<std::string> ids = std::move(to_report_);
  to_report_.clear();
  for (const std::string& id : ids)
    if (Job* j = find(id); j && j->done && j->report.empty()) j->report = dump_text(report(*j));
}

}  // namespace pmon::serve
