// SPDX-License-Identifier: Apache-2.0
#include "core/result.h"

#include <algorithm>

#include "core/units.h"

namespace pmon {

std::string to_string(const Fate& f) {
  switch (f.kind) {
    case Fate::Kind::unknown: return "";
    case Fate::Kind::signalled: return signal_name(f.signal);
    case Fate::Kind::killed: return "SIGKILL";
    case Fate::Kind::waited: return "waited";
    case Fate::Kind::survived: return "survived";
  }
  return "";
}

Fate fate_from_string(std::string_view s) {
  if (s == "waited") return Fate::waited();
  if (s == "survived") return Fate::survived();
  if (s.starts_with("SIG"))
    if (auto sig = parse_signal(s)) return Fate::signalled_by(*sig);
  return {};
}

int RunResult::status() const noexcept {
  if (outcome == Outcome::not_started) return error ? exit_status(*error) : 125;
  if (!cleanup_verified) return 125;
  switch (outcome) {
    case Outcome::not_started: return error ? exit_status(*error) : 125;
    case Outcome::timeout: return 124;
    // Cancelled without a signal (the parent exited): as a shell whose
    // terminal hung up.
    case Outcome::cancelled: return 128 + (cancel_signal != 0 ? cancel_signal : SIGHUP);
    case Outcome::signaled: return 128 + signal.value_or(0);
    case Outcome::exited: return exit_code.value_or(0);
  }
  return 125;
}

RunResult not_started(std::vector<std::string> command, ConfineKind confinement, const Error& err,
                      std::chrono::system_clock::time_point started_at) {
  RunResult r;
  r.command = std::move(command);
  r.confinement = confinement;
  r.started_at = started_at;
  r.duration_ms = std::max(0.0, std::chrono::duration<double, std::milli>(
                                    std::chrono::system_clock::now() - started_at).count());
  r.outcome = Outcome::not_started;
  r.error = err;
  // A child whose exec failed is reaped before the error is returned.
  r.cleanup_verified = true;
  return r;
}

void merge_escaped(std::vector<Leftover>& leftovers, std::vector<Leftover>& escaped) {
  std::erase_if(escaped, [&](const Leftover& e) {
    for (Leftover& l : leftovers)
      if (l.pid == e.pid && l.start_time == e.start_time) {
        l.fate = e.fate;
        return true;
      }
    return false;
  });
}

}  // namespace pmon
