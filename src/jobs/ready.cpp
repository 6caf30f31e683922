// SPDX-License-Identifier: Apache-2.0
#include "jobs/ready.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <re2/re2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pmon::serve {

namespace {

constexpr int64_t kMs = 1'000'000;
// Ports are looked up this often while a probe waits for one (as a wait
// for a port does), at the same moments for every job.
constexpr int64_t kScanNs = 50 * kMs;
// An HTTP attempt that failed is made again this much later; one that has
// no answer is given up after kAttemptNs.
constexpr int64_t kRetryNs = 100 * kMs;
constexpr int64_t kAttemptNs = 2'000 * kMs;
// A line longer than this is matched on its last bytes; an answer's
// status line must come within kAnswerMax bytes.
constexpr size_t kLineMax = 64 << 10;
constexpr size_t kAnswerMax = 4096;

}  // namespace

std::string seconds_words(uint64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ms) / 1000.0);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  return s + " s";
}

ReadyCheck::ReadyCheck(const ReadyProbe& probe, int64_t now, Poller& poller, uint64_t t)
    : probe_(probe),
      started_(now),
      deadline_(now + static_cast<int64_t>(probe.timeout_ms) * kMs),
      poller_(poller),
      tag_(t) {
  if (probe_.line) {
    RE2::Options o;
    o.set_log_errors(false);
    re_ = std::make_unique<RE2>(*probe_.line, o);
    waiting_for_ = "no line of its output matched '" + *probe_.line + "'";
  } else if (probe_.port) {
    waiting_for_ = "no process of the job listens on port " + std::to_string(*probe_.port);
  } else {
    waiting_for_ = "no process of the job listens on a TCP port";
  }
}

ReadyCheck::~ReadyCheck() { close_socket(); }

void ReadyCheck::pass(int64_t now) {
  outcome_ = ReadyOutcome{true, static_cast<uint64_t>(std::max<int64_t>(0, now - started_) / kMs), {}};
  close_socket();
}

void ReadyCheck::fail(std::string why) {
  outcome_ = ReadyOutcome{false, 0, std::move(why)};
  close_socket();
}

void ReadyCheck::close_socket() {
  if (!sock_) return;
  poller_.unwatch(sock_.get());
  sock_.reset();
}

void ReadyCheck::feed(int stream, std::string_view text, uint64_t next, int64_t now) {
  scanned_[stream] = next;
  if (decided() || !re_) return;
  std::string& part = partial_[stream];
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    part.append(text.substr(0, nl));
    if (part.size() > kLineMax) part.erase(0, part.size() - kLineMax);
    if (nl == std::string_view::npos) return;
    text.remove_prefix(nl + 1);
    std::string_view line = part;
    if (line.ends_with('\r')) line.remove_suffix(1);  // a terminal's line end
    if (RE2::PartialMatch(line, *re_)) return pass(now);
    part.clear();
  }
}

bool ReadyCheck::wants_ports(int64_t now) const {
  if (decided() || (!probe_.port && !probe_.http) || sock_) return false;
  return now >= next_scan_ && now >= next_try_;
}

void ReadyCheck::saw_ports(const std::vector<ListeningPort>& ports, int64_t now) {
  next_scan_ = (now / kScanNs + 1) * kScanNs;
  if (decided()) return;
  if (probe_.port) {
    auto l = std::find_if(ports.begin(), ports.end(), [&](const ListeningPort& p) { return p.port == *probe_.port; });
    if (l == ports.end()) {
      waiting_for_ = "no process of the job listens on port " + std::to_string(*probe_.port);
      return;
    }
    if (!probe_.http) return pass(now);
    return connect_to(*l, now);
  }
  if (ports.empty()) {
    waiting_for_ = "no process of the job listens on a TCP port";
    return;
  }
  connect_to(ports.front(), now);
}

// To the loopback address of the socket's family only: an address it
// listens on is never taken from anywhere else.
void ReadyCheck::connect_to(const ListeningPort& l, int64_t now) {
  sock_port_ = l.port;
  sent_ = false;
  answer_.clear();
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (l.v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(l.port);
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(l.port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  sock_ = Fd(::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock_) return attempt_failed(std::string("cannot make a socket: ") + std::strerror(errno), now);
  if (::connect(sock_.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS)
    return attempt_failed("connecting to port " + std::to_string(l.port) + " failed: " + std::strerror(errno), now);
  attempt_deadline_ = now + kAttemptNs;
  poller_.watch(sock_.get(), EPOLLOUT, tag_);
}

void ReadyCheck::attempt_failed(std::string why, int64_t now) {
  close_socket();
  attempt_deadline_ = kForever;
  waiting_for_ = std::move(why);
  next_try_ = now + kRetryNs;
}

void ReadyCheck::on_socket(uint32_t, int64_t now) {
  if (!sock_ || decided()) return;
  const std::string port = std::to_string(sock_port_);
  const std::string get = "GET " + *probe_.http + " on port " + port;
  if (!sent_) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(sock_.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return attempt_failed("connecting to port " + port + " failed: " + std::strerror(err), now);
    const std::string req = "GET " + *probe_.http + " HTTP/1.0\r\nHost: 127.0.0.1:" + port +
                            "\r\nUser-Agent: pmon\r\nAccept: */*\r\nConnection: close\r\n\r\n";
    ssize_t n;
    do n = ::send(sock_.get(), req.data(), req.size(), MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(req.size()))
      return attempt_failed(get + " could not be sent" + (n < 0 ? std::string(": ") + std::strerror(errno) : ""),
                            now);
    sent_ = true;
    poller_.watch(sock_.get(), EPOLLIN, tag_);
    return;
  }
  bool eof = false;
  char buf[1024];
  for (;;) {
    ssize_t n = ::recv(sock_.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      eof = true;
      break;
    }
    answer_.append(buf, static_cast<size_t>(std::min<size_t>(static_cast<size_t>(n), kAnswerMax)));
    if (answer_.size() >= kAnswerMax || answer_.find('\n') != std::string::npos) break;
  }
  const size_t nl = answer_.find('\n');
  if (nl == std::string::npos) {
    if (eof) return attempt_failed(get + " closed the connection without an answer", now);
    if (answer_.size() >= kAnswerMax) return attempt_failed(get + " answered something that is not HTTP", now);
    return;
  }
  // "HTTP/1.1 200 OK"
  std::string status = answer_.substr(0, nl);
  if (status.ends_with('\r')) status.pop_back();
  const size_t sp = status.find(' ');
  if (!status.starts_with("HTTP/") || sp == std::string::npos || status.size() < sp + 4 ||
      !std::all_of(status.begin() + static_cast<std::ptrdiff_t>(sp) + 1,
                   status.begin() + static_cast<std::ptrdiff_t>(sp) + 4, [](char c) { return c >= '0' && c <= '9'; }))
    return attempt_failed(get + " answered something that is not HTTP", now);
  if (status[sp + 1] == '2') return pass(now);
  std::string said = status.substr(sp + 1);
  if (said.size() > 80) said.resize(80);
  for (char& c : said)
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) c = '?';
  attempt_failed(get + " answered " + said, now);
}

void ReadyCheck::job_ended(const std::string& why, int64_t) {
  if (!decided()) fail(why + " before it was ready");
}

void ReadyCheck::on_time(int64_t now) {
  if (decided()) return;
  if (sock_ && now >= attempt_deadline_)
    attempt_failed("GET " + *probe_.http + " on port " + std::to_string(sock_port_) + " has not answered within " +
                       seconds_words(kAttemptNs / kMs),
                   now);
  if (now >= deadline_) {
    timed_out_ = true;
    fail("not ready after " + seconds_words(probe_.timeout_ms) + ": " + waiting_for_);
  }
}

int64_t ReadyCheck::next_due() const {
  if (decided()) return kForever;
  int64_t next = deadline_;
  if (sock_) next = std::min(next, attempt_deadline_);
  else if (probe_.port || probe_.http) next = std::min(next, std::max(next_scan_, next_try_));
  return next;
}

}  // namespace pmon::serve
