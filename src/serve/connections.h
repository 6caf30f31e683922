// SPDX-License-Identifier: Apache-2.0
// The service's clients: a connection on the listening socket, or --stdio.
// Requests are read a line at a time (at most max_line bytes, within the
// memory budget's share for half-read lines) and handed up; replies are
// queued whole and written as the client takes them, an fd passed with
// one where it goes (SCM_RIGHTS). A client whose replies back up is not
// read until they drain. Nothing here knows what a request means.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jobs/options.h"
#include "jobs/poller.h"
#include "jobs/request_budget.h"
#include "serve/jsonrpc.h"
#include "sys/fd.h"

namespace pmon::serve {

struct Conn {
  uint64_t id = 0;
  Fd sock;          // a socket connection; for --stdio the two fds below
  int in_fd = -1;
  int out_fd = -1;
  std::string inbuf;
  size_t inbuf_charged = 0;  // what inbuf counts against the budget (its capacity)
  bool discarding = false;   // inside a line that was too long
  // MCP: the least severe log level its client wants (logging/setLevel;
  // RFC 5424's order, 0 debug .. 7 emergency), 1 info until it says.
  int mcp_log_level = 1;
  // Its requests waiting for their answer (see RequestBudget).
  std::shared_ptr<RequestBudget::Tally> waiting = std::make_shared<RequestBudget::Tally>();
  // A message, and the fd that goes with its first byte (terminal/output's
  // stream: SCM_RIGHTS).
  struct Out {
    std::string text;
    Fd fd;
  };
  std::deque<Out> outq;  // whole messages, the first sent from out_off on
  size_t out_off = 0;
  bool passes_fds = false;   // a Unix socket: fds can go with a reply
  size_t queued_behind = 0;  // bytes of the messages after the first
  size_t queued = 0;         // bytes of all the messages in outq
  // Input backpressure: its requests are not read while its replies have
  // not drained (Connections::backed_up); --stdio keeps what it read meanwhile.
  bool reading_paused = false;
  // A request of it answers in slices (Connections::defer): the next are
  // read once it has answered.
  bool deferring = false;
  std::string held;
  bool out_watched = false;
  bool flush_due = false;  // queued to be written after this round of events
  // A socket's bytes are peeked, handled, and read out only once the
  // replies are written (consume_peeked): reading them first would free
  // room in the client's send buffer and wake it, waiting for its reply,
  // for nothing (AF_UNIX wakes a writer on every byte read).
  size_t peeked = 0;
  bool doomed = false;  // dropped after this batch of events
};

// What the connections hand up.
class ConnEvents {
 public:
  virtual ~ConnEvents() = default;
  virtual void on_line(Conn& c, std::string_view line) = 0;
  // The connection is gone (dropped between events, never inside a handler).
  virtual void on_closed(uint64_t conn) = 0;
  // --stdio's input ended: the service stops.
  virtual void on_stdin_end() = 0;
};

class Connections {
 public:
  Connections(const ServeOptions& opts, Poller& poller, ConnEvents& events);

  // The listener (with its retry timer) watched, or the --stdio connection.
  bool open_listener();
  bool open_stdio();
  void on_accept();
  void stop_accepting();
  void on_event(uint64_t t, uint32_t events);

  // Queues a reply (an empty one is nothing); written after this round of
  // events. `fd` goes with its first byte.
  void send(uint64_t conn, std::string line, Fd fd = Fd());
  // Whether the connection's replies not yet sent (and `adding` more) are
  // as many as it may hold before it is read again (kConnQueueBound).
  bool backed_up(uint64_t conn) const;
  // What the last round of events left: lines held while paused, replies
  // to write, peeked bytes to read out, connections to drop.
  void resume_reading();
  // --stdio held lines to take in the next round (the loop does not wait).
  bool resuming() const { return !to_resume_.empty(); }
  void flush_sends();
  void drop_doomed();
  // Last words to the clients still here, without waiting for slow ones.
  void last_words();

  // A request whose answer takes long to make (a grep of a large spool,
  // the list of a job of thousands of processes) is made in slices:
  // `step(until)` goes on until it has sent its answer (true) or the clock
  // passes `until`. Meanwhile its connection is not read, so its answers
  // keep the order of its requests; a connection that goes drops it.
  using Step = std::function<bool(int64_t until)>;
  void defer(uint64_t conn, Step step);
  bool deferred() const { return !deferred_.empty(); }
  // The deferred steps in turn, for about kConnSliceNs in all.
  void run_deferred();
  // The last run_deferred took its whole time (the loop then lets others
  // have the CPU a moment, as after a full slice of stops).
  bool deferred_slice_was_full() const { return deferred_full_; }

  RequestBudget& waiting() { return waiting_; }
  // What the connections' share of the memory budget has left for replies.
  size_t reply_room() const {
    const size_t used = queued_total_ + lines_held_ + waiting_.used();
    return opts_.queue_share() - std::min(opts_.queue_share(), used);
  }
  // The connection, while it is open (null once gone).
  Conn* find(uint64_t conn);
  // Storage of a reply just sent, for the next large one.
  std::string take_line_spare() { return std::move(line_spare_); }

 private:
  void on_readable(Conn& c);
  size_t take_lines(Conn& c, const char* buf, size_t n);
  bool hold_line(Conn& c, size_t want);
  void note_inbuf(Conn& c);
  void handle_line(Conn& c, std::string_view line);
  void tell_and_close(Conn& c, const RpcError& e);
  bool backed_up(const Conn& c) const;
  void pause_reading(Conn& c);
  void unpause_drained();
  void watch(Conn& c);
  void on_writable(Conn& c);
  void consume_peeked(Conn& c);
  void schedule_drop(Conn& c);
  void drop(uint64_t conn);

  const ServeOptions& opts_;
  Poller& poller_;
  ConnEvents& events_;
  std::map<uint64_t, Conn> conns_;
  uint64_t next_conn_ = 1;
  size_t queued_total_ = 0;  // bytes of replies not yet sent, all connections
  size_t lines_held_ = 0;    // bytes of requests half read (inbuf), all connections
  RequestBudget waiting_;    // requests waiting for their answer
  std::vector<uint64_t> paused_;     // connections not read (input backpressure)
  std::vector<uint64_t> to_resume_;  // --stdio: read again, from what it held
  std::vector<uint64_t> doomed_;
  std::vector<uint64_t> to_flush_;
  std::vector<uint64_t> to_consume_;
  std::deque<std::pair<uint64_t, Step>> deferred_;
  bool deferred_full_ = false;
  std::string line_spare_;
  // Out of fds, the listener is not watched (a connection waiting in its
  // backlog would wake us at once, for ever); this timer, tagged as the
  // listener, brings it back.
  Fd accept_retry_;
  bool accept_paused_ = false;
  bool accepting_ = true;
  // --stdio on a regular file or /dev/null, which epoll refuses (a read of
  // it never waits): an eventfd that is always ready stands for it, so it
  // is read to its end in turns with everything else.
  Fd stdin_ready_;
};

}  // namespace pmon::serve
