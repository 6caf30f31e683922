// SPDX-License-Identifier: Apache-2.0
// pmon-sandboxd (what 'pmon sandboxd' runs, cli/sandboxd_cmd.cpp): the
// runtime daemon of a Kubernetes agent-sandbox pod, on the wire of its
// contract. The process service (gRPC) is a front end on pmon's job engine,
// whose loop runs on this thread; the REST API (cpp-httplib) and gRPC have
// threads of their own. A program of its own: pmon, started once per tool
// call, does not set up gRPC and protobuf at every start.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <grpcpp/grpcpp.h>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli.h"
#include "cli/sandboxd_flags.h"
#include "confine/ns_root.h"
#include "confine/pidns_init.h"
#include "sandboxd/engine.h"
#include "sandboxd/files_api.h"
#include "sandboxd/process_service.h"
#include "sandboxd/rest_server.h"
#include "jobs/options.h"
#include "jobs/service_loop.h"

extern char** environ;

namespace {

// The pmon that a command runs under where each needs one of its own (the
// subreaper backend, cli::JobFlags::apply): the one 'pmon sandboxd' was
// (PMON_SANDBOXD_PMON, which the commands do not inherit), else one beside
// this program (a build directory) or the release's bin/pmon; "" when none.
std::string own_pmon() {
  std::string found;
  if (const char* p = ::getenv("PMON_SANDBOXD_PMON"); p && *p && ::access(p, X_OK) == 0) found = p;
  (void)::unsetenv("PMON_SANDBOXD_PMON");
  if (!found.empty()) return found;
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string dir(buf, static_cast<size_t>(n));
  dir.resize(dir.rfind('/'));
  for (const std::string& p : {dir + "/pmon", dir + "/../../bin/pmon"})
    if (::access(p.c_str(), X_OK) == 0) return p;
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pmon;
  std::vector<std::string> args(argv + 1, argv + argc);
  // A pidns call's PID 1 is this program again (the backend starts itself).
  if (!args.empty() && args[0] == "__nsinit") return nsinit_main({args.begin() + 1, args.end()});
  auto cfg = cli::parse_sandboxd(args);
  if (!cfg) return 0;
  // As a container's first process (PID 1), pmon init holds that place: it
  // reaps whatever is reparented to it and hands SIGTERM and SIGINT to this
  // daemon, run again as its child, which stops every command itself.
  if (::getpid() == 1) {
    std::vector<std::string> init{"--forward", "child", "--", "/proc/self/exe"};
    init.insert(init.end(), args.begin(), args.end());
    return cli::init_main(init);
  }

  auto root = sandboxd::Root::open(cfg->root_dir);
  if (!root) cli::die("sandboxd: --root-dir " + cfg->root_dir + ": " + root.error().message());
  // In a container with its own cgroup namespace and a writable cgroup2,
  // this daemon and the container's first process sit in the namespace's
  // root, where the commands' leaves could get no controller (a cgroup that
  // holds processes gives its children none): they move into a cgroup of
  // their own, and the leaves are made beside it, in the root.
  std::string moved_note;
  if (cfg->jobs.confine.cgroup_root.empty() && cfg->jobs.confine.confine != "pidns" &&
      cfg->jobs.confine.confine != "subreaper" && cfg->jobs.confine.confine != "pgroup") {
    confine::RootMove m = confine::leave_namespace_root("sandboxd");
    if (m.moved) {
      cfg->jobs.confine.cgroup_root = m.root;
      moved_note = "; the container's " + std::to_string(m.processes) + " process" + (m.processes == 1 ? "" : "es") +
                   " moved from its cgroup namespace's root to " + m.to + ", the commands' leaves beside it";
    } else if (!m.why_not.empty() && !cfg->quiet) {
      std::fprintf(stderr, "pmon: sandboxd: warning: the commands' leaves stay beside this daemon, where they can "
                   "get no controller (%s)\n", m.why_not.c_str());
    }
  }
  serve::ServeOptions opts;
  Selection sel = cfg->jobs.apply("sandboxd", cfg->quiet, opts, own_pmon());
  opts.quiet = cfg->quiet;

  // Signals are the service loop's (a signalfd): blocked before any thread
  // starts, so that none of gRPC's or the HTTP server's takes one.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  (void)::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  (void)::signal(SIGPIPE, SIG_IGN);

  // The REST API.
  sandboxd::RestOptions ropts;
  ropts.host = cfg->listen_host;
  ropts.port = cfg->rest_port;
  ropts.confinement = opts.job_wrapper.empty() ? std::string(to_string(sel.backend->kind()))
                                              : "subreaper, a pmon of each command's own";
  ropts.idle_timeout = std::max(std::chrono::seconds(1),
                                std::chrono::duration_cast<std::chrono::seconds>(cfg->http_idle_timeout));
  // (the process service, made below, answers pmon's reset)
  sandboxd::ProcessService* processes = nullptr;
  ropts.reset = [&processes] { return processes->reset(); };
  // An empty prefix is the default one, as the reference takes it (not every variable).
  const std::string prefix = cfg->metadata_env_prefix.empty() ? "SANDBOX_" : cfg->metadata_env_prefix;
  sandboxd::RestServer rest(*root, ropts, sandboxd::metadata_env(environ, prefix));
  if (!rest.bind())
    cli::die("sandboxd: cannot listen on " + cfg->listen_host + ":" + std::to_string(cfg->rest_port) +
             " (--listen-host, --rest-port: in use, or not an address of this host)");

  // The process service.
  sandboxd::Engine engine;
  opts.threaded = &engine;
  engine.on_closing([&rest] { rest.begin_shutdown(); });
  sandboxd::ProcessOptions popts;
  popts.root = root->path();
  popts.chunk = cfg->stream_chunk_size > 0 ? static_cast<size_t>(cfg->stream_chunk_size) : 4096;
  popts.max_streams = cfg->max_streams;
  popts.kill_plan = opts.stop_at_once;
  popts.own_pmon = !opts.job_wrapper.empty();
  sandboxd::ProcessService service(engine, popts);
  processes = &service;
  grpc::ServerBuilder builder;
  const std::string host = cfg->listen_host.find(':') != std::string::npos ? "[" + cfg->listen_host + "]" : cfg->listen_host;
  int bound = 0;
  builder.AddListeningPort(host + ":" + std::to_string(cfg->grpc_port), grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(&service);
  {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> counters;
    counters.push_back(service.start_counter());
    builder.experimental().SetInterceptorCreators(std::move(counters));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound == 0)
    cli::die("sandboxd: cannot listen on " + host + ":" + std::to_string(cfg->grpc_port) +
             " (--listen-host, --grpc-port: in use, or not an address of this host)");

  std::atomic<bool> rest_over{false};
  std::thread rest_thread([&] {
    (void)rest.listen();
    rest_over.store(true);
    // Ended on its own (not by stop()): the daemon stops too.
    if (!engine.closing_down()) {
      std::fprintf(stderr, "pmon: sandboxd: the REST listener stopped; stopping\n");
      (void)::kill(::getpid(), SIGTERM);
    }
  });
  // (the ports bound: 0 asks for any free one)
  if (!cfg->quiet)
    std::fprintf(stderr, "pmon: sandboxd: process service on %s:%d, REST API on %s:%d; sandbox root %s; "
                 "each command held by %s%s\n",
                 host.c_str(), bound, host.c_str(), rest.port(), root->path().c_str(), ropts.confinement.c_str(),
                 moved_note.c_str());

  // Until SIGTERM or SIGINT: every command is then stopped and verified
  // gone (each Start's handler has its exit event), and health says 503.
  int rc = serve::serve_threaded(*sel.backend, opts);
  engine.stop();
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(cfg->shutdown_timeout);
  // The calls still open answer (each had its command's end), the file
  // requests in flight finish, within --shutdown-timeout.
  service.wait_answered(deadline);
  // (then at once: gRPC would otherwise wait for idle clients to hang up)
  server->Shutdown(std::chrono::system_clock::now());
  rest.begin_shutdown();
  if (!rest.wait_idle(std::chrono::steady_clock::now() + (deadline - std::chrono::system_clock::now())))
    std::fprintf(stderr, "pmon: sandboxd: file requests still in flight after --shutdown-timeout; ending them\n");
  while (!rest_over.load()) {
    rest.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  rest_thread.join();
  server->Wait();
  if (rc != 0) std::fprintf(stderr, "pmon: sandboxd: a command's tree could not be confirmed gone\n");
  return rc;
}
