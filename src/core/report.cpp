// SPDX-License-Identifier: Apache-2.0
#include "core/report.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/end_words.h"
#include "sys/fd.h"
#include "sys/syscalls.h"

namespace pmon {

namespace {

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

template <class J, class T>
J opt(const std::optional<T>& v) {
  return v ? J(*v) : J(nullptr);
}

template <class J>
J procs(const std::vector<Leftover>& v) {
  J a = J::array();
  for (const Leftover& l : v)
    a.push_back({{"pid", l.pid}, {"start_time", l.start_time}, {"cmdline", l.cmdline}, {"action", to_string(l.fate)}});
  return a;
}

double round3(double v) { return static_cast<double>(static_cast<int64_t>(v * 1000 + 0.5)) / 1000; }

template <class J>
J opt_ms(const std::optional<double>& v) { return v ? J(round3(*v)) : J(nullptr); }

template <class J>
J limits_of(const Limits& l) {
  return {{"memory_max", opt<J>(l.memory_max)},
          {"memory_high", opt<J>(l.memory_high)},
          {"pids_max", opt<J>(l.pids_max)},
          {"cpu_max", opt<J>(l.cpu_max)}};
}

}  // namespace

template <class J>
J usage_of(const CgroupUsage& u) {
  J j;
  j["memory_current"] = opt<J>(u.memory_current);
  j["memory_peak"] = opt<J>(u.memory_peak);
  j["memory_events"] = {{"high", opt<J>(u.memory_high_events)},
                        {"max", opt<J>(u.memory_max_events)},
                        {"oom", opt<J>(u.oom)},
                        {"oom_kill", opt<J>(u.oom_kill)}};
  j["pids_current"] = opt<J>(u.pids_current);
  j["pids_events_max"] = opt<J>(u.pids_max_events);
  j["memory_pressure_avg10"] = opt<J>(u.memory_pressure_avg10);
  j["cpu_pressure_avg10"] = opt<J>(u.cpu_pressure_avg10);
  j["cpu_usec"] = opt<J>(u.cpu_usec);
  return j;
}

template <class J>
J session_of(const RunResult::InSession& s) {
  J j;
  j["name"] = s.name;
  j["cgroup"] = s.cgroup;
  j["envelope"] = limits_of<J>(s.envelope.limits);
  j["envelope_set_by"] = s.envelope.set_by;
  j["profile"] = s.envelope.profile.empty() ? J(nullptr) : J(s.envelope.profile);
  j["usage"] = usage_of<J>(s.session);
  j["call_usage"] = usage_of<J>(s.call);
  return j;
}

nlohmann::ordered_json usage_json(const CgroupUsage& u) { return usage_of<nlohmann::ordered_json>(u); }

nlohmann::ordered_json limits_json(const Limits& l) { return limits_of<nlohmann::ordered_json>(l); }

template <class J>
J report_object(const RunResult& r, const ReportContext& ctx) {
  using json = J;
  json j;
  j["version"] = 1;
  j["command"] = r.command;
  j["pid"] = r.pid > 0 ? json(r.pid) : json(nullptr);  // null: never started
  j["confinement"] = std::string(to_string(r.confinement));
  j["confinement_weak"] = ctx.weak;
  j["confinement_passed_over"] = render_all(ctx.passed_over, ctx.words);
  j["cgroup"] = opt<json>(r.cgroup);
  j["started_at"] = iso8601(r.started_at);
  j["duration_ms"] = round3(r.duration_ms);
  j["outcome"] = std::string(to_string(r.outcome));
  j["error"] = r.error ? json(render(*r.error, ctx.words)) : json(nullptr);
  j["exit_code"] = opt<json>(r.exit_code);
  j["signal"] = opt<json>(r.signal);
  j["signal_name"] = r.signal ? json(signal_name(*r.signal)) : json(nullptr);
  j["core_dumped"] = r.core_dumped;
  j["timed_out"] = r.timed_out;
  j["cancel_signal"] = r.cancel_signal ? json(signal_name(r.cancel_signal)) : json(nullptr);
  j["leftovers"] = procs<json>(r.leftovers);
  j["escaped"] = procs<json>(r.escaped);
  j["stop"] = {
      {"reason", r.stop.reason == StopReason::none ? json(nullptr) : json(stop_reason_word(r.stop.reason, r.end))},
      {"first_signal", signal_name(r.stop.first_signal)},
      {"signal_sent_ms", opt_ms<json>(r.stop.signal_sent_ms)},
      {"kill_sent_ms", opt_ms<json>(r.stop.kill_sent_ms)},
      {"empty_confirmed_ms", opt_ms<json>(r.stop.empty_confirmed_ms)},
  };
  j["cleanup_verified"] = r.cleanup_verified;
  j["cpu_usec"] = opt<json>(r.cpu_usec);
  j["memory_peak_bytes"] = opt<json>(r.memory_peak_bytes);
  j["limits"] = limits_of<json>(r.limits);
  j["limits_note"] = r.limits_note ? json(render(*r.limits_note, ctx.words)) : json(nullptr);
  j["oom_killed"] = opt<json>(r.oom_killed);
  j["pids_max_hit"] = opt<json>(r.pids_max_hit);
  j["memory_high_hit"] = opt<json>(r.memory_high_hit);
  if (r.session) j["session"] = session_of<json>(*r.session);
  j["exit_status"] = r.status();
  return j;
}

template nlohmann::json report_object(const RunResult& r, const ReportContext& ctx);
template nlohmann::ordered_json report_object(const RunResult& r, const ReportContext& ctx);

std::string report_json(const RunResult& r, const ReportContext& ctx) {
  // Arguments and command lines are bytes, not always UTF-8: replace what
  // is invalid (U+FFFD) rather than throw and lose the report.
  return report_object<nlohmann::ordered_json>(r, ctx).dump(2, ' ', false,
                                                            nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

namespace {

// 64 random bits in hex: a temporary name nobody can plant in advance. The
// name is created O_EXCL, so a weak fallback only ever costs a retry.
std::string random_suffix() noexcept {
  uint64_t v = 0;
  if (::getrandom(&v, sizeof v, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof v))
    v = static_cast<uint64_t>(sys::monotonic_ns()) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(::getpid());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Result<void> write_all(int fd, const std::string& text) noexcept {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = retry_eintr([&] { return ::write(fd, text.data() + off, text.size() - off); });
    if (n < 0) return fail_errno();
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail_errno();
  return {};
}

constexpr int kNameTries = 16;

// The whole text in a file that has no name until it is complete, then
// linked under a fresh name (linkat never follows or replaces what is
// there). nullopt: this filesystem or process cannot do it, use a name.
std::optional<Result<std::string>> write_unnamed(int dirfd, const std::string& base,
                                                 const std::string& text) noexcept {
  Fd fd(::openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644));
  if (!fd) {
    if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL || errno == ENOENT) return std::nullopt;
    return Result<std::string>(fail_errno());
  }
  if (auto w = write_all(fd.get(), text); !w) return Result<std::string>(std::unexpected(w.error()));
  const std::string by_proc = "/proc/self/fd/" + std::to_string(fd.get());
  for (int i = 0; i < kNameTries; ++i) {
    std::string tmp = base + ".tmp." + random_suffix();
    // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH on older kernels; the
    // /proc/self/fd link does the same for anyone.
    if (::linkat(fd.get(), "", dirfd, tmp.c_str(), AT_EMPTY_PATH) == 0 ||
        (errno != EEXIST &&
         ::linkat(AT_FDCWD, by_proc.c_str(), dirfd, tmp.c_str(), AT_SYMLINK_FOLLOW) == 0))
      return Result<std::string>(std::move(tmp));
    if (errno != EEXIST) return std::nullopt;
  }
  return Result<std::string>(fail(EEXIST));
}

// The fallback: a fresh name, created exclusively (O_EXCL never follows a
// symlink planted there: it fails, and the next name is tried).
Result<std::string> write_named(int dirfd, const std::string& base, const std::string& text) noexcept {
  for (int i = 0; i < kNameTries; ++i) {
    std::string tmp = base + ".tmp." + random_suffix();
    Fd fd(::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd) {
      if (errno == EEXIST) continue;
      return fail_errno();
    }
    if (auto w = write_all(fd.get(), text); !w) {
      (void)::unlinkat(dirfd, tmp.c_str(), 0);
      return std::unexpected(w.error());
    }
    return tmp;
  }
  return fail(EEXIST);
}

}  // namespace

// A temporary name that could be guessed (PATH.tmp.<pid>) and was opened
// O_CREAT|O_TRUNC would follow a symlink planted there by anyone who can
// write the directory, and pmon (often root) would overwrite its target.
// So the temporary file is created where nothing can be planted first, in
// the target's directory (held open: every step names the same directory),
// and renamed over the target: a symlink at the target is replaced, never
// followed.
namespace {

Result<void> write_atomically_impl(const std::string& path, const std::string& text, bool unnamed_first) noexcept {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") return fail(EISDIR);
  Fd dirfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd) return fail_errno();

  std::optional<Result<std::string>> unnamed;
  if (unnamed_first) unnamed = write_unnamed(dirfd.get(), base, text);
  Result<std::string> tmp = unnamed ? std::move(*unnamed) : write_named(dirfd.get(), base, text);
  if (!tmp) return std::unexpected(tmp.error());
  if (::renameat(dirfd.get(), tmp->c_str(), dirfd.get(), base.c_str()) != 0) {
    int e = errno;
    (void)::unlinkat(dirfd.get(), tmp->c_str(), 0);
    return fail(e);
  }
  // The rename itself reaches the disk with the directory.
  (void)::fsync(dirfd.get());
  return {};
}

}  // namespace

Result<void> write_atomically(const std::string& path, const std::string& text) noexcept {
  return write_atomically_impl(path, text, true);
}

Result<void> detail::write_atomically_named(const std::string& path, const std::string& text) noexcept {
  return write_atomically_impl(path, text, false);
}

}  // namespace pmon
