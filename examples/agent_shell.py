#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A minimal agent-harness tool on pmon: "run this shell command for the model".

The model asks for a shell command; the tool runs it with a deadline and
returns the text the model would see: exit status, output (bounded), and what
pmon had to clean up (daemons, background jobs, a process holding the pipe).

    examples/agent_shell.py 'echo hi; sleep 300 & echo started'
    examples/agent_shell.py --timeout 2 'yes | head -c 100000000; sleep 60'

It runs with Debian's /usr/bin/python3, for which python/install.sh installs
pmon by default (whatever python3 comes first on PATH). With pmon installed
in a virtualenv, run it with that one: ~/venv/bin/python examples/agent_shell.py
"""
import argparse
import sys

try:
    import pmon
except ModuleNotFoundError:
    sys.exit(f"agent_shell.py: the pmon package is not installed for {sys.executable}; "
             f"install it with: python/install.sh {sys.executable}")

MAX_OUTPUT = 2 * 1024  # what fits in the model's context


def run_shell_tool(command: str, timeout: float = 30.0, cwd: str | None = None) -> str:
    """The tool: returns what the model sees."""
    try:
        r = pmon.run(command, shell=True, stdout=pmon.PIPE, stdin=pmon.DEVNULL, text=True,
                     errors="replace", stderr=pmon.STDOUT, timeout=timeout, grace=2.0, cwd=cwd,
                     output_limit=MAX_OUTPUT)
    except OSError as e:
        return f"[error] could not run the command: {e}"
    lines = []
    if r.timed_out:
        lines.append(f"[timed out after {timeout:g}s; the command and everything it started were stopped]")
    elif r.returncode is not None and r.returncode < 0:
        lines.append(f"[killed by signal {-r.returncode}]")
    else:
        lines.append(f"[exit code {r.returncode}]")
    out = r.stdout or ""
    if r.truncated:
        lines.append(f"[output: {r.stdout_bytes} bytes, showing the first and last {MAX_OUTPUT // 2}]")
    lines.append(out.rstrip("\n") if out else "[no output]")
    if r.leftovers:
        n = len(r.leftovers)
        lines.append(f"[{n} process{'' if n == 1 else 'es'} {'was' if n == 1 else 'were'} still running "
                     f"after the command ended and {'was' if n == 1 else 'were'} stopped:]")
        for l in r.leftovers[:10]:
            lines.append(f"  pid {l['pid']} ({l['action']}): {l['cmdline'][:80]}")
    if not r.cleanup_verified:
        lines.append("[warning: pmon could not confirm that every process is gone]")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("command", nargs="?", default="echo hello; (sleep 300 &); sleep 300 & echo 'background jobs started'")
    a = ap.parse_args()
    print(f"$ {a.command}")
    print(run_shell_tool(a.command, timeout=a.timeout))


if __name__ == "__main__":
    sys.exit(main())
