// SPDX-License-Identifier: Apache-2.0
// pmon sandboxd [options]: the runtime daemon of a Kubernetes agent sandbox
// (its process service over gRPC on --grpc-port, its REST API on
// --rest-port). Its options are parsed here, in pmon, so --help and bad
// input need nothing else; the daemon itself is the program pmon-sandboxd
// (linked with gRPC, protobuf and the HTTP library, which pmon, linked
// statically and started once per tool call, does without), which pmon
// execs with the same arguments.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "cli/call_flags.h"
#include "cli/cli.h"
#include "cli/sandboxd_flags.h"
#include "core/units.h"
#include "pmon_version.h"  // generated: PMON_VERSION, from git describe

namespace pmon::cli {

namespace {

constexpr const char* kSandboxdFooter = R"(
The runtime daemon of a Kubernetes agent sandbox, in place of its
reference sandboxd, with the same options, the same process service and the
same REST API, every command a pmon call.

The process service (gRPC process.v1.ProcessService, on --grpc-port): Start
(a command's output as it comes, then its exit), Execute (its output and exit
at once), WriteStdin, SendSignal, ResizeTTY. A signal reaches every process
of the command, setsid daemons too; SIGTERM and SIGKILL stop the whole tree
and verify it gone before the exit event. A Start whose client goes away and
an Execute past its deadline stop the whole tree. When a command's main
process exits, what it left running is stopped, and every byte it wrote
before is delivered without waiting on a process that holds its pipes.

The REST API (on --rest-port):
  GET    /v1/files/PATH   a file's bytes, or a directory's listing (JSON)
  HEAD   /v1/files/PATH   its size, type and time, without the body
  PUT    /v1/files/PATH   write a file whole or not at all (?mode=0644);
                          raw bytes, or multipart/form-data with a 'file' part
  DELETE /v1/files/PATH   remove a file or an empty directory
                          (?recursive=true: a whole tree)
  GET    /v1/health       {"status":"ok"}; 503 while shutting down
  GET    /v1/metadata     the environment variables named --metadata-env-prefix...

PATH, and a command's working directory, are relative to --root-dir. A path
that leaves it ("..", a symlink that points outside, a NUL byte) is refused
(403; PERMISSION_DENIED), checked as the file is opened, so a symlink
swapped in meanwhile cannot get around it.

SIGTERM or SIGINT: /v1/health answers 503, every command is stopped and
verified gone, every open Start gets its exit event, requests in flight
finish (at most --shutdown-timeout), then exit 0 (125 when a command's tree
could not be confirmed gone). As a container's first process (PID 1), pmon
init holds that place and runs the daemon as its child.

Values:
)";

// Go's flag package, which the reference parses with, takes -name as
// --name: so does this, for the long options.
std::vector<std::string> go_style(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args)
    out.push_back(a.size() > 2 && a[0] == '-' && a[1] != '-' ? "-" + a : a);
  return out;
}

std::chrono::nanoseconds duration_of(const std::string& flag, const std::string& text) {
  auto d = parse_duration(text);
  if (!d) die("sandboxd: " + flag + ": " + describe_duration_error(text, d.error()));
  return *d;
}

// The helper next to this executable, or in ../libexec/pmon/.
std::string helper_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) die(std::string("sandboxd: cannot read /proc/self/exe: ") + std::strerror(errno));
  std::string dir(buf, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  for (const std::string& p : {dir + "/pmon-sandboxd", dir + "/../libexec/pmon/pmon-sandboxd"})
    if (::access(p.c_str(), X_OK) == 0) return p;
  die("sandboxd: pmon-sandboxd, the program that serves it, is neither in " + dir + " nor in " + dir +
      "/../libexec/pmon: it is built where gRPC's, protobuf's and cpp-httplib's development files are "
      "(scripts/deps.sh installs them), and the release's sandboxd tarball carries it (unpacked over pmon's); "
      "the .deb does not");
}

}  // namespace

std::optional<SandboxdConfig> parse_sandboxd(const std::vector<std::string>& args) {
  CLI::App app{"Serve a Kubernetes agent sandbox's commands (gRPC) and files (REST), each command a pmon call.",
               "pmon sandboxd"};
  app.footer(std::string(kSandboxdFooter) + kDurationWords + kSizeWords + kBackendWords +
             "  HOST      an IP address of this host, or a name that resolves to one\n"
             "  DIR       a directory\n"
             "  PREFIX    the start of a name\n");
  SandboxdConfig c;
  std::string shutdown_timeout = "10s", idle_timeout = "60s";
  bool version = false;
  app.add_option("--listen-host", c.listen_host,
                 "the address to listen on (default 0.0.0.0; 127.0.0.1 for this host only)")
      ->type_name("HOST");
  app.add_option("--grpc-port", c.grpc_port, "the process service's port (default 9090; 0: any free port)")
      ->type_name("N");
  app.add_option("--rest-port", c.rest_port, "the REST API's port (default 8080)")->type_name("N");
  app.add_option("--root-dir", c.root_dir,
                 "the sandbox root: every file path is beneath it (default /workspace; created if missing)")
      ->type_name("DIR");
  app.add_option("--metadata-env-prefix", c.metadata_env_prefix,
                 "the environment variables /v1/metadata shows are those named so (default SANDBOX_); "
                 "names that look like credentials (TOKEN, SECRET, KEY, ...) never are")
      ->type_name("PREFIX");
  app.add_option("--shutdown-timeout", shutdown_timeout,
                 "after SIGTERM, once every command is stopped, how long requests in flight may take to finish "
                 "(default 10s)")
      ->type_name("DURATION");
  app.add_option("--http-idle-timeout", idle_timeout,
                 "close a keep-alive connection idle this long (default 60s)")
      ->type_name("DURATION");
  app.add_option("--stream-chunk-size", c.stream_chunk_size,
                 "the most bytes in one output event of the process service (default 0: 4096)")
      ->type_name("N");
  app.add_option("--max-streams", c.max_streams,
                 "Start and Execute calls at once; past it a call is refused (RESOURCE_EXHAUSTED) (default 1024)")
      ->type_name("N");
  c.jobs.add_to(app);
  add_quiet_flag(app, c.quiet);
  app.add_flag("--version", version, "print the version and exit");
  if (!parse_options(app, go_style(args), "sandboxd")) return std::nullopt;
  if (version) {
    std::puts("pmon sandboxd " PMON_VERSION);
    return std::nullopt;
  }
  for (auto [name, port] : {std::pair{"--grpc-port", c.grpc_port}, std::pair{"--rest-port", c.rest_port}})
    if (port < 0 || port > 65535)
      die(std::string("sandboxd: ") + name + " must be in range 0-65535, 0 for any free port (got " +
          std::to_string(port) + ")");
  if (c.grpc_port == c.rest_port && c.rest_port != 0)
    die("sandboxd: --grpc-port and --rest-port must differ (both " + std::to_string(c.rest_port) + ")");
  if (c.root_dir.empty()) die("sandboxd: --root-dir must not be empty");
  if (c.stream_chunk_size < 0 || c.stream_chunk_size > (4 << 20))
    die("sandboxd: --stream-chunk-size must be from 0 (4096) to 4194304");
  if (c.max_streams < 1) die("sandboxd: --max-streams must be at least 1");
  c.shutdown_timeout = duration_of("--shutdown-timeout", shutdown_timeout);
  c.http_idle_timeout = duration_of("--http-idle-timeout", idle_timeout);
  return c;
}

int sandboxd_main(const std::vector<std::string>& args) {
  if (!parse_sandboxd(args)) return 0;
  const std::string helper = helper_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>("pmon-sandboxd"));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The pmon it runs a command under where no boundary keeps commands apart
  // in one process (the subreaper backend): this one.
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    (void)::setenv("PMON_SANDBOXD_PMON", self, 1);
  }
  ::execv(helper.c_str(), argv.data());
  die("sandboxd: cannot run " + helper + ": " + std::strerror(errno));
}

}  // namespace pmon::cli
