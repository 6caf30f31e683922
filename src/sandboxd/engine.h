// SPDX-License-Identifier: Apache-2.0
// The job engine of pmon serve as sandboxd's gRPC handlers see it. The
// handlers run on gRPC's threads; the job table is the service's, on its one
// thread. A handler posts its work there and blocks for the result; a wait
// (for output, an exit, a stop verified) is answered there through Front
// and handed back to the handler that waits for it, or, for a call that no
// thread waits for (Execute), to its callback there.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_table.h"
#include "jobs/threaded_front.h"
#include "sys/fd.h"

namespace pmon::sandboxd {

struct Process;

// What a handler waits for: filled once, on the service's thread (or, once
// the service is over, by Engine::stop()).
struct Slot {
  // An output read for this process: what it returns counts as given to
  // its handler from the moment it is read (see Process).
  std::shared_ptr<Process> process;
  // A call answered from the service's thread (Execute) is handed its due
  // here instead of a thread waiting on `cv`. It runs inside the job table's
  // own work: it must not call the table (it posts what more it does).
  std::function<void(serve::Due&)> then;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<serve::Due> due;
  void fill(serve::Due d) {
    if (then) return then(d);
    std::lock_guard lock(mu);
    due = std::move(d);
    cv.notify_all();
  }
};

// A process a client started (Start): the job behind its process id, and
// what is left of it once the job is over (its last bytes and its exit),
// kept here so that a handler still gets them when the job is gone.
struct Process {
  int32_t id = 0;
  std::string job;    // the job table's id
  uint64_t conn = 0;  // the job's owner: its end stops what is left
  // Written on the service's thread, read by the Start handler.
  std::mutex mu;
  uint64_t out_next = 0, err_next = 0;  // what the handler has been given
  std::optional<serve::OutputRead> tail;  // once over: the rest, and the exit
  uint64_t tail_out_from = 0, tail_err_from = 0;  // where the tail's bytes start
  // SendSignal SIGKILL was asked for it (ProcessOptions::own_pmon).
  std::atomic<bool> killed_at_once{false};
};

class Engine final : public serve::ThreadedFront {
 public:
  Engine();

  // --- from gRPC's threads ---
  // Runs `work` on the service's thread and returns once it has run; false
  // when the service is over (nothing runs any more).
  bool run(const std::function<void(serve::JobTable&)>& work);
  // The same without waiting for it to run. `dropped`, if given, is called
  // instead when the work was taken but never runs (the service ended first);
  // when post returns false, neither is called.
  bool post(std::function<void(serve::JobTable&)> work, std::function<void()> dropped = {});
  // A fresh connection id (a job's owner) and a fresh wait id.
  uint64_t new_conn();
  uint64_t new_wait_id();
  bool closing_down() const;
  // Called on the service's thread when it starts to stop.
  void on_closing(std::function<void()> f) { on_closing_ = std::move(f); }

  // --- on the service's thread (inside run()'s work) ---
  // Answers for wait `id` go to `slot`.
  void expect(uint64_t id, std::shared_ptr<Slot> slot);
  void forget_wait(uint64_t id);
  serve::Asker asker(uint64_t conn, std::optional<uint64_t> wait_id) const;
  void add_process(std::shared_ptr<Process> p);
  std::shared_ptr<Process> process(int32_t id) const;
  std::vector<std::shared_ptr<Process>> processes() const;
  void remove_process(int32_t id);
  int32_t next_process_id() { return next_process_++; }

  // --- the service's (serve::ThreadedFront) ---
  int wake_fd() const override { return wake_.get(); }
  void attach(serve::JobTable& jobs) override { jobs_ = &jobs; }
  void run_posted() override;
  void closing() override;
  void answer(const serve::Waiter& w, serve::Job& job, serve::Due due) override;
  void job_ended(serve::Job& job) override;
  void created(const serve::Asker&, const std::expected<serve::Started, Error>&) override {}

  // Once serve() has returned: nothing more runs; handlers waiting are
  // told the service is over.
  void stop();

 private:
  Fd wake_;
  mutable std::mutex mu_;  // posted_, over_, closing_, next ids
  struct Posted {
    std::function<void()> work;
    std::function<void()> dropped;
  };
  std::vector<Posted> posted_;
  bool over_ = false;
  bool closing_ = false;
  std::function<void()> on_closing_;
  uint64_t next_conn_ = uint64_t{1} << 40;  // (apart from any connection's id)
  uint64_t next_wait_ = 1;
  // The service's thread's own.
  serve::JobTable* jobs_ = nullptr;
  std::map<uint64_t, std::shared_ptr<Slot>> waits_;
  std::map<int32_t, std::shared_ptr<Process>> processes_;
  std::map<std::string, int32_t> by_job_;
  int32_t next_process_ = 1;
  std::shared_ptr<serve::RequestBudget::Tally> tally_ = std::make_shared<serve::RequestBudget::Tally>();
};

}  // namespace pmon::sandboxd
