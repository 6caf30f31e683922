// SPDX-License-Identifier: Apache-2.0
// What both front ends (serve/methods.h: JSON-RPC, serve/mcp_adapter.h:
// MCP) are: the lines of a client in, answers out, on the one job table;
// each is told what is owed to its waiting requests (Front).
#pragma once

#include <cstdint>
#include <string_view>

#include "jobs/answers.h"
#include "jobs/job_table.h"
#include "serve/connections.h"

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

}  // namespace pmon::serve
