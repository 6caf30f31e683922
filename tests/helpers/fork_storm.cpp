// SPDX-License-Identifier: Apache-2.0
// fork_storm COUNTERS CAP BUDGET RATE [SECONDS [term-forks|setsid]]
//
// With "setsid" every member starts a session of its own as it is forked,
// so no process group holds the storm: a supervisor has to find each
// member to stop it.
//
// With "term-forks" SIGTERM is caught instead of ignored: a process that gets
// it forks one last child, which lives kTermChildMs and exits, and exits
// itself (as a shell's `trap 'cleanup &' TERM` would). A storm member forked
// after the stop's signal pass got no SIGTERM and storms on; one that got it
// ends the storm's line. So the storm ends within the grace period only when
// SIGTERM reached every member at once.
//
// A bounded fork storm. SIGTERM does nothing to a process of the storm but
// be counted (so it keeps forking through the grace period). Each member
// forks up to four children and exits, leaving orphans and zombies for its
// supervisor to reap; the main process forks for ever and reaps its own
// children. Bounds, so the machine
// (pid_max 32768, shared) stays safe even if the supervisor fails or reaps
// slowly: at most CAP storm processes alive at once, at most RATE forks per
// second overall, BUDGET forks in total, none after SECONDS (default 60).
//
// The cap counts live storm processes; a storm process that has exited holds
// its pid until it is reaped, by its supervisor, which a loaded machine may
// starve while the storm runs. So the storm also stops forking while the
// machine's task count (the 4th field of /proc/loadavg, zombies included)
// is more than kHeldMax above what it was when the storm started: a slow
// reaper (the system's init, for a library caller that is no subreaper)
// slows the storm down instead of letting it take the machine's pids from
// everything else running beside it.
//
// COUNTERS is a file the storm maps shared, so the counts survive SIGKILL:
// five int64 — live, forks, peak live, CLOCK_REALTIME ns of the last fork,
// and 1 + the forks made when the first SIGTERM reached a storm process (0:
// none did; not kept in the term-forks mode). The forks after that one are
// the proof that the storm was still going when its stop began, with no
// clock to compare. The test reads it with od after the call. The storm's
// argv names COUNTERS, so the test can find any survivor by that unique
// path.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

struct Counters {
  std::atomic<int64_t> live;
  std::atomic<int64_t> forks;
  std::atomic<int64_t> peak;
  std::atomic<int64_t> last_fork_ns;
  std::atomic<int64_t> term_forks;
};
static_assert(sizeof(Counters) == 40);

int64_t now_ns(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

Counters* g_c = nullptr;
int64_t g_cap = 0, g_budget = 0, g_rate = 0, g_start_ns = 0, g_end_ns = 0;
constexpr int64_t kHeldMax = 6000;  // of pid_max's default 32768
int64_t g_tasks_max = 0;  // the machine's task count the storm stays under

// The machine's tasks (threads and zombies alike), or -1 when unknown.
int64_t machine_tasks() {
  int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* slash = std::strchr(buf, '/');  // "0.50 0.40 0.30 2/345 6789"
  return slash ? std::atoll(slash + 1) : -1;
}

// One fork within the bounds: 1 in the child, 0 in the parent, -1 when the
// cap or the budget says no (or fork failed), -2 when the rate says "later".
int bounded_fork() {
  int64_t now = now_ns(CLOCK_MONOTONIC);
  if (now > g_end_ns) return -1;
  int64_t allowed = std::min<int64_t>(g_budget, 1 + g_rate * (now - g_start_ns) / 1'000'000'000);
  int64_t n = g_c->forks.load();
  if (n >= g_budget) return -1;
  if (n >= allowed) return -2;
  if (n % 8 == 0 && machine_tasks() > g_tasks_max) return -2;  // zombies wait for their reaper
  int64_t live = g_c->live.fetch_add(1) + 1;
  if (live > g_cap) {
    g_c->live.fetch_sub(1);
    return -1;
  }
  g_c->forks.fetch_add(1);
  int64_t peak = g_c->peak.load();
  while (live > peak && !g_c->peak.compare_exchange_weak(peak, live)) {
  }
  pid_t p = fork();
  if (p < 0) {
    g_c->live.fetch_sub(1);
    return -1;
  }
  g_c->last_fork_ns.store(now_ns(CLOCK_REALTIME));
  return p == 0 ? 1 : 0;
}

bool g_member = false;
bool g_setsid = false;
constexpr int kTermChildMs = 30;

// SIGTERM in the term-forks mode (see the top). Async-signal-safe: _Fork,
// nanosleep, lock-free atomics, _exit.
void on_term(int) {
  if (_Fork() == 0) {
    timespec ts{0, kTermChildMs * 1'000'000L};
    nanosleep(&ts, nullptr);
    _exit(0);
  }
  if (g_member) g_c->live.fetch_sub(1);
  _exit(0);
}

// SIGTERM otherwise: the first to arrive anywhere in the storm notes how
// many forks had been made. Async-signal-safe: lock-free atomics only.
void on_term_count(int) {
  int64_t none = 0;
  g_c->term_forks.compare_exchange_strong(none, g_c->forks.load() + 1);
}

[[noreturn]] void storm_member() {
  g_member = true;
  for (;;) {
    int made = 0;
    while (made < 4) {
      int r = bounded_fork();
      if (r == 1) {
        made = 0;  // a new member: start over as one
        if (g_setsid) (void)setsid();
        continue;
      }
      if (r == 0) {
        ++made;
        continue;
      }
      if (r == -2) {
        usleep(2000);
        continue;
      }
      break;  // at the cap (or out of bounds): leave, making room
    }
    g_c->live.fetch_sub(1);
    _exit(0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: fork_storm COUNTERS CAP BUDGET RATE [SECONDS [term-forks|setsid]]\n");
    return 2;
  }
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof(Counters)) != 0) {
    std::perror("fork_storm: COUNTERS");
    return 2;
  }
  void* m = mmap(nullptr, sizeof(Counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    std::perror("fork_storm: mmap");
    return 2;
  }
  close(fd);
  g_c = new (m) Counters{};
  g_cap = std::atoll(argv[2]);
  g_budget = std::atoll(argv[3]);
  g_rate = std::atoll(argv[4]);
  g_start_ns = now_ns(CLOCK_MONOTONIC);
  g_end_ns = g_start_ns + (argc > 5 ? std::atoll(argv[5]) : 60) * 1'000'000'000LL;
  const int64_t tasks = machine_tasks();
  g_tasks_max = tasks < 0 ? INT64_MAX : tasks + kHeldMax;
  const bool term_forks = argc > 6 && std::strcmp(argv[6], "term-forks") == 0;
  g_setsid = argc > 6 && std::strcmp(argv[6], "setsid") == 0;
  struct sigaction sa {};
  sa.sa_handler = term_forks ? on_term : on_term_count;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);

  for (;;) {
    int r = bounded_fork();
    if (r == 1) {
      if (g_setsid) (void)setsid();
      storm_member();
    }
    // Reap our own children so the main's zombies do not pile up.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (r == -2) {
      usleep(1000);
    } else if (r < 0) {
      if (now_ns(CLOCK_MONOTONIC) > g_end_ns || g_c->forks.load() >= g_budget) break;
      usleep(500);
    }
  }
  // Out of budget or time: wait to be stopped (bounded as well; a SIGTERM
  // does not end the wait).
  timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += 60;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
  return 0;
}
