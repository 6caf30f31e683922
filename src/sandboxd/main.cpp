// SPDX-License-Identifier: Apache-2.0
// pmon-sandboxd (what 'pmon sandboxd' starts): the runtime daemon of a
// Kubernetes agent-sandbox pod, on the wire of its contract, with every
// command a pmon call. A program of its own: gRPC and protobuf set up at
// every start, which 'pmon run', started once per tool call, should not pay.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <grpcpp/grpcpp.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "cli/call_flags.h"
#include "cli/cli.h"
#include "confine/pidns_init.h"
#include "core/units.h"
#include "pmon_version.h"
#include "sandboxd/engine.h"
#include "sandboxd/process_service.h"
#include "serve/options.h"
#include "serve/service.h"

namespace {

using pmon::cli::die;

constexpr const char* kFooter = R"(
The runtime daemon of a Kubernetes agent-sandbox pod, on the wire of its
contract: the process service over gRPC (process.v1.ProcessService: Start,
Execute, WriteStdin, SendSignal, ResizeTTY), so that its clients and SDKs
work unchanged. Every command is a pmon call: a signal reaches every process
it started, setsid daemons too; a cancelled Start, an Execute past its
deadline and SIGTERM to the daemon stop the whole tree and verify it gone;
when a command's main process exits, what it left running is stopped and its
output up to then is all delivered.

SIGTERM or SIGINT: every command is stopped and verified gone, every open
Start stream gets its exit event, then pmon sandboxd exits 0 (125 when a tree
could not be confirmed gone).

Values:
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // A pidns call's PID 1 is this program again (the backend starts itself).
  if (!args.empty() && args[0] == "__nsinit") return pmon::nsinit_main({args.begin() + 1, args.end()});
  // As a container's first process (PID 1), pmon init holds that place: it
  // reaps whatever is reparented to it and hands SIGTERM and SIGINT to this
  // daemon, run again as its child, which stops every command itself.
  if (::getpid() == 1 && (args.empty() || (args[0] != "-h" && args[0] != "--help" && args[0] != "--version"))) {
    std::vector<std::string> init{"--forward", "child", "--", "/proc/self/exe"};
    init.insert(init.end(), args.begin(), args.end());
    return pmon::cli::init_main(init);
  }
  CLI::App app{"Serve a Kubernetes agent-sandbox pod's commands as pmon calls.", "pmon sandboxd"};
  app.footer(std::string(kFooter) + pmon::cli::kDurationWords + pmon::cli::kSizeWords + pmon::cli::kBackendWords);
  std::string host = "0.0.0.0", root = "/workspace", shutdown_timeout = "10s";
  int grpc_port = 9090;
  size_t chunk = 4096;
  bool version = false, quiet = false;
  size_t max_streams = 1024;
  pmon::cli::JobFlags jobs;
  app.add_option("--listen-host", host, "the address to listen on (default 0.0.0.0)")->type_name("HOST");
  app.add_option("--grpc-port", grpc_port, "the process service's port (default 9090)")->type_name("PORT");
  app.add_option("--root-dir", root, "the sandbox root: a command's working directory must be under it "
                                     "(default /workspace; made when missing)")->type_name("DIR");
  app.add_option("--shutdown-timeout", shutdown_timeout,
                 "on SIGTERM, how long open calls have to end once every command is stopped (default 10s)")
      ->type_name("DURATION");
  app.add_option("--stream-chunk-size", chunk, "the most bytes in one output event (default 4096)")->type_name("N");
  app.add_option("--max-streams", max_streams,
                 "Start and Execute calls at once; past it a call is refused (RESOURCE_EXHAUSTED) (default 1024)")
      ->type_name("N");
  jobs.add_to(app);
  app.add_flag("-q,--quiet", quiet, "print nothing of pmon's own but errors");
  app.add_flag("--version", version, "print the version and exit");
  if (!pmon::cli::parse_options(app, args, "sandboxd")) return 0;
  if (version) {
    std::puts("pmon sandboxd " PMON_VERSION);
    return 0;
  }
  if (grpc_port < 0 || grpc_port > 65535) die("sandboxd: --grpc-port must be from 0 (any free port) to 65535");
  if (chunk < 1 || chunk > (size_t{4} << 20)) die("sandboxd: --stream-chunk-size must be from 1 to 4194304");
  if (max_streams < 1) die("sandboxd: --max-streams must be at least 1");
  auto grace = pmon::parse_duration(shutdown_timeout);
  if (!grace) die("sandboxd: --shutdown-timeout: " + pmon::describe_duration_error(shutdown_timeout, grace.error()));
  if (root.empty() || root[0] != '/') die("sandboxd: --root-dir must be an absolute path");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) die("sandboxd: --root-dir " + root + ": " + std::strerror(errno));

  pmon::serve::ServeOptions opts;
  pmon::Selection sel = jobs.apply("sandboxd", quiet, opts);
  opts.quiet = quiet;

  // Signals are the service loop's (a signalfd): blocked before gRPC's
  // threads start, so none of them takes one.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  pmon::sandboxd::Engine engine;
  opts.threaded = &engine;
  pmon::sandboxd::ProcessOptions popts;
  popts.root = root;
  popts.chunk = chunk;
  popts.max_streams = max_streams;
  pmon::sandboxd::ProcessService service(engine, popts);
  grpc::ServerBuilder builder;
  const std::string addr = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(grpc_port);
  int bound = 0;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0) die("sandboxd: cannot listen on " + addr + " (--listen-host, --grpc-port)");
  // (the port bound: --grpc-port 0 asks for any free one)
  if (!quiet)
    std::fprintf(stderr, "pmon: sandboxd: process service on %s:%d; sandbox root %s\n",
                 addr.substr(0, addr.rfind(':')).c_str(), bound, root.c_str());

  int rc = pmon::serve::serve(*sel.backend, opts);
  // Every command is stopped: the handlers still open end now (each Start
  // has its exit event), within --shutdown-timeout.
  engine.stop();
  const auto deadline = std::chrono::system_clock::now() + *grace;
  service.wait_answered(deadline);
  // (then at once: gRPC would otherwise wait for idle clients to hang up)
  server->Shutdown(std::chrono::system_clock::now());
  server->Wait();
  if (rc != 0) std::fprintf(stderr, "pmon: sandboxd: a command's tree could not be confirmed gone\n");
  return rc;
}
