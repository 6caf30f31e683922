// SPDX-License-Identifier: Apache-2.0
// pmon._pmon: the binding of libpmon. Thin: options in, results out, the GIL
// released around everything that waits. Policy (subprocess compatibility,
// exceptions, asyncio) lives in pmon/__init__.py.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "confine/boundary.h"
#include "confine/pidns.h"
#include "confine/error.h"
#include "confine/systemd.h"
#include "core/capture.h"
#include "core/driver.h"
#include "core/report.h"
#include "core/run.h"
#include "core/session_config.h"
#include "core/units.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace py = pybind11;

namespace pmon::py_binding {

namespace {

// One Backend per confinement request for the whole process: the cgroup
// backend's leaf pool is shared (mutex-protected) by every thread's calls.
struct Backends {
  std::mutex mu;
  std::map<std::string, Selection> by_request;
};

// The pmon executable a pidns call's init is exec'd from: in a Python
// process /proc/self/exe is python, never pmon (set from pmon/__init__.py).
std::string g_init_exe;

Backends& backends() {
  static Backends* b = new Backends;  // outlives every thread; see shutdown()
  return *b;
}

// The selection for `confine` ("auto" or a backend name), made once.
std::expected<Backend*, std::string> backend_for(const std::string& confine, const std::string& cgroup_root,
                                                 std::vector<Error>* passed_over) {
  Backends& bs = backends();
  std::lock_guard lock(bs.mu);
  const std::string key = cgroup_root.empty() ? confine : confine + '\0' + cgroup_root;
  auto it = bs.by_request.find(key);
  if (it == bs.by_request.end()) {
    // The library's request: subreaper would make the whole host process a
    // subreaper whose orphans nobody reaps, so it is not offered; pidns
    // execs the pmon executable found beside the package (Python is not it).
    ConfineRequest req;
    req.cgroup_root = cgroup_root;
    req.in_library = true;
    req.init_exe = g_init_exe;
    req.isolate = confine == "isolate";
    if (confine != "auto" && !req.isolate) {
      auto k = parse_confine_kind(confine);
      if (!k) return std::unexpected("unknown confinement '" + confine + "' (use auto, cgroup, pidns or pgroup)");
      if (*k == ConfineKind::subreaper)
        return std::unexpected(std::string("subreaper: not available in the library (it would make the ") +
                               "host process a subreaper whose orphans nobody reaps); use auto, cgroup, pidns or pgroup");
      req.kind = *k;
    }
    // The Python process is one session: its envelope from the environment
    // (PMON_SESSION_MEMORY_MAX, ...) or the config file (docs/sessions.md).
    EnvelopeAsk ask;
    ask.flag_prefix = "session_";
    auto envelope = resolve_envelope(ask);
    if (!envelope) return std::unexpected(render(envelope.error(), kPythonWords));
    if (*envelope && (!req.kind || *req.kind == ConfineKind::cgroup || req.isolate)) {
      req.envelope = **envelope;
      req.session = SessionKey::of_this_process();
    }
    auto sel = select_backend(req);
    if (!sel) {
      std::string why = render(sel.error(), kPythonWords);
      if (g_init_exe.empty() && sel.error().code == Errc::no_init_exe)
        why += " (install the package with python/install.sh, or set PMON_BINARY)";
      return std::unexpected(req.isolate ? "isolate: " + why : why);
    }
    std::optional<Selection> chosen = std::move(*sel);
    it = bs.by_request.emplace(key, std::move(*chosen)).first;
  }
  *passed_over = it->second.passed_over;
  return it->second.backend.get();
}


struct Spec {
  std::vector<std::string> argv;
  std::optional<std::vector<std::string>> env;
  std::string cwd;
  std::optional<double> timeout;
  std::optional<double> idle_timeout;  // seconds without captured output
  double grace = 2.0;
  std::string confine = "auto";
  std::string cgroup_root;  // "": pmon's default (the process's own cgroup)
  std::optional<uint64_t> memory_max, memory_high, pids_max;
  std::optional<double> cpu_max;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  bool capture_out = false, capture_err = false, err_to_out = false;
  std::optional<std::string> input;
  std::optional<size_t> output_limit;
  bool wait_tree = false;
};

Nanos seconds(double s) { return Nanos(static_cast<int64_t>(s * 1e9)); }

// The binding's one reading of its arguments as a call.
CallSpec call_spec(const Spec& s) {
  CallSpec c;
  c.spawn.argv = s.argv;
  c.spawn.env = s.env;
  c.spawn.cwd = s.cwd;
  c.spawn.stdio = {s.stdin_fd, s.stdout_fd, s.stderr_fd};
  c.spawn.close_other_fds = true;  // subprocess's close_fds=True
  if (s.timeout) c.timeout = seconds(*s.timeout);
  if (s.idle_timeout) c.idle_timeout = seconds(*s.idle_timeout);
  c.stop = StopPlan::standard(SIGTERM, seconds(s.grace));
  c.wait_tree = s.wait_tree;
  c.limits.memory_max = s.memory_max;
  c.limits.memory_high = s.memory_high;
  c.limits.pids_max = s.pids_max;
  c.limits.cpu_max = s.cpu_max;
  return c;
}

// What a call ended with, handed to Python.
struct PyResult {
  RunResult run;
  Captured out, err;
  bool has_out = false, has_err = false;
  std::vector<Error> passed_over;

  std::string report_json() const {
    ReportContext ctx;
    ctx.words = kPythonWords;
    ctx.passed_over = passed_over;
    ctx.weak = run.confinement == ConfineKind::pgroup;
    return pmon::report_json(run, ctx);
  }
};

// A start/spawn failure, as data: Python turns it into the OSError that
// subprocess would raise.
struct Failure {
  std::string kind;  // "spawn" | "confine" | "capture"
  int exit_code = 125;
  int err = 0;
  std::string message;
};

using Started = std::variant<std::monostate, Failure>;

class PyCall;

// Every call handle alive, so that the interpreter's exit can stop their
// trees before the backends they use go away.
struct LiveCalls {
  std::mutex mu;
  std::set<PyCall*> calls;
};

LiveCalls& live_calls() {
  static LiveCalls* l = new LiveCalls;  // outlives every thread
  return *l;
}

class PyCall {
 public:
  // A call that no other thread can reach (the blocking pmon.run) is not
  // cancellable: it needs no eventfd.
  explicit PyCall(Spec spec, bool cancellable = true)
      : spec_(std::move(spec)), cancellable_(cancellable) {
    std::lock_guard lock(live_calls().mu);
    live_calls().calls.insert(this);
  }

  // Opens the capture and the boundary and spawns; a Failure says why not.
  std::optional<Failure> start() {
    std::lock_guard lock(mu_);
    auto backend = backend_for(spec_.confine, spec_.cgroup_root, &passed_over_);
    if (!backend) return Failure{"confine", 125, 0, backend.error()};
    CaptureOptions co;
    co.out = spec_.capture_out;
    co.err = spec_.capture_err;
    co.err_to_out = spec_.err_to_out;
    co.input = spec_.input;
    co.limit = spec_.output_limit;
    auto cap = Capture::open(co);
    if (!cap) return Failure{"capture", 125, cap.error().value(), "cannot create pipes: " + cap.error().message()};
    capture_ = std::make_unique<Capture>(std::move(*cap));
    if (cancellable_) {
      cancel_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
      if (!cancel_) return Failure{"capture", 125, errno, "eventfd failed"};
    }

    RunOptions o;
    o.call = call_spec(spec_);
    o.cancel_fd = cancel_ ? cancel_.get() : -1;
    o.own_all_children = false;  // the host process has children of its own
    o.capture = capture_.get();
    call_ = std::make_unique<Call>(**backend, std::move(o));
    auto s = call_->start();
    if (!s) {
      call_.reset();
      driver_.reset();
      // A limit that could not be set is the confinement's failure, as an
      // unavailable backend is (ConfinementError).
      return Failure{s.error().code == Errc::confinement ? "confine" : "spawn", exit_status(s.error()), s.error().err,
                     render(s.error(), kPythonWords)};
    }
    driver_ = std::make_unique<Driver>(*call_);
    return std::nullopt;
  }

  int pidfd() const { return call_ ? call_->pidfd() : -1; }
  pid_t pid() const { return call_ ? call_->pid() : 0; }

  // Our ends of the pipes, for an event loop to watch.
  std::vector<std::pair<int, bool>> capture_fds() {
    std::lock_guard lock(mu_);
    std::vector<std::pair<int, bool>> v;
    if (capture_ && call_ && !call_->finished())
      for (const pollfd& p : capture_->pollfds()) v.emplace_back(p.fd, (p.events & POLLOUT) != 0);
    return v;
  }

  std::vector<int> pump() {
    std::lock_guard lock(mu_);
    if (!capture_ || !call_ || call_->finished()) return {};
    const uint64_t before = capture_->bytes_read();
    std::vector<int> done = capture_->pump();
    if (capture_->bytes_read() != before) call_->note_output();
    return done;
  }

  // The call's own time limits, for an event loop to wait on: seconds
  // until the next one is due (its timeout, or its idle timeout, which the
  // output pump() reads moves on), None when it has none; and the end whose
  // time has come (END_TIMEOUT, END_IDLE_TIMEOUT), None while none has.
  std::optional<double> next_end_in() {
    std::lock_guard lock(mu_);
    if (!call_ || call_->finishing() || call_->finished()) return std::nullopt;
    const int64_t at = call_->timeout_at();
    if (at == std::numeric_limits<int64_t>::max()) return std::nullopt;
    return static_cast<double>(std::max<int64_t>(0, at - sys::monotonic_ns())) / 1e9;
  }
  std::optional<int> due_end() {
    std::lock_guard lock(mu_);
    if (!call_ || call_->finishing() || call_->finished()) return std::nullopt;
    auto due = call_->due_end(sys::monotonic_ns());
    return due ? std::optional<int>(static_cast<int>(*due)) : std::nullopt;
  }

  void close_finished() {
    std::lock_guard lock(mu_);
    if (capture_ && call_ && !call_->finished()) capture_->close_finished();
  }

  bool main_exited() {
    std::lock_guard lock(mu_);
    return !call_ || call_->finished() || call_->main_exited();
  }

  // The blocking call's loop: main exit, timeout, or cancel.
  int wait_for_end() {
    std::lock_guard lock(mu_);
    return static_cast<int>(driver_->wait_for_end(std::numeric_limits<int64_t>::max()));
  }

  // 1: the main process exited; 0: timeout_ms passed; 2: a finish() from
  // another thread interrupted the wait (then finish() ends the call the
  // way that thread asked, whichever thread gets there first).
  int wait_main(int timeout_ms) {
    waiting_.fetch_add(1);
    bool exited;
    {
      std::lock_guard lock(mu_);
      exited = !call_ || call_->finished() || driver_->wait_main(timeout_ms);
    }
    waiting_.fetch_sub(1);
    return exited ? 1 : requested_end_.load() >= 0 ? 2 : 0;
  }

  bool finish_may_block() {
    std::lock_guard lock(mu_);
    return call_ && call_->finish_may_block();
  }

  // Asks a finish() in progress (another thread) to skip the grace period.
  void escalate() {
    uint64_t one = 1;
    if (cancel_) (void)::write(cancel_.get(), &one, sizeof one);
  }

  void set_grace(double grace) {
    std::lock_guard lock(mu_);
    if (call_) call_->set_stop_plan(StopPlan::standard(SIGTERM, seconds(grace)));
  }

  std::vector<std::pair<pid_t, std::string>> members() {
    std::lock_guard lock(mu_);
    std::vector<std::pair<pid_t, std::string>> v;
    if (!call_) return v;
    for (const sys::ProcStat& p : call_->members()) v.emplace_back(p.pid, sys::read_cmdline(p.pid));
    return v;
  }

  std::shared_ptr<PyResult> finish(int end) {
    int none = -1;
    (void)requested_end_.compare_exchange_strong(none, end);
    // Wake a wait_main() of another thread so the lock comes free.
    if (waiting_.load() > 0) escalate();
    std::lock_guard lock(mu_);
    if (result_) return result_;
    end = requested_end_.load();
    // A wake-up meant for a waiter must not read as "skip the grace" below.
    uint64_t stale;
    if (cancel_) (void)::read(cancel_.get(), &stale, sizeof stale);
    auto r = std::make_shared<PyResult>();
    if (call_) r->run = driver_->finish(static_cast<Call::End>(end));
    r->passed_over = passed_over_;
    if (capture_) {
      r->out = capture_->take_out();
      r->err = capture_->take_err();
    }
    r->has_out = spec_.capture_out || spec_.err_to_out;
    r->has_err = spec_.capture_err && !spec_.err_to_out;
    result_ = r;
    return r;
  }

  // Ends the call as a cancel does (its tree stopped and verified gone) and
  // lets go of its backend: the handle may outlive the backends.
  void drop() {
    if (call_) (void)finish(static_cast<int>(Call::End::cancel));
    std::lock_guard lock(mu_);
    driver_.reset();
    call_.reset();
  }

  ~PyCall() {
    // A dropped handle still ends its call (Call's destructor stops the tree).
    py::gil_scoped_release nogil;
    std::lock_guard live(live_calls().mu);  // not while shutdown() drops us
    live_calls().calls.erase(this);
    std::lock_guard lock(mu_);
    driver_.reset();  // (ends the call, as its destructor does)
    call_.reset();
  }

 private:
  Spec spec_;
  std::mutex mu_;
  std::vector<Error> passed_over_;
  std::unique_ptr<Capture> capture_;
  Fd cancel_;
  bool cancellable_ = true;
  std::unique_ptr<Call> call_;
  std::unique_ptr<Driver> driver_;  // the one that waits for call_
  std::shared_ptr<PyResult> result_;
  std::atomic<int> waiting_{0};
  std::atomic<int> requested_end_{-1};  // the first finish()'s end
};

// Python's atexit: stops every call still running (its tree verified gone,
// as for a dropped handle), then removes the pooled cgroup leaves. A handle
// still referenced at exit would otherwise be destroyed after its backend.
void shutdown() {
  py::gil_scoped_release nogil;
  {
    std::lock_guard live(live_calls().mu);
    for (PyCall* c : live_calls().calls) c->drop();
  }
  Backends& bs = backends();
  std::lock_guard lock(bs.mu);
  bs.by_request.clear();
}

py::object opt_u64(const std::optional<uint64_t>& v) {
  return v ? py::object(py::int_(*v)) : py::object(py::none());
}

py::tuple failure_tuple(const Failure& f) {
  return py::make_tuple(f.kind, f.exit_code, f.err, f.message);
}

}  // namespace

PYBIND11_MODULE(_pmon, m) {
  m.doc() = "libpmon binding; use the pmon package";
  // The interpreter is a dynamically linked program: it reaches systemd
  // itself (no pmon-systemd helper next to python3).
  pmon::confine::use_in_process_sd_bus();

  py::class_<Spec>(m, "Spec")
      .def(py::init<>())
      .def_readwrite("argv", &Spec::argv)
      .def_readwrite("env", &Spec::env)
      .def_readwrite("cwd", &Spec::cwd)
      .def_readwrite("timeout", &Spec::timeout)
      .def_readwrite("idle_timeout", &Spec::idle_timeout)
      .def_readwrite("grace", &Spec::grace)
      .def_readwrite("confine", &Spec::confine)
      .def_readwrite("cgroup_root", &Spec::cgroup_root)
      .def_readwrite("memory_max", &Spec::memory_max)
      .def_readwrite("memory_high", &Spec::memory_high)
      .def_readwrite("pids_max", &Spec::pids_max)
      .def_readwrite("cpu_max", &Spec::cpu_max)
      .def_readwrite("stdin_fd", &Spec::stdin_fd)
      .def_readwrite("stdout_fd", &Spec::stdout_fd)
      .def_readwrite("stderr_fd", &Spec::stderr_fd)
      .def_readwrite("capture_out", &Spec::capture_out)
      .def_readwrite("capture_err", &Spec::capture_err)
      .def_readwrite("err_to_out", &Spec::err_to_out)
      .def_property(
          "input", [](const Spec& s) -> py::object { return s.input ? py::object(py::bytes(*s.input)) : py::object(py::none()); },
          [](Spec& s, const py::object& v) {
            if (v.is_none()) s.input.reset();
            else s.input = std::string(v.cast<py::bytes>());
          })
      .def_readwrite("output_limit", &Spec::output_limit)
      .def_readwrite("wait_tree", &Spec::wait_tree);

  py::class_<PyResult, std::shared_ptr<PyResult>>(m, "Result")
      .def_property_readonly("pid", [](const PyResult& r) { return r.run.pid; })
      .def_property_readonly("confinement", [](const PyResult& r) { return std::string(to_string(r.run.confinement)); })
      .def_property_readonly("cgroup", [](const PyResult& r) { return r.run.cgroup; })
      .def_property_readonly("duration", [](const PyResult& r) { return r.run.duration_ms / 1000.0; })
      .def_property_readonly("outcome", [](const PyResult& r) { return std::string(to_string(r.run.outcome)); })
      .def_property_readonly("exit_code", [](const PyResult& r) { return r.run.exit_code; })
      .def_property_readonly("signal", [](const PyResult& r) { return r.run.signal; })
      .def_property_readonly("timed_out", [](const PyResult& r) { return r.run.timed_out; })
      .def_property_readonly("idle_timed_out",
                             [](const PyResult& r) { return r.run.end == CallEnd::idle_timeout; })
      .def_property_readonly("cleanup_verified", [](const PyResult& r) { return r.run.cleanup_verified; })
      .def_property_readonly("cpu_usec", [](const PyResult& r) { return opt_u64(r.run.cpu_usec); })
      .def_property_readonly("memory_peak_bytes", [](const PyResult& r) { return opt_u64(r.run.memory_peak_bytes); })
      .def_property_readonly("leftovers", [](const PyResult& r) {
        py::list l;
        for (const Leftover& x : r.run.leftovers) {
          py::dict d;
          d["pid"] = x.pid;
          d["start_time"] = x.start_time;
          d["cmdline"] = x.cmdline;
          d["action"] = to_string(x.fate);
          l.append(d);
        }
        return l;
      })
      .def_property_readonly("stdout", [](const PyResult& r) -> py::object {
        return r.has_out ? py::object(py::bytes(r.out.data)) : py::object(py::none());
      })
      .def_property_readonly("stderr", [](const PyResult& r) -> py::object {
        return r.has_err ? py::object(py::bytes(r.err.data)) : py::object(py::none());
      })
      .def_property_readonly("stdout_total", [](const PyResult& r) { return r.out.total; })
      .def_property_readonly("stderr_total", [](const PyResult& r) { return r.err.total; })
      .def_property_readonly("truncated", [](const PyResult& r) { return r.out.truncated || r.err.truncated; })
      .def("report_json", &PyResult::report_json, py::call_guard<py::gil_scoped_release>());

  py::class_<PyCall, std::shared_ptr<PyCall>>(m, "Call")
      .def(py::init<Spec>())
      .def("start", [](PyCall& c) -> py::object {
        std::optional<Failure> f;
        {
          py::gil_scoped_release nogil;
          f = c.start();
        }
        return f ? py::object(failure_tuple(*f)) : py::object(py::none());
      })
      .def_property_readonly("pidfd", &PyCall::pidfd)
      .def_property_readonly("pid", &PyCall::pid)
      .def("capture_fds", &PyCall::capture_fds)
      .def("pump", &PyCall::pump)
      .def("next_end_in", &PyCall::next_end_in)
      .def("due_end", &PyCall::due_end)
      .def("close_finished", &PyCall::close_finished)
      .def("main_exited", &PyCall::main_exited)
      .def("wait_main", &PyCall::wait_main, py::call_guard<py::gil_scoped_release>())
      .def("finish_may_block", &PyCall::finish_may_block)
      .def("escalate", &PyCall::escalate)
      .def("set_grace", &PyCall::set_grace)
      .def("members", &PyCall::members, py::call_guard<py::gil_scoped_release>())
      .def("finish", &PyCall::finish, py::call_guard<py::gil_scoped_release>());

  // The blocking call: start, wait, stop, verify, drain, all without the GIL.
  m.def("run", [](Spec spec) -> py::object {
    auto call = std::make_shared<PyCall>(std::move(spec), /*cancellable=*/false);
    std::optional<Failure> f;
    std::shared_ptr<PyResult> r;
    {
      py::gil_scoped_release nogil;
      f = call->start();
      if (!f) r = call->finish(call->wait_for_end());
    }
    if (f) return failure_tuple(*f);
    return py::cast(r);
  });

  // The limits' values as the CLI checks them; a bad one raises ValueError
  // with the CLI's words.
  m.def("parse_size", [](const std::string& s) {
    auto v = parse_size(s);
    if (!v) throw py::value_error(describe(v.error()));
    return *v;
  });
  m.def("parse_pids", [](const std::string& s) {
    auto v = parse_pids(s);
    if (!v) throw py::value_error(describe(v.error()));
    return *v;
  });
  m.def("check_cores", [](double c) {
    auto v = check_cores(c);
    if (!v) throw py::value_error(describe(v.error()));
    return *v;
  });
  m.def("shutdown", &shutdown);
  m.def("set_init_exe", [](std::string path) { g_init_exe = std::move(path); });
  m.attr("END_MAIN_EXITED") = static_cast<int>(Call::End::main_exited);
  m.attr("END_TIMEOUT") = static_cast<int>(Call::End::timeout);
  m.attr("END_IDLE_TIMEOUT") = static_cast<int>(Call::End::idle_timeout);
  m.attr("END_CANCEL") = static_cast<int>(Call::End::cancel);
}

}  // namespace pmon::py_binding
