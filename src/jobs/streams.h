// SPDX-License-Identifier: Apache-2.0
// terminal/output with `stream`: a job's bytes from `at` on, written as the
// job wrote them into a pipe whose read end went to the client. It ends
// (the pipe closed) when the job's output has ended and all of it is
// written, at `until` (without follow), when bytes it had still to write
// were dropped from the buffer (the reader then asks terminal/output,
// which says so), when its reader closes its end, and with the job or the
// connection that asked for it.
#pragma once

#include <cstdint>
#include <expected>
#include <limits>
#include <map>
#include <optional>

#include "jobs/job.h"
#include "jobs/job_api.h"
#include "jobs/output_buffer.h"
#include "jobs/poller.h"

namespace pmon::serve {

class Streams {
 public:
  // Each stream's pipe is counted in `budget` (its size: what a reader that
  // does not read makes the kernel hold), and what is left unread in it
  // when the stream ends, until its connection closes.
  Streams(Poller& poller, MemoryBudget& budget) : poller_(poller), budget_(budget) {}

  // A stream of `job` for connection `conn`, from `since` (or the oldest
  // byte kept); with `follow` until the job's output ends.
  std::expected<StreamStart, Error> open(uint64_t conn, Job& job, std::optional<uint64_t> since, bool follow);
  // Writes what the job's streams have to write; ends those that are over.
  void pump(Job& job);
  // The pipe of stream `sid` has room again, or its reader went.
  void on_event(uint64_t sid, uint32_t events);
  void end(uint64_t sid);
  void end_all_of(const Job& job);
  // The job a stream reads, or null.
  Job* job_of(uint64_t sid) const;
  void end_all_of_conn(uint64_t conn);

 private:
  struct Stream {
    uint64_t id = 0;
    uint64_t conn = 0;
    Job* job = nullptr;  // its streams end before it is erased
    Fd pipe;             // our end, nonblocking
    uint64_t at = 0;
    uint64_t until = std::numeric_limits<uint64_t>::max();
    bool watched = false;  // for room in the pipe
    size_t charged = 0;    // its pipe's size, in budget_
  };
  // Writes what the stream has to write; false once it is over.
  bool pump(Stream& s);

  Poller& poller_;
  MemoryBudget& budget_;
  std::map<uint64_t, Stream> streams_;
  std::map<uint64_t, size_t> per_conn_;
  std::map<uint64_t, size_t> left_unread_;  // a connection's ended streams' bytes still in their pipes
  uint64_t next_ = 1;
};

}  // namespace pmon::serve
