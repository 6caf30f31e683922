// SPDX-License-Identifier: Apache-2.0
// bench_wall_time: whole-process wall time of `pmon run -- /bin/true` per
// backend against bare /bin/true, `timeout 10 /bin/true` and
// `tini -s -- /bin/true`, in one interleaved run: every round runs each
// command once (in an order shuffled anew each round, so each command
// follows every other equally often), each by posix_spawn + waitpid, timed with
// CLOCK_MONOTONIC from just before the spawn to just after the reap.
//
//   bench_wall_time [--pmon PATH] [--rounds N] [--warmup N] [--tini PATH]
//                   [--alt LABEL=PATH]...
// --alt adds another pmon binary (a prototype build, say) to the same
// interleaved run, with --confine cgroup, so its ratio is side by side.
// Each executable is dropped from the page cache before the warm-up rounds
// (drop_from_cache below).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"

extern char** environ;

namespace {

struct Command {
  std::string label;
  std::vector<std::string> argv;
  std::vector<double> ms;
  int failures = 0;
};

// Runs argv once with stdio on /dev/null; returns the wait status or -1.
int run_once(const std::vector<std::string>& argv, int devnull, double* ms) {
  std::vector<char*> a;
  for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd = 0; fd < 3; ++fd) posix_spawn_file_actions_adddup2(&fa, devnull, fd);
  pid_t pid = 0;
  int64_t t0 = bench::now_ns();
  int rc = posix_spawn(&pid, a[0], &fa, nullptr, a.data(), environ);
  int status = -1;
  if (rc == 0) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  int64_t t1 = bench::now_ns();
  posix_spawn_file_actions_destroy(&fa);
  *ms = static_cast<double>(t1 - t0) / 1e6;
  return rc == 0 ? status : -1;
}

// Every executable measured starts from the same place: written back and
// dropped from the page cache, so that the first run reads it in as a start
// after boot would, whether it was just written by the linker, by cp or by
// dpkg (each can leave a file's pages in the cache in pieces of other sizes).
void drop_from_cache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fdatasync(fd);
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void usage() {
  std::fputs("usage: bench_wall_time [--pmon PATH] [--tini PATH] [--rounds N] [--warmup N]\n"
             "                       [--alt LABEL=PATH]...\n", stderr);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string pmon = bench::self_dir() + "/../pmon";
  std::string tini = bench::which("tini");
  std::string timeout = bench::which("timeout");
  int rounds = 300, warmup = 20;
  std::vector<std::pair<std::string, std::string>> alts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage();
    if (a == "--pmon") pmon = argv[++i];
    else if (a == "--tini") tini = argv[++i];
    else if (a == "--rounds") rounds = std::atoi(argv[++i]);
    else if (a == "--warmup") warmup = std::atoi(argv[++i]);
    else if (a == "--alt") {
      std::string v = argv[++i];
      size_t eq = v.find('=');
      if (eq == std::string::npos) usage();
      alts.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else usage();
  }
  if (rounds < 1) usage();
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    std::perror("open /dev/null");
    return 1;
  }

  std::vector<Command> cmds;
  cmds.push_back({"/bin/true", {"/bin/true"}, {}, 0});
  if (!timeout.empty()) cmds.push_back({"timeout 10 /bin/true", {timeout, "10", "/bin/true"}, {}, 0});
  else std::printf("note: timeout(1) not found; skipped\n");
  int tini_i = -1;
  if (!tini.empty()) {
    tini_i = static_cast<int>(cmds.size());
    cmds.push_back({"tini -s -- /bin/true", {tini, "-s", "--", "/bin/true"}, {}, 0});
  } else {
    std::printf("note: tini not found (scripts/deps.sh installs it); no ratio against it\n");
  }
  // Only the backends that work here: an explicit --confine fails closed.
  for (const char* b : {"cgroup", "subreaper", "pgroup"}) {
    std::vector<std::string> av{pmon, "run", "--confine", b, "--", "/bin/true"};
    double ms = 0;
    int st = run_once(av, devnull, &ms);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::printf("note: pmon run --confine %s is not available here (status %d); skipped\n", b,
                  st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
      continue;
    }
    cmds.push_back({std::string("pmon run --confine ") + b, av, {}, 0});
  }
  for (const auto& [label, path] : alts)
    cmds.push_back({label + " (cgroup)", {path, "run", "--confine", "cgroup", "--", "/bin/true"}, {}, 0});

  for (const Command& c : cmds) drop_from_cache(c.argv[0]);
  std::string load0 = bench::loadavg();
  size_t n = cmds.size();
  // A fresh order every round: a command pays for what the one before it
  // left the kernel to finish (a cgroup freed after its rmdir, a helper
  // still exiting), so each must follow every other equally often. With the
  // fixed order of before, one pmon binary measured up to a tenth apart in
  // two places of the same run.
  std::mt19937 rng(20261204);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  for (int r = -warmup; r < rounds; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t k = 0; k < n; ++k) {
      Command& c = cmds[order[k]];
      double ms = 0;
      int st = run_once(c.argv, devnull, &ms);
      if (r < 0) continue;
      if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ++c.failures;
      c.ms.push_back(ms);
    }
  }
  std::string load1 = bench::loadavg();

  std::vector<bench::Stats> st;
  for (const Command& c : cmds) st.push_back(bench::stats_of(c.ms));
  double bare = st[0].median;
  double ref = tini_i >= 0 ? st[static_cast<size_t>(tini_i)].median : 0;

  std::printf("\nwall time of one whole command, ms (%d interleaved rounds after %d warm-up; "
              "loadavg %s -> %s)\n\n", rounds, warmup, load0.c_str(), load1.c_str());
  std::printf("%-30s %8s %8s %8s %8s %10s %10s %5s\n", "command", "median", "p90", "mean", "min",
              "x tini -s", "x bare", "fail");
  for (size_t i = 0; i < n; ++i) {
    char vs_tini[32] = "n/a";
    if (ref > 0) std::snprintf(vs_tini, sizeof vs_tini, "%.2f", st[i].median / ref);
    std::printf("%-30s %8.3f %8.3f %8.3f %8.3f %10s %10.2f %5d\n", cmds[i].label.c_str(),
                st[i].median, st[i].p90, st[i].mean, st[i].min, vs_tini, st[i].median / bare,
                cmds[i].failures);
  }
  std::printf("\nratios are of medians; target: pmon run --confine cgroup <= 1.00 x tini -s\n");
  ::close(devnull);
  int fails = 0;
  for (const Command& c : cmds) fails += c.failures;
  return fails == 0 ? 0 : 1;
}
