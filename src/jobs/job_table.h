// SPDX-License-Identifier: Apache-2.0
// The service's jobs: each one created for a client, read, written,
// waited on and stopped through this table's API, which speaks the typed
// requests, results and errors of jobs/job_api.h and knows no protocol.
// What is owed to requests that wait goes to the front end (Answers).
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "confine/boundary.h"
#include "jobs/answers.h"
#include "jobs/job.h"
#include "jobs/job_api.h"
#include "jobs/options.h"
#include "jobs/owner_call.h"
#include "jobs/poller.h"
#include "jobs/request_budget.h"
#include "jobs/spool.h"
#include "jobs/stops.h"
#include "jobs/streams.h"

namespace pmon::serve {


class JobTable : private StopHost {
 public:
  JobTable(Backend& backend, const ServeOptions& opts, Poller& poller, RequestBudget& waiting, const SpawnBase& base);
  // The session every job is in (its envelope), or null.
  const confine::SessionCgroup* session() const noexcept { return backend_.session(); }
  void set_front(Front* front);

  // What the front ends ask, by concern.

  // --- jobs: started, found, listed (job_table.cpp) ---
  bool shutting_down() const { return shutting_down_; }
  // From now on a create is refused with `why` (the crash guard is gone).
  void refuse_new(std::string why) { refused_ = std::move(why); }
  std::expected<Job*, Error> create(const Asker& a, const CreateParams& p);
  // A create as a client asks it (CreateParams::name): the caller's running
  // job of that name (existing), else a new job. With `replace`, or while
  // the job of that name is stopping, nothing now: the new job is started
  // once the old one is verified gone, and answered then (Front::created).
  std::expected<std::optional<Started>, Error> start(const Asker& a, const CreateParams& p);
  // One of the caller's running jobs, by name and/or listening port: its
  // own connection's, or kept ones (the service's), of p.session_id if given.
  std::expected<Job*, Error> find_own(const Asker& a, const FindParams& p);
  std::expected<Job*, Error> get(const std::string& id);
  // The ids of the jobs (of `session` if given), in the order they were
  // created (ids are random); see JobList for what terminal/list shows.
  std::vector<std::string> job_ids(const std::optional<std::string>& session);
  // Stops every job of `session` created on `conn`; how many.
  size_t close_session(uint64_t conn, const std::string& session);

  // --- a job's output and stdin (job_table.cpp) ---
  // A job that is over with backpressure may have output left in its
  // pipes: it is read first (a reply with nothing new and an exit status
  // then means there is no more).
  void catch_up(Job& j);
  std::expected<StreamStart, Error> open_stream(uint64_t conn, Job& j, std::optional<uint64_t> since, bool follow);
  // (`bytes`: as the job wrote them, OutputParams::bytes)
  OutputRead read_output(Job& j, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since, uint64_t max,
                         bool bytes = false);
  Answers& answers() { return answers_; }
  // What the jobs' stdin not yet taken and the streams' pipes hold.
  size_t io_used() const { return io_budget_.used(); }
  std::optional<Error> write(Job& j, const std::string& data, bool eof);
  std::optional<Error> resize(Job& j, PtySize size);

  // --- the requests that wait (job_waits.cpp) ---
  // Each is let in with its share of the memory budget, or refused naming
  // the limit it would pass, and answered through the front end once due
  // (Front::answer).
  // New output of `j` past `since` (and `stderr_since`), or the job's
  // end, for up to p.wait_ms.
  std::optional<Error> wait_output(const Asker& a, Job& j, const OutputParams& p);
  // Its exit status: now when it is over, else once it is (or at timeout_ms).
  std::expected<std::optional<ExitStatus>, Error> wait_exit(const Asker& a, Job& j,
                                                               std::optional<uint64_t> timeout_ms);
  // A process of it listening on TCP `port` (or any), within timeout_ms
  // (default 30 s); at once when one already does, or the job is over.
  std::optional<Error> wait_port(const Asker& a, Job& j, std::optional<uint16_t> port,
                                    std::optional<uint64_t> timeout_ms);
  // The whole tree stopped and verified gone: now when it is over, else
  // once it is; `release` forgets the job too.
  std::expected<std::optional<Stopped>, Error> kill(const Asker& a, Job& j, bool release);
  // A job with stdin closed whose answer is due once it is over (then it
  // is forgotten), or after background_after_ms (it goes on as a job).
  std::expected<Job*, Error> run(const Asker& a, const CreateParams& p,
                                    std::optional<uint64_t> background_after_ms);
  // The request `id` on `conn` is not answered; a run it waited for is stopped.
  void cancel(uint64_t conn, const Json& id);

  // --- a job that is over (job_end.cpp) ---
  // Its section-4 report, once over: dumped (kept), or as a value.
  std::expected<const std::string*, Error> report_text(Job& j);
  Json report(const Job& j) const;

  // --- what the service loop asks (job_events.cpp, job_table.cpp) ---
  void on_event(uint64_t t, uint32_t events);
  void on_time();
  int64_t next_deadline();
  bool stops_queued() const { return stops_.queued(); }
  bool stop_slice_was_full() const { return stops_.slice_was_full(); }
  void run_stops() { stops_.run_slice(); }
  // Jobs just over have the report they will have: made once their exit
  // has been sent (while their client reads that), kept for terminal/report.
  void make_reports();
  // The records of the jobs that ended this round are written.
  void flush_records() { records_.flush(); }
  // The creates whose job of the same name is now gone are started.
  void start_replacements();
  // A connection's end ends what it owns (unless kept).
  void connection_closed(uint64_t conn);
  // Every job is stopped, verified gone and forgotten; nothing new starts.
  void shutdown();
  bool empty() const { return jobs_.empty(); }
  // Removes up to `max` spool files of jobs that were dropped (Spool::
  // remove_later); says whether any is still left.
  bool tidy_spools(size_t max) { return spool_dir_.tidy(max); }
  bool all_verified() const { return all_verified_; }

 private:
  // Finding jobs (job_table.cpp).
  Job* find(const std::string& id);
  const Job* peek(const std::string& id) const;  // find() for a look only
  Job* job_by_num(uint64_t num) override;
  Job* job_at(uint64_t num) const;  // job_by_num() without marking it (reindex)
  bool owned_by(const Job& j, const Asker& a, const std::optional<std::string>& session) const;
  Job* running_named(const Asker& a, const std::string& name, const std::optional<std::string>& session);
  std::optional<Error> output_fits(const CreateParams& p) const;
  // A request that waits (job_waits.cpp).
  std::optional<Error> admit(const Asker& a, Waiter& w);
  static Waiter waiter(Waiter::Kind kind, const Asker& a, std::optional<uint64_t> within_ms);
  // A job's events (job_events.cpp).
  // A job's readiness probe, given what is new (its output, its ports, the
  // time); once decided, the create that waits for it is answered, and a
  // probe that timed out with stopOnTimeout stops the job (which may then
  // be gone).
  void probe(Job& j);
  void feed_lines(Job& j, int64_t now);
  // A job's end, and what is kept of it (job_end.cpp).
  void note_owner_end(Job& j) override;
  void stop_owned(uint64_t num) override;
  void job_over(Job& j) override;
  // Stopped (when running) and forgotten once over.
  void dismiss(Job& j, Call::End why);
  void erase(const std::string& id);
  // pmon mcp: the oldest job that is over removed, to make room for one.
  void make_room();
  // pmon mcp: the spools of conn's jobs that are over kept within a bound.
  void bound_spools(uint64_t conn);

  Backend& backend_;
  const ServeOptions& opts_;
  Poller& poller_;
  RequestBudget& waiting_;
  const SpawnBase& spawn_base_;
  MemoryBudget output_budget_;  // the jobs' output buffers; declared before jobs_, which give it back
  MemoryBudget io_budget_;      // their stdin not yet written, and streams' pipes (the same)
  SpoolDir spool_dir_;          // the jobs' spool files; declared before jobs_, whose spools are in it
  JobRecords records_{spool_dir_};  // the running jobs' records, in spool_dir_
  Answers answers_;
  Streams streams_;
  Stops stops_;
  Front* front_ = nullptr;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  std::map<uint64_t, std::string> job_keys_;  // numeric id -> terminal id, in the order made
  std::unordered_map<uint64_t, Job*> by_num_;  // numeric id -> job: the events' and stops' lookup
  // What is due, so that a round of events looks at the jobs it touched
  // and those whose time has come, not at every job (job_events.cpp): each
  // job by when it is next due (its due_key), the jobs looked at in every
  // round (a request waits on them, or a readiness probe is undecided),
  // and the jobs found since the index was last brought up to date.
  std::set<std::pair<int64_t, uint64_t>> due_;
  std::set<uint64_t> each_round_;
  std::vector<uint64_t> touched_;
  void touch(Job& j) {
    if (!j.touched) j.touched = true, touched_.push_back(j.num);
  }
  void reindex();
  void unindex(Job& j);
  // When a job is next due (its timeout, its stop's next step, a wait's
  // deadline, its probe's), and whether it is to be looked at in every
  // round; as every round looked at them before the index.
  int64_t due_of(const Job& j, bool& each_round) const;
  bool due_now(const Job& j, int64_t now) const;
  void check_index(int64_t next) const;  // PMON_CHECK_INDEX builds
  uint64_t next_job_ = 1;
  PeerCalls peer_calls_;
  size_t owned_jobs_ = 0;  // jobs tied to another job (CallTie::owner_job)
  // Creates waiting for the running job of their name to be gone.
  struct Replacement {
    uint64_t old_num = 0;
    Asker asker;
    CreateParams params;
  };
  std::vector<Replacement> replacing_;
  std::vector<std::string> to_report_;  // jobs just over whose report is made after the replies go
  std::vector<char> scratch_;           // for a pipe whose buffer keeps nothing
  bool shutting_down_ = false;
  std::string refused_;  // why creates are refused; "" while they are not
  bool all_verified_ = true;
};

}  // namespace pmon::serve
