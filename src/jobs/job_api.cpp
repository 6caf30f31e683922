// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_api.h"

#include <nlohmann/json.hpp>

namespace pmon::serve {

std::string words(const Error& e, std::string_view noun) {
  using F = Errc;
  const std::string job = std::string(noun) + " '" + e.job + "'";
  const std::string port = e.port ? "TCP port " + std::to_string(*e.port) : std::string("any TCP port");
  switch (e.code) {
    case F::unknown_job: return "unknown " + job;
    case F::no_stdin:
      if (e.text == "null")
        return job + " has /dev/null as its stdin (the default): to write to a job, start it with stdin: \"pipe\" (or a pty)";
      return job + " has no open stdin: it was closed (a write with eof), or the job has ended";
    case F::stdin_full:
      if (!e.text.empty())
        return job + " cannot take more stdin now: the service's memory budget for jobs' stdin not yet read and "
                     "for streams is used up (" + e.text + " bytes, a sixteenth of --memory-budget); write again "
                     "once jobs have read their input, or start the service with a larger --memory-budget";
      return job + " is not reading its stdin; try again later";
    case F::no_pty: return job + " has no pseudo-terminal";
    case F::job_ended: return job + " has ended";
    case F::cannot_resize: return "cannot resize " + job + ": " + e.text;
    case F::still_running: return job + " is still running; its report is made when it ends";
    case F::never_listened: return job + " ended before it listened on " + port;
    case F::did_not_listen: return job + " did not listen on " + port + " within " + std::to_string(e.ms) + " ms";
    case F::owner_stopping:
      return job + ", which this request comes from, is stopping; a job started from inside a job ends with it";
    case F::too_many_jobs:
      // A model never releases what is over (MCP's "job"): it stops what runs.
      if (noun == "job") return "too many running jobs (at most " + e.text + "); stop some with kill first";
      return "too many jobs (at most " + e.text + "); release some first";
    case F::no_such_job: {
      std::string what = std::string("no running ") + std::string(noun) + " of yours";
      if (!e.text.empty()) what += " is named '" + e.text + "'" + (e.port ? " and" : "");
      if (e.port) what += " listens on " + port;
      return what;
    }
    default: break;
  }
  return render(e, kJobServiceWords);
}

namespace {

// A job's errors by the name a client reads in error.data.reason, and what
// its text is there (the field it goes in).
struct Reason {
  Errc code;
  const char* name;
  const char* text_field;  // nullptr: it has none
};
constexpr Reason kReasons[] = {
    {Errc::unknown_job, "unknownTerminal", nullptr},   {Errc::no_stdin, "noStdin", "stdin"},
    {Errc::stdin_full, "stdinFull", "budget"},         {Errc::no_pty, "noPty", nullptr},
    {Errc::job_ended, "terminalEnded", nullptr},       {Errc::cannot_resize, "cannotResize", "detail"},
    {Errc::still_running, "stillRunning", nullptr},    {Errc::never_listened, "neverListened", nullptr},
    {Errc::did_not_listen, "didNotListen", nullptr},   {Errc::owner_stopping, "ownerStopping", nullptr},
    {Errc::no_such_job, "noSuchTerminal", "name"},     {Errc::too_many_jobs, "tooManyTerminals", "limit"},
};

}  // namespace

nlohmann::json error_data(const Error& e) {
  for (const Reason& r : kReasons) {
    if (r.code != e.code) continue;
    nlohmann::json d = {{"reason", r.name}};
    if (!e.job.empty()) d["terminalId"] = e.job;
    if (e.port) d["port"] = *e.port;
    if (e.code == Errc::did_not_listen) d["timeoutMs"] = e.ms;
    if (r.text_field != nullptr && !e.text.empty()) d[r.text_field] = e.text;
    return d;
  }
  return nullptr;
}

std::optional<Error> error_from_data(const nlohmann::json& data) {
  if (!data.is_object() || !data.contains("reason") || !data["reason"].is_string()) return std::nullopt;
  const std::string name = data["reason"].get<std::string>();
  for (const Reason& r : kReasons) {
    if (name != r.name) continue;
    Error e;
    e.code = r.code;
    if (data.contains("terminalId") && data["terminalId"].is_string()) e.job = data["terminalId"].get<std::string>();
    if (data.contains("port") && data["port"].is_number_unsigned()) e.port = data["port"].get<uint16_t>();
    if (data.contains("timeoutMs") && data["timeoutMs"].is_number_unsigned()) e.ms = data["timeoutMs"].get<uint64_t>();
    if (r.text_field != nullptr && data.contains(r.text_field) && data[r.text_field].is_string())
      e.text = data[r.text_field].get<std::string>();
    return e;
  }
  return std::nullopt;
}

}  // namespace pmon::serve
