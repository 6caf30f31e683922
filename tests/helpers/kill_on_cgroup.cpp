// SPDX-License-Identifier: Apache-2.0
// kill_on_cgroup DIR NAME PID READY [ATTRS [TIMEOUT_MS]]
//
// Watches DIR for a directory NAME to be made (a cgroup a manager creates
// for PID), creates the file READY once the watch is in place, and the
// moment NAME appears, or once the manager has set ATTRS of its attributes
// after that (extended attributes, which systemd sets on a unit's cgroup
// before it moves processes in), sends SIGKILL to PID (through a pidfd
// taken at the start: PID must be a process of the caller's that it has not
// reaped).
// Prints "killed" and exits 0; exits 1 when NAME did not appear within
// TIMEOUT_MS (default 10000) or PID ended first, 2 on bad arguments.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// How many extended attributes path has (trusted.* ones: root only).
int set_already(const std::string& path) {
  char names[4096];
  ssize_t n = ::listxattr(path.c_str(), names, sizeof names);
  int count = 0;
  for (ssize_t at = 0; at < n; at += static_cast<ssize_t>(std::strlen(names + at)) + 1) ++count;
  return count;
}

int die(const char* what) {
  std::fprintf(stderr, "kill_on_cgroup: %s: %s\n", what, std::strerror(errno));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    std::fprintf(stderr, "usage: kill_on_cgroup DIR NAME PID READY [ATTRS [TIMEOUT_MS]]\n");
    return 2;
  }
  const std::string dir = argv[1], name = argv[2];
  const long pid = std::strtol(argv[3], nullptr, 10);
  int attrs = argc >= 6 ? std::atoi(argv[5]) : 0;
  const int timeout_ms = argc == 7 ? std::atoi(argv[6]) : 10000;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return die("pidfd_open");
  int in = ::inotify_init1(IN_CLOEXEC);
  if (in < 0) return die("inotify_init1");
  if (::inotify_add_watch(in, dir.c_str(), IN_CREATE | IN_ONLYDIR) < 0) return die(dir.c_str());
  int ready = ::open(argv[4], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (ready < 0) return die(argv[4]);
  ::close(ready);
  alignas(inotify_event) char buf[4096];
  for (;;) {
    pollfd p[2] = {{in, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int n = ::poll(p, 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 1;
    if (p[1].revents & POLLIN) return 1;  // it ended by itself
    ssize_t got = ::read(in, buf, sizeof buf);
    if (got <= 0) continue;
    for (char* at = buf; at < buf + got;) {
      auto* ev = reinterpret_cast<inotify_event*>(at);
      bool now = false;
      if (ev->len > 0 && name == ev->name && (ev->mask & IN_CREATE)) {
        if (attrs == 0) now = true;
        else if (::inotify_add_watch(in, (dir + "/" + name).c_str(), IN_ATTRIB) < 0) return die(name.c_str());
        else now = set_already(dir + "/" + name) >= attrs;  // set before the watch was in place
      } else if (ev->mask & IN_ATTRIB) {
        now = --attrs <= 0;
      }
      if (now) {
        if (::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) != 0) return die("pidfd_send_signal");
        std::puts("killed");
        return 0;
      }
      at += sizeof(inotify_event) + ev->len;
    }
  }
}
