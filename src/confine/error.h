// SPDX-License-Identifier: Apache-2.0
// The one error type above the syscall layer: a code and the facts. Below it
// sys/ speaks errno (sys/result.h); confine/, core/, jobs/ and serve/ return an
// Error, and each front end turns it into its own words once, at its edge:
// the CLI as "pmon: ..." and an exit status, the service as a JSON-RPC error
// or an MCP tool error naming a "terminal" or a "job", the Python module as
// an exception naming its keyword arguments.
//
// A setting the reader may change (the cgroup root, ...) is a fact too: the
// text holds a token for it (setting_token()), and render() puts in the
// reader's word for it (a flag, a keyword argument).
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "confine/settings.h"

namespace pmon {

enum class Errc : uint8_t {
  other,             // the text says it all
  system,            // pmon's own work failed: the text names it, err the errno
  not_found,         // the command was not found (exit status 127)
  not_executable,    // the command cannot be executed (126)
  unsupported,       // the host lacks what a backend needs
  confinement,       // a limit cannot be set as asked
  invalid_argument,  // the request is wrong: the text names the value
  no_init_exe,       // the pmon executable a PID namespace's init runs was not found

  // A job's, in the service's job API (`job` is its id).
  unknown_job,     // no job has that id
  no_stdin,        // its stdin is closed
  stdin_full,      // it does not read what was written to it
  no_pty,          // a resize of a job on pipes
  job_ended,       // a resize of a job that is over
  cannot_resize,   // text: why
  still_running,   // a report asked for too soon
  never_listened,  // it ended before it listened on `port` (none: any)
  did_not_listen,  // it did not listen on `port` within `ms`
  owner_stopping,  // the job a create comes from is stopping
  no_such_job,     // no running job of the caller's is named `text` or listens on `port`
  too_many_jobs,   // the service holds its most jobs (`text`: how many)
};

struct Error {
  Errc code = Errc::other;
  int err = 0;       // the errno, when a syscall failed
  std::string text;  // the facts in words (may hold setting tokens)
  std::string job;   // a job's id
  std::optional<uint16_t> port;
  uint64_t ms = 0;

  // A whole line.
  static Error line(std::string text, Errc code = Errc::other) {
    Error e;
    e.code = code;
    e.text = std::move(text);
    return e;
  }
  // `what` failed with errno `err`: "what: <the errno's words>".
  static Error system(int err, std::string_view what);
  // pmon's own work failed with errno `err`; `text` says what and why.
  static Error failed(int err, std::string text) {
    Error e;
    e.code = Errc::system;
    e.err = err;
    e.text = std::move(text);
    return e;
  }
  // A fault of job `id`.
  static Error of(Errc code, std::string id) {
    Error e;
    e.code = code;
    e.job = std::move(id);
    return e;
  }
};

// The text with `prefix` before it.
inline Error prefixed(std::string_view prefix, Error e) {
  e.text.insert(0, prefix);
  return e;
}

// A backend that cannot work here, and why.
inline std::unexpected<Error> unsupported(std::string text) {
  return std::unexpected(Error::line(std::move(text), Errc::unsupported));
}

// The exit status a command line gives for it: 127 not found, 126 not
// executable, 125 otherwise (pmon's own failure).
int exit_status(const Error& e) noexcept;

// Stands in the text for the reader's word for `s`.
std::string setting_token(Setting s);

// The text with every setting named in `words`. The job faults are worded
// by the service (jobs/job_api.h), which knows what its clients call a job.
std::string render(const Error& e, const SettingWords& words = kCommandLineWords);
std::string render_text(std::string_view text, const SettingWords& words = kCommandLineWords);
std::vector<std::string> render_all(const std::vector<Error>& errors, const SettingWords& words = kCommandLineWords);

}  // namespace pmon
