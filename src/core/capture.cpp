// SPDX-License-Identifier: Apache-2.0
#include "core/capture.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

namespace pmon {

BoundedBuffer::BoundedBuffer(std::optional<size_t> limit) {
  if (limit) {
    head_cap_ = *limit - *limit / 2;
    tail_cap_ = *limit / 2;
  }
}

void BoundedBuffer::append(const char* p, size_t n) {
  total_ += n;
  if (!head_cap_) {
    head_.append(p, n);
    return;
  }
  size_t to_head = std::min(n, *head_cap_ - head_.size());
  head_.append(p, to_head);
  p += to_head;
  n -= to_head;
  if (n == 0 || *tail_cap_ == 0) return;
  if (n >= *tail_cap_) {
    tail_.assign(p + n - *tail_cap_, *tail_cap_);
    return;
  }
  tail_.append(p, n);
  // Trimmed in batches: the tail may grow to twice its size between trims,
  // so each byte is moved a bounded number of times.
  if (tail_.size() >= 2 * *tail_cap_) tail_.erase(0, tail_.size() - *tail_cap_);
}

Captured BoundedBuffer::take() {
  Captured c;
  c.total = total_;
  if (tail_cap_ && tail_.size() > *tail_cap_) tail_.erase(0, tail_.size() - *tail_cap_);
  c.truncated = total_ > head_.size() + tail_.size();
  c.data = std::move(head_);
  c.data += tail_;
  head_.clear();
  tail_.clear();
  total_ = 0;
  return c;
}

namespace {

// A CLOEXEC pipe whose end `ours` (0 read, 1 write) is non-blocking; the
// child's end stays blocking, as a command expects of its stdio.
Result<std::pair<Fd, Fd>> make_pipe(int ours) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return fail_errno();
  Fd r(p[0]), w(p[1]);
  int fd = ours == 0 ? r.get() : w.get();
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return fail_errno();
  return std::pair<Fd, Fd>{std::move(r), std::move(w)};
}

}  // namespace

Result<Capture> Capture::open(const CaptureOptions& o) {
  Capture c(o.limit);
  if (o.input) {
    auto p = make_pipe(1);
    if (!p) return std::unexpected(p.error());
    c.child_[0] = std::move(p->first);
    c.in_.fd = std::move(p->second);
    c.input_ = *o.input;
  }
  if (o.out || o.err_to_out) {
    auto p = make_pipe(0);
    if (!p) return std::unexpected(p.error());
    c.out_.fd = std::move(p->first);
    c.child_[1] = std::move(p->second);
  }
  if (o.err_to_out) {
    c.child_[2] = Fd(::fcntl(c.child_[1].get(), F_DUPFD_CLOEXEC, 3));
    if (!c.child_[2]) return fail_errno();
  } else if (o.err) {
    auto p = make_pipe(0);
    if (!p) return std::unexpected(p.error());
    c.err_.fd = std::move(p->first);
    c.child_[2] = std::move(p->second);
  }
  return c;
}

void Capture::close_child_ends() noexcept {
  for (Fd& f : child_) f.reset();
}

std::vector<pollfd> Capture::pollfds() const {
  std::vector<pollfd> v;
  if (in_.fd && !in_.finished) v.push_back({in_.fd.get(), POLLOUT, 0});
  if (out_.fd && !out_.finished) v.push_back({out_.fd.get(), POLLIN, 0});
  if (err_.fd && !err_.finished) v.push_back({err_.fd.get(), POLLIN, 0});
  return v;
}

bool Capture::read_some(Stream& s, BoundedBuffer& buf) {
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(s.fd.get(), chunk, sizeof chunk);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return false;
    return true;  // EOF, or an error that will not go away
  }
}

// A command that closes its stdin early must not SIGPIPE its caller (a host
// process may not ignore SIGPIPE): the signal is blocked around the write
// and a SIGPIPE it raised is consumed, so the write just fails with EPIPE.
bool Capture::write_some() {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  (void)::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  sigset_t pending;
  sigemptyset(&pending);
  (void)::sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  bool finished = write_unblocked();
  if (errno == EPIPE && !was_pending) {
    const timespec zero{};
    (void)::sigtimedwait(&pipe_set, nullptr, &zero);
  }
  (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return finished;
}

bool Capture::write_unblocked() {
  errno = 0;
  while (input_off_ < input_.size()) {
    size_t len = std::min<size_t>(input_.size() - input_off_, 1 << 20);
    ssize_t n = ::write(in_.fd.get(), input_.data() + input_off_, len);
    if (n > 0) {
      input_off_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return false;
    return true;  // EPIPE: the command closed its stdin; the rest is moot
  }
  errno = 0;
  return true;
}

std::vector<int> Capture::pump() {
  std::vector<int> done;
  if (in_.fd && !in_.finished && write_some()) {
    in_.finished = true;
    done.push_back(in_.fd.get());
  }
  if (out_.fd && !out_.finished && read_some(out_, out_buf_)) {
    out_.finished = true;
    done.push_back(out_.fd.get());
  }
  if (err_.fd && !err_.finished && read_some(err_, err_buf_)) {
    err_.finished = true;
    done.push_back(err_.fd.get());
  }
  return done;
}

void Capture::close_finished() noexcept {
  for (Stream* s : {&in_, &out_, &err_})
    if (s->finished) s->fd.reset();
}

void Capture::drain() {
  // No reader is left for stdin once the tree is gone.
  in_.finished = true;
  (void)pump();
  out_.finished = err_.finished = true;
  close_finished();
}

}  // namespace pmon
