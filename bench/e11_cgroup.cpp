// SPDX-License-Identifier: Apache-2.0
// bench_e11_cgroup: E11 on the cgroup backend — from SIGKILL of pmon to its
// call's leaf being empty (cgroup.events "populated 0", which the guard
// waits for) and to the leaf being removed (the guard's rmdir).
//
//   bench_e11_cgroup [--pmon PATH] [--tree PATH] [--runs 20] [--sizes 1,10,100]
//
// Each run starts `pmon run -q --confine cgroup -- bench_tree sleep N READY`,
// waits until the tree of N processes is complete, finds the leaf
// (pmon-<pid>-... under the benchmark's own cgroup, where pmon makes it),
// SIGKILLs pmon and times the two events. Needs root or a delegated cgroup.
// A leaf that does not empty within 5 s is counted, killed and removed here.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <vector>

#include "confine/cgroup_fs.h"
#include "sys/syscalls.h"

extern char** environ;

namespace {

std::string self_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string s(buf);
  return s.substr(0, s.rfind('/'));
}

double ms_since(int64_t t0) { return (pmon::sys::monotonic_ns() - t0) / 1e6; }

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

bool populated_zero(int fd) {
  char buf[256];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return true;  // gone
  buf[n] = '\0';
  const char* p = std::strstr(buf, "populated ");
  return p == nullptr || p[10] == '0';
}

std::string find_leaf(const std::string& dir, pid_t pmon) {
  std::string prefix = "pmon-" + std::to_string(pmon) + "-";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return {};
  std::string out;
  while (dirent* e = ::readdir(d))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out = dir + "/" + e->d_name;
  ::closedir(d);
  return out;
}

void sleep_us(long us) {
  timespec ts{us / 1'000'000, (us % 1'000'000) * 1000};
  ::nanosleep(&ts, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = self_dir();
  std::string pmon = dir + "/../pmon", tree = dir + "/bench_tree";
  int runs = 20;
  std::vector<int> sizes{1, 10, 100};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--pmon") pmon = argv[i + 1];
    else if (a == "--tree") tree = argv[i + 1];
    else if (a == "--runs") runs = std::atoi(argv[i + 1]);
    else if (a == "--sizes") {
      sizes.clear();
      for (char* s = std::strtok(argv[i + 1], ","); s != nullptr; s = std::strtok(nullptr, ",")) sizes.push_back(std::atoi(s));
    } else {
      std::fprintf(stderr, "usage: bench_e11_cgroup [--pmon PATH] [--tree PATH] [--runs N] [--sizes 1,10,100]\n");
      return 2;
    }
  }
  auto loc = pmon::confine::locate_cgroup2();
  if (!loc) {
    std::fprintf(stderr, "bench_e11_cgroup: %s\n", loc.error().text.c_str());
    return 1;
  }
  char tmpl[] = "/tmp/pmon-bench-e11.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  std::string ready = std::string(tmpl) + "/ready";
  double la0[3] = {};
  (void)::getloadavg(la0, 3);

  std::printf("E11 on the cgroup backend: SIGKILL of pmon -> leaf empty / leaf removed (ms), %d runs\n", runs);
  std::printf("%6s %5s %8s %8s %8s %10s %10s %10s %6s\n", "procs", "ok", "empty50", "empty90", "emptymax",
              "removed50", "removed90", "removedmax", "late");
  for (int n : sizes) {
    std::vector<double> empty, removed;
    int late = 0;
    for (int r = 0; r < runs; ++r) {
      ::unlink(ready.c_str());
      std::string ns = std::to_string(n);
      const char* args[] = {pmon.c_str(), "run", "-q", "--confine", "cgroup", "--", tree.c_str(), "sleep",
                            ns.c_str(), ready.c_str(), nullptr};
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
      pid_t pid = 0;
      if (posix_spawn(&pid, pmon.c_str(), &fa, nullptr, const_cast<char**>(args), environ) != 0) return 1;
      posix_spawn_file_actions_destroy(&fa);
      struct stat st;
      int64_t t_start = pmon::sys::monotonic_ns();
      while ((::stat(ready.c_str(), &st) != 0 || st.st_size == 0) && ms_since(t_start) < 10000) sleep_us(1000);
      std::string leaf = find_leaf(loc->own_path, pid);
      int ev = leaf.empty() ? -1 : ::open((leaf + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
      if (ev < 0) {
        std::fprintf(stderr, "bench_e11_cgroup: no leaf for pmon %d (is cgroup available?)\n", pid);
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
        return 1;
      }
      int64_t t0 = pmon::sys::monotonic_ns();
      ::kill(pid, SIGKILL);
      double t_empty = -1, t_removed = -1;
      while (ms_since(t0) < 5000) {
        if (populated_zero(ev)) {
          t_empty = ms_since(t0);
          break;
        }
        pollfd p{ev, POLLPRI, 0};
        (void)::poll(&p, 1, 100);
      }
      ::close(ev);
      while (t_empty >= 0 && ms_since(t0) < 5000) {
        if (::access(leaf.c_str(), F_OK) != 0) {
          t_removed = ms_since(t0);
          break;
        }
        sleep_us(100);
      }
      ::waitpid(pid, nullptr, 0);
      if (t_empty < 0 || t_removed < 0) {
        ++late;
        int k = ::open((leaf + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
        if (k >= 0) {
          (void)!::write(k, "1", 1);
          ::close(k);
        }
        for (int i = 0; i < 100 && ::rmdir(leaf.c_str()) != 0 && errno == EBUSY; ++i) sleep_us(10000);
        continue;
      }
      empty.push_back(t_empty);
      removed.push_back(t_removed);
    }
    std::printf("%6d %5zu %8.2f %8.2f %8.2f %10.2f %10.2f %10.2f %6d\n", n, empty.size(), pct(empty, 0.5),
                pct(empty, 0.9), empty.empty() ? 0 : *std::max_element(empty.begin(), empty.end()),
                pct(removed, 0.5), pct(removed, 0.9),
                removed.empty() ? 0 : *std::max_element(removed.begin(), removed.end()), late);
    std::fflush(stdout);
  }
  double la1[3] = {};
  (void)::getloadavg(la1, 3);
  std::printf("load average before %.2f, after %.2f\n", la0[0], la1[0]);
  ::unlink(ready.c_str());
  ::rmdir(tmpl);
  return 0;
}
