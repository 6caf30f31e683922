// SPDX-License-Identifier: Apache-2.0
// pmon serve [--stdio | --listen PATH] [options]
// pmon mcp [options]: the same service on stdio, speaking MCP
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "cli/cli.h"
#include "cli/call_flags.h"
#include "core/units.h"
#include "jobs/socket.h"
#include "serve/service.h"

namespace pmon::cli {

namespace {

constexpr const char* kServeFooter = R"(
Jobs are requested in JSON-RPC 2.0, one message per line, on stdin/stdout
(--stdio) or on a Unix socket (--listen; default $XDG_RUNTIME_DIR/pmon/serve.sock,
/run/pmon/serve.sock for root, /tmp/pmon-UID/serve.sock otherwise). Only
clients with the service's uid, or root, are served.

A job is one call as 'pmon run' makes it, started in the background. It is
stopped, with everything it started, and confirmed gone when its client
removes it, when its client's session or connection ends (unless the job was
created to outlive them, as 'pmon start' does), when its timeout fires, and
when the service stops: SIGTERM, SIGINT, EOF on --stdio, or the parent's
death with --die-with-parent. Exit status 0 when every job was confirmed
gone, 125 otherwise. Jobs that a service before it left running (it was
killed before it could stop them) are stopped as the service starts, before
it serves anyone, each named in one line on stderr, with -q too.

--memory-budget bounds what the service holds: three quarters of it for the
jobs' output (a job whose outputByteLimit does not fit is refused; past it,
buffers keep their newest bytes), a quarter for the connections: replies not
yet read (a client that sends faster than it reads is not read until they
drain), requests not yet ended by a newline (at most an eighth of the budget;
past it a connection is told and closed) and requests waiting for their
answer (at most a sixteenth, and 1024 a connection; past it a request is
refused with an error); within that quarter, stdin written to jobs and not
yet read by them, and the pipes of streams (stream: true), take at most a
sixteenth of the budget (past it a write or a stream is refused with an
error).

pmon start, jobs, logs, stop, wait and rm talk to the service on its socket.

Values:
)";


}  // namespace

int serve_main(const std::vector<std::string>& args) {
  CLI::App app{"Run background jobs whose lifetime a client owns.", "pmon serve"};
  app.footer(std::string(kServeFooter) + kDurationWords + kSizeWords + kBackendWords);
  bool stdio = false, die_with_parent = false, quiet = false;
  std::string listen;
  JobFlags jobs;
  app.add_flag("--stdio", stdio, "serve one client on stdin/stdout");
  CLI::Option* listen_opt = app.add_option("--listen", listen, "serve clients on the Unix socket PATH")->type_name("PATH");
  app.add_flag("--die-with-parent", die_with_parent, "stop every job and exit when the parent process dies");
  jobs.add_to(app);
  add_quiet_flag(app, quiet,
                 "print nothing of pmon's own but errors and the jobs it stopped as it started (left running by a "
                 "service that is gone)");
  if (!parse_options(app, args, "serve")) return 0;
  if (stdio && listen_opt->count() > 0) die("serve: --stdio and --listen exclude each other");

  serve::ServeOptions opts;
  Selection sel = jobs.apply("serve", quiet, opts);
  opts.stdio = stdio;
  opts.die_with_parent = die_with_parent;
  opts.quiet = quiet;
  serve::Listener listener;
  if (!stdio) {
    const std::string path = listen_opt->count() > 0 ? listen : serve::default_socket_path(false);
    auto l = serve::listen_unix(path, listen_opt->count() == 0);
    if (!l) die("serve: " + render(l.error()));
    listener = std::move(*l);
    opts.listen_fd = listener.sock.get();
    opts.socket_path = path;
    if (!path.starts_with("/"))
      if (char* cwd = ::getcwd(nullptr, 0)) opts.socket_path = std::string(cwd) + "/" + path, std::free(cwd);
    if (!quiet) std::fprintf(stderr, "pmon: serving on %s\n", path.c_str());
  }
  int rc = serve::serve(*sel.backend, opts);
  listener.remove();
  if (rc != 0) std::fprintf(stderr, "pmon: serve: a job's tree could not be confirmed gone\n");
  return rc;
}

constexpr const char* kMcpFooter = R"(
An MCP server on stdin/stdout (JSON-RPC, one message per line) for any
agent that speaks the Model Context Protocol. Its tools: run (a shell
command, waited for; whatever it leaves running is stopped), start (a job
that runs on), output, wait, write, kill, list and wait_for_port.

A job that is over stays for output and wait until --max-jobs jobs are
held; then each new one makes room by removing the oldest job that is over
(first those whose end the model was told). The spool files of jobs that are
over hold at most four times --spool-limit in all; past it the oldest ones'
are removed, and their output is what memory keeps of it.

When the client closes stdin or dies, every job is stopped and verified
gone before pmon exits. Configure it in an MCP client as
  {"command": "pmon", "args": ["mcp"]}

Values:
)";

int mcp_main(const std::vector<std::string>& args) {
  CLI::App app{"Serve jobs as MCP tools on stdin/stdout.", "pmon mcp"};
  app.footer(std::string(kMcpFooter) + kDurationWords + kSizeWords + kBackendWords);
  JobFlags jobs;
  jobs.add_to(app);
  if (!parse_options(app, args, "mcp")) return 0;
  serve::ServeOptions opts;
  // stdout is the protocol: pmon's own words go to stderr only, and only errors.
  Selection sel = jobs.apply("mcp", true, opts);
  opts.stdio = true;
  opts.mcp = true;
  opts.make_room = true;
  opts.quiet = true;
  // The client is the parent: when it dies without closing our stdin (a
  // pipe some child of its inherited), the jobs go with it all the same.
  opts.die_with_parent = true;
  int rc = serve::serve(*sel.backend, opts);
  if (rc != 0) std::fprintf(stderr, "pmon: mcp: a job's tree could not be confirmed gone\n");
  return rc;
}

}  // namespace pmon::cli
