// SPDX-License-Identifier: Apache-2.0
// bench_tree: the process trees bench_teardown stops.
//
//   bench_tree sleep       N READY [FANOUT]  N processes (this one included),
//                                            each at most FANOUT children
//                                            (default 10), all in pause()
//   bench_tree ignore-term N READY [FANOUT]  the same with SIGTERM ignored,
//                                            so only the KILL path ends them
//   bench_tree storm       N READY [BUDGET]  a fork storm: workers fork and
//                                            exit as fast as they can, so
//                                            every pid lives ~one fork long;
//                                            at most N live at once and
//                                            BUDGET forks in all (default
//                                            5000), then the workers exit
//
// Once the tree is complete (or the storm is in full swing) one line goes to
// the file READY (opened for writing; a FIFO works): "ready N" or "fail".
// Whatever happens, every process ends by itself after kMaxLifeS seconds
// (SIGALRM in the tree; in the storm a clock check after kStormLifeS and the
// fork budget), so a broken stop protocol cannot leave the machine a storm.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr unsigned kMaxLifeS = 60;
constexpr unsigned kStormLifeS = 10;

int g_count_w = -1;

int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void say_ready(const char* path, const char* line) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!::write(fd, line, std::strlen(line));
  ::close(fd);
}

// Tells the root that `n` processes are up ('x') or could not be made ('F').
void count(char c, int n) {
  char buf[256];
  std::memset(buf, c, sizeof buf);
  while (n > 0) {
    ssize_t w = ::write(g_count_w, buf, static_cast<size_t>(n < 256 ? n : 256));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    n -= static_cast<int>(w);
  }
}

[[noreturn]] void sleep_forever() {
  for (;;) ::pause();
}

// This process is one node of a subtree of `budget` processes: it makes its
// children (splitting the rest of the budget among at most `fanout` of
// them), reports itself and sleeps.
[[noreturn]] void node(int budget, int fanout) {
  int rest = budget - 1;
  int kids = rest < fanout ? rest : fanout;
  for (int i = 0; i < kids; ++i) {
    int share = rest / kids + (i < rest % kids ? 1 : 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::alarm(kMaxLifeS);
      node(share, fanout);
    }
    if (pid < 0) count('F', share);
  }
  count('x', 1);
  sleep_forever();
}

int tree(bool ignore_term, int n, const char* ready, int fanout) {
  if (ignore_term) ::signal(SIGTERM, SIG_IGN);
  ::alarm(kMaxLifeS);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return 1;
  g_count_w = p[1];
  // The root is node() without the final sleep, so it can collect counts.
  int rest = n - 1;
  int kids = rest < fanout ? rest : fanout;
  for (int i = 0; i < kids; ++i) {
    int share = rest / kids + (i < rest % kids ? 1 : 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      ::alarm(kMaxLifeS);
      node(share, fanout);
    }
    if (pid < 0) count('F', share);
  }
  int up = 0, failed = 0;
  char buf[256];
  int64_t give_up = now_ns() + 30'000'000'000;
  while (up + failed < n - 1 && now_ns() < give_up) {
    pollfd pf{p[0], POLLIN, 0};
    if (::poll(&pf, 1, 1000) <= 0) continue;
    ssize_t r = ::read(p[0], buf, sizeof buf);
    for (ssize_t i = 0; i < r; ++i) (buf[i] == 'x' ? up : failed)++;
  }
  char line[64];
  if (failed == 0 && up == n - 1) std::snprintf(line, sizeof line, "ready %d\n", n);
  else std::snprintf(line, sizeof line, "fail %d of %d up\n", up + 1, n);
  say_ready(ready, line);
  sleep_forever();
}

struct Storm {
  std::atomic<int> live;    // workers alive (a killed one is never uncounted)
  std::atomic<long> forks;  // forks made so far
  long budget;              // forks allowed in all
  int64_t stop_at;
  int cap;
};

// Takes one unit of `counter` below `limit`, or fails: the storm is bounded
// in live processes and in forks whatever the timing.
template <class T>
bool take(std::atomic<T>& counter, T limit) {
  T v = counter.load();
  while (v < limit)
    if (counter.compare_exchange_weak(v, v + 1)) return true;
  return false;
}

// A worker forks (two children while below the cap, else one) and exits:
// its pid is gone before a scanner can act on it, its children are orphans.
// With the fork budget spent, or past stop_at, it exits.
[[noreturn]] void worker(Storm* s) {
  for (;;) {
    if (now_ns() >= s->stop_at || s->forks.load() >= s->budget) {
      s->live.fetch_sub(1);
      ::_exit(0);
    }
    int made = 0;
    for (int k = 0; k < 2; ++k) {
      // The first child replaces this worker (no new slot); a second one
      // needs a free slot under the cap.
      if (k == 1 && !take(s->live, s->cap)) break;
      if (!take(s->forks, s->budget)) {
        if (k == 1) s->live.fetch_sub(1);
        break;
      }
      pid_t pid = ::fork();
      if (pid == 0) goto next;  // the child carries on as a worker
      if (pid < 0) {
        if (k == 1) s->live.fetch_sub(1);
        break;
      }
      ++made;
    }
    if (made == 0) {
      ::usleep(1000);  // fork failed (EAGAIN?): do not spin on it
      continue;
    }
    ::_exit(0);  // this worker's slot passes to its first child
  next:;
  }
}

int storm(int cap, long budget, const char* ready) {
  void* m = ::mmap(nullptr, sizeof(Storm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 1;
  Storm* s = new (m) Storm{};
  s->cap = cap;
  s->budget = budget;
  s->stop_at = now_ns() + int64_t{kStormLifeS} * 1'000'000'000;
  ::alarm(kMaxLifeS);
  s->live.store(1);
  pid_t pid = ::fork();
  if (pid == 0) worker(s);
  if (pid < 0) {
    say_ready(ready, "fail fork\n");
    return 1;
  }
  // In full swing: a tenth of the budget is spent (or 200 ms passed).
  int64_t t0 = now_ns();
  while (s->forks.load() < budget / 10 && now_ns() - t0 < 200'000'000) ::usleep(500);
  char line[96];
  std::snprintf(line, sizeof line, "ready storm live=%d forks=%ld\n", s->live.load(), s->forks.load());
  say_ready(ready, line);
  sleep_forever();
}

int usage() {
  std::fputs("usage: bench_tree sleep|ignore-term|storm N READY_PATH [FANOUT]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const char* mode = argv[1];
  int n = std::atoi(argv[2]);
  const char* ready = argv[3];
  int fanout = argc > 4 ? std::atoi(argv[4]) : 10;
  if (n < 1 || fanout < 1) return usage();
  if (std::strcmp(mode, "sleep") == 0) return tree(false, n, ready, fanout);
  if (std::strcmp(mode, "ignore-term") == 0) return tree(true, n, ready, fanout);
  // For the storm the fourth argument is the fork budget.
  if (std::strcmp(mode, "storm") == 0) return storm(n, argc > 4 ? std::atol(argv[4]) : 5000, ready);
  return usage();
}
