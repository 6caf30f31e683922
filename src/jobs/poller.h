// SPDX-License-Identifier: Apache-2.0
// The service's one epoll: what each event is about travels in its tag, the
// kind in the top byte and an id (a connection's, a job's, a stream's)
// below. Every part of the service watches its fds here.
#pragma once

#include <sys/epoll.h>

#include <cerrno>
#include <cstdint>

#include "sys/fd.h"
#include "sys/syscalls.h"

namespace pmon::serve {

using sys::kForever;

enum class Tag : uint64_t {
  listener = 1, signals, timer, parent, conn_in, conn_out, job_main, job_out, job_in, job_stop, job_err, stream, job_ready,
  guard, threaded
};
inline uint64_t tag(Tag t, uint64_t id = 0) { return (static_cast<uint64_t>(t) << 56) | id; }
inline Tag tag_kind(uint64_t v) { return static_cast<Tag>(v >> 56); }
inline uint64_t tag_id(uint64_t v) { return v & ((uint64_t{1} << 56) - 1); }
// A job_main tag with this bit is the watch of the job's owner call (the
// process whose end is that call's end), not of its main process.
inline constexpr uint64_t kOwnerWatch = uint64_t{1} << 55;

class Poller {
 public:
  bool open() {
    ep_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
    return ep_.valid();
  }
  int fd() const { return ep_.get(); }

  // Watched for `events`, or watched for them instead of what it was.
  void watch(int fd, uint32_t events, uint64_t t) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = t;
    if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
      (void)::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, fd, &ev);
  }
  // Added only: false when the fd cannot be (EPERM: a regular file), or is already.
  bool add(int fd, uint32_t events, uint64_t t) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = t;
    return ::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
  }
  void unwatch(int fd) {
    if (fd >= 0) (void)::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fd, nullptr);
  }

 private:
  Fd ep_;
};

}  // namespace pmon::serve
