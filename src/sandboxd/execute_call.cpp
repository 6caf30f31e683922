// SPDX-License-Identifier: Apache-2.0
#include "sandboxd/execute_call.h"

#include <signal.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace pmon::sandboxd {

// The state of one Execute, shared by its reactor and the work it posts.
// It is moved on by the service's thread; once the service is over, by
// whichever thread hands it its end (Engine::stop(), a cancel): `mu_` keeps
// them apart. It is recursive: a stop the table begins may answer this
// call's own waits at once, from inside it.
class ExecuteState : public std::enable_shared_from_this<ExecuteState> {
  using Lock = std::lock_guard<std::recursive_mutex>;

 public:
  ExecuteState(std::atomic<size_t>& active, Engine& engine, const ProcessOptions& opts, grpc::ServerUnaryReactor* call,
               std::chrono::system_clock::time_point deadline, process::v1::ExecuteResponse* out)
      : active_(active), engine_(engine), opts_(opts), call_(call), deadline_(deadline), out_(out) {}

  // --- from gRPC's threads ---
  void start(serve::CreateParams p) {
    if (engine_.closing_down()) return end_now(shutting_down());
    auto self = shared_from_this();
    const bool posted = engine_.post(
        [self, p = std::move(p)](serve::JobTable& t) {
          std::lock_guard lock(self->mu_);
          self->create(t, p);
        },
        [self] { self->end_now(shutting_down()); });
    if (!posted) end_now(shutting_down());
  }
  void end_now(grpc::Status s) {
    Lock lock(mu_);
    finish(std::move(s));
  }
  // The client went or its deadline passed: the whole tree is stopped.
  void cancel() {
    later([](ExecuteState& s, serve::JobTable& t) { s.stop_tree(t, s.gone_status()); });
  }

 private:
  // Reads of this much at most: the answer is one message anyway.
  static constexpr uint64_t kReadBytes = serve::OutputParams::kDefaultMaxBytes;

  // `f` on the service's thread; when the service ends first, what was kept
  // of the command's end is the answer.
  void later(std::function<void(ExecuteState&, serve::JobTable&)> f) {
    auto self = shared_from_this();
    const bool posted = engine_.post(
        [self, f = std::move(f)](serve::JobTable& t) {
          Lock lock(self->mu_);
          if (!self->finished_) f(*self, t);
        },
        [self] {
          Lock lock(self->mu_);
          self->from_tail();
        });
    if (!posted) {
      Lock lock(mu_);
      from_tail();
    }
  }

  // --- on the service's thread ---
  void create(serve::JobTable& t, const serve::CreateParams& p) {
    if (t.shutting_down()) return finish(shutting_down());
    auto proc = std::make_shared<Process>();
    proc->conn = engine_.new_conn();
    auto j = t.create(engine_.asker(proc->conn, std::nullopt), p);
    if (!j) return finish(status_of(j.error(), "cannot start the command"));
    proc->id = engine_.next_process_id();
    proc->job = (*j)->id;
    engine_.add_process(proc);
    // (the job's owner is this call: its end stops whatever is left)
    proc_ = std::move(proc);
    read(t);
  }

  // What the job has is taken; then its next output or end is waited for.
  void read(serve::JobTable& t) {
    if (finished_ || stopping_ || !proc_) return;
    auto j = t.get(proc_->job);
    if (!j) return from_tail();
    serve::Job& job = **j;
    for (;;) {
      std::optional<serve::OutputRead> now;
      {
        std::lock_guard lock(proc_->mu);
        if (job.done || job.has_new_output(proc_->out_next, proc_->err_next)) {
          now = t.read_output(job, proc_->out_next, proc_->err_next, kReadBytes, true);
          proc_->out_next = now->out.next;
          if (now->err) proc_->err_next = now->err->next;
        }
      }
      if (!now) break;
      if (!take(*now)) return stop_tree(t, too_much());
      if (now->exit && !more(*now)) return answer(*now);
    }
    auto slot = std::make_shared<Slot>();
    slot->process = proc_;
    slot->then = [self = shared_from_this()](serve::Due& d) { self->on_output(d); };
    serve::OutputParams op;
    op.terminal_id = job.id;
    op.since = proc_->out_next;
    op.stderr_since = proc_->err_next;
    op.max_bytes = kReadBytes;
    op.bytes = true;
    const uint64_t wid = engine_.new_wait_id();
    engine_.expect(wid, slot);
    if (auto e = t.wait_output(engine_.asker(proc_->conn, wid), job, op)) {
      engine_.forget_wait(wid);
      finish(status_of(*e, "cannot read the command's output"));
    }
  }

  // The wait's answer, inside the table's work (or once the service is
  // over): the table is not called from here.
  void on_output(serve::Due& d) {
    Lock lock(mu_);
    if (finished_ || stopping_) return;
    if (auto* e = std::get_if<Error>(&d)) return finish(status_of(*e, "cannot read the command's output"));
    auto* r = std::get_if<serve::OutputRead>(&d);
    if (!r) return later([](ExecuteState& s, serve::JobTable& t) { s.read(t); });
    if (!take(*r)) return later([](ExecuteState& s, serve::JobTable& t) { s.stop_tree(t, s.too_much()); });
    if (r->exit && !more(*r)) return answer(*r);
    later([](ExecuteState& s, serve::JobTable& t) { s.read(t); });
  }

  // The whole tree stopped and verified gone, then `then` is the answer.
  void stop_tree(serve::JobTable& t, grpc::Status then) {
    if (finished_ || stopping_) return;
    stopping_ = std::move(then);
    auto j = proc_ ? t.get(proc_->job) : std::unexpected(Error{});
    if (!j) return finish(*stopping_);
    auto slot = std::make_shared<Slot>();
    slot->then = [self = shared_from_this()](serve::Due&) { self->end_now(*self->stopping_); };
    const uint64_t wid = engine_.new_wait_id();
    engine_.expect(wid, slot);
    auto r = t.kill(engine_.asker(proc_->conn, wid), **j, false);
    if (!r || *r) {
      engine_.forget_wait(wid);
      finish(*stopping_);
    }
  }

  // --- on any thread, with mu_ held ---
  // The job is gone (the service is stopping): what was kept of its end.
  void from_tail() {
    if (finished_) return;
    if (stopping_) return finish(*stopping_);
    if (!proc_) return finish(shutting_down());
    std::optional<serve::OutputRead> now;
    {
      std::lock_guard lock(proc_->mu);
      if (proc_->tail) {
        now = std::move(*proc_->tail);
        proc_->tail.reset();
        now->out.text.erase(0, std::min<size_t>(now->out.text.size(), proc_->out_next - proc_->tail_out_from));
        if (now->err)
          now->err->text.erase(0, std::min<size_t>(now->err->text.size(), proc_->err_next - proc_->tail_err_from));
      }
    }
    if (!now || !now->exit) return finish(shutting_down());
    if (!take(*now)) return finish(too_much());
    answer(*now);
  }

  // Its bytes added to the answer; false past the bound.
  bool take(serve::OutputRead& r) {
    auto add = [&](std::string* to, std::string& bytes) {
      if (to->size() + bytes.size() > opts_.execute_output_limit) return false;
      if (to->empty()) to->swap(bytes);
      else to->append(bytes);
      return true;
    };
    return add(out_->mutable_stdout(), r.out.text) && (!r.err || add(out_->mutable_stderr(), r.err->text));
  }

  static bool more(const serve::OutputRead& r) { return r.out.more || (r.err && r.err->more); }

  void answer(const serve::OutputRead& r) {
    int32_t code = shell_code(*r.exit);
    // (the command's own pmon, stopped, says how it was asked: the
    // command's processes were killed)
    if (opts_.own_pmon && proc_->killed_at_once.load()) code = 128 + SIGKILL;
    out_->set_exit_code(code);
    finish(grpc::Status::OK);
  }

  grpc::Status gone_status() const {
    if (deadline_ <= std::chrono::system_clock::now())
      return {grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline passed: the command and every process it started were stopped"};
    return {grpc::StatusCode::CANCELLED, "the client went: the command and every process it started were stopped"};
  }

  grpc::Status too_much() const {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "the command wrote more than " + std::to_string(opts_.execute_output_limit >> 20) +
                " MiB to one stream: it was stopped; use Start to stream its output"};
  }

  // The answer, once; then the job is forgotten (not waited for: the answer
  // does not wait on the bookkeeping).
  void finish(grpc::Status s) {
    if (finished_) return;
    finished_ = true;
    // (its place among the calls at once is free before its client hears)
    active_.fetch_sub(1);
    call_->Finish(std::move(s));
    if (proc_)
      (void)engine_.post([e = &engine_, p = proc_](serve::JobTable& t) {
        t.connection_closed(p->conn);
        e->remove_process(p->id);
      });
  }

  std::atomic<size_t>& active_;
  Engine& engine_;
  const ProcessOptions& opts_;
  grpc::ServerUnaryReactor* call_;  // not to be touched once finished: gRPC deletes it
  const std::chrono::system_clock::time_point deadline_;
  process::v1::ExecuteResponse* out_;
  std::recursive_mutex mu_;
  std::shared_ptr<Process> proc_;  // once its job is created
  bool finished_ = false;
  std::optional<grpc::Status> stopping_;  // the answer once the stop is verified
};

ExecuteCall::ExecuteCall(std::atomic<size_t>& active, std::atomic<size_t>& unsent, Engine& engine,
                         const ProcessOptions& opts, std::chrono::system_clock::time_point deadline,
                         process::v1::ExecuteResponse* out)
    : unsent_(unsent), state_(std::make_shared<ExecuteState>(active, engine, opts, this, deadline, out)) {
  unsent_.fetch_add(1);
  admitted_ = active.fetch_add(1) < opts.max_streams;
}

// (each through a copy of the state: the answer may be the call's end, and
// the state must outlive what is being done with it)
void ExecuteCall::refuse(grpc::Status s) { std::shared_ptr<ExecuteState>(state_)->end_now(std::move(s)); }

void ExecuteCall::start(serve::CreateParams p) { std::shared_ptr<ExecuteState>(state_)->start(std::move(p)); }

void ExecuteCall::OnCancel() { std::shared_ptr<ExecuteState>(state_)->cancel(); }

void ExecuteCall::OnDone() {
  unsent_.fetch_sub(1);
  delete this;
}

}  // namespace pmon::sandboxd
