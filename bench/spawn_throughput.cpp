// SPDX-License-Identifier: Apache-2.0
// bench_spawn_throughput: calls per second of the library's run_call() with
// /bin/true, one call after another in this process, per backend, against
// bare posix_spawn + waitpid of /bin/true in the same process. The modes
// take turns in batches (bare, cgroup, subreaper, pgroup, bare, ...), so a
// change of machine load hits every mode alike; the table gives the median
// batch rate and the spread over batches.
//
// Two more references split the gap: posix_spawn with POSIX_SPAWN_SETSID
// (the new session every pmon call gets, DESIGN §2), and fork+setsid+execve
// (a full fork, as pmon's clone3 without CLONE_VM|CLONE_VFORK is; posix_spawn
// shares the address space instead, so no page tables copied, no COW faults).
//
//   bench_spawn_throughput [--batches N] [--batch-size N] [--warmup N]
//                          [--modes bare,setsid,fork,cgroup,subreaper,pgroup]
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.h"
#include "confine/boundary.h"
#include "core/run.h"

extern char** environ;

namespace {

struct Mode {
  std::string label;
  std::unique_ptr<pmon::Backend> backend;  // null: bare posix_spawn
  bool setsid = false;                     // bare, with POSIX_SPAWN_SETSID
  bool fork = false;                       // fork + setsid + execve instead
  std::vector<double> rates;               // calls/s, one per batch
  int failures = 0;
};

bool bare_call(int devnull, bool setsid) {
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd = 0; fd < 3; ++fd) posix_spawn_file_actions_adddup2(&fa, devnull, fd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (setsid) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &fa, &attr, argv, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool fork_call(int devnull) {
  char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    for (int fd = 0; fd < 3; ++fd) ::dup2(devnull, fd);
    ::setsid();
    ::execve(argv[0], argv, environ);
    ::_exit(127);
  }
  if (pid < 0) return false;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool pmon_call(pmon::Backend& b, int devnull) {
  pmon::RunOptions opts;
  opts.call.spawn.argv = {"/bin/true"};
  opts.call.spawn.stdio = {devnull, devnull, devnull};
  // Library use: this process has other children, so run_call must not reap
  // or report what is not its own (see RunOptions::own_all_children).
  opts.own_all_children = false;
  auto r = pmon::run_call(b, opts);
  return r && r->status() == 0 && r->cleanup_verified;
}

void usage() {
  std::fputs("usage: bench_spawn_throughput [--batches N] [--batch-size N] [--warmup N]\n"
             "                              [--modes bare,setsid,fork,cgroup,subreaper,pgroup]\n", stderr);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 20, batch_size = 50, warmup = 2;
  std::string want = "bare,setsid,fork,cgroup,subreaper,pgroup";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage();
    if (a == "--batches") batches = std::atoi(argv[++i]);
    else if (a == "--batch-size") batch_size = std::atoi(argv[++i]);
    else if (a == "--warmup") warmup = std::atoi(argv[++i]);
    else if (a == "--modes") want = argv[++i];
    else usage();
  }
  if (batches < 1 || batch_size < 1) usage();
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    std::perror("open /dev/null");
    return 1;
  }

  want = "," + want + ",";
  auto wanted = [&](std::string_view m) { return want.find("," + std::string(m) + ",") != std::string::npos; };
  std::vector<Mode> modes;
  // The first mode is the baseline of the ratios, always measured.
  modes.push_back({"posix_spawn+waitpid", nullptr, false, false, {}, 0});
  if (wanted("setsid")) modes.push_back({"posix_spawn+setsid", nullptr, true, false, {}, 0});
  if (wanted("fork")) modes.push_back({"fork+setsid+execve", nullptr, true, true, {}, 0});
  for (pmon::ConfineKind k :
       {pmon::ConfineKind::cgroup, pmon::ConfineKind::subreaper, pmon::ConfineKind::pgroup}) {
    if (!wanted(pmon::to_string(k))) continue;
    pmon::ConfineRequest req;
    req.kind = k;
    auto sel = pmon::select_backend(req);
    if (!sel) {
      std::printf("note: %s\n", render(sel.error()).c_str());
      continue;
    }
    modes.push_back({"run_call " + std::string(pmon::to_string(k)), std::move(sel->backend), false, false, {}, 0});
  }

  std::string load0 = bench::loadavg();
  for (int b = -warmup; b < batches; ++b) {
    for (Mode& m : modes) {
      int fails = 0;
      int64_t t0 = bench::now_ns();
      for (int i = 0; i < batch_size; ++i) {
        bool ok = m.backend ? pmon_call(*m.backend, devnull)
                  : m.fork  ? fork_call(devnull)
                            : bare_call(devnull, m.setsid);
        if (!ok) ++fails;
      }
      int64_t t1 = bench::now_ns();
      if (b < 0) continue;
      m.failures += fails;
      m.rates.push_back(batch_size / (static_cast<double>(t1 - t0) / 1e9));
    }
  }
  std::string load1 = bench::loadavg();

  std::printf("\nspawn+wait of /bin/true in one process, calls/s (%d interleaved batches of %d "
              "after %d warm-up; loadavg %s -> %s)\n\n",
              batches, batch_size, warmup, load0.c_str(), load1.c_str());
  std::printf("%-24s %10s %10s %10s %10s %9s %5s\n", "mode", "median", "min", "max", "us/call",
              "x bare", "fail");
  double bare = bench::stats_of(modes[0].rates).median;
  for (Mode& m : modes) {
    bench::Stats s = bench::stats_of(m.rates);
    std::printf("%-24s %10.0f %10.0f %10.0f %10.1f %9.2f %5d\n", m.label.c_str(), s.median, s.min,
                s.max, 1e6 / s.median, s.median / bare, m.failures);
  }
  std::printf("\nratios are of median batch rates; target: run_call >= 0.90 x bare posix_spawn\n");
  ::close(devnull);
  int fails = 0;
  for (const Mode& m : modes) fails += m.failures;
  return fails == 0 ? 0 : 1;
}
