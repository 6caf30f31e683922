// SPDX-License-Identifier: Apache-2.0
// The JSON-RPC front end of pmon serve: each line read into a typed request
// (serve/protocol.h), answered by the handler for its params' type on the
// job table, and the typed result said in terminal/* terms. Requests that
// wait are answered here too, as the job table finds them due.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <variant>

#include "serve/front_end.h"
#include "serve/protocol.h"

namespace pmon::serve {

class Methods final : public FrontEnd {
 public:
  using FrontEnd::FrontEnd;

  void on_line(Conn& c, std::string_view line) override;
  void answer(const Waiter& w, Job& job, Due due) override;
  void job_ended(Job& job) override;
  void created(const Asker& a, const std::expected<Started, Error>& r) override;

 private:
  // What a handler answers: nothing yet (a waiter answers later), a
  // result, an error, a reply line written already (the fast paths), or a
  // result that hands the client an fd.
  struct Later {};
  struct Line {
    std::string text;
  };
  struct WithFd {
    Json result;
    Fd fd;
  };
  using Reply = std::variant<Later, Json, Error, RpcError, Line, WithFd>;

  // One handler a method (the type of its params says which).
  Reply handle(Conn& c, const Json& id, const CreateParams& p);
  Reply handle(Conn& c, const Json& id, const OutputParams& p);
  Reply handle(Conn& c, const Json& id, const WaitForExitParams& p);
  Reply handle(Conn& c, const Json& id, const WriteParams& p);
  Reply handle(Conn& c, const Json& id, const ResizeParams& p);
  Reply handle(Conn& c, const Json& id, const KillParams& p);
  Reply handle(Conn& c, const Json& id, const ReleaseParams& p);
  Reply handle(Conn& c, const Json& id, const ListParams& p);
  Reply handle(Conn& c, const Json& id, const FindParams& p);
  Reply handle(Conn& c, const Json& id, const ReportParams& p);
  Reply handle(Conn& c, const Json& id, const WaitForPortParams& p);
  Reply handle(Conn& c, const Json& id, const SessionCloseParams& p);

  Reply stop(Conn& c, const Json& id, const TerminalParams& p, bool release);
  // The reply to request `id` on the connection, sent (Later: nothing).
  void send(uint64_t conn, const Json& id, Reply a);
  // The request's answer made in slices of the loop (Connections::defer):
  // `step(until)` gives it once made. What it holds meanwhile (about
  // `bytes`) counts as a request waiting for its answer; false, and
  // nothing deferred, when that budget has no room for it.
  bool defer(Conn& c, const Json& id, size_t bytes, std::function<std::optional<Reply>(int64_t until)> step);
  // terminal/output's reply line, written from the read's text (whose
  // storage serves the next read).
  std::string output_line(const Json& id, OutputRead read);
};

}  // namespace pmon::serve
