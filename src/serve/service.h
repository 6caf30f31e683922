// SPDX-License-Identifier: Apache-2.0
// pmon serve: one process, one thread, one epoll, many jobs. Each job is a
// full call (core/run.h Call: its own boundary, stop plan, verification and
// report) started in the background, owned by the session that created it.
#pragma once

#include "confine/boundary.h"
#include "jobs/options.h"

namespace pmon::serve {

// Runs the service until SIGTERM/SIGINT, EOF on stdin (--stdio) or the
// parent's death (die_with_parent); every job is stopped and verified gone
// before it returns. 0 when every job was, 125 otherwise.
// Blocks SIGTERM, SIGINT and SIGHUP (read from a signalfd), ignores SIGPIPE.
int serve(Backend& backend, const ServeOptions& opts);

}  // namespace pmon::serve
