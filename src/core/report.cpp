#include "core/report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "sys/fd.h"

namespace pmon {

namespace {

using json = nlohmann::ordered_json;

std::string iso8601(std::chrono::system_clock::time_point t) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1'000'000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(us % 1'000'000));
  return buf;
}

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json procs(const std::vector<Leftover>& v) {
  json a = json::array();
  for (const Leftover& l : v)
    a.push_back({{"pid", l.pid}, {"start_time", l.start_time}, {"cmdline", l.cmdline}, {"action", l.action}});
  return a;
}

double round3(double v) { return static_cast<double>(static_cast<int64_t>(v * 1000 + 0.5)) / 1000; }

json opt_ms(const std::optional<double>& v) { return v ? json(round3(*v)) : json(nullptr); }

}  // namespace

std::string report_json(const RunResult& r, const ReportContext& ctx) {
  json j;
  j["version"] = 1;
  j["command"] = r.command;
  j["pid"] = r.pid;
  j["confinement"] = std::string(to_string(r.confinement));
  j["confinement_weak"] = ctx.weak;
  j["confinement_passed_over"] = ctx.passed_over;
  j["cgroup"] = opt(r.cgroup);
  j["started_at"] = iso8601(r.started_at);
  j["duration_ms"] = round3(r.duration_ms);
  j["outcome"] = std::string(to_string(r.outcome));
  j["exit_code"] = opt(r.exit_code);
  j["signal"] = opt(r.signal);
  j["signal_name"] = r.signal ? json(signal_name(*r.signal)) : json(nullptr);
  j["core_dumped"] = r.core_dumped;
  j["timed_out"] = r.timed_out;
  j["cancel_signal"] = r.cancel_signal ? json(signal_name(r.cancel_signal)) : json(nullptr);
  j["leftovers"] = procs(r.leftovers);
  j["escaped"] = procs(r.escaped);
  j["stop"] = {
      {"reason", r.stop.reason.empty() ? json(nullptr) : json(r.stop.reason)},
      {"first_signal", signal_name(r.stop.first_signal)},
      {"signal_sent_ms", opt_ms(r.stop.signal_sent_ms)},
      {"kill_sent_ms", opt_ms(r.stop.kill_sent_ms)},
      {"empty_confirmed_ms", opt_ms(r.stop.empty_confirmed_ms)},
  };
  j["cleanup_verified"] = r.cleanup_verified;
  j["cpu_usec"] = opt(r.cpu_usec);
  j["memory_peak_bytes"] = opt(r.memory_peak_bytes);
  j["exit_status"] = r.status();
  // Arguments and command lines are bytes, not always UTF-8: replace what
  // is invalid (U+FFFD) rather than throw and lose the report.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<void> write_atomically(const std::string& path, const std::string& text) noexcept {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return fail_errno();
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = retry_eintr([&] { return ::write(fd.get(), text.data() + off, text.size() - off); });
    if (n < 0) {
      int e = errno;
      (void)::unlink(tmp.c_str());
      return fail(e);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    (void)::unlink(tmp.c_str());
    return fail(e);
  }
  return {};
}

}  // namespace pmon
