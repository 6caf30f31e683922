// SPDX-License-Identifier: Apache-2.0
#include "core/end_words.h"

#include <array>

#include "core/units.h"

namespace pmon {

namespace {

using O = Outcome;
using E = CallEnd;

// The one table. A row a CallEnd, in its order.
// clang-format off
constexpr std::array<EndWords, kCallEnds> kWords{{
    // end; the report's outcome, timed_out, stop.reason; stoppedBy; how it was stopped,
    // after "the job was " and after "was already "; MCP's task cancelled
    {E::main_exited,        O::exited,     false,  "",               "",                   "", "", false},
    {E::timeout,            O::timeout,    true,   "timeout",        "timeout",            "stopped by its timeout", "", false},
    {E::idle_timeout,       O::timeout,    true,   "idle_timeout",   "idle timeout",       "stopped: it printed nothing for its idle timeout", "", false},
    {E::cancel,             O::cancelled,  false,  "cancel",         "",                   "", "", false},
    {E::parent_exited,      O::cancelled,  false,  "parent_exited",  "",                   "", "", false},
    {E::kill,               O::cancelled,  false,  "cancel",         "kill",               "", "stopped", true},
    {E::release,            O::cancelled,  false,  "cancel",         "release",            "", "", true},
    {E::replaced,           O::cancelled,  false,  "cancel",         "replaced",           "", "", true},
    {E::owner_ended,        O::cancelled,  false,  "cancel",         "owner call ended",   "", "", false},
    {E::not_ready,          O::cancelled,  false,  "cancel",         "not ready",          "", "", false},
    {E::session_closed,     O::cancelled,  false,  "cancel",         "session closed",     "", "", false},
    {E::request_cancelled,  O::cancelled,  false,  "cancel",         "cancelled",          "", "", false},
    {E::connection_closed,  O::cancelled,  false,  "cancel",         "connection closed",  "", "", false},
    {E::service_stopped,    O::cancelled,  false,  "cancel",         "service stopped",    "", "", false},
}};
// clang-format on

constexpr bool in_order() {
  for (size_t i = 0; i < kWords.size(); ++i)
    if (static_cast<size_t>(kWords[i].end) != i) return false;
  return true;
}
static_assert(in_order(), "a row for every CallEnd, in its order");

std::string how_of(const EndWords& w) {
  return w.stopped_how.empty() ? "stopped (" + std::string(w.stopped_by) + ")" : std::string(w.stopped_how);
}

}  // namespace

// The report's outcome.
std::string_view to_string(Outcome o) noexcept {
  switch (o) {
    case Outcome::exited: return "exited";
    case Outcome::signaled: return "signaled";
    case Outcome::timeout: return "timeout";
    case Outcome::cancelled: return "cancelled";
    case Outcome::not_started: return "not_started";
  }
  return "?";
}

const EndWords& words_of(CallEnd e) noexcept { return kWords[static_cast<size_t>(e)]; }

bool is_time_up(CallEnd e) noexcept { return words_of(e).timed_out; }

bool is_cancel(CallEnd e) noexcept { return words_of(e).outcome == Outcome::cancelled; }

std::string_view stop_reason_word(StopReason r, CallEnd end) noexcept {
  switch (r) {
    case StopReason::none: return "";
    case StopReason::leftovers: return "leftovers";
    case StopReason::escaped: return "escaped";
    case StopReason::ended: return words_of(end).stop_reason;
  }
  return "";
}

Outcome outcome_of(CallEnd end, bool main_signaled) noexcept {
  if (end == CallEnd::main_exited) return main_signaled ? Outcome::signaled : Outcome::exited;
  return words_of(end).outcome;
}

std::string job_ended_sentence(std::optional<CallEnd> stopped_by, const RunResult& r) {
  if (stopped_by && !words_of(*stopped_by).stopped_by.empty()) return "the job was " + how_of(words_of(*stopped_by));
  if (r.exit_code) return "the job exited with status " + std::to_string(*r.exit_code);
  if (r.signal) return "the job was killed by " + signal_name(*r.signal);
  return "the job ended";
}

std::string already_ended_words(std::string_view by) {
  const auto e = end_from_stopped_by(by);
  if (!e) return "was already stopped (" + std::string(by) + ")";
  const EndWords& w = words_of(*e);
  return "was already " + (w.already_how.empty() ? how_of(w) : std::string(w.already_how));
}

std::optional<CallEnd> end_from_stopped_by(std::string_view word) noexcept {
  if (word.empty()) return std::nullopt;
  for (const EndWords& w : kWords)
    if (w.stopped_by == word) return w.end;
  return std::nullopt;
}

}  // namespace pmon
