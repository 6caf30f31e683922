// SPDX-License-Identifier: Apache-2.0
// The stops of the service's jobs. A stop asked for (a kill, a timeout, an
// owner's end, the main process's own exit) and each later step of it (its
// watch fired, its deadline passed) wait in one queue, in the order they
// came, and are taken at most kStopBatch items or kStopSliceNs a round of
// the loop: a session/close of 400 jobs is done in many short rounds, and
// other clients' requests are read and answered between them.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "jobs/job.h"

namespace pmon::serve {

// What the stops need of the table that holds the jobs.
class StopHost {
 public:
  virtual ~StopHost() = default;
  virtual Job* job_by_num(uint64_t num) = 0;
  // A job's main process ended, not by our hand: whether its owner call ended.
  virtual void note_owner_end(Job& job) = 0;
  // Job `num` is over or waits only for its tree: what was asked for from
  // inside it ends with it.
  virtual void stop_owned(uint64_t num) = 0;
  virtual void job_over(Job& job) = 0;
};

class Stops {
 public:
  explicit Stops(StopHost& host) : host_(host) {}

  // A stop is asked for: it begins in its turn. One asked for again
  // meanwhile is the same stop. `why`: who asked (a cancel, by its
  // asker), or the job's time is up (timeout, idle_timeout: the call's
  // own rule then decides, in that turn, whether and why it ends).
  void begin(Job& job, Call::End why);
  // The job's main process exited (its pidfd is readable): its end is
  // taken in its turn, as a stop.
  void main_exited(Job& job);
  // A stop's watch fired, or its deadline passed: its next step waits for
  // its turn, unwatched meanwhile.
  void step_due(Job& job);
  // A slice of the queued stop work, in the order it was asked for.
  void run_slice();

  bool queued() const { return !queue_.empty(); }
  // The last slice took its whole time: the loop then waits a moment for
  // events (the jobs just signalled exit meanwhile) before the next.
  bool slice_was_full() const { return slice_full_; }

 private:
  void start(Job& job);
  void time_up(Job& job);
  void unwatch_main(Job& job);
  // After begin_finish/resume_finish: the call is over, or its stop waits
  // on a fresh watch until a fresh deadline.
  void after_step(Job& job, bool over);

  // A job's num, and whether its stop is to begin (else: its next step).
  struct Work {
    uint64_t job = 0;
    bool begin = false;
  };
  StopHost& host_;
  std::deque<Work> queue_;
  bool slice_full_ = false;
};

}  // namespace pmon::serve
