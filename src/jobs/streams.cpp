// SPDX-License-Identifier: Apache-2.0
#include "jobs/streams.h"

#include <fcntl.h>
#include <sys/ioctl.h>
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
constexpr size_t kMinPipe = 4096;  // a page: the smallest pipe there is

}  // namespace

std::expected<StreamStart, Error> Streams::open(uint64_t conn, Job& job, std::optional<uint64_t> since,
                                                   bool follow) {
  if (per_conn_[conn] >= kMaxStreams)
    return std::unexpected(Error::line("too many streams on this connection (at most " +
                                          std::to_string(kMaxStreams) + "); read one to its end first"));
  // A reader that does not read makes the kernel hold all of its pipe: it
  // is as large as allowed, at most a sixteenth of what the budget has
  // left (so a hundred or more fit), at least a page.
  const size_t left = budget_.limit() - std::min(budget_.limit(), budget_.used());
  const size_t got = budget_.take(std::clamp(left / 16, kMinPipe, size_t{kStreamPipe}));
  size_t size = kMinPipe;
  while (size * 2 <= got) size *= 2;
  if (got < kMinPipe) {
    budget_.give(got);
    return std::unexpected(Error::line(
        "the service's memory budget for streams and for jobs' stdin not yet read is used up (" +
        std::to_string(budget_.limit()) +
        " bytes, a sixteenth of --memory-budget): read your streams to their end or close them, read "
        "without 'stream', or start the service with a larger --memory-budget"));
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    budget_.give(got);
    return std::unexpected(Error::line(std::string("cannot make a pipe: ") + std::strerror(errno)));
  }
  int fl = ::fcntl(fds[1], F_GETFL);
  if (fl >= 0) (void)::fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
  Stream s;
  s.conn = conn;
  s.job = &job;
  s.pipe = Fd(fds[1]);
  const int set = ::fcntl(s.pipe.get(), F_SETPIPE_SZ, static_cast<int>(size));
  const int now = set > 0 ? set : ::fcntl(s.pipe.get(), F_GETPIPE_SZ);
  s.charged = std::max<size_t>(got, now > 0 ? static_cast<size_t>(now) : got);
  if (s.charged > got) (void)budget_.take(s.charged - got);  // (the default 64 KiB, kept where it could not be set)
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

Job* Streams::job_of(uint64_t sid) const {
  auto it = streams_.find(sid);
  return it == streams_.end() ? nullptr : it->second.job;
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
    const size_t want = static_cast<size_t>(std::min<uint64_t>(end - s.at, kWriteMax));
    // What the spool holds goes from its file's pages, not copied out of
    // the buffer; the rest (past a spool that stopped short) from the buffer.
    size_t asked = 0;
    ssize_t n = 0;
    if (const Spool* sp = j.spool.get(); sp && s.at >= sp->first_held() && s.at < sp->total()) {
      asked = static_cast<size_t>(std::min<uint64_t>(want, sp->total() - s.at));
      n = sp->splice_to(s.pipe.get(), s.at, asked);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR && errno != EPIPE))
        asked = 0;  // (a splice the file refused: from the buffer below)
    }
    if (asked == 0) {
      auto parts = b.bytes_from(s.at, want);
      iovec iov[2] = {{const_cast<char*>(parts[0].data()), parts[0].size()},
                      {const_cast<char*>(parts[1].data()), parts[1].size()}};
      asked = parts[0].size() + parts[1].size();
      n = ::writev(s.pipe.get(), iov, parts[1].empty() ? 1 : 2);
    }
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
    if (static_cast<size_t>(n) < asked) continue;  // (the next write says EAGAIN)
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
  // What its reader has not read stays in the pipe after our end closes:
  // counted until its connection closes.
  int unread = 0;
  if (::ioctl(s.pipe.get(), FIONREAD, &unread) != 0 || unread < 0) unread = 0;
  const size_t left = std::min(s.charged, static_cast<size_t>(unread));
  budget_.give(s.charged - left);
  if (left > 0) left_unread_[s.conn] += left;
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
  if (auto it = left_unread_.find(conn); it != left_unread_.end()) {
    budget_.give(it->second);
    left_unread_.erase(it);
  }
}

}  // namespace pmon::serve
