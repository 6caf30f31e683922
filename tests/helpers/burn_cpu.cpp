// SPDX-License-Identifier: Apache-2.0
// burn_cpu MS: spins until this process has used MS milliseconds of CPU time
// (user + system), then exits 0. For the report's cpu_usec.
#include <time.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: burn_cpu MS\n");
    return 2;
  }
  const long long want_ns = std::atoll(argv[1]) * 1'000'000LL;
  volatile unsigned long sink = 0;
  for (;;) {
    for (int i = 0; i < 100000; ++i) sink = sink + static_cast<unsigned long>(i);
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    if (ts.tv_sec * 1'000'000'000LL + ts.tv_nsec >= want_ns) return 0;
  }
}
