// SPDX-License-Identifier: Apache-2.0
// Reads the fields of one JSON object (a request's params, a tool's
// arguments) into typed values; the first problem is kept, naming the
// field: "<what>: '<prefix><name>' <why>". Both front ends read with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "confine/limits.h"
#include "jobs/job_api.h"
#include "serve/jsonrpc.h"

namespace pmon::serve {

class FieldReader {
 public:
  explicit FieldReader(const Json& obj, std::string what = "invalid params")
      : obj_(obj), what_(std::move(what)) {}
  const std::optional<std::string>& error() const { return error_; }
  // The same problem as data: the field (with its object's prefix, as
  // "ready.line") and what is wrong with it ("must not be empty").
  struct Problem {
    std::string field;
    std::string why;
  };
  const std::optional<Problem>& problem() const { return problem_; }

  std::optional<std::string> str(const char* name, bool required);
  // A string the kernel gets as a C string (a command, a path, an
  // environment entry): a NUL byte in it would cut it short, so it is refused.
  std::optional<std::string> c_str(const char* name, bool required);
  bool flag(const char* name, bool absent = false);
  // A whole number from 0 to max.
  std::optional<uint64_t> uint(const char* name, bool required, uint64_t max);
  // A whole number from min to max, said as that range when it is not.
  std::optional<uint64_t> in_range(const char* name, uint64_t min, uint64_t max);
  // Seconds (a number, fractions allowed, at most max_seconds) as milliseconds.
  std::optional<uint64_t> seconds_ms(const char* name, uint64_t max_seconds);
  std::vector<std::string> strings(const char* name);
  // An environment as [{name, value}] (JSON-RPC, ACP) or {NAME: value} (MCP).
  std::vector<EnvVar> env_list(const char* name);
  std::vector<EnvVar> env_object(const char* name);
  // A signal by name ("TERM", "SIGTERM") or number.
  std::optional<int> signal(const char* name);
  // A call's limits, each checked as the CLI checks its flag: a size in
  // bytes (a whole number, or a string with K, M, G), a number of
  // processes, a number of cores.
  std::optional<uint64_t> bytes(const char* name);
  std::optional<uint64_t> pids(const char* name);
  std::optional<double> cores(const char* name);
  Limits limits(const char* memory, const char* memory_high, const char* pids, const char* cpu);
  std::optional<PtySize> pty_size(const char* name, bool required);
  // A readiness probe as an object {port?, http?, line?, timeoutMs?,
  // stopOnTimeout?} (JSON-RPC), or from the flat fields of an MCP tool
  // (`timeout_s` in seconds): exactly one of port, http and line, or port
  // with http; a line that is no regular expression is refused here.
  std::optional<ReadyProbe> ready(const char* name);
  std::optional<ReadyProbe> ready_flat(const char* port, const char* http, const char* line, const char* timeout_s);
  // Fields that are no key of `known` are an error (`why`): a misspelt
  // one would otherwise be silently ignored.
  void only(const Json& known, const char* why);
  // The first problem, unless there is one already.
  void bad(const std::string& name, const std::string& why);

 protected:
  // The field, or null when absent or null (an error when required).
  const Json* find(const char* name, bool required);
  // The probe's fields together, checked; `names`: port, http, line.
  std::optional<ReadyProbe> check_ready(ReadyProbe r, bool port, bool http, bool line, const char* const names[3]);
  // Refuses `value` of field `name` when it has a NUL byte; true when it has none.
  bool no_nul(const std::string& name, const std::string& value);

  const Json& obj_;
  std::string what_;
  std::string prefix_;  // for the fields of a nested object: "pty."
  std::optional<std::string> error_;
  std::optional<Problem> problem_;
};

// The view fields of an output read (OutputParams::view), by the names a
// front end gives them; each checked (a bad one is named).
struct ViewFieldNames {
  const char *head, *tail, *offset, *length, *grep, *strip_ansi, *max_line_bytes;
};
void read_view(FieldReader& f, OutputParams& o, const ViewFieldNames& n, bool strip_default = false);

}  // namespace pmon::serve
