#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pmon.run(["true"]) vs subprocess.run(["true"]): calls per second, in one
interleaved run (rounds alternate, so machine load hits both alike), and the
ratio pmon/subprocess (target >= 1.0). Also: the pipe-holder case, time from
the deadline to the return, against timeout + grace.

    PYTHONPATH=BUILD/python /usr/bin/python3 bench/py_run_vs_subprocess.py [ROUNDS] [CALLS]
"""
import os
import statistics
import subprocess
import sys
import time

import pmon


def rate(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn(["true"])
    return n / (time.perf_counter() - t0)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    print(f"load before: {os.getloadavg()}")
    rate(pmon.run, 20)
    rate(subprocess.run, 20)
    p, s = [], []
    for _ in range(rounds):
        p.append(rate(pmon.run, calls))
        s.append(rate(subprocess.run, calls))
    ratios = [a / b for a, b in zip(p, s)]
    print(f"pmon.run(['true'])       {statistics.median(p):8.0f} calls/s (median of {rounds} rounds of {calls})")
    print(f"subprocess.run(['true']) {statistics.median(s):8.0f} calls/s")
    print(f"ratio pmon/subprocess    {statistics.median(ratios):8.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"
          f"  confinement={pmon.run(['true']).confinement}")
    # Pipe holder: a grandchild ignoring TERM holds stdout; timeout 0.5 s, grace 0.3 s.
    over = []
    for _ in range(5):
        t0 = time.monotonic()
        pmon.run(["sh", "-c", "sh -c 'trap \"\" TERM; sleep 60' & sleep 60"], capture_output=True,
                 timeout=0.5, grace=0.3)
        over.append((time.monotonic() - t0 - 0.8) * 1000)
    print(f"pipe holder: returned {statistics.median(over):.1f} ms after timeout+grace (max {max(over):.1f} ms)")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
