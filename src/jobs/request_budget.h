// SPDX-License-Identifier: Apache-2.0
// What the requests of the service's clients make it hold, counted against
// the memory budget: requests accepted and not yet answered (a wait for an
// exit, a port, output), per connection and in all. A request is let in
// only with a ticket, which gives its share back when it is dropped,
// whichever way that happens (answered, cancelled, its job or connection
// gone): the count can never drift, and each step is O(1).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>

namespace pmon::serve {

class RequestBudget {
 public:
  // What one connection has waiting; shared with its tickets, which may
  // outlive the connection's own record of it.
  struct Tally {
    size_t count = 0;
  };

  class Ticket {
   public:
    Ticket() noexcept = default;
    Ticket(Ticket&& o) noexcept { *this = std::move(o); }
    Ticket& operator=(Ticket&& o) noexcept {
      if (this != &o) {
        release();
        budget_ = o.budget_, tally_ = std::move(o.tally_), bytes_ = o.bytes_;
        o.budget_ = nullptr, o.bytes_ = 0;
      }
      return *this;
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }
    explicit operator bool() const noexcept { return budget_ != nullptr; }

   private:
    friend class RequestBudget;
    void release() noexcept;
    RequestBudget* budget_ = nullptr;
    std::shared_ptr<Tally> tally_;
    size_t bytes_ = 0;
  };

  enum class Over { per_connection, bytes };

  // `bytes`: what all the waiting requests may hold together;
  // `per_connection`: how many one connection may have waiting.
  RequestBudget(size_t bytes, size_t per_connection) noexcept : limit_(bytes), per_conn_(per_connection) {}

  // A ticket for one more request of about `bytes` on the connection whose
  // tally this is, or which limit it would pass.
  Ticket take(const std::shared_ptr<Tally>& conn, size_t bytes, Over* over) noexcept;

  size_t used() const noexcept { return used_; }
  size_t count() const noexcept { return count_; }
  size_t limit() const noexcept { return limit_; }
  size_t per_connection() const noexcept { return per_conn_; }

 private:
  size_t limit_;
  size_t per_conn_;
  size_t used_ = 0;
  size_t count_ = 0;
};

inline RequestBudget::Ticket RequestBudget::take(const std::shared_ptr<Tally>& conn, size_t bytes,
                                                 Over* over) noexcept {
  Ticket t;
  if (conn->count >= per_conn_) {
    if (over) *over = Over::per_connection;
    return t;
  }
  if (bytes > limit_ - std::min(limit_, used_)) {
    if (over) *over = Over::bytes;
    return t;
  }
  ++conn->count, ++count_;
  used_ += bytes;
  t.budget_ = this, t.tally_ = conn, t.bytes_ = bytes;
  return t;
}

inline void RequestBudget::Ticket::release() noexcept {
  if (!budget_) return;
  --tally_->count, --budget_->count_;
  budget_->used_ -= bytes_;
  budget_ = nullptr, tally_.reset(), bytes_ = 0;
}

}  // namespace pmon::serve
