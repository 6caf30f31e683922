// SPDX-License-Identifier: Apache-2.0
#include "jobs/service_loop.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "jobs/request_budget.h"
#include "jobs/spool.h"
#include "jobs/threaded_front.h"
#include "sys/syscalls.h"

namespace pmon::serve {

namespace {

constexpr size_t kTidyBatch = 8;
// While stop work is queued (jobs/stops.h), or requests answered in slices
// (Connections::defer), events are only looked at, not waited for; after a
// slice that took its whole time the loop waits up to kStopPauseMs for
// events before the next: the jobs just signalled exit meanwhile, other
// processes have the CPU a moment, and a request that comes wakes it at once.
constexpr int kStopPauseMs = 1;
constexpr int64_t kTidySliceNs = 2'000'000;

}  // namespace

bool ServiceLoop::setup() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  (void)::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  base_.changed_signals = sys::non_default_dispositions();
  base_.wrapper = opts_.job_wrapper;
  const bool polling = poller_.open();
  sig_ = Fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  timer_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!polling || !sig_ || !timer_) return false;
  poller_.watch(sig_.get(), EPOLLIN, tag(Tag::signals));
  poller_.watch(timer_.get(), EPOLLIN, tag(Tag::timer));
  // A job holds about six fds (its pipes, pidfd, leaf): under the usual
  // soft limit of 1024 fewer than 170 would fit, whatever --max-jobs says.
  rlimit& nofile = base_.nofile;
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    rlimit raised = nofile;
    raised.rlim_cur = raised.rlim_max;
    base_.nofile_raised = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
  }
  // What a service before this one left when it died with its crash
  // guard (both SIGKILLed): its jobs' leaves are stopped, each said here,
  // with -q too: what was found running and stopped is no chatter.
  SpoolDir::sweep_dead([](const std::string& line) { std::fprintf(stderr, "pmon: %s\n", line.c_str()); });
  if (front_ && !front_->listen()) return false;
  if (opts_.threaded) {
    opts_.threaded->attach(jobs_);
    poller_.watch(opts_.threaded->wake_fd(), EPOLLIN, tag(Tag::threaded));
  }
  if (opts_.die_with_parent) {
    pid_t ppid = ::getppid();
    auto pfd = sys::pidfd_open(ppid);
    // The parent may have died before its pidfd was opened: then we were
    // reparented already and getppid() says so.
    if (!pfd || ::getppid() != ppid) return begin_shutdown(), true;
    parent_ = std::move(*pfd);
    poller_.watch(parent_.get(), EPOLLIN, tag(Tag::parent));
  }
  return !front_ || front_->open_input();
}

int ServiceLoop::run() {
  if (!setup()) return 125;
  std::vector<epoll_event> evs(256);
  BackendUse use;
  use.defer_cleanup = true;
  use.helpers_apart = true;
  backend_.use(use);
  if (CrashGuard* guard = backend_.guard())
    if (std::string w = guard->warning(); !w.empty() && !opts_.quiet)
      std::fprintf(stderr, "pmon: warning: %s\n", w.c_str());
  watch_guard();
  for (;;) {
    if (jobs_.shutting_down() && jobs_.empty()) break;
    arm_timer();
    // What jobs that are over left behind (their cgroup leaves, the spool
    // files of jobs their client dropped) is removed when nothing else is
    // ready, a few at a time: a client waiting to hear that its 1000 jobs
    // are gone does not wait for 1000 rmdirs and unlinks. While stop
    // work is queued, events are only looked at, not waited for.
    const bool tidy = backend_.tidy(0) || jobs_.tidy_spools(0);
    const int front_ms = front_ ? front_->wait_ms(kStopPauseMs) : -1;
    const bool busy = front_ms >= 0 || jobs_.stops_queued();
    const int wait_ms = front_ms >= 0          ? front_ms
                        : jobs_.stops_queued() ? (jobs_.stop_slice_was_full() ? kStopPauseMs : 0)
                        : tidy                 ? 0
                                               : -1;
    int n = ::epoll_wait(poller_.fd(), evs.data(), static_cast<int>(evs.size()), wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return 125;
    }
    if (n == 0 && tidy && !busy) {
      // (An rmdir of a leaf can take a while: a few, or 2 ms of them.)
      const int64_t until = sys::monotonic_ns() + kTidySliceNs;
      for (size_t i = 0; i < kTidyBatch; ++i) {
        if (backend_.tidy(0)) (void)backend_.tidy(1);
        else if (!jobs_.tidy_spools(4)) break;
        if (sys::monotonic_ns() >= until) break;
      }
      continue;
    }
    // Out of memory is an error reply where a request could be named
    // (Connections::handle_line), else the event is dropped: the service,
    // and with it its promise to stop every job, stays up.
    try {
      for (int i = 0; i < n; ++i) on_event(evs[i].data.u64, evs[i].events);
      if (front_) front_->before_jobs();
      jobs_.on_time();
      jobs_.run_stops();
      jobs_.start_replacements();
      jobs_.flush_records();  // (before the answers that say these jobs ended)
      if (front_) front_->after_jobs();
      jobs_.make_reports();
    } catch (const std::bad_alloc&) {
    }
    if (front_) front_->end_turn();
  }
  if (front_) front_->last_words();
  return jobs_.all_verified() ? 0 : 125;
}

void ServiceLoop::on_event(uint64_t t, uint32_t events) {
  switch (tag_kind(t)) {
    case Tag::signals: on_signals(); return;
    case Tag::timer: {
      uint64_t v;
      (void)!::read(timer_.get(), &v, sizeof v);
      return;  // jobs_.on_time() runs after every batch
    }
    case Tag::parent: poller_.unwatch(parent_.get()); begin_shutdown(); return;
    case Tag::guard: on_guard_end(); return;
    case Tag::threaded: opts_.threaded->run_posted(); return;
    case Tag::listener:
    case Tag::conn_in:
    case Tag::conn_out:
      if (front_) front_->on_event(t, events);
      return;
    default: jobs_.on_event(t, events); return;
  }
}

void ServiceLoop::on_signals() {
  signalfd_siginfo info;
  while (::read(sig_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) begin_shutdown();
}

void ServiceLoop::begin_shutdown() {
  if (jobs_.shutting_down()) return;
  if (front_) front_->stop_accepting();
  if (opts_.threaded) opts_.threaded->closing();
  jobs_.shutdown();
}

void ServiceLoop::watch_guard() {
  CrashGuard* guard = backend_.guard();
  guard_ = guard ? guard->pidfd() : -1;
  if (guard_ >= 0) poller_.watch(guard_, EPOLLIN, tag(Tag::guard));
}

// The crash guard exited (it was killed): the service's SIGKILL would now
// leave every job running. A new guard covers them all (it finds their
// leaves by name); without one, nothing new is started.
void ServiceLoop::on_guard_end() {
  poller_.unwatch(guard_);
  guard_ = -1;
  CrashGuard& guard = *backend_.guard();  // its pidfd was watched
  const pid_t old = guard.pid();
  if (auto r = guard.restart(); r) {
    std::fprintf(stderr, "pmon: the crash guard (pid %d) ended; a new one (pid %d) guards every job\n", old,
                 guard.pid());
    if (std::string w = guard.warning(); !w.empty() && !opts_.quiet)
      std::fprintf(stderr, "pmon: warning: %s\n", w.c_str());
    watch_guard();
  } else {
    const std::string why = "the service's crash guard (pid " + std::to_string(old) +
                            ") ended and no new one could be started (" + render(r.error()) +
                            "): a job started now would outlive a crash of the service; restart the service";
    std::fprintf(stderr, "pmon: %s\n", why.c_str());
    jobs_.refuse_new(why);
  }
}

void ServiceLoop::arm_timer() {
  int64_t next = jobs_.next_deadline();
  // Disarmed (by us, or it fired: it is one-shot) and nothing due: as it is.
  if (next == kForever && armed_ == kForever) return;
  armed_ = next;
  itimerspec its{};
  if (next != kForever) {
    next = std::max<int64_t>(next, 1);
    its.it_value.tv_sec = next / 1'000'000'000;
    its.it_value.tv_nsec = next % 1'000'000'000;
  }
  (void)::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
}


int serve_threaded(Backend& backend, const ServeOptions& o) {
  ServeOptions opts = o;
  Poller poller;
  SpawnBase base;
  // (no connections: what requests wait for is counted all the same)
  RequestBudget waiting(opts.waiting_share(), kMaxWaiting);
  JobTable jobs(backend, opts, poller, waiting, base);
  jobs.set_front(opts.threaded);
  jobs.answers().set_room([&] {
    const size_t room = opts.queue_share() - std::min(opts.queue_share(), waiting.used());
    return room - std::min(room, jobs.io_used());
  });
  ServiceLoop loop(backend, opts, poller, base, jobs, nullptr);
  return loop.run();
}

}  // namespace pmon::serve
