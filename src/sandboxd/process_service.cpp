// SPDX-License-Identifier: Apache-2.0
#include "sandboxd/process_service.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <set>
#include <string_view>
#include <thread>

#include "confine/scan.h"
#include "jobs/job_api.h"
#include "jobs/ports.h"
#include "sandboxd/execute_call.h"
#include "sys/fd.h"
#include "sys/proc.h"

namespace pmon::sandboxd {

grpc::Status status_of(const Error& e, std::string_view what) {
  const std::string text = std::string(what) + ": " + serve::words(e, "process");
  switch (e.code) {
    case Errc::not_found:
    case Errc::unknown_job: return {grpc::StatusCode::NOT_FOUND, text};
    case Errc::not_executable: return {grpc::StatusCode::PERMISSION_DENIED, text};
    case Errc::invalid_argument: return {grpc::StatusCode::INVALID_ARGUMENT, text};
    case Errc::no_pty:
    case Errc::no_stdin:
    case Errc::job_ended: return {grpc::StatusCode::FAILED_PRECONDITION, text};
    case Errc::stdin_full: return {grpc::StatusCode::RESOURCE_EXHAUSTED, text};
    default: return {grpc::StatusCode::INTERNAL, text};
  }
}

grpc::Status shutting_down() { return {grpc::StatusCode::UNAVAILABLE, "the sandbox is shutting down"}; }

int32_t shell_code(const serve::ExitStatus& s) {
  if (s.exit_code) return *s.exit_code;
  if (s.signal) return 128 + *s.signal;
  return 128 + SIGKILL;  // never seen to end: it was stopped before its status could be read
}

namespace {

using process::v1::ProcessConfig;
using Clock = std::chrono::steady_clock;

// How long a handler waits for new output before it looks again whether
// its client is still there.
constexpr uint64_t kWaitMs = 200;
// What a stop may take before the handler gives up waiting for it to be
// verified (the job's grace and the kill's verification are well inside).
constexpr auto kStopWait = std::chrono::seconds(60);

const grpc::Status kOver = shutting_down();

// `cwd` under the sandbox root, resolved there (a `..` or a symlink that
// leaves it is refused by the kernel, not by a look at the words), as the
// absolute path the job starts in.
std::expected<std::string, grpc::Status> resolve_cwd(const std::string& root, const std::string& cwd) {
  if (cwd.find('\0') != std::string::npos)
    return std::unexpected(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cwd: holds a NUL byte"));
  Fd base(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!base) return std::unexpected(grpc::Status(grpc::StatusCode::INTERNAL, "the sandbox root " + root + " cannot be opened"));
  // An absolute cwd is taken inside the root when it is the root's own path
  // or below it, as the root's clients see their files.
  std::string rel = cwd;
  if (rel.starts_with(root) && (rel.size() == root.size() || rel[root.size()] == '/')) rel = rel.substr(root.size());
  while (rel.starts_with("/")) rel.erase(0, 1);
  if (rel.empty()) rel = ".";
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  Fd dir(static_cast<int>(::syscall(SYS_openat2, base.get(), rel.c_str(), &how, sizeof how)));
  if (!dir) {
    if (errno == EXDEV || errno == ELOOP)
      return std::unexpected(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "cwd: " + cwd + " is outside the sandbox root " + root));
    if (errno == ENOENT || errno == ENOTDIR)
      return std::unexpected(grpc::Status(grpc::StatusCode::NOT_FOUND, "cwd: no directory " + cwd + " in the sandbox root " + root));
    return std::unexpected(grpc::Status(grpc::StatusCode::INTERNAL, "cwd: " + cwd + ": " + std::strerror(errno)));
  }
  char buf[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(dir.get());
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf)
    return std::unexpected(grpc::Status(grpc::StatusCode::INTERNAL, "cwd: " + cwd + ": cannot tell its path"));
  return std::string(buf, static_cast<size_t>(n));
}

std::expected<serve::CreateParams, grpc::Status> params_of(const ProcessConfig& c, const ProcessOptions& o) {
  if (c.command_size() == 0 || c.command(0).empty())
    return std::unexpected(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "config.command: the command is empty"));
  serve::CreateParams p;
  for (const std::string& a : c.command())
    if (a.find('\0') != std::string::npos)
      return std::unexpected(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "config.command: an argument holds a NUL byte"));
  p.command = c.command(0);
  p.args.assign(c.command().begin() + 1, c.command().end());
  for (const auto& [k, v] : c.env_vars()) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos || v.find('\0') != std::string::npos)
      return std::unexpected(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "config.env_vars: a name is empty or holds '=' or NUL, or a value holds NUL"));
    p.env.push_back({k, v});
  }
  // (no cwd: the root, whose path was made canonical as the service began)
  if (c.has_cwd() && !c.cwd().empty()) {
    auto cwd = resolve_cwd(o.root, c.cwd());
    if (!cwd) return std::unexpected(cwd.error());
    p.cwd = *cwd;
  } else {
    p.cwd = o.root;
  }
  p.separate_stderr = true;
  // Nothing is dropped: while a client has not taken what was read, the
  // job's pipe is not read further (its writes wait).
  p.output_backpressure = true;
  return p;
}

grpc::Status too_many(size_t most) {
  return {grpc::StatusCode::RESOURCE_EXHAUSTED,
          "too many commands at once (" + std::to_string(most) + "): wait for one to end"};
}

// One Start at a time more, up to the bound (an Execute counts itself in).
class Admission {
 public:
  Admission(std::atomic<size_t>& n, size_t most) : n_(n), most_(most) { ok_ = n_.fetch_add(1) < most; }
  ~Admission() { n_.fetch_sub(1); }
  // RESOURCE_EXHAUSTED past the bound.
  std::optional<grpc::Status> refused() const {
    if (ok_) return std::nullopt;
    return too_many(most_);
  }

 private:
  std::atomic<size_t>& n_;
  size_t most_;
  bool ok_ = false;
};

}  // namespace

// A command run as a job, from its start to its end or its client's: `init`
// is told its process id; `sink` gets its bytes (false: the client is gone);
// its exit code goes to `exit_code`. Whatever way it ends, what the job left
// running is stopped and verified gone, and the job forgotten.
static grpc::Status drive(Engine& engine, grpc::ServerContext* ctx, const serve::CreateParams& p, const ProcessOptions& o,
                          const std::function<bool(int32_t)>& init,
                          const std::function<bool(bool err, std::string_view bytes)>& sink, int32_t* exit_code) {
  auto proc = std::make_shared<Process>();
  proc->conn = engine.new_conn();
  std::optional<Error> failed;
  if (engine.closing_down()) return kOver;
  bool ran = engine.run([&](serve::JobTable& t) {
    if (t.shutting_down()) {
      failed = Error::line("the sandbox is shutting down");
      return;
    }
    auto j = t.create(engine.asker(proc->conn, std::nullopt), p);
    if (!j) {
      failed = j.error();
      return;
    }
    proc->id = engine.next_process_id();
    proc->job = (*j)->id;
    engine.add_process(proc);
  });
  if (!ran) return kOver;
  if (failed) return failed->text == "the sandbox is shutting down" ? kOver : status_of(*failed, "cannot start the command");

  // The job's owner is this call: its end stops whatever is left.
  // (not waited for: the answer does not wait on the bookkeeping)
  struct Closer {
    Engine& e;
    std::shared_ptr<Process> p;
    ~Closer() {
      e.post([e = &e, p = p](serve::JobTable& t) {
        t.connection_closed(p->conn);
        e->remove_process(p->id);
      });
    }
  } closer{engine, proc};

  // The whole tree stopped (verified gone) once the client is gone.
  auto stop_tree = [&] {
    auto slot = std::make_shared<Slot>();
    const uint64_t wid = engine.new_wait_id();
    bool waits = false;
    engine.run([&](serve::JobTable& t) {
      auto j = t.get(proc->job);
      if (!j) return;
      engine.expect(wid, slot);
      auto r = t.kill(engine.asker(proc->conn, wid), **j, false);
      if (r && *r) slot->fill(**r);
      waits = true;
    });
    if (!waits) return;
    std::unique_lock lock(slot->mu);
    slot->cv.wait_for(lock, kStopWait, [&] { return slot->due.has_value(); });
  };
  auto client_gone = [&]() -> grpc::Status {
    stop_tree();
    if (ctx->deadline() <= std::chrono::system_clock::now())
      return {grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline passed: the command and every process it started were stopped"};
    return {grpc::StatusCode::CANCELLED, "the client went: the command and every process it started were stopped"};
  };

  if (!init(proc->id)) return client_gone();
  const size_t max = std::max<size_t>(o.chunk * 16, 64 << 10);
  for (;;) {
    auto slot = std::make_shared<Slot>();
    slot->process = proc;
    const uint64_t wid = engine.new_wait_id();
    std::optional<serve::OutputRead> now;
    bool gone = false;
    std::optional<Error> werr;
    ran = engine.run([&](serve::JobTable& t) {
      auto j = t.get(proc->job);
      if (!j) {
        gone = true;
        return;
      }
      serve::Job& job = **j;
      std::lock_guard lock(proc->mu);
      if (job.done || job.has_new_output(proc->out_next, proc->err_next)) {
        now = t.read_output(job, proc->out_next, proc->err_next, max, true);
        proc->out_next = now->out.next;
        if (now->err) proc->err_next = now->err->next;
        return;
      }
      serve::OutputParams op;
      op.terminal_id = job.id;
      op.since = proc->out_next;
      op.stderr_since = proc->err_next;
      op.wait_ms = kWaitMs;
      op.max_bytes = max;
      op.bytes = true;
      engine.expect(wid, slot);
      if (auto e = t.wait_output(engine.asker(proc->conn, wid), job, op)) {
        engine.forget_wait(wid);
        werr = *e;
      }
    });
    if (werr) return status_of(*werr, "cannot read the command's output");
    if (!ran || gone) {
      // The job is gone (the sandbox is stopping): what was kept of its end.
      std::lock_guard lock(proc->mu);
      if (!proc->tail) return kOver;
      now = std::move(*proc->tail);
      proc->tail.reset();
      const uint64_t skip_out = proc->out_next - proc->tail_out_from;
      now->out.text.erase(0, std::min<size_t>(now->out.text.size(), skip_out));
      if (now->err) now->err->text.erase(0, std::min<size_t>(now->err->text.size(), proc->err_next - proc->tail_err_from));
      now->out.more = false;
      if (now->err) now->err->more = false;
    }
    if (!now) {
      std::unique_lock lock(slot->mu);
      while (!slot->due) {
        if (ctx->IsCancelled()) {
          lock.unlock();
          engine.run([&](serve::JobTable&) { engine.forget_wait(wid); });
          return client_gone();
        }
        slot->cv.wait_for(lock, std::chrono::milliseconds(100));
      }
      if (auto* e = std::get_if<Error>(&*slot->due)) return status_of(*e, "cannot read the command's output");
      if (auto* r = std::get_if<serve::OutputRead>(&*slot->due)) now = std::move(*r);
      else continue;  // (nothing new within the wait)
    }
    auto send = [&](bool err, const std::string& bytes) {
      for (size_t at = 0; at < bytes.size(); at += o.chunk)
        if (!sink(err, std::string_view(bytes).substr(at, o.chunk))) return false;
      return true;
    };
    if (!send(false, now->out.text) || (now->err && !send(true, now->err->text))) return client_gone();
    if (ctx->IsCancelled()) return client_gone();
    const bool more = now->out.more || (now->err && now->err->more);
    if (now->exit && !more) {
      *exit_code = shell_code(*now->exit);
      // (the command's own pmon, stopped, says how it was asked: the
      // command's processes were killed)
      if (o.own_pmon && proc->killed_at_once.load()) *exit_code = 128 + SIGKILL;
      return grpc::Status::OK;
    }
  }
}

std::pair<int, std::string> ProcessService::reset() {
  struct Stopping {
    int32_t id = 0;
    std::vector<std::string> command;
    size_t processes = 0;
    std::vector<serve::ListeningPort> ports;
    std::shared_ptr<Slot> slot = std::make_shared<Slot>();
  };
  std::vector<Stopping> all;
  bool ran = engine_.run([&](serve::JobTable& t) {
    serve::PortTables tables;
    for (const std::shared_ptr<Process>& p : engine_.processes()) {
      auto j = t.get(p->job);
      if (!j || (*j)->done) continue;
      Stopping s;
      s.id = p->id;
      s.command = (*j)->command;
      const std::vector<pid_t> pids = (*j)->running_pids();
      s.processes = pids.size();
      s.ports = tables.listening_ports(pids);
      const uint64_t wid = engine_.new_wait_id();
      engine_.expect(wid, s.slot);
      auto r = t.kill(engine_.asker(engine_.new_conn(), wid), **j, false);
      if (!r || *r) {
        engine_.forget_wait(wid);
        if (!r) s.slot->fill(r.error());
        else s.slot->fill(**r);
      }
      all.push_back(std::move(s));
    }
  });
  if (!ran) return {503, R"({"code":"UNAVAILABLE","message":"the sandbox is shutting down"})" "\n"};
  const auto until = Clock::now() + kStopWait;
  serve::Json stopped = serve::Json::array();
  bool all_verified = true;
  for (Stopping& s : all) {
    std::unique_lock lock(s.slot->mu);
    s.slot->cv.wait_until(lock, until, [&] { return s.slot->due.has_value(); });
    const auto* done = s.slot->due ? std::get_if<serve::Stopped>(&*s.slot->due) : nullptr;
    const bool verified = done && done->cleanup_verified;
    all_verified = all_verified && verified;
    serve::Json ports = serve::Json::array();
    for (const serve::ListeningPort& l : s.ports) ports.push_back(l.port);
    stopped.push_back({{"process_id", s.id}, {"command", s.command}, {"processes", s.processes},
                       {"ports", ports}, {"cleanup_verified", verified}});
  }
  // Each port they listened on: no socket listens on it any more (what was
  // gone with its process is released with it).
  std::set<uint16_t> still;
  for (auto [file, v6] : {std::pair{"/proc/self/net/tcp", false}, std::pair{"/proc/self/net/tcp6", true}}) {
    std::string text;
    if (FILE* f = std::fopen(file, "re")) {
      char buf[65536];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
      std::fclose(f);
    }
    for (const serve::TcpEntry& e : serve::parse_tcp_table(text, v6))
      if (e.listening) still.insert(e.port);
  }
  bool released = true;
  for (serve::Json& s : stopped) {
    bool mine = true;
    for (const serve::Json& port : s["ports"]) mine = mine && !still.contains(port.get<uint16_t>());
    s["ports_released"] = mine;
    released = released && mine;
  }
  serve::Json out = {{"stopped", stopped}, {"cleanup_verified", all_verified}, {"ports_released", released}};
  return {all_verified && released ? 200 : 500, out.dump() + "\n"};
}

namespace {

// Counted from its creation (as the call arrives) to its end: gRPC destroys
// a call's interceptors once it is done with the call.
class CountedCall final : public grpc::experimental::Interceptor {
 public:
  explicit CountedCall(std::atomic<size_t>& n) : n_(n) { n_.fetch_add(1); }
  ~CountedCall() override { n_.fetch_sub(1); }
  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override { m->Proceed(); }

 private:
  std::atomic<size_t>& n_;
};

class StartCounter final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit StartCounter(std::atomic<size_t>& n) : n_(n) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    if (std::string_view(info->method()) != "/process.v1.ProcessService/Start") return nullptr;
    return new CountedCall(n_);
  }

 private:
  std::atomic<size_t>& n_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> ProcessService::start_counter() {
  return std::make_unique<StartCounter>(unsent_);
}

void ProcessService::wait_answered(std::chrono::system_clock::time_point deadline) const {
  while ((active_.load() > 0 || unsent_.load() > 0) && std::chrono::system_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

grpc::Status ProcessService::Start(grpc::ServerContext* ctx, const process::v1::StartRequest* req,
                                   grpc::ServerWriter<process::v1::StartResponse>* out) {
  Admission admit(active_, opts_.max_streams);
  if (auto no = admit.refused()) return *no;
  auto p = params_of(req->config(), opts_);
  if (!p) return p.error();
  p->stdin_null = false;
  if (req->has_pty()) {
    serve::PtySize size;
    if (req->pty().rows() > 0) size.rows = static_cast<uint16_t>(std::min<uint32_t>(req->pty().rows(), 0xffff));
    if (req->pty().cols() > 0) size.cols = static_cast<uint16_t>(std::min<uint32_t>(req->pty().cols(), 0xffff));
    p->pty = size;
    p->separate_stderr = false;  // (a terminal is one stream)
  }
  int32_t code = 0;
  auto init = [&](int32_t id) {
    process::v1::StartResponse r;
    r.mutable_init()->set_process_id(id);
    return out->Write(r);
  };
  auto sink = [&](bool err, std::string_view bytes) {
    process::v1::StartResponse r;
    if (err) r.set_stderr(bytes.data(), bytes.size());
    else r.set_stdout(bytes.data(), bytes.size());
    return out->Write(r);
  };
  grpc::Status s = drive(engine_, ctx, *p, opts_, init, sink, &code);
  if (!s.ok()) return s;
  process::v1::StartResponse r;
  r.mutable_exit()->set_exit_code(code);
  out->Write(r);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* ProcessService::Execute(grpc::CallbackServerContext* ctx,
                                                  const process::v1::ExecuteRequest* req,
                                                  process::v1::ExecuteResponse* out) {
  auto* call = new ExecuteCall(active_, unsent_, engine_, opts_, ctx->deadline(), out);
  if (!call->admitted()) {
    call->refuse(too_many(opts_.max_streams));
    return call;
  }
  auto p = params_of(req->config(), opts_);
  if (!p) {
    call->refuse(p.error());
    return call;
  }
  // No spool files: all its output is in its answer, and nothing reads them.
  p->spool_byte_limit = 0;
  call->start(std::move(*p));
  return call;
}

namespace {

// `act` on the running job of process `id`, on the service's thread: its
// status (OK when it returns none); NOT_FOUND when no command of that id
// runs; UNAVAILABLE once the service is over.
grpc::Status on_running(Engine& e, int32_t id,
                        const std::function<std::optional<grpc::Status>(serve::JobTable&, serve::Job&)>& act) {
  std::optional<grpc::Status> s;
  bool ran = e.run([&](serve::JobTable& t) {
    std::shared_ptr<Process> p = e.process(id);
    auto j = p ? t.get(p->job) : std::unexpected(Error{});
    if (!j || (*j)->done) {
      s = grpc::Status(grpc::StatusCode::NOT_FOUND, "no running process has the id " + std::to_string(id) + " (process_id)");
      return;
    }
    s = act(t, **j);
  });
  if (!ran) return kOver;
  return s.value_or(grpc::Status::OK);
}

}  // namespace

grpc::Status ProcessService::WriteStdin(grpc::ServerContext*, const process::v1::WriteStdinRequest* req,
                                        process::v1::WriteStdinResponse*) {
  if (req->payload_case() == process::v1::WriteStdinRequest::PAYLOAD_NOT_SET)
    return {grpc::StatusCode::INVALID_ARGUMENT, "input or eof: one of them is required"};
  const bool eof = req->payload_case() == process::v1::WriteStdinRequest::kEof;
  return on_running(engine_, req->process_id(), [&](serve::JobTable& t, serve::Job& j) -> std::optional<grpc::Status> {
    if (auto e = t.write(j, eof ? std::string() : req->input(), eof)) return status_of(*e, "cannot write to its stdin");
    return std::nullopt;
  });
}

grpc::Status ProcessService::SendSignal(grpc::ServerContext*, const process::v1::SendSignalRequest* req,
                                        process::v1::SendSignalResponse*) {
  const int sig = req->signal();
  if (sig != SIGINT && sig != SIGTERM && sig != SIGKILL)
    return {grpc::StatusCode::INVALID_ARGUMENT, "signal: SIGNAL_SIGINT, SIGNAL_SIGTERM or SIGNAL_SIGKILL"};
  return on_running(engine_, req->process_id(), [&](serve::JobTable& t, serve::Job& j) -> std::optional<grpc::Status> {
    if (sig == SIGINT && opts_.own_pmon) {
      // To every process below the command's own pmon (the subreaper of
      // them all), not to that pmon: for it SIGINT is a stop.
      (void)confine::signal_listed(confine::live_only(sys::descendants_by_children(j.call->pid())), SIGINT);
      return std::nullopt;
    }
    if (sig == SIGINT) {
      // To every process of it, setsid daemons too; it may go on.
      if (auto r = j.call->signal_tree(SIGINT); !r)
        return grpc::Status(grpc::StatusCode::INTERNAL, "cannot signal the process: " + r.error().message());
      return std::nullopt;
    }
    // SIGTERM: pmon's stop (TERM, a grace, then KILL, verified empty);
    // SIGKILL: the kill at once. Its Start stream ends with the exit.
    if (sig == SIGKILL) {
      j.call->set_stop_plan(opts_.kill_plan);
      if (auto p = engine_.process(req->process_id())) p->killed_at_once.store(true);
    }
    if (auto r = t.kill(engine_.asker(engine_.new_conn(), std::nullopt), j, false); !r)
      return status_of(r.error(), "cannot stop the process");
    return std::nullopt;
  });
}

grpc::Status ProcessService::ResizeTTY(grpc::ServerContext*, const process::v1::ResizeTTYRequest* req,
                                       process::v1::ResizeTTYResponse*) {
  if (req->cols() == 0 || req->rows() == 0 || req->cols() > 0xffff || req->rows() > 0xffff)
    return {grpc::StatusCode::INVALID_ARGUMENT, "cols and rows: each from 1 to 65535"};
  serve::PtySize size;
  size.rows = static_cast<uint16_t>(req->rows());
  size.cols = static_cast<uint16_t>(req->cols());
  return on_running(engine_, req->process_id(), [&](serve::JobTable& t, serve::Job& j) -> std::optional<grpc::Status> {
    if (auto e = t.resize(j, size)) return status_of(*e, "cannot resize its terminal");
    return std::nullopt;
  });
}

}  // namespace pmon::sandboxd
