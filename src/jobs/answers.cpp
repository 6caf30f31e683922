// SPDX-License-Identifier: Apache-2.0
#include "jobs/answers.h"

#include <algorithm>

#include "jobs/options.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

// An output read waiting for new bytes (waitMs) is answered once this much
// is new, or this long after the first new bytes came.
constexpr uint64_t kCoalesceBytes = 1 << 20;
constexpr int64_t kCoalesceNs = 1'000'000;

}  // namespace

void Answers::settle(Job& j) {
  const int64_t now = sys::monotonic_ns();
  std::erase_if(j.waiters, [&](Waiter& w) {
    const bool due = now >= w.deadline;
    switch (w.kind) {
      case Waiter::Kind::exit:
        if (j.done) front_->answer(w, j, j.exit_status());
        else if (due) front_->answer(w, j, StillRunning{});
        else return false;
        return true;
      case Waiter::Kind::stopped:
        if (!j.done) return false;
        front_->answer(w, j, Stopped{j.call->result().cleanup_verified});
        return true;
      case Waiter::Kind::output:
        if (!j.done && !due && !j.has_new_output(w.since, w.stderr_since)) return false;
        if (!j.done && !due && j.new_bytes(w.since, w.stderr_since) < kCoalesceBytes) {
          // A job writing flat out is read in large replies, not one per
          // wake of its pipe: the first new bytes wait a moment for more.
          if (w.hold_until == 0) w.hold_until = now + kCoalesceNs;
          if (now < w.hold_until) return false;
        }
        if (front_->backed_up(w.conn)) return false;
        // (A notification's is never answered: nothing is read for it.)
        if (!w.id.is_discarded())
          front_->answer(w, j, w.bytes ? j.read_bytes(w.since, w.stderr_since, w.max_bytes)
                                       : read(j, w.since, w.stderr_since, w.max_bytes));
        return true;
      case Waiter::Kind::port: {
        if (!j.done && now < w.next_scan) return false;
        if (!j.done) {
          // One look per scan interval, however many wait on this job.
          const int64_t slot = now / kPortScanNs;
          if (j.ports_slot != slot) {
            j.ports_seen = j.listening(port_tables());
            j.ports_slot = slot;
          }
          for (const ListeningPort& l : j.ports_seen)
            if (!w.port || l.port == *w.port) {
              front_->answer(w, j, l);
              return true;
            }
        }
        Error e;
        e.job = j.id;
        e.port = w.port;
        if (j.done) {
          e.code = Errc::never_listened;
          front_->answer(w, j, std::move(e));
          return true;
        }
        if (due) {
          e.code = Errc::did_not_listen;
          e.ms = w.timeout_ms;
          front_->answer(w, j, std::move(e));
          return true;
        }
        w.next_scan = (now / kPortScanNs + 1) * kPortScanNs;
        return false;
      }
      case Waiter::Kind::ready:
        // A create's answer, once the job is ready or cannot be.
        if (!j.ready || !j.ready->decided()) return false;
      {
        Asker a;
        a.conn = w.conn;
        a.id = w.id;
        a.shape = w.shape;
        front_->created(a, Started{j.id, false, j.ready->outcome()});
      }
        return true;
      case Waiter::Kind::run:
        // The answer once over (then the job is forgotten), or what it
        // wrote so far once it goes on in the background.
        if (!j.done && !due) return false;
        front_->answer(w, j, RunDue{});
        if (j.done) j.forget = true;
        return true;
    }
    return false;
  });
}

int64_t Answers::next_due(const Job& j) const {
  int64_t next = kForever;
  for (const Waiter& w : j.waiters) {
    // (an output read for a connection backed up waits for its drain)
    if (w.kind == Waiter::Kind::output && front_->backed_up(w.conn)) continue;
    next = std::min(next, w.kind == Waiter::Kind::port ? std::min(w.deadline, w.next_scan)
                          : w.hold_until != 0          ? std::min(w.deadline, w.hold_until)
                                                       : w.deadline);
  }
  return next;
}

OutputRead Answers::read(Job& j, std::optional<uint64_t> since, std::optional<uint64_t> stderr_since,
                         uint64_t max) {
  OutputRead r = j.read(since, stderr_since, reply_bytes(max), std::move(text_spare_), reply_json_cap());
  // (Cheap for a job without a pipe or pty for its stdin: none is looked at.)
  if (!r.exit) r.waiting_for_input = j.waiting_for_input();
  return r;
}

void Answers::recycle(std::string text) {
  if (text.capacity() <= kSpareMax) text_spare_ = std::move(text);
}

size_t Answers::reply_bytes(uint64_t asked) const {
  return static_cast<size_t>(std::min<uint64_t>(asked, std::max<size_t>(queue_share_ / 8, 4096)));
}

size_t Answers::reply_json_cap() const {
  const size_t most = std::max<size_t>(queue_share_ / 8, kMinReply);
  return std::clamp(room_ ? room_() : most, kMinReply, most);
}

PortTables& Answers::port_tables() {
  const int64_t slot = sys::monotonic_ns() / kPortScanNs;
  if (!port_tables_ || port_tables_slot_ != slot) {
    port_tables_.emplace();
    port_tables_slot_ = slot;
  }
  return *port_tables_;
}

}  // namespace pmon::serve
