// SPDX-License-Identifier: Apache-2.0
// What both front ends (serve/methods.h: JSON-RPC, serve/mcp_adapter.h:
// MCP) are: the lines of a client in, answers out, on the one job table;
// each is told what is owed to its waiting requests (Front).
#pragma once

#include <cstdint>
#include <string_view>

#include "serve/answers.h"
#include "serve/connections.h"
#include "serve/job_table.h"

namespace pmon::serve {

class FrontEnd : public Front {
 public:
  FrontEnd(JobTable& jobs, Connections& conns) : jobs_(jobs), conns_(conns) {}

  // One line of a client: a request answered now or later, a
  // notification, or what is wrong with it.
  virtual void on_line(Conn& c, std::string_view line) = 0;

  bool backed_up(uint64_t conn) const override { return conns_.backed_up(conn); }

 protected:
  static Asker asker(const Conn& c, const Json& id) { return {c.id, c.sock.get(), c.waiting, id}; }

  JobTable& jobs_;
  Connections& conns_;
};

// A front end whose requests come from threads of its own (sandboxd's gRPC
// handlers) instead of the service's connections: they post work, which
// runs on the service's thread, where the job table is.
class ThreadedFront : public Front {
 public:
  // Readable when work has been posted.
  virtual int wake_fd() const = 0;
  // On the service's thread, before any work runs: the table to work on.
  virtual void attach(JobTable& jobs) = 0;
  // On the service's thread: what was posted.
  virtual void run_posted() = 0;
  // The service is stopping (a signal, its parent's death): every job is
  // being stopped, and nothing new is started.
  virtual void closing() = 0;
  bool backed_up(uint64_t) const override { return false; }
};

}  // namespace pmon::serve
