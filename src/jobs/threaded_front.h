// SPDX-License-Identifier: Apache-2.0
// A front end of the job engine that is not a connection of the service's
// (sandboxd's gRPC handlers): its requests come from threads of its own.
#pragma once

#include <cstdint>

#include "jobs/answers.h"
#include "jobs/job_table.h"

namespace pmon::serve {

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
