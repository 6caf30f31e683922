// SPDX-License-Identifier: Apache-2.0
#include "serve/connections.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>

#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

// A connection whose replies not yet sent are more than this is not read
// until they drain (nor are its waiting output reads answered): a client
// that sends faster than it reads waits, and holds at most this plus one
// reply. The same once all connections together hold their share of the
// memory budget, for each that has anything unsent.
constexpr size_t kConnQueueBound = size_t{1} << 20;
// A socket connection's requests are handled for about this long a turn of
// the loop; the rest wait in its socket for the next turn, after the
// other connections' (--stdio has no other client to make wait).
constexpr int64_t kConnSliceNs = 2'000'000;

void make_nonblocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

}  // namespace

Connections::Connections(const ServeOptions& opts, Poller& poller, ConnEvents& events)
    : opts_(opts), poller_(poller), events_(events), waiting_(opts.waiting_share(), kMaxWaiting) {}

bool Connections::open_listener() {
  accept_retry_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!accept_retry_) return false;
  poller_.watch(accept_retry_.get(), EPOLLIN, tag(Tag::listener, 1));
  poller_.watch(opts_.listen_fd, EPOLLIN, tag(Tag::listener));
  return true;
}

bool Connections::open_stdio() {
  Conn c;
  c.id = next_conn_++;
  c.in_fd = STDIN_FILENO;
  c.out_fd = STDOUT_FILENO;
  int domain = 0;
  socklen_t dlen = sizeof domain;
  c.passes_fds = ::getsockopt(c.out_fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain == AF_UNIX;
  make_nonblocking(c.in_fd);
  make_nonblocking(c.out_fd);
  if (!poller_.add(c.in_fd, EPOLLIN, tag(Tag::conn_in, c.id)) && errno == EPERM) {
    stdin_ready_ = Fd(::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stdin_ready_ || !poller_.add(stdin_ready_.get(), EPOLLIN, tag(Tag::conn_in, c.id))) return false;
  }
  conns_.emplace(c.id, std::move(c));
  return true;
}

void Connections::stop_accepting() {
  accepting_ = false;
  if (opts_.listen_fd >= 0) poller_.unwatch(opts_.listen_fd);
}

void Connections::on_accept() {
  if (accept_paused_) {  // the retry timer fired
    uint64_t v;
    (void)!::read(accept_retry_.get(), &v, sizeof v);
    accept_paused_ = false;
    if (!accepting_) return;
    poller_.watch(opts_.listen_fd, EPOLLIN, tag(Tag::listener));
  }
  for (;;) {
    int fd = ::accept4(opts_.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
    if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
      // Out of fds: the connection stays in the backlog, and would wake us
      // again at once. Tried again in a while instead (the clients wait).
      poller_.unwatch(opts_.listen_fd);
      itimerspec in{};
      in.it_value.tv_nsec = 100'000'000;
      (void)::timerfd_settime(accept_retry_.get(), 0, &in, nullptr);
      accept_paused_ = true;
      return;
    }
    if (fd < 0) return;  // EAGAIN: all taken
    Fd sock(fd);
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        (cred.uid != ::geteuid() && cred.uid != 0)) {
      std::string line = error_line(nullptr, {rpc::kServerError,
                                              "permission denied: this service serves uid " +
                                                  std::to_string(::geteuid()) + " and root only"});
      (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      continue;  // closed by Fd
    }
    // Room for large replies (a job's output) in fewer wakes of either
    // side; the kernel caps it (net.core.wmem_max).
    int sndbuf = 4 << 20;
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    Conn c;
    c.id = next_conn_++;
    c.in_fd = c.out_fd = fd;
    c.passes_fds = true;
    c.sock = std::move(sock);
    poller_.watch(fd, EPOLLIN | EPOLLRDHUP, tag(Tag::conn_in, c.id));
    conns_.emplace(c.id, std::move(c));
  }
}

Conn* Connections::find(uint64_t conn) {
  auto it = conns_.find(conn);
  return it == conns_.end() ? nullptr : &it->second;
}

void Connections::on_event(uint64_t t, uint32_t events) {
  Conn* c = find(tag_id(t));
  if (!c || c->doomed) return;
  // A socket is one fd for both directions (tagged conn_in).
  if (tag_kind(t) == Tag::conn_out || (events & EPOLLOUT)) on_writable(*c);
  if (tag_kind(t) != Tag::conn_in || c->doomed || (events & ~uint32_t{EPOLLOUT}) == 0) return;
  // Not read meanwhile (its replies drain first); a hang-up is its end.
  if (c->reading_paused) {
    if (events & (EPOLLHUP | EPOLLERR)) schedule_drop(*c);
    return;
  }
  on_readable(*c);
}

void Connections::on_readable(Conn& c) {
  const uint64_t cid = c.id;
  const bool peek = c.sock.get() >= 0;
  if (peek) consume_peeked(c);  // (read out already, unless a round was cut short)
  char buf[65536];
  // A bounded number of reads per wake, so one busy client cannot starve
  // the others; a socket is peeked once, and woken again for the rest.
  for (int round = 0; round < (peek ? 1 : 16) && !c.reading_paused; ++round) {
    ssize_t n = peek ? ::recv(c.in_fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT) : ::read(c.in_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      // EOF: a socket client went; on --stdio the service stops.
      if (opts_.stdio && c.sock.get() < 0) {
        poller_.unwatch(c.in_fd);
        stdin_ready_.reset();
        events_.on_stdin_end();
        return;
      }
      schedule_drop(c);
      return;
    }
    // Only the bytes handled are taken: a socket's rest stays in it until
    // the connection is read again, what --stdio read is held.
    const size_t used = take_lines(c, buf, static_cast<size_t>(n));
    if (c.doomed) return;
    if (peek && used > 0) {
      c.peeked = used;
      to_consume_.push_back(cid);
    }
    if (!peek && used < static_cast<size_t>(n)) c.held.assign(buf + used, static_cast<size_t>(n) - used);
  }
}

// Handles the whole lines in buf and keeps the start of the next; stops
// after a line whose reply backs the connection up (pause_reading).
// Returns how many bytes of buf were taken. A line is at most max_line
// bytes, its newline not counted.
size_t Connections::take_lines(Conn& c, const char* buf, size_t n) {
  const uint64_t cid = c.id;
  auto refuse = [&] {
    send(cid, error_line(nullptr, {rpc::kInvalidRequest, "invalid request: line longer than " +
                                                             std::to_string(opts_.max_line) + " bytes"}));
  };
  size_t start = 0;
  const int64_t until = c.sock ? sys::monotonic_ns() + kConnSliceNs : kForever;
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] != '\n') continue;
    if (c.discarding) {
      c.discarding = false;
    } else if (c.inbuf.size() + (i - start) > opts_.max_line) {
      std::string().swap(c.inbuf);
      note_inbuf(c);
      refuse();
    } else {
      c.inbuf.append(buf + start, i - start);
      std::string line = std::move(c.inbuf);
      c.inbuf.clear();
      note_inbuf(c);
      handle_line(c, line);
    }
    start = i + 1;
    if (c.doomed) return start;
    if (backed_up(c) || c.deferring) {
      pause_reading(c);
      return start;
    }
    if (start < n && sys::monotonic_ns() >= until) return start;  // its turn is over
  }
  if (!c.discarding && c.inbuf.size() + (n - start) > opts_.max_line) {
    std::string().swap(c.inbuf);
    note_inbuf(c);
    c.discarding = true;
    refuse();
  } else if (!c.discarding && n > start) {
    if (!hold_line(c, c.inbuf.size() + (n - start))) {
      tell_and_close(c, {rpc::kServerError,
                         "the service's memory budget for requests being read is used up (" +
                             std::to_string(opts_.line_share()) + " bytes, an eighth of --memory-budget " +
                             std::to_string(opts_.memory_budget >> 20) +
                             "M, held by requests not yet ended by a newline): this connection is closed; "
                             "send shorter requests, try again later, or start the service with a larger "
                             "--memory-budget"});
      return n;
    }
    c.inbuf.append(buf + start, n - start);
  }
  return n;
}

// Room in the connection's inbuf for `want` bytes of a request not yet
// whole, counted against the budget's share for them: its storage grows
// by doubling, never past the line limit. --stdio, one connection, always
// fits (the share is at least twice the line limit).
bool Connections::hold_line(Conn& c, size_t want) {
  if (want <= c.inbuf.capacity()) return true;
  const size_t cap = std::max(want, std::min(c.inbuf.capacity() * 2, opts_.max_line));
  if (c.sock && lines_held_ - c.inbuf_charged + cap > opts_.line_share()) return false;
  c.inbuf.reserve(cap);
  note_inbuf(c);
  return true;
}

void Connections::note_inbuf(Conn& c) {
  lines_held_ = lines_held_ - c.inbuf_charged + c.inbuf.capacity();
  c.inbuf_charged = c.inbuf.capacity();
}

// One request; out of memory while it is handled is its error reply.
void Connections::handle_line(Conn& c, std::string_view line) {
  const uint64_t cid = c.id;
  try {
    events_.on_line(c, line);
  } catch (const std::bad_alloc&) {
    Json id = nullptr;
    try {
      Json m = Json::parse(line, nullptr, false);
      if (m.is_object() && m.contains("id")) id = m["id"];
    } catch (const std::bad_alloc&) {
    }
    send(cid, error_line(id, {rpc::kServerError, "out of memory while handling this request; "
                                                 "read output in smaller pieces (maxBytes) or try again later"}));
  }
}

// One error line, written now if the connection takes it, and the
// connection's end (its jobs as for any connection that closes).
void Connections::tell_and_close(Conn& c, const RpcError& e) {
  send(c.id, error_line(nullptr, e));
  if (!c.doomed) on_writable(c);
  schedule_drop(c);
}

bool Connections::backed_up(uint64_t conn) const {
  auto it = conns_.find(conn);
  return it != conns_.end() && backed_up(it->second);
}

bool Connections::backed_up(const Conn& c) const {
  const size_t unsent = c.queued - std::min(c.queued, c.out_off);
  if (unsent == 0) return false;
  return unsent > kConnQueueBound || queued_total_ + lines_held_ + waiting_.used() > opts_.queue_share();
}

void Connections::pause_reading(Conn& c) {
  if (c.reading_paused) return;
  c.reading_paused = true;
  paused_.push_back(c.id);
  watch(c);
}

// The connections whose replies drained are watched again; one that held
// lines (--stdio) handles them in the next round, in order.
void Connections::unpause_drained() {
  for (size_t i = 0; i < paused_.size();) {
    Conn* c = find(paused_[i]);
    if (!c || c->doomed) {
      paused_.erase(paused_.begin() + static_cast<ptrdiff_t>(i));
      continue;
    }
    if (backed_up(*c) || c->deferring) {
      ++i;
      continue;
    }
    c->reading_paused = false;
    paused_.erase(paused_.begin() + static_cast<ptrdiff_t>(i));
    // (what it held goes first: its fd is watched once that is handled)
    if (c->held.empty()) watch(*c);
    else to_resume_.push_back(c->id);
  }
}

void Connections::resume_reading() {
  unpause_drained();
  std::vector<uint64_t> ids = std::move(to_resume_);
  to_resume_.clear();
  for (uint64_t id : ids) {
    Conn* c = find(id);
    if (!c || c->doomed || c->reading_paused) continue;
    std::string held = std::move(c->held);
    c->held.clear();
    const size_t used = take_lines(*c, held.data(), held.size());
    if (c->doomed) continue;
    if (used < held.size()) c->held = held.substr(used);  // paused again
    else watch(*c);
  }
}

// What the connection's fds are watched for: its requests unless paused,
// room for its replies while some wait.
void Connections::watch(Conn& c) {
  const uint32_t in = c.reading_paused ? 0u : uint32_t{EPOLLIN | EPOLLRDHUP};
  if (c.sock) {
    poller_.watch(c.out_fd, in | (c.out_watched ? uint32_t{EPOLLOUT} : 0u), tag(Tag::conn_in, c.id));
    return;
  }
  // A regular file or /dev/null on stdin cannot be in an epoll: its
  // always-ready stand-in is what is watched, or not, for it.
  const int fd = stdin_ready_ ? stdin_ready_.get() : c.in_fd;
  if (c.reading_paused) poller_.unwatch(fd);
  else poller_.watch(fd, EPOLLIN, tag(Tag::conn_in, c.id));
}

void Connections::send(uint64_t conn, std::string line, Fd fd) {
  Conn* c = find(conn);
  if (!c || c->doomed) return;
  // A client that does not read its replies is dropped once they pile up
  // behind the one being sent (which may be a large output it asked for);
  // it never blocks the service.
  if (line.empty()) return;
  if (c->queued_behind > opts_.max_queue) {
    schedule_drop(*c);
    return;
  }
  if (!c->outq.empty()) c->queued_behind += line.size();
  c->queued += line.size();
  queued_total_ += line.size();
  c->outq.push_back({std::move(line), std::move(fd)});
  // Written once this round of events is handled: what it sends (a
  // terminal/exited for each of 1000 jobs a session/close stopped) goes
  // out in a few writes, not one each.
  if (!c->out_watched && !c->flush_due) {
    c->flush_due = true;
    to_flush_.push_back(c->id);
  }
}

void Connections::flush_sends() {
  std::vector<uint64_t> ids = std::move(to_flush_);
  to_flush_.clear();
  for (uint64_t id : ids) {
    Conn* c = find(id);
    if (!c) continue;
    c->flush_due = false;
    if (!c->doomed) on_writable(*c);
  }
  ids = std::move(to_consume_);
  to_consume_.clear();
  for (uint64_t id : ids)
    if (Conn* c = find(id); c && !c->doomed) consume_peeked(*c);
}

void Connections::consume_peeked(Conn& c) {
  char buf[65536];
  while (c.peeked > 0) {
    ssize_t n = ::read(c.in_fd, buf, std::min(sizeof buf, c.peeked));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The bytes were there a moment ago and nobody else reads them: the
      // connection is broken, and a peek must never see them twice.
      schedule_drop(c);
      return;
    }
    c.peeked -= static_cast<size_t>(n);
  }
}

void Connections::on_writable(Conn& c) {
  bool wrote = false;
  while (!c.outq.empty()) {
    // The first message from out_off, and as many after it as one call
    // takes, up to one that carries an fd: that goes with its first byte.
    iovec iov[64];
    int cnt = 0;
    for (auto m = c.outq.begin(); m != c.outq.end() && cnt < 64; ++m, ++cnt) {
      if (cnt > 0 && m->fd) break;
      size_t off = cnt == 0 ? c.out_off : 0;
      iov[cnt] = {const_cast<char*>(m->text.data()) + off, m->text.size() - off};
    }
    // (SIGPIPE is ignored: a gone reader is EPIPE.)
    ssize_t n;
    Fd& passing = c.outq.front().fd;
    if (passing) {
      msghdr msg{};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(cnt);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      const int pass = passing.get();
      std::memcpy(CMSG_DATA(cm), &pass, sizeof pass);
      n = ::sendmsg(c.out_fd, &msg, MSG_NOSIGNAL);
      if (n > 0) passing.reset();  // the client has it now
    } else {
      n = ::writev(c.out_fd, iov, cnt);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      if (!c.out_watched) {
        // --stdio has its two fds; a socket is one fd watched for both.
        c.out_watched = true;
        if (c.sock) watch(c);
        else poller_.watch(c.out_fd, EPOLLOUT, tag(Tag::conn_out, c.id));
      }
      if (wrote && !paused_.empty()) unpause_drained();
      return;
    }
    if (n < 0) {
      if (!opts_.stdio || c.sock) {
        schedule_drop(c);
        return;
      }
      // stdout gone: keep serving until stdin ends
      queued_total_ -= c.queued;
      c.outq.clear(), c.out_off = 0, c.queued_behind = 0, c.queued = 0;
      break;
    }
    wrote = true;
    size_t done = static_cast<size_t>(n);
    while (done > 0) {
      size_t left = c.outq.front().text.size() - c.out_off;
      if (done < left) {
        c.out_off += done;
        break;
      }
      done -= left;
      std::string& sent = c.outq.front().text;
      c.queued -= sent.size();
      queued_total_ -= sent.size();
      if (sent.capacity() > line_spare_.capacity() && sent.capacity() <= kSpareMax) line_spare_ = std::move(sent);
      c.outq.pop_front();
      c.out_off = 0;
      if (!c.outq.empty()) c.queued_behind -= c.outq.front().text.size();
    }
  }
  c.queued_behind = 0;
  if (c.out_watched) {
    c.out_watched = false;
    if (c.sock) watch(c);
    else poller_.unwatch(c.out_fd);
  }
  if (wrote && !paused_.empty()) unpause_drained();
}

// Connections are dropped between events, never inside a handler: a reply
// that overflows a queue must not end jobs under the code that sent it.
void Connections::schedule_drop(Conn& c) {
  if (c.doomed) return;
  c.doomed = true;
  doomed_.push_back(c.id);
}

void Connections::drop_doomed() {
  while (!doomed_.empty()) {
    std::vector<uint64_t> v = std::move(doomed_);
    doomed_.clear();
    for (uint64_t id : v) drop(id);
  }
}

void Connections::drop(uint64_t conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  poller_.unwatch(it->second.in_fd);
  queued_total_ -= std::min(queued_total_, it->second.queued);
  lines_held_ -= std::min(lines_held_, it->second.inbuf_charged);
  conns_.erase(it);
  std::erase(paused_, conn);
  std::erase_if(deferred_, [conn](const auto& d) { return d.first == conn; });
  events_.on_closed(conn);
}

void Connections::defer(uint64_t conn, Step step) {
  Conn* c = find(conn);
  if (!c || c->doomed) return;
  c->deferring = true;
  deferred_.emplace_back(conn, std::move(step));
}

void Connections::run_deferred() {
  const int64_t until = sys::monotonic_ns() + kConnSliceNs;
  deferred_full_ = false;
  // Each in turn, the one cut short by the clock going last next time.
  for (size_t left = deferred_.size(); left > 0 && !deferred_.empty(); --left) {
    auto [conn, step] = std::move(deferred_.front());
    deferred_.pop_front();
    Conn* c = find(conn);
    if (!c || c->doomed) continue;
    bool done = true;
    try {
      done = step(until);
    } catch (const std::bad_alloc&) {  // (its step said so if it could)
    }
    if (done) c->deferring = false;  // read again once its answers drain (resume_reading)
    else deferred_.emplace_back(conn, std::move(step));
    if (sys::monotonic_ns() >= until) {
      deferred_full_ = true;
      break;
    }
  }
}

void Connections::last_words() {
  for (auto& [id, c] : conns_)
    if (!c.doomed) on_writable(c);
}

}  // namespace pmon::serve
