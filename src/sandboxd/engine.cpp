// SPDX-License-Identifier: Apache-2.0
#include "sandboxd/engine.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <future>

namespace pmon::sandboxd {

Engine::Engine() : wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

bool Engine::run(const std::function<void(serve::JobTable&)>& work) {
  auto done = std::make_shared<std::promise<bool>>();
  std::future<bool> ran = done->get_future();
  {
    std::lock_guard lock(mu_);
    if (over_ || !wake_) return false;
    // (the promise lives in the work alone: work dropped unrun breaks it)
    posted_.push_back({[this, &work, done = std::move(done)] {
                         try {
                           work(*jobs_);
                           done->set_value(true);
                         } catch (...) {
                           done->set_exception(std::current_exception());
                         }
                       },
                       {}});
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  // (stop() drops what is still posted: its promise is broken, and the
  // handler told the service is over)
  try {
    return ran.get();
  } catch (const std::future_error&) {
    return false;
  }
}

bool Engine::post(std::function<void(serve::JobTable&)> work, std::function<void()> dropped) {
  {
    std::lock_guard lock(mu_);
    if (over_ || !wake_) return false;
    posted_.push_back({[this, work = std::move(work)] {
                         try {
                           work(*jobs_);
                         } catch (...) {  // (out of memory: the service stays up)
                         }
                       },
                       std::move(dropped)});
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  return true;
}

uint64_t Engine::new_conn() {
  std::lock_guard lock(mu_);
  return next_conn_++;
}

uint64_t Engine::new_wait_id() {
  std::lock_guard lock(mu_);
  return next_wait_++;
}

bool Engine::closing_down() const {
  std::lock_guard lock(mu_);
  return closing_ || over_;
}

void Engine::run_posted() {
  uint64_t n;
  (void)!::read(wake_.get(), &n, sizeof n);
  std::vector<Posted> work;
  {
    std::lock_guard lock(mu_);
    work.swap(posted_);
  }
  for (Posted& w : work) w.work();
}

void Engine::closing() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  if (on_closing_) on_closing_();
}

void Engine::stop() {
  std::vector<Posted> left;
  {
    std::lock_guard lock(mu_);
    over_ = true;
    left.swap(posted_);
  }
  // What was posted and never ran: its handler is told (a broken promise,
  // or its `dropped`).
  for (Posted& p : left)
    if (p.dropped) p.dropped();
  left.clear();
  Error gone = Error::line("the sandbox's service has stopped");
  for (auto& [id, slot] : waits_) slot->fill(gone);
  waits_.clear();
}

void Engine::expect(uint64_t id, std::shared_ptr<Slot> slot) { waits_[id] = std::move(slot); }

void Engine::forget_wait(uint64_t id) { waits_.erase(id); }

serve::Asker Engine::asker(uint64_t conn, std::optional<uint64_t> wait_id) const {
  serve::Asker a;
  a.conn = conn;
  a.waiting = std::make_shared<serve::RequestBudget::Tally>();
  // (without an id: a wait nobody is answered for, as a notification's)
  a.id = wait_id ? serve::Json(*wait_id) : serve::Json(serve::Json::value_t::discarded);
  return a;
}

void Engine::add_process(std::shared_ptr<Process> p) {
  by_job_[p->job] = p->id;
  processes_[p->id] = std::move(p);
}

std::shared_ptr<Process> Engine::process(int32_t id) const {
  auto it = processes_.find(id);
  return it == processes_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Process>> Engine::processes() const {
  std::vector<std::shared_ptr<Process>> all;
  for (const auto& [id, p] : processes_) all.push_back(p);
  return all;
}

void Engine::remove_process(int32_t id) {
  auto it = processes_.find(id);
  if (it == processes_.end()) return;
  by_job_.erase(it->second->job);
  processes_.erase(it);
}

void Engine::answer(const serve::Waiter& w, serve::Job&, serve::Due due) {
  if (!w.id.is_number_unsigned()) return;
  auto it = waits_.find(w.id.get<uint64_t>());
  if (it == waits_.end()) return;
  std::shared_ptr<Slot> slot = std::move(it->second);
  waits_.erase(it);
  if (auto* r = std::get_if<serve::OutputRead>(&due); r && slot->process) {
    std::lock_guard lock(slot->process->mu);
    slot->process->out_next = r->out.next;
    if (r->err) slot->process->err_next = r->err->next;
  }
  slot->fill(std::move(due));
}

// The job is over: the rest of its output (past what its Start handler was
// given) and its exit are kept with its process, for a handler that asks
// once the job is gone.
void Engine::job_ended(serve::Job& job) {
  auto it = by_job_.find(job.id);
  if (it == by_job_.end()) return;
  std::shared_ptr<Process> p = processes_[it->second];
  std::lock_guard lock(p->mu);
  p->tail_out_from = p->out_next;
  p->tail_err_from = p->err_next;
  p->tail = job.read_bytes(p->out_next, p->err_next, SIZE_MAX);
}

}  // namespace pmon::sandboxd
