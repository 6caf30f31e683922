// SPDX-License-Identifier: Apache-2.0
// What is owed to the requests that wait on a job (jobs/job.h Waiter):
// settled as the job changes (new output, its end, a port, a deadline),
// each handed as a typed result to the front end that took the request,
// which words and sends it. Also the output reads that answer them.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "jobs/job.h"
#include "jobs/job_api.h"
#include "jobs/ports.h"

namespace pmon::serve {

// A wait's time is up while the job runs.
struct StillRunning {};
// A run's answer is due: the job is over, or it goes on in the background.
struct RunDue {};
using Due = std::variant<ExitStatus, StillRunning, Stopped, OutputRead, ListeningPort, Error, RunDue>;

// The front end of the service (JSON-RPC or MCP): it took the requests
// that wait, and is told what is due to them and of every job's end.
class Front {
 public:
  virtual ~Front() = default;
  // A connection backed up with replies gets an output read once they drain.
  virtual bool backed_up(uint64_t conn) const = 0;
  virtual void answer(const Waiter& w, Job& job, Due due) = 0;
  // The job is over (its waiters are settled next).
  virtual void job_ended(Job& job) = 0;
  // A create that waited for the job of its name to be gone: its answer.
  virtual void created(const Asker& a, const std::expected<Started, Error>& r) = 0;
  // The job is removed from the table: what the front end kept of it goes.
  virtual void forgotten(const Job&) {}
};

// A listening socket can only be seen in the kernel's tables, with no event
// when one appears: while (and only while) somebody waits for a port, the
// job's processes are looked at this often, once for all its waiters, and
// every job at the same moments (the times that are whole multiples of it),
// so one read of the tables serves all of them.
inline constexpr int64_t kPortScanNs = 50'000'000;

class Answers {
 public:
  // `queue_share`: the connections' share of the memory budget.
  explicit Answers(size_t queue_share) : queue_share_(queue_share) {}
  void set_front(Front* front) { front_ = front; }

  // Answers what is owed: exits once over, output once there is some, and
  // any whose deadline has passed.
  void settle(Job& job);
  // The earliest moment a waiter of `job` is due (kForever: none).
  int64_t next_due(const Job& job) const;

  // An output read of at most `max` bytes a stream (and no more than
  // reply_bytes allows), its text made in storage kept from the last.
  OutputRead read(Job& job, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since, uint64_t max);
  // A read's text, once written out: its storage serves the next read.
  void recycle(std::string text);
  // The bytes of each stream one output reply carries: what was asked
  // (maxBytes), and no more than an eighth of the connections' share of
  // the memory budget (a byte can be six in the reply, \u00XX).
  size_t reply_bytes(uint64_t asked) const;
  // What one output reply's text may take as JSON: what the budget for
  // replies not yet sent has left (`room`), at least kMinReply, at most an
  // eighth of the connections' share.
  size_t reply_json_cap() const;
  void set_room(std::function<size_t()> room) { room_ = std::move(room); }
  static constexpr size_t kMinReply = size_t{64} << 10;

  // The kernel's socket tables as read in this scan interval (the number
  // now / kPortScanNs): every job looked at in it (the scan of all that
  // have waiters, a list) shares one read of them. A socket that listens
  // since is seen in the next interval.
  PortTables& port_tables();

 private:
  Front* front_ = nullptr;
  size_t queue_share_;
  std::function<size_t()> room_;
  std::string text_spare_;
  std::optional<PortTables> port_tables_;
  int64_t port_tables_slot_ = -1;
};

}  // namespace pmon::serve
