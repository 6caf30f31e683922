// SPDX-License-Identifier: Apache-2.0
// pmon run --pty: the command runs on a new pseudo-terminal, and a thread of
// pmon's copies the master's output to pmon's stdout and pmon's stdin to the
// master (pmon's terminal in raw mode when stdin is one, so keys reach the
// command as typed). pmon's run loop stays as it is: it ends with the tree,
// and then finish() takes what the pty still holds, without waiting for a
// holder of the slave that outlived the stop (a weak boundary's escapee).
#pragma once

#include <termios.h>

#include <memory>
#include <string>
#include <thread>

#include "sys/fd.h"
#include "sys/pty.h"
#include "sys/result.h"

namespace pmon::cli {

class PtyRelay {
 public:
  // Opens the pty, sized like pmon's own terminal (24x80 without one), and
  // starts copying; a resize of pmon's terminal later resizes the pty.
  static Result<std::unique_ptr<PtyRelay>> start();
  ~PtyRelay();

  // For SpawnSpec::pty_slave.
  int slave_fd() const noexcept { return pty_.slave.get(); }
  // Once the tree is gone: copies what the pty still holds, stops the
  // thread, puts pmon's terminal back as it was.
  void finish();

 private:
  PtyRelay() = default;
  void loop();
  void pump_output();
  bool pump_input();
  void write_out(const char* p, size_t n);
  void pass_resize();

  sys::PtyPair pty_;
  Fd stop_;               // eventfd: readable means "drain and end"
  Fd winch_;              // signalfd for SIGWINCH, when pmon has a terminal
  int term_fd_ = -1;      // pmon's terminal (0, 1 or 2), whose size the pty follows
  std::thread thread_;
  bool forward_input_ = false;
  bool stdin_tty_ = false;
  bool raw_ = false;      // saved_ holds pmon's terminal settings
  termios saved_{};
  bool out_broken_ = false;  // pmon's stdout is gone: output is read and dropped
  std::string pending_;      // input the master has not taken yet
  char last_in_ = '\n';
  bool finished_ = false;
};

}  // namespace pmon::cli
