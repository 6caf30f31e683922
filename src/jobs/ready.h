// SPDX-License-Identifier: Apache-2.0
// A job's readiness probe (jobs/job_api.h ReadyProbe) as it runs in the
// service's one loop: lines of its output matched as they come, its
// listening ports looked up while it waits (as terminal/wait_for_port's
// are), and an HTTP/1.0 GET on a non-blocking socket to 127.0.0.1 or ::1,
// watched in the service's epoll. The job table feeds it and asks it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jobs/job_api.h"
#include "jobs/poller.h"
#include "jobs/ports.h"
#include "sys/fd.h"

namespace re2 {
class RE2;
}

namespace pmon::serve {

class ReadyCheck {
 public:
  // Started at `now` (monotonic ns); the socket is watched in `poller`
  // with tag `t`. The probe's pattern was checked when it was read.
  ReadyCheck(const ReadyProbe& probe, int64_t now, Poller& poller, uint64_t t);
  ~ReadyCheck();
  ReadyCheck(const ReadyCheck&) = delete;
  ReadyCheck& operator=(const ReadyCheck&) = delete;

  const ReadyProbe& probe() const { return probe_; }
  const std::optional<ReadyOutcome>& outcome() const { return outcome_; }
  bool decided() const { return outcome_.has_value(); }
  bool timed_out() const { return timed_out_; }

  // --- a line probe: the new text of stream 0 (stdout, or both) or 1 (stderr apart)
  bool wants_lines() const { return probe_.line.has_value(); }
  uint64_t scanned(int stream) const { return scanned_[stream]; }
  void feed(int stream, std::string_view text, uint64_t next, int64_t now);

  // --- a port or HTTP probe: its ports are looked up when this is true
  bool wants_ports(int64_t now) const;
  void saw_ports(const std::vector<ListeningPort>& ports, int64_t now);
  // The HTTP socket's event.
  void on_socket(uint32_t events, int64_t now);

  // The job is over first: `why`, e.g. "the job exited with status 1".
  void job_ended(const std::string& why, int64_t now);
  // Its deadline, and an HTTP attempt's.
  void on_time(int64_t now);
  // The next moment it has something to do (kForever: none).
  int64_t next_due() const;

 private:
  void pass(int64_t now);
  void fail(std::string why);
  void connect_to(const ListeningPort& l, int64_t now);
  void attempt_failed(std::string why, int64_t now);
  void close_socket();

  ReadyProbe probe_;
  std::unique_ptr<re2::RE2> re_;
  int64_t started_;
  int64_t deadline_;
  Poller& poller_;
  uint64_t tag_;
  std::optional<ReadyOutcome> outcome_;
  bool timed_out_ = false;
  std::string waiting_for_;  // what it waits for now, for the timeout's words
  // Line probe: where each stream has been read to, and its line so far.
  uint64_t scanned_[2] = {0, 0};
  std::string partial_[2];
  // Port / HTTP probe.
  int64_t next_scan_ = 0;
  bool port_seen_ = false;  // (port given) the tree listens on it
  Fd sock_;
  uint16_t sock_port_ = 0;
  bool sent_ = false;
  std::string answer_;
  int64_t attempt_deadline_ = kForever;
  int64_t next_try_ = 0;
};

// "1.5 s", "30 s", "0.25 s": a timeout in milliseconds as people say it.
std::string seconds_words(uint64_t ms);

}  // namespace pmon::serve
