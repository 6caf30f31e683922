// SPDX-License-Identifier: Apache-2.0
// Why a call ended (CallEnd, core/result.h) in the words of each front
// end: the JSON report (outcome, timed_out, stop.reason), the job
// service's stoppedBy (JSON-RPC; MCP's stopped_by), its sentences, and
// MCP's task status. One table holds them all; nothing else spells them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace pmon {

struct EndWords {
  CallEnd end;
  // The report: "outcome" when the call was stopped for it (an end that
  // the main process made is its own: "exited" or "signaled"); whether it
  // "timed_out"; the stop's "reason".
  Outcome outcome;
  bool timed_out;
  std::string_view stop_reason;
  // The job service: who stopped the job (stoppedBy, MCP's stopped_by;
  // "" for null: it ended by itself, or pmon itself was asked to end).
  std::string_view stopped_by;
  // How it was stopped, in a sentence after "the job was " and after
  // "was already " ("" when none: "stopped (<stopped_by>)").
  std::string_view stopped_how;
  std::string_view already_how;
  // MCP: a task it ended is "cancelled" (else "completed").
  bool task_cancelled;
};

// Its row (every CallEnd has one).
const EndWords& words_of(CallEnd e) noexcept;

// Its time was up (timeout, idle_timeout).
bool is_time_up(CallEnd e) noexcept;
// Someone ended it before its time (a cancel, whoever asked).
bool is_cancel(CallEnd e) noexcept;

// The report's stop.reason ("" for null).
std::string_view stop_reason_word(StopReason r, CallEnd end) noexcept;
// The call's outcome, from its end and whether its main process died by a
// signal (a main process that never ran is not_started, not asked here).
Outcome outcome_of(CallEnd end, bool main_signaled) noexcept;

// A job's end in a sentence: "the job was stopped by its timeout", "the job
// was stopped (kill)", ... ; for an end nobody asked for, from its status.
std::string job_ended_sentence(std::optional<CallEnd> stopped_by, const RunResult& r);
// The same for a job that had ended already, after its id ("was already
// stopped by its timeout"); `by` is the stoppedBy read from the service.
std::string already_ended_words(std::string_view by);

// stoppedBy read back (the CLI's client reads it from the service).
std::optional<CallEnd> end_from_stopped_by(std::string_view word) noexcept;

}  // namespace pmon
