// SPDX-License-Identifier: Apache-2.0
// Output capture of one call: pipes the child gets as stdin/stdout/stderr,
// read by whoever waits for the call (run_call's poll loop, or the binding's
// event loop), so capture never needs a thread and never blocks the stop.
// Once the tree is stopped and verified empty every writer is dead, so the
// final drain() reaches EOF; it reads non-blockingly, so an escapee of a weak
// boundary that still holds a pipe cannot hang it either.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sys/fd.h"
#include "sys/result.h"

namespace pmon {

struct CaptureOptions {
  bool out = false;         // stdout into a pipe
  bool err = false;         // stderr into a pipe
  bool err_to_out = false;  // stderr into stdout's pipe (subprocess.STDOUT)
  std::optional<std::string> input;  // written to stdin through a pipe, then EOF
  // Per stream: at most this many bytes are kept, the first half and the
  // last half of what was written; the rest is counted, not stored.
  std::optional<size_t> limit;
};

// What one stream wrote: all of it, or its head and tail when truncated.
struct Captured {
  std::string data;
  uint64_t total = 0;    // bytes the command wrote to the stream
  bool truncated = false;
};

// Keeps the first `head` and the last `tail` bytes of a stream.
class BoundedBuffer {
 public:
  explicit BoundedBuffer(std::optional<size_t> limit);
  void append(const char* p, size_t n);
  Captured take();
  uint64_t total() const noexcept { return total_; }

 private:
  std::optional<size_t> head_cap_, tail_cap_;
  std::string head_, tail_;
  uint64_t total_ = 0;
};

class Capture {
 public:
  static Result<Capture> open(const CaptureOptions& o);

  Capture(Capture&&) noexcept = default;
  Capture& operator=(Capture&&) noexcept = default;

  // The child's ends, for SpawnSpec::stdio (-1: not captured).
  int child_fd(int stream) const noexcept { return child_[stream].get(); }
  // Our copies of the child's ends must go once it has them, or EOF never comes.
  void close_child_ends() noexcept;

  // Our live ends, with the events to wait for (POLLIN / POLLOUT).
  std::vector<pollfd> pollfds() const;
  // Reads what is there and writes what stdin takes, never blocking.
  // Returns the fds that are finished (EOF, error, input all written); they
  // stay open until close_finished() so an event loop can unregister first.
  std::vector<int> pump();
  void close_finished() noexcept;

  // After the tree is gone: everything left in the pipes, up to EOF or, for
  // a writer outside a weak boundary, up to what is there now.
  void drain();

  // Bytes read from the command's stdout and stderr so far, kept or not
  // (grown: it printed something).
  uint64_t bytes_read() const noexcept { return out_buf_.total() + err_buf_.total(); }

  Captured take_out() { return out_buf_.take(); }
  Captured take_err() { return err_buf_.take(); }

 private:
  Capture(std::optional<size_t> limit) : out_buf_(limit), err_buf_(limit) {}

  struct Stream {
    Fd fd;
    bool finished = false;
  };
  bool read_some(Stream& s, BoundedBuffer& buf);  // true: finished
  bool write_some();                              // true: finished
  bool write_unblocked();

  Fd child_[3];
  Stream in_, out_, err_;
  std::string input_;
  size_t input_off_ = 0;
  BoundedBuffer out_buf_, err_buf_;
};

}  // namespace pmon
