// SPDX-License-Identifier: Apache-2.0
#include "cli/pty_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace pmon::cli {

namespace {

constexpr size_t kChunk = 65536;

bool set_nonblocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

}  // namespace

Result<std::unique_ptr<PtyRelay>> PtyRelay::start() {
  std::unique_ptr<PtyRelay> r(new PtyRelay);
  winsize ws{};
  unsigned short rows = 24, cols = 80;
  for (int fd : {0, 1, 2}) {
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
      rows = ws.ws_row;
      cols = ws.ws_col;
      r->term_fd_ = fd;
      break;
    }
  }
  auto pty = sys::open_pty(rows, cols);
  if (!pty) return std::unexpected(pty.error());
  r->pty_ = std::move(*pty);
  if (!set_nonblocking(r->pty_.master.get())) return fail_errno();
  r->stop_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!r->stop_) return fail_errno();

  // pmon's stdin is read only when that cannot stop pmon: a terminal whose
  // background we are in would (SIGTTIN); so would changing its settings.
  r->stdin_tty_ = ::isatty(0) == 1;
  r->forward_input_ = ::fcntl(0, F_GETFD) >= 0 && (!r->stdin_tty_ || ::tcgetpgrp(0) == ::getpgrp());
  if (r->stdin_tty_ && r->forward_input_ && ::tcgetattr(0, &r->saved_) == 0) {
    termios raw = r->saved_;
    ::cfmakeraw(&raw);
    if (::tcsetattr(0, TCSANOW, &raw) == 0) r->raw_ = true;
  }

  // A resize of pmon's terminal is passed on to the pty (whose foreground
  // group the kernel then sends SIGWINCH). The signal stays blocked in
  // every thread of pmon, so it waits for the relay's signalfd; the
  // command gets its mask reset before exec.
  if (r->term_fd_ >= 0) {
    sigset_t winch;
    ::sigemptyset(&winch);
    ::sigaddset(&winch, SIGWINCH);
    if (::pthread_sigmask(SIG_BLOCK, &winch, nullptr) == 0)
      r->winch_ = Fd(::signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK));
  }

  // The thread blocks every signal: pmon's signals are read from its
  // signalfd, and a SIGPIPE of a write to a closed stdout stays with the
  // thread (the write fails with EPIPE instead).
  sigset_t all, old;
  ::sigfillset(&all);
  (void)::pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    r->thread_ = std::thread([p = r.get()] { p->loop(); });
  } catch (const std::system_error& e) {
    (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (r->raw_) (void)::tcsetattr(0, TCSANOW, &r->saved_);
    r->raw_ = false;
    return std::unexpected(e.code());
  }
  (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return r;
}

PtyRelay::~PtyRelay() { finish(); }

void PtyRelay::finish() {
  if (finished_) return;
  finished_ = true;
  // Our copy of the slave goes first: with every holder dead the master
  // then reads what is left and EIO.
  pty_.slave.reset();
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  if (raw_) (void)::tcsetattr(0, TCSANOW, &saved_);
  raw_ = false;
}

void PtyRelay::write_out(const char* p, size_t n) {
  while (n > 0 && !out_broken_) {
    ssize_t w = ::write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {  // a non-blocking stdout someone gave us
      pollfd pf{1, POLLOUT, 0};
      (void)::poll(&pf, 1, -1);
      continue;
    }
    if (w <= 0) {
      out_broken_ = true;
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Reads everything the master has now. Never blocks (the master is
// non-blocking): EAGAIN, EIO (no slave holder left) and EOF all end it.
void PtyRelay::pump_output() {
  char buf[kChunk];
  for (;;) {
    ssize_t n = ::read(pty_.master.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    write_out(buf, static_cast<size_t>(n));
  }
}

// Moves pmon's stdin into the master; false once stdin is finished. At the
// end of a stdin that is not a terminal the command gets end-of-file: the
// pty's EOF character (twice when the last line is not finished).
bool PtyRelay::pump_input() {
  char buf[kChunk];
  ssize_t n = ::read(0, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n > 0) {
    pending_.append(buf, static_cast<size_t>(n));
    last_in_ = buf[n - 1];
    return true;
  }
  if (!stdin_tty_) {
    termios t{};
    char eof = ::tcgetattr(pty_.master.get(), &t) == 0 ? static_cast<char>(t.c_cc[VEOF]) : '\x04';
    pending_ += eof;
    if (last_in_ != '\n') pending_ += eof;
  }
  return false;
}

// Gives the pty the size pmon's terminal has now.
void PtyRelay::pass_resize() {
  signalfd_siginfo info;
  while (::read(winch_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
  winsize ws{};
  if (::ioctl(term_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
    (void)::ioctl(pty_.master.get(), TIOCSWINSZ, &ws);
}

void PtyRelay::loop() {
  const int master = pty_.master.get();
  bool input_open = forward_input_;
  bool master_open = true;
  for (;;) {
    pollfd fds[4];
    nfds_t n = 0;
    fds[n++] = {stop_.get(), POLLIN, 0};
    // Before the input of the same wake-up: keys typed after a resize reach
    // a command that already has the new size.
    const nfds_t wi = n;
    if (winch_) fds[n++] = {winch_.get(), POLLIN, 0};
    const nfds_t mi = n;
    if (master_open) fds[n++] = {master, static_cast<short>(POLLIN | (pending_.empty() ? 0 : POLLOUT)), 0};
    // Input waits while the master has not taken the last of it.
    const nfds_t ii = n;
    if (input_open && pending_.empty()) fds[n++] = {0, POLLIN, 0};
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) break;
    if (winch_ && fds[wi].revents != 0) pass_resize();
    if (master_open && fds[mi].revents != 0) {
      if (fds[mi].revents & POLLIN) pump_output();
      if ((fds[mi].revents & POLLOUT) && !pending_.empty()) {
        ssize_t w = ::write(master, pending_.data(), pending_.size());
        if (w > 0) pending_.erase(0, static_cast<size_t>(w));
      }
      // Every holder of the slave is gone (ours too only after finish()).
      if ((fds[mi].revents & (POLLHUP | POLLERR)) && !(fds[mi].revents & POLLIN)) master_open = false;
    }
    if (ii < n && fds[ii].revents != 0) input_open = pump_input();
  }
  // The tree is gone: what the pty holds now is all it will get from it.
  pump_output();
}

}  // namespace pmon::cli
