// SPDX-License-Identifier: Apache-2.0
// The loop of a job service (pmon serve, pmon mcp, pmon sandboxd): one
// thread, one epoll. Its own are signals, the parent's death, the timer,
// the crash guard and the tidying of what ended jobs left; the job table's
// events go to the table; requests come from one front end, either with fds
// of its own on the same poller (LoopFront: the JSON-RPC and MCP
// connections) or from threads that post work (ServeOptions::threaded:
// pmon sandboxd's gRPC and REST).
#pragma once

#include <cstdint>

#include "confine/boundary.h"
#include "jobs/job.h"
#include "jobs/job_table.h"
#include "jobs/options.h"
#include "jobs/poller.h"
#include "sys/fd.h"

namespace pmon::serve {

// A front end with fds on the loop's poller.
class LoopFront {
 public:
  virtual ~LoopFront() = default;
  // At the start, before anything else: its listening socket, if any.
  virtual bool listen() = 0;
  // Last of the start: its input (--stdio), if any.
  virtual bool open_input() = 0;
  // One of its events: a tag that is neither the loop's nor the jobs'.
  virtual void on_event(uint64_t tag, uint32_t events) = 0;
  // How long the loop may wait for events while it has work of its own: 0,
  // or `pause_ms` after a slice that took its whole time; -1 when it has none.
  virtual int wait_ms(int pause_ms) const = 0;
  // Its work after each batch of events: before the jobs' work and after.
  virtual void before_jobs() = 0;
  virtual void after_jobs() = 0;
  // The end of each turn (connections that are done go now).
  virtual void end_turn() = 0;
  // The service is stopping: nothing new is taken.
  virtual void stop_accepting() = 0;
  // The loop is over.
  virtual void last_words() = 0;
};

class ServiceLoop {
 public:
  // `front`: null when the requests come from threads (opts.threaded).
  // `base` is filled in here (the dispositions the jobs reset, the limits
  // they get back) before the first job starts.
  ServiceLoop(Backend& backend, const ServeOptions& opts, Poller& poller, SpawnBase& base, JobTable& jobs,
              LoopFront* front)
      : backend_(backend), opts_(opts), poller_(poller), base_(base), jobs_(jobs), front_(front) {}

  // Until SIGTERM/SIGINT/SIGHUP, the parent's death (die_with_parent) or
  // begin_shutdown(), and then until every job is over: 0 when every one
  // was verified gone, 125 otherwise (or when the loop could not start).
  // Blocks SIGTERM, SIGINT and SIGHUP (read from a signalfd), ignores SIGPIPE.
  int run();
  // Every job is stopped, nothing new is started.
  void begin_shutdown();

 private:
  bool setup();
  void on_event(uint64_t t, uint32_t events);
  void on_signals();
  void watch_guard();
  void on_guard_end();
  void arm_timer();

  Backend& backend_;
  const ServeOptions& opts_;
  Poller& poller_;
  SpawnBase& base_;
  JobTable& jobs_;
  LoopFront* front_;
  Fd sig_, timer_, parent_;
  int guard_ = -1;  // the backend's crash guard's pidfd (the backend owns it)
  int64_t armed_ = kForever;  // what the timer was last set to
};

// A service whose requests come from threads (opts.threaded): its job
// table, with the front end as the one that answers, and its loop.
int serve_threaded(Backend& backend, const ServeOptions& opts);

}  // namespace pmon::serve
