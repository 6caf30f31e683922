// SPDX-License-Identifier: Apache-2.0
// The pmon that ran a call stops the jobs recorded for it (the records of
// jobs/call_records.h) through the services that run them, as a client
// of their JSON-RPC methods.
#pragma once

#include <vector>

#include "core/stopper.h"
#include "jobs/call_records.h"

namespace pmon::serve {

// Stops each recorded job through its service (terminal/kill, which waits
// until its tree is verified gone) and returns its processes as the
// service stopped them: the job's command and what it had left, each with
// what ended it. *verified turns false when a job could not be confirmed
// gone (its service did not answer, or said so).
std::vector<Leftover> stop_recorded_jobs(const std::vector<CallRecord>& records, bool* verified);

}  // namespace pmon::serve
