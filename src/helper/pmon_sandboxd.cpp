// SPDX-License-Identifier: Apache-2.0
// pmon-sandboxd: the daemon 'pmon sandboxd' runs (cli/sandboxd_cmd.cpp
// parses its options, then execs this with them). It is a program of its
// own because it links cpp-httplib, of which Debian has a shared library
// only, and pmon is linked statically.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli.h"
#include "sandboxd/files_api.h"
#include "sandboxd/rest_server.h"

extern char** environ;

namespace pmon::cli {

void die(const std::string& line) {
  std::fprintf(stderr, "pmon: %s\n", line.c_str());
  std::exit(125);
}

}  // namespace pmon::cli

int main(int argc, char** argv) {
  using namespace pmon;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto cfg = cli::parse_sandboxd(args);
  if (!cfg) return 0;
  // Signals are taken by sigwait below: blocked before any thread starts,
  // so every thread inherits the mask and none runs a handler.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGUSR1);  // the listener ended on its own
  (void)pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  (void)signal(SIGPIPE, SIG_IGN);

  auto root = sandboxd::Root::open(cfg->root_dir);
  if (!root) cli::die("sandboxd: --root-dir " + cfg->root_dir + ": " + root.error().message());
  sandboxd::RestOptions opts;
  opts.host = cfg->listen_host;
  opts.port = cfg->rest_port;
  opts.idle_timeout = std::max(std::chrono::seconds(1),
                               std::chrono::duration_cast<std::chrono::seconds>(cfg->http_idle_timeout));
  // An empty prefix is the default one, as the reference takes it (not every variable).
  const std::string prefix = cfg->metadata_env_prefix.empty() ? "SANDBOX_" : cfg->metadata_env_prefix;
  sandboxd::RestServer server(*root, opts, sandboxd::metadata_env(environ, prefix));
  if (!server.bind())
    cli::die("sandboxd: cannot listen on " + cfg->listen_host + ":" + std::to_string(cfg->rest_port) +
             " (in use, or not an address of this host)");
  std::fprintf(stderr, "pmon sandboxd: the process service (gRPC, port %d) is not available yet; serving the REST API only\n",
               cfg->grpc_port);
  std::fprintf(stderr, "pmon sandboxd: REST API on %s:%d, root %s\n", cfg->listen_host.c_str(), cfg->rest_port,
               root->path().c_str());

  const pthread_t main_thread = pthread_self();
  std::atomic<bool> listening_done{false};
  std::thread listener([&] {
    (void)server.listen();
    listening_done.store(true);
    (void)pthread_kill(main_thread, SIGUSR1);
  });
  int sig = 0;
  while (sigwait(&sigs, &sig) != 0) {
  }
  int status = 0;
  if (sig == SIGUSR1) {
    std::fprintf(stderr, "pmon sandboxd: the REST listener stopped\n");
    status = 1;
  } else {
    // Health answers 503 from now on; the requests in flight get up to
    // --shutdown-timeout to finish, then whatever is left is cut off.
    server.begin_shutdown();
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(cfg->shutdown_timeout);
    if (!server.wait_idle(deadline))
      std::fprintf(stderr, "pmon sandboxd: requests still in flight after --shutdown-timeout; ending them\n");
  }
  // Again until the listener is gone: a signal that came before it was
  // running found nothing to stop.
  while (!listening_done.load()) {
    server.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  listener.join();
  return status;
}
