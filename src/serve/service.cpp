// SPDX-License-Identifier: Apache-2.0
// What wires pmon serve's and pmon mcp's parts: the connections hand each
// line to the front end (JSON-RPC methods, or MCP), which answers it on the
// job table; the table hands what waiting requests are owed back to that
// front end. The loop (signals, the parent's death, the timer, the crash
// guard, tidying) is the job engine's (jobs/service_loop.h); a service
// whose requests come from threads (pmon sandboxd) has no connections here.
#include "serve/service.h"

#include <algorithm>

#include "jobs/job_table.h"
#include "jobs/poller.h"
#include "jobs/service_loop.h"
#include "serve/connections.h"
#include "serve/mcp_adapter.h"
#include "serve/methods.h"

namespace pmon::serve {

namespace {

class Service final : private ConnEvents, private LoopFront {
 public:
  Service(Backend& backend, const ServeOptions& opts)
      : opts_(opts),
        conns_(opts_, poller_, *this),
        jobs_(backend, opts_, poller_, conns_.waiting(), spawn_base_),
        methods_(jobs_, conns_),
        mcp_(jobs_, conns_),
        front_(opts_.mcp ? static_cast<FrontEnd*>(&mcp_) : &methods_),
        loop_(backend, opts_, poller_, spawn_base_, jobs_, this) {
    jobs_.set_front(front_);
    // (the jobs' stdin and streams are held within the connections' share)
    jobs_.answers().set_room([this] {
      const size_t room = conns_.reply_room();
      return room - std::min(room, jobs_.io_used());
    });
  }
  int run() { return loop_.run(); }

 private:
  // ConnEvents
  void on_line(Conn& c, std::string_view line) override { front_->on_line(c, line); }
  void on_closed(uint64_t conn) override { jobs_.connection_closed(conn); }
  void on_stdin_end() override { loop_.begin_shutdown(); }

  // LoopFront: the connections.
  bool listen() override { return opts_.listen_fd < 0 || conns_.open_listener(); }
  bool open_input() override { return !opts_.stdio || conns_.open_stdio(); }
  void on_event(uint64_t t, uint32_t events) override {
    if (tag_kind(t) == Tag::listener) conns_.on_accept();
    else conns_.on_event(t, events);
  }
  int wait_ms(int pause_ms) const override {
    if (conns_.resuming()) return 0;
    if (conns_.deferred()) return conns_.deferred_slice_was_full() ? pause_ms : 0;
    return -1;
  }
  void before_jobs() override {
    conns_.run_deferred();
    conns_.resume_reading();
  }
  void after_jobs() override { conns_.flush_sends(); }
  void end_turn() override { conns_.drop_doomed(); }
  void stop_accepting() override { conns_.stop_accepting(); }
  void last_words() override { conns_.last_words(); }

  ServeOptions opts_;
  Poller poller_;
  // What our jobs' children reset before exec and the open-files limit
  // they get back (filled in by the loop before the first job).
  SpawnBase spawn_base_;
  Connections conns_;  // before jobs_: its budget of waiting requests outlives their tickets
  JobTable jobs_;
  Methods methods_;
  McpAdapter mcp_;
  FrontEnd* front_;  // one of the two, as opts_.mcp says
  ServiceLoop loop_;
};

}  // namespace

int serve(Backend& backend, const ServeOptions& opts) {
  if (opts.threaded) return serve_threaded(backend, opts);
  Service s(backend, opts);
  return s.run();
}

}  // namespace pmon::serve
