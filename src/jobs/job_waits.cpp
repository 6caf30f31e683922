// SPDX-License-Identifier: Apache-2.0
// The job table's requests that wait: each let in with its share of the
// memory budget (or refused naming the limit), kept on its job as a
// Waiter, and answered through the front end once due (jobs/answers.h);
// and the stop that a kill or a cancelled run asks for.
#include <string>
#include <utility>
#include <vector>

#include "jobs/job_table.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

// How long a wait for a port waits unless told.
constexpr uint64_t kPortWaitMs = 30'000;

int64_t ms_from_now(uint64_t ms) { return sys::monotonic_ns() + static_cast<int64_t>(ms) * 1'000'000; }

}  // namespace

// Its share: about its bookkeeping, twice (for the vector it is kept in),
// and its id.
std::optional<Error> JobTable::admit(const Asker& a, Waiter& w) {
  const size_t bytes = 2 * sizeof(Waiter) + (w.id.is_string() ? w.id.get_ref<const std::string&>().size() : 0);
  RequestBudget::Over over{};
  w.ticket = waiting_.take(a.waiting, bytes, &over);
  if (w.ticket) return std::nullopt;
  if (over == RequestBudget::Over::per_connection)
    return Error::line("too many requests waiting for their answer on this connection: at most " +
                          std::to_string(waiting_.per_connection()) +
                          " at once; wait for some to be answered, or use another connection");
  return Error::line("the service's memory budget for requests waiting for their answer is used up (" +
                        std::to_string(waiting_.limit()) + " bytes, a sixteenth of --memory-budget " +
                        std::to_string(opts_.memory_budget >> 20) +
                        "M); wait for some to be answered, or start the service with a larger --memory-budget");
}

Waiter JobTable::waiter(Waiter::Kind kind, const Asker& a, std::optional<uint64_t> within_ms) {
  Waiter w;
  w.kind = kind;
  w.conn = a.conn;
  w.id = a.id;
  w.shape = a.shape;
  if (within_ms) w.deadline = ms_from_now(*within_ms);
  return w;
}

std::optional<Error> JobTable::wait_output(const Asker& a, Job& j, const OutputParams& p) {
  Waiter w = waiter(Waiter::Kind::output, a, p.wait_ms);
  w.since = p.since;
  w.stderr_since = p.stderr_since;
  w.max_bytes = p.max_bytes;
  w.bytes = p.bytes;
  if (auto e = admit(a, w)) return e;
  j.waiters.push_back(std::move(w));
  return std::nullopt;
}

std::expected<std::optional<ExitStatus>, Error> JobTable::wait_exit(const Asker& a, Job& j,
                                                                       std::optional<uint64_t> timeout_ms) {
  if (j.done) return j.exit_status();
  Waiter w = waiter(Waiter::Kind::exit, a, timeout_ms);
  if (auto e = admit(a, w)) return std::unexpected(*e);
  j.waiters.push_back(std::move(w));
  return std::nullopt;
}

std::optional<Error> JobTable::wait_port(const Asker& a, Job& j, std::optional<uint16_t> port,
                                            std::optional<uint64_t> timeout_ms) {
  Waiter w = waiter(Waiter::Kind::port, a, timeout_ms.value_or(kPortWaitMs));
  w.port = port;
  w.timeout_ms = timeout_ms.value_or(kPortWaitMs);
  if (auto e = admit(a, w)) return e;
  j.waiters.push_back(std::move(w));
  answers_.settle(j);
  return std::nullopt;
}

std::expected<Job*, Error> JobTable::run(const Asker& a, const CreateParams& p,
                                            std::optional<uint64_t> background_after_ms) {
  Waiter w = waiter(Waiter::Kind::run, a, std::nullopt);
  // Over the limits nothing is started.
  if (auto e = admit(a, w)) return std::unexpected(*e);
  auto j = create(a, p);
  if (!j) return j;
  // Its stdin is closed: a command that reads it gets EOF, not a hang.
  (*j)->in_eof = true;
  (*j)->write_stdin();
  if (background_after_ms) w.deadline = ms_from_now(*background_after_ms);
  (*j)->waiters.push_back(std::move(w));
  return j;
}

std::expected<std::optional<Stopped>, Error> JobTable::kill(const Asker& a, Job& j, bool release) {
  if (j.done) {
    const bool verified = j.call->result().cleanup_verified;
    if (release) j.forget = true, erase(j.id);
    return Stopped{verified};
  }
  Waiter w = waiter(Waiter::Kind::stopped, a, std::nullopt);
  // Refused over the limits before anything is done: the job runs on.
  if (auto e = admit(a, w)) return std::unexpected(*e);
  if (release) j.forget = true;
  j.waiters.push_back(std::move(w));
  const uint64_t num = j.num;
  stops_.begin(j, release                             ? Call::End::release
                 : j.tie.asked_by_call_pmon(a.sock) ? Call::End::owner_ended
                                                    : Call::End::kill);
  if (Job* still = job_by_num(num); still && still->done) answers_.settle(*still);
  return std::nullopt;
}

void JobTable::cancel(uint64_t conn, const Json& id) {
  std::vector<std::string> stop;
  for (auto& [tid, j] : jobs_) {
    const size_t n = std::erase_if(j->waiters, [&](const Waiter& w) {
      if (w.conn != conn || w.id != id) return false;
      if (w.kind == Waiter::Kind::run) stop.push_back(tid);
      return true;
    });
    if (n > 0) touch(*j);
  }
  for (const std::string& tid : stop)
    if (Job* j = find(tid)) dismiss(*j, Call::End::request_cancelled);
}

}  // namespace pmon::serve
