// SPDX-License-Identifier: Apache-2.0
#include "sys/launcher.h"

#include <pthread.h>
#include <signal.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace pmon::sys {

namespace {

struct Job {
  void (*fn)(void*) = nullptr;
  void* arg = nullptr;
  bool done = false;
};

struct Launcher {
  std::mutex mu;
  std::condition_variable cv;  // jobs queued, or a job done
  std::deque<Job*> queue;

  [[noreturn]] void loop() {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return !queue.empty(); });
      Job* job = queue.front();
      queue.pop_front();
      lock.unlock();
      job->fn(job->arg);
      lock.lock();
      job->done = true;
      cv.notify_all();
    }
  }
};

std::mutex g_start_mu;
Launcher* g_launcher = nullptr;  // leaked on purpose: it must never die

// A forked child has no launcher thread, only the parent's memory of one.
void forget_launcher_in_child() noexcept { g_launcher = nullptr; }

Launcher* launcher(std::error_code& ec) noexcept {
  static const bool atfork = [] {
    (void)::pthread_atfork(nullptr, nullptr, forget_launcher_in_child);
    return true;
  }();
  (void)atfork;
  std::lock_guard lock(g_start_mu);
  if (g_launcher != nullptr) return g_launcher;
  auto* l = new (std::nothrow) Launcher;
  if (l == nullptr) {
    ec = std::make_error_code(std::errc::not_enough_memory);
    return nullptr;
  }
  // The thread blocks every signal: a process-directed signal must go to a
  // thread that expects it (a signalfd reader), never to this one.
  sigset_t all, old;
  ::sigfillset(&all);
  (void)::pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    std::thread([l] { l->loop(); }).detach();
  } catch (const std::system_error& e) {
    (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    delete l;
    ec = e.code();
    return nullptr;
  }
  (void)::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  g_launcher = l;
  return l;
}

}  // namespace

std::error_code run_on_launcher(void (*fn)(void*), void* arg) noexcept {
  std::error_code ec;
  Launcher* l = launcher(ec);
  if (l == nullptr) return ec;
  Job job{fn, arg, false};
  std::unique_lock lock(l->mu);
  l->queue.push_back(&job);
  l->cv.notify_all();
  l->cv.wait(lock, [&] { return job.done; });
  return {};
}

}  // namespace pmon::sys
