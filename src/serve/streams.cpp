// SPDX-License-Identifier: Apache-2.0
#include "serve/streams.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace pmon::serve {

namespace {

// At most this many streams per connection; each pipe is made this large.
// A write into one takes at most kWriteMax bytes of the buffer at a time.
constexpr size_t kMaxStreams = 64;
constexpr int kStreamPipe = 1 << 20;
constexpr size_t kWriteMax = size_t{4} << 20;

}  // namespace

std::expected<StreamStart, Error> Streams::open(uint64_t conn, Job& job, std::optional<uint64_t> since,
                                                   bool follow) {
  if (per_conn_[conn] >= kMaxStreams)
    return std::unexpected(Error::line("too many streams on this connection (at most " +
                                          std::to_string(kMaxStreams) + "); read one to its end first"));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return std::unexpected(Error::line(std::string("cannot make a pipe: ") + std::strerror(errno)));
  int fl = ::fcntl(fds[1], F_GETFL);
  if (fl >= 0) (void)::fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
  Stream s;
  s.conn = conn;
  s.job = &job;
  s.pipe = Fd(fds[1]);
  (void)::fcntl(s.pipe.get(), F_SETPIPE_SZ, kStreamPipe);  // as large as allowed
  const uint64_t first = job.buffer.first_kept();
  StreamStart start;
  start.truncated = since.value_or(0) < first;
  s.at = std::clamp(since.value_or(0), first, job.buffer.total());
  start.since = s.at;
  start.fd = fds[0];  // the client's, blocking
  if (!follow) s.until = job.buffer.total();
  const uint64_t sid = next_++;
  s.id = sid;
  auto [it, _] = streams_.emplace(sid, std::move(s));
  job.streams.push_back(sid);
  ++per_conn_[conn];
  if (!pump(it->second)) end(sid);
  return start;
}

void Streams::pump(Job& job) {
  for (size_t i = 0; i < job.streams.size();) {
    const uint64_t sid = job.streams[i];
    auto it = streams_.find(sid);
    if (it != streams_.end() && pump(it->second)) {
      ++i;
      continue;
    }
    end(sid);  // takes it out of job.streams
  }
}

void Streams::on_event(uint64_t sid, uint32_t events) {
  auto it = streams_.find(sid);
  if (it == streams_.end()) return;
  if ((events & (EPOLLERR | EPOLLHUP)) || !pump(it->second)) end(sid);
}

bool Streams::pump(Stream& s) {
  Job& j = *s.job;
  const OutputBuffer& b = j.buffer;
  for (;;) {
    if (s.at < b.first_kept()) return false;  // dropped before it was written
    const uint64_t end = std::min(b.total(), s.until);
    if (s.at >= end) {
      if (s.until != std::numeric_limits<uint64_t>::max() || b.closed()) return false;
      break;
    }
    auto parts = b.bytes_from(s.at, static_cast<size_t>(std::min<uint64_t>(end - s.at, kWriteMax)));
    iovec iov[2] = {{const_cast<char*>(parts[0].data()), parts[0].size()},
                    {const_cast<char*>(parts[1].data()), parts[1].size()}};
    ssize_t n = ::writev(s.pipe.get(), iov, parts[1].empty() ? 1 : 2);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!s.watched) {
        poller_.watch(s.pipe.get(), EPOLLOUT, tag(Tag::stream, s.id));
        s.watched = true;
      }
      return true;
    }
    if (n <= 0) return false;  // the reader closed its end (EPIPE)
    s.at += static_cast<uint64_t>(n);
    j.note_delivered(s.at, std::nullopt);
    if (static_cast<size_t>(n) < parts[0].size() + parts[1].size()) continue;  // (the next write says EAGAIN)
  }
  if (s.watched) {
    poller_.unwatch(s.pipe.get());
    s.watched = false;
  }
  return true;
}

void Streams::end(uint64_t sid) {
  auto it = streams_.find(sid);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  if (s.watched) poller_.unwatch(s.pipe.get());
  if (auto c = per_conn_.find(s.conn); c != per_conn_.end() && --c->second == 0) per_conn_.erase(c);
  std::erase(s.job->streams, sid);
  streams_.erase(it);  // closes the pipe: the reader sees its end
}

void Streams::end_all_of(const Job& job) {
  for (uint64_t sid : std::vector<uint64_t>(job.streams)) end(sid);
}

void Streams::end_all_of_conn(uint64_t conn) {
  std::vector<uint64_t> sids;
  for (auto& [sid, st] : streams_)
    if (st.conn == conn) sids.push_back(sid);
  for (uint64_t sid : sids) end(sid);
}

}  // namespace pmon::serve
