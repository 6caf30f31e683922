// SPDX-License-Identifier: Apache-2.0
// One job of the service: a call (core/run.h Call) started in the
// background, its output read from its pipes (or pty) into bounded
// buffers, its stdin written as the client sends it, the requests waiting
// on it, and the fds of its stop's watch. What one job does with its own
// fds is here; the job table (jobs/job_table.h) holds them all.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/run.h"
#include "jobs/job_api.h"
#include "jobs/output_buffer.h"
#include "jobs/output_view.h"
#include "jobs/owner_call.h"
#include "jobs/poller.h"
#include "jobs/ready.h"
#include "jobs/request_budget.h"
#include "jobs/spool.h"

namespace pmon::serve {

// A JSON value: a request's id, a report, a spool's record.
using Json = nlohmann::json;

// Who asks: a connection, its socket (-1 for --stdio), whose peer a create
// looks at, the tally of its requests waiting for their answer, and the
// request's id, which an answer given later goes to (discarded: a
// notification's, never answered).
struct Asker {
  uint64_t conn = 0;
  int sock = -1;
  std::shared_ptr<RequestBudget::Tally> waiting;
  Json id;
  // The front end's own word on how a later answer is shaped: carried to
  // it untouched (Waiter::shape), never read here.
  uint8_t shape = 0;
};

// A reply that is owed later (wait_for_exit, a kill or release that waits
// for the tree to be verified gone, an output read that waits for bytes, a
// port, a run that waits for its end, a create that waits for the job to be
// ready), to the request `id` on `conn`.
struct Waiter {
  enum class Kind { exit, stopped, output, port, run, ready };
  Kind kind = Kind::exit;
  uint64_t conn = 0;
  Json id;  // discarded: a notification's, never answered
  int64_t deadline = kForever;
  std::optional<uint64_t> since;  // Kind::output
  std::optional<uint64_t> stderr_since;
  size_t max_bytes = 0;           // Kind::output
  bool bytes = false;             // Kind::output: OutputParams::bytes
  int64_t hold_until = 0;         // Kind::output: a few new bytes wait for more until then
  std::optional<uint16_t> port;   // Kind::port: this one, or any
  int64_t next_scan = 0;          // Kind::port
  uint64_t timeout_ms = 0;        // Kind::port, for the error
  RequestBudget::Ticket ticket;   // its share of the budget, given back with it
  uint8_t shape = 0;              // Asker::shape
};

// How far a job's stream has been read, by the job and by its readers.
struct Flow {
  uint64_t delivered = 0;  // bytes of the buffer some output read has returned
  bool paused = false;     // the pipe is full for now: not watched
  bool grown = false;      // its pipe was made larger (a job that writes a lot)
};

// The job's ends of its stdio, and the child's: two pipes (three with
// stderr apart), or a pty whose master is both of ours and whose slave is
// all of the child's.
struct JobStdio {
  Fd out_r, out_w, in_r, in_w, err_r, err_w;
  int null_in = -1;  // stdin "null": the service's one /dev/null, not the job's to close
};
std::expected<JobStdio, Error> open_stdio(const CreateParams& p);

// What every job's child gets from the service: the signal dispositions it
// resets before exec, and the open-files limit the service started with.
struct SpawnBase {
  sigset_t changed_signals{};
  rlimit nofile{};
  bool nofile_raised = false;
  std::vector<std::string> wrapper;  // ServeOptions::job_wrapper
};
RunOptions run_options(const CreateParams& p, const JobStdio& io, const SpawnBase& base, const StopPlan& stop);
// Under a wrapper (SpawnBase::wrapper) the command is started by the
// wrapper, whose failure to find it would only be an exit status: this
// looks first, as execvp would (PATH from the job's environment, the cwd
// for a name with a slash), and says what the spawn would have said.
std::optional<Error> check_runnable(const CreateParams& p);

// A job that cannot start for want of fds (its pipes, pty, pidfd, leaf):
// said as such, with what to do. Any other errno: `what` and its words.
Error fd_error(const std::string& what, int err);

// A job in parts, one a concern; each holds what only it touches.

// What the job is and whose: what it runs, who asked, who owns it.
struct JobIdentity {
  uint64_t num = 0;  // epoll tags
  std::string id;    // random, unguessable
  std::string name;
  bool tell_end = true;  // CreateParams::tell_end
  std::vector<std::string> command;
  uint64_t owner = 0;    // the connection whose end stops it; 0: the service's (keep)
  uint64_t creator = 0;  // is told of its end
  CallTie tie;           // the pmon call it was asked for from inside
  std::optional<std::string> session;
  bool keep = false;
  bool pty = false;  // out and in are the pty's master (two fds of it)
  bool own_pmon = false;  // its command runs under a pmon of its own (ServeOptions::job_wrapper)
  std::string inner_report;  // where that pmon writes its report (in the spool directory), or ""
  std::chrono::system_clock::time_point started;
};

// Its stdin: the fd, and what the client sent that the pipe has not taken.
struct JobStdin {
  JobStdin() = default;
  ~JobStdin() { drop_stdin(); }
  JobStdin(const JobStdin&) = delete;
  JobStdin& operator=(const JobStdin&) = delete;

  const char* stdin_kind = "pipe";  // "pipe", "null" (/dev/null) or "pty", for the report
  Fd in;
  std::string in_pending;
  bool in_eof = false;  // close stdin once in_pending is written
  // in_pending's storage, counted in this budget (JobTable's for stdin and
  // streams) until written or dropped.
  MemoryBudget* in_budget = nullptr;
  size_t in_charged = 0;
  bool in_watched = false;

  // How much of `data` its stdin takes now, without waiting (0 on an
  // error: write_stdin meets it again).
  size_t write_now(std::string_view data);
  // Room in in_pending for `need` bytes (at most `most`), counted in
  // `budget` before it is made; false when the budget has not enough left.
  bool hold_stdin(size_t need, size_t most, MemoryBudget& budget);
  // in_pending dropped (the job's stdin is gone), its storage given back.
  void drop_stdin();
};

// Its output: the pipes (or the pty) it writes to, read into bounded
// buffers and spooled to disk, and how far its readers have got.
struct JobOutput {
  JobOutput(size_t kept, MemoryBudget* budget) : buffer(kept, budget) {}

  Fd out;  // stdout and stderr of the job, one pipe (stdout alone with separateStderr)
  OutputBuffer buffer;
  Fd err;  // separateStderr: stderr, kept in err_buffer
  std::unique_ptr<OutputBuffer> err_buffer;
  // The whole output on disk (jobs/spool.h), none with a spool limit of
  // 0; stderr's own with separateStderr.
  std::unique_ptr<Spool> spool, err_spool;
  bool recorded = false;  // its record is in the service's JobRecords (write_job_record)
  std::string spool_error;  // why it has none, or why it stopped short
  // outputBackpressure: a pipe is not read while its buffer holds `limit`
  // bytes no read has returned yet (the job's writes then block).
  bool backpressure = false;
  size_t limit = 0;
  Flow out_flow, err_flow;

  bool has_new_output(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since) const;
  uint64_t new_bytes(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since) const;
};

// Its stop: the watch of its main process and of the stop's steps, and
// its place in the stop queue.
struct JobStop {
  // Where the job table's index of what is due has it (JobTable::reindex):
  // its key there, whether it is looked at in every round, whether it is
  // to be looked at again.
  int64_t due_key = kForever;
  bool each_round = false;
  bool touched = false;
  bool main_watched = false;
  // The stop's watch: its one fd (a leaf's cgroup.events, a pidfd) in our
  // epoll as it is, or several in an epoll of their own inside ours.
  int stop_fd = -1;
  Fd stop_ep;
  int64_t rescan_at = kForever;
  // Stop work waiting in the stop queue (jobs/stops.h) for its turn: the
  // stop is to begin (why: who asked, or its time is up), or its next step is due (its
  // watch fired, or its deadline passed). A stop asked for while the end
  // of a main process that exited on its own waits is asked again after.
  bool stop_queued = false;
  Call::End queued_why = Call::End::cancel;
  std::optional<Call::End> stop_after;
  bool step_queued = false;
};

// Who waits on it: the requests owed an answer, the streams that follow
// its output, the ports they were last answered from, its readiness probe.
struct JobWaits {
  std::vector<Waiter> waiters;
  std::vector<uint64_t> streams;  // ids in the stream table
  // The ports its waiters were last answered from, and the scan interval
  // (now / kPortScanNs) they were looked up in.
  std::vector<ListeningPort> ports_seen;
  int64_t ports_slot = -1;
  // Its readiness probe, when it was started with one (kept once decided).
  std::unique_ptr<ReadyCheck> ready;
};

// Its end: when, why pmon stopped it, its report, and what is left to do.
struct JobEnd {
  std::chrono::system_clock::time_point ended;  // once done
  std::optional<CallEnd> ended_by;  // why pmon stopped it: kill, release, its timeout, ...
  bool forget = false;   // dropped once over (release, its owner's end)
  std::string report;    // its terminal/report result, dumped, once made
  bool done = false;
  // Its end was told to its client (a message that it ended, or a result
  // that says it is over): at the job limit it goes first (make_room).
  bool end_told = false;
};

struct Job : JobIdentity, JobStdin, JobOutput, JobStop, JobWaits, JobEnd {
  Job(size_t limit, MemoryBudget* budget, Poller& poller) : JobOutput(limit, budget), poller(poller) {}
  ~Job() {
    if (!inner_report.empty()) (void)::unlink(inner_report.c_str());
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  std::unique_ptr<Call> call;
  Poller& poller;

  // Its stop has begun, or waits for its turn.
  bool stopping() const { return stop_queued || call->finishing(); }
  const char* status() const {
    if (done) return "exited";
    return stopping() ? "stopping" : "running";
  }
  ExitStatus exit_status() const { return {call->result().exit_code, call->result().signal}; }
  // Why it ended (or, while it stops, who stopped it), as its report says.
  EndFacts end_facts() const;

  // Its fds in the poller, once started.
  void watch_started();
  // Reads its stdout (or stderr) pipe into its buffer: what the pipe has,
  // or with backpressure what fits; `to_end`: read on until EOF or empty.
  void pull(bool err, bool to_end, std::vector<char>& scratch);
  // The job is over, every writer gone: what is left in its pipes is read.
  void drain(std::vector<char>& scratch);
  // Writes what waits for its stdin, as much as the pipe takes.
  void write_stdin();
  // A read returned the bytes up to `next`: with backpressure, a paused
  // pipe is read again once there is room.
  void note_delivered(uint64_t out_next, std::optional<uint64_t> err_next);
  // Each stream's text from `since`, at most `max` bytes of each, and
  // together at most `json_cap` bytes as JSON strings (a control byte is
  // six there), made in `storage`; counts as delivered.
  OutputRead read(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since, size_t max,
                  std::string storage, size_t json_cap = SIZE_MAX);
  // The same as the job wrote them (any bytes, not text): each stream's
  // kept bytes from `since`, at most `max` of each; counts as delivered.
  OutputRead read_bytes(std::optional<uint64_t> since, std::optional<uint64_t> stderr_since, size_t max);
  // The TCP ports its processes listen on, in `tables`.
  std::vector<ListeningPort> listening(PortTables& tables);
  // A process of it sleeps reading the stdin the service holds the other
  // end of (its pipe, or its pty), which nobody has written: it waits for
  // input, not for time.
  bool waiting_for_input();
  bool waiting_for_input(const std::vector<pid_t>& pids);  // of these (running_pids)
  std::vector<pid_t> running_pids();
  // What terminal/list says of it: its processes `pids` (running_pids), and
  // the ports they listen on (looked up by the caller: see JobList).
  JobInfo info(const std::vector<pid_t>& pids, std::vector<ListeningPort> ports);

  // The stop's watch: set up after a step that did not end it, dropped
  // before the next (which may close the fd it was watching: a leaf given
  // back closes its files, and the number may be reused at once).
  void watch_stop();
  void drop_stop_watch();
};

// Its spool files in `dir` (ID.out, and ID.err for stderr apart), `limit`
// bytes each before rotation; none with 0. A spool that cannot be made
// leaves the job without one (spool_error says why): the job still runs.
void open_spools(Job& j, uint64_t limit, SpoolDir& dir);
// spoolPath (and stderrSpoolPath, spoolError) into a job's JSON.
void add_spool_paths(Json& o, const Job& j);
// The path of a job's spool file (stderr's with `err`), "" while it has
// none: no spool, or nothing written yet (the file comes with the first byte).
const std::string& spool_path(const Job& j, bool err = false);
// The job's record beside its spool (id, name, command, cgroup leaf), once
// it has started; removed as it ends (JobTable::job_over).
void write_job_record(Job& j, JobRecords& records);

// The view of a job's output: its spool when it has one, else its buffer.
std::expected<ViewResult, Error> view_of(const Job& j, const ViewParams& v, size_t max);
// Where a job's view reads (its spool, else its buffer), as it is now.
ByteSource view_source(const Job& j);

// How a job that is over ended, in words ("the job exited with status 1"):
// why it never became ready.
std::string ended_words(const Job& j);

}  // namespace pmon::serve
