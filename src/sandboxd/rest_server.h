// SPDX-License-Identifier: Apache-2.0
// The REST API of pmon sandboxd (the agent-sandbox runtime's filesystem
// and runtime endpoints under /v1): the HTTP routes over files_api.h.
// cpp-httplib does the HTTP; it stays behind this interface.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <utility>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "sandboxd/files_api.h"

namespace pmon::sandboxd {

struct RestOptions {
  std::string host = "0.0.0.0";
  int port = 8080;
  // How long a keep-alive connection may wait for its next request.
  std::chrono::seconds idle_timeout{60};
  // A client that sends or reads nothing for this long is dropped.
  std::chrono::seconds io_timeout{30};
  // Requests served at once (a worker thread each); connections accepted
  // beyond them wait in a queue of `queue` (past it, in the kernel's backlog).
  size_t threads = 16;
  size_t queue = 64;
  // The largest body a request other than PUT /v1/files/... may carry
  // (none of them reads one).
  size_t max_other_body = 64 * 1024;
  // pmon's: how each command's processes are held together ("cgroup",
  // "pidns"), said in /v1/health's "confinement" when set.
  std::string confinement;
  // pmon's POST /v1/reset, when set: its HTTP status and JSON body.
  std::function<std::pair<int, std::string>()> reset;
};

// The variables of `environ` whose names start with `prefix`, without
// those whose names look like credentials (TOKEN, SECRET, KEY, ...): the
// reference withholds them from /v1/metadata whatever the prefix.
std::map<std::string, std::string> metadata_env(char** environ, std::string_view prefix);

class RestServer {
 public:
  RestServer(const Root& root, RestOptions opts, std::map<std::string, std::string> metadata);
  ~RestServer();
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds the port (0: any free one); false when it cannot (in use, no
  // such address).
  bool bind();
  // The port bound.
  int port() const;
  // Serves until stop(); false when the server ended on its own.
  bool listen();
  // Shutting down: /v1/health answers 503, new file requests too; the
  // ones in flight go on.
  void begin_shutdown();
  // Waits until no file request is in flight, or `deadline`; true when none is.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  // Ends the transfers still going (their temporary files are removed),
  // closes every connection and makes listen() return.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pmon::sandboxd
