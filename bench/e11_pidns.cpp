// SPDX-License-Identifier: Apache-2.0
// E11 on pidns: time from SIGKILL of a `pmon run --confine pidns` to every
// process of its tree gone (each watched by a pidfd taken before the kill).
// The tree is N plain sleepers plus a setsid daemon and a TERM-ignorer; the
// namespace init dies by its PR_SET_PDEATHSIG(SIGKILL) and the kernel kills
// the rest. Prints a table; asserts nothing about time.
//
//   bench_e11_pidns [PMON] [REPS]     (PMON default: ../pmon from here)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "sys/proc.h"
#include "sys/syscalls.h"

namespace {

// One run: returns ms from SIGKILL to all gone, or -1 on failure.
double one_run(const std::string& pmon, int n, const std::string& dir) {
  std::string ready = dir + "/ready";
  ::unlink(ready.c_str());
  std::string script = "for i in $(seq " + std::to_string(n) +
                       "); do sleep 1000 & done; setsid sleep 1000 & sh -c 'trap \"\" TERM; exec sleep 1000' & "
                       "touch " + ready + "; wait";
  pid_t pp = ::fork();
  if (pp == 0) {
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0), ::dup2(null, 1), ::dup2(null, 2);
    ::execl(pmon.c_str(), pmon.c_str(), "run", "-q", "--confine", "pidns", "--", "sh", "-c", script.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  struct stat st;
  for (int i = 0; i < 5000 && ::stat(ready.c_str(), &st) != 0; ++i) ::usleep(1000);
  // Every descendant of pmon (relay, init, the tree), each as a pidfd.
  std::vector<pmon::Fd> fds;
  for (int tries = 0; tries < 1000; ++tries) {
    fds.clear();
    for (const pmon::sys::ProcStat& p : pmon::sys::descendants_of(pmon::sys::scan_processes(), pp))
      if (auto fd = pmon::sys::open_identified(p.pid, p.start_time)) fds.push_back(std::move(*fd));
    if (static_cast<int>(fds.size()) >= n + 6) break;  // relay, init, sh, n, daemon, ignorer, touch gone
    ::usleep(1000);
  }
  int64_t t0 = bench::now_ns();
  ::kill(pp, SIGKILL);
  for (pmon::Fd& fd : fds) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) return -1;
  }
  double ms = (bench::now_ns() - t0) / 1e6;
  ::waitpid(pp, nullptr, 0);
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {  // the orphaned init and relay, reparented to us
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  std::string self = argv[0];
  std::string pmon = argc > 1 ? argv[1] : self.substr(0, self.rfind('/') + 1) + "../pmon";
  int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  (void)::prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
  char tmpl[] = "/tmp/bench-e11.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  std::string dir = tmpl;

  std::printf("E11 on pidns: SIGKILL of pmon -> whole tree gone (ms), %d runs each\n", reps);
  std::printf("%-10s %8s %8s %8s %8s %6s\n", "tree", "min", "median", "p90", "max", "fail");
  for (int n : {1, 10, 100}) {
    std::vector<double> v;
    int failed = 0;
    for (int r = 0; r < reps; ++r) {
      double ms = one_run(pmon, n, dir);
      if (ms < 0) ++failed; else v.push_back(ms);
    }
    bench::Stats s = bench::stats_of(v);
    std::printf("%-10s %8.2f %8.2f %8.2f %8.2f %6d\n", (std::to_string(n + 3) + " procs").c_str(), s.min, s.median,
                s.p90, s.max, failed);
  }
  ::unlink((dir + "/ready").c_str());
  ::rmdir(dir.c_str());
  return 0;
}
