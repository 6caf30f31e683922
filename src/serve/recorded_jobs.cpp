// SPDX-License-Identifier: Apache-2.0
#include "serve/recorded_jobs.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <string>

#include "jobs/socket.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

using Json = nlohmann::json;

// One blocking JSON-RPC exchange with a service, bounded in time.
class Exchange {
 public:
  explicit Exchange(Fd fd) : fd_(std::move(fd)) {}

  bool send(const Json& msg) {
    std::string line = msg.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    size_t off = 0;
    while (off < line.size()) {
      ssize_t n = ::send(fd_.get(), line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  // The reply to request `id`, notifications passed over; null on EOF,
  // an error or the deadline.
  Json reply(int id, int64_t deadline) {
    for (;;) {
      size_t nl;
      while ((nl = buf_.find('\n')) != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        Json m = Json::parse(line, nullptr, false);
        if (m.is_object() && m.contains("id") && m["id"] == id) return m;
      }
      int64_t left = (deadline - sys::monotonic_ns()) / 1'000'000;
      if (left <= 0) return nullptr;
      pollfd p{fd_.get(), POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return nullptr;
      char chunk[65536];
      ssize_t n = ::read(fd_.get(), chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return nullptr;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  Fd fd_;
  std::string buf_;
};

std::vector<Leftover> procs_of(const Json& arr) {
  std::vector<Leftover> out;
  if (!arr.is_array()) return out;
  for (const Json& p : arr) {
    if (!p.is_object() || !p.value("pid", Json()).is_number_integer()) continue;
    Leftover l;
    l.pid = p["pid"].get<pid_t>();
    l.start_time = p.value("start_time", uint64_t{0});
    l.cmdline = p.value("cmdline", std::string());
    l.fate = fate_from_string(p.value("action", std::string()));
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace

std::vector<Leftover> stop_recorded_jobs(const std::vector<CallRecord>& records, bool* verified) {
  std::vector<Leftover> out;
  for (const CallRecord& r : records) {
    // The service's own checks (directory, socket and listener ours or
    // root's) before anything is sent.
    auto fd = connect_service(r.socket, false);
    // A service that is gone took its jobs with it (its crash guard).
    if (!fd) {
      if (fd.error().untrusted) *verified = false;
      continue;
    }
    Exchange x(std::move(*fd));
    // The stop (grace, kill, verification) and a reply: well under this.
    const int64_t deadline = sys::monotonic_ns() + 60'000'000'000;
    const Json params = {{"terminalId", r.terminal_id}};
    // The report once the kill is answered: the job is over then.
    Json killed, rep;
    if (x.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "terminal/kill"}, {"params", params}}))
      killed = x.reply(1, deadline);
    if (!killed.is_null() && x.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "terminal/report"}, {"params", params}}))
      rep = x.reply(2, deadline);
    // Unknown to its service: released and stopped already.
    if (killed.contains("error") && rep.contains("error")) continue;
    const Json& res = rep.contains("result") ? rep["result"] : Json();
    if (!killed.contains("result") || !res.is_object() || !res.value("cleanup_verified", false)) *verified = false;
    if (!res.is_object()) continue;
    // Its command, when the stop found it running (it was stopped, not
    // over on its own).
    const Json job = res.value("job", Json::object());
    const bool stopped = job.is_object() && job.value("stoppedBy", Json()).is_string();
    if (stopped && r.job_pid > 0) {
      std::string action = res.value("signal_name", Json()).is_string() ? res["signal_name"].get<std::string>()
                           : res.value("stop", Json::object()).value("first_signal", Json()).is_string()
                               ? res["stop"]["first_signal"].get<std::string>()
                               : std::string("SIGTERM");
      out.push_back({r.job_pid, r.job_start_time, r.command, fate_from_string(action)});
    }
    for (Leftover& l : procs_of(res.value("leftovers", Json())))
      if (l.pid != r.job_pid) out.push_back(std::move(l));
  }
  return out;
}

}  // namespace pmon::serve
