#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Makes src/pmon.order anew: the functions a pmon call runs, in the order
they were first found, so that the linker lays them next to each other.

A `pmon run` is short, and most of its start is page faults on pmon's own
code: the kernel maps the code a 64 KiB window at a time, and without an
order nearly every function the call runs is in another window. This
script finds the functions by those faults. It links pmon (BUILD must be
configured with PMON_ORDER_FUNCTIONS on, as the default is where ld.lld is
found) with the list so far, runs a few common calls under `perf record
-e page-faults`, adds the function each fault on code landed in, and goes
on until a round finds nothing new (or ROUNDS rounds): each round lays
what it found beside the rest, which shows the next function of the
windows still touched. Seeded with the list as it is (--fresh: with an
empty one). A function the list names that no longer exists costs nothing;
one it lacks is laid where the linker puts it anyway. Needs perf and
root (the calls use the cgroup backend where it works).

usage: scripts/order-functions.py BUILD [--rounds N] [--fresh]
"""
import argparse, bisect, os, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
order_file = os.path.join(root, "src", "pmon.order")
calls = [
    ["run", "--confine", "cgroup", "--", "/bin/true"],
    ["run", "--confine", "cgroup", "-q", "--", "/bin/true"],
    ["run", "--", "/bin/true"],
    ["run", "--confine", "subreaper", "--", "/bin/true"],
    ["run", "--timeout", "10s", "--", "/bin/true"],
    ["shell", "true"],  # a harness's shell prefix: one tool call
    ["shell", "-c", "true"],
]

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("build")
ap.add_argument("--rounds", type=int, default=60)
ap.add_argument("--fresh", action="store_true", help="start from an empty list")
a = ap.parse_args()
pmon = os.path.join(os.path.abspath(a.build), "pmon")


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def header():
    return [l for l in open(order_file) if l.startswith("#")] if os.path.exists(order_file) else []


def write(kept, names):
    with open(order_file, "w") as f:
        f.writelines(kept)
        f.write("".join(n + "\n" for n in names))


def names():
    if a.fresh or not os.path.exists(order_file):
        return []
    return [l.strip() for l in open(order_file) if l.strip() and not l.startswith("#")]


def code_range():
    for l in run("readelf", "-lW", pmon, capture_output=True).stdout.splitlines():
        f = l.split()
        if f and f[0] == "LOAD" and "E" in f[6:-1]:
            return int(f[2], 16), int(f[2], 16) + int(f[5], 16)
    sys.exit("order-functions: no executable segment in " + pmon)


def symbols():
    out = []
    for l in run("nm", "-n", "--defined-only", pmon, capture_output=True).stdout.splitlines():
        f = l.split()
        if len(f) == 3 and f[1] in "tTwWiI":
            out.append((int(f[0], 16), f[2]))
    return out


def faults(tmp):
    """The addresses of the page faults of pmon's processes (not of the
    command it starts) over the calls."""
    got = []
    for c in calls:
        data = os.path.join(tmp, "faults.data")
        subprocess.run(["perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "-o", data, "--", pmon] + c,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for l in run("perf", "script", "-i", data, "-F", "comm,addr", capture_output=True).stdout.splitlines():
            f = l.split()
            if len(f) == 2 and f[0] == "pmon":
                got.append(int(f[1], 16))
    return got


seen = names()
kept = header()
with tempfile.TemporaryDirectory() as tmp:
    for r in range(a.rounds):
        write(kept, seen)
        run("cmake", "--build", a.build, "--target", "pmon", stdout=subprocess.DEVNULL)
        lo, hi = code_range()
        syms = symbols()
        at = [s[0] for s in syms]
        new, on_code, total = [], 0, 0
        for addr in faults(tmp):
            total += 1
            if not lo <= addr < hi:
                continue
            on_code += 1
            i = bisect.bisect_right(at, addr) - 1
            if i >= 0 and syms[i][1] not in seen and syms[i][1] not in new:
                new.append(syms[i][1])
        print("round %d: %d faults over %d calls, %d on code; %d functions new" % (r + 1, total, len(calls), on_code, len(new)), flush=True)
        if not new:
            break
        seen += new
write(kept, seen)
print("%s: %d functions" % (os.path.relpath(order_file, root), len(seen)))
