# SPDX-License-Identifier: Apache-2.0
# pmon.run against subprocess.run: the same call through both, the same
# return codes, outputs and exceptions wherever both apply.
import atexit
import os
import signal
import subprocess
import sys

import pmon
import pytest


def outcome(fn, args, kw):
    """What a call produced, in comparable form."""
    try:
        r = fn(args, **kw)
    except subprocess.CalledProcessError as e:
        return ("CalledProcessError", e.returncode, e.cmd, e.output, e.stderr)
    except subprocess.TimeoutExpired as e:
        return ("TimeoutExpired", e.cmd, e.timeout, e.output, e.stderr)
    except OSError as e:
        return (type(e).__name__, e.errno, e.filename)
    except (ValueError, TypeError, IndexError) as e:
        return (type(e).__name__, str(e))
    return ("ok", r.returncode, r.args, r.stdout, r.stderr)


NOT_EXECUTABLE = "/tmp/pmon-py-test-not-executable"
with open(NOT_EXECUTABLE, "w") as _f:
    _f.write("echo hi\n")
os.chmod(NOT_EXECUTABLE, 0o644)
# Gone again when the test run ends: a test leaves nothing behind.
atexit.register(lambda: os.path.exists(NOT_EXECUTABLE) and os.unlink(NOT_EXECUTABLE))

CASES = [
    ("exit 0", ["true"], {}),
    ("exit 3", ["sh", "-c", "exit 3"], {}),
    ("exit 255", ["sh", "-c", "exit 255"], {}),
    ("SIGKILL", ["sh", "-c", "kill -9 $$"], {}),
    ("SIGTERM", ["sh", "-c", "kill -TERM $$"], {}),
    ("SIGSEGV", ["sh", "-c", "kill -SEGV $$"], {}),
    ("capture", ["sh", "-c", "echo out; echo err >&2"], {"capture_output": True}),
    ("text", ["printf", "a\\r\\nb\\rc\\n"], {"capture_output": True, "text": True}),
    ("encoding", ["printf", "\\303\\251"], {"stdout": subprocess.PIPE, "encoding": "utf-8"}),
    ("stderr=STDOUT", ["sh", "-c", "echo out; echo err >&2"],
     {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}),
    ("DEVNULL", ["sh", "-c", "echo out; cat"], {"stdout": subprocess.DEVNULL, "stdin": subprocess.DEVNULL}),
    ("input bytes", ["cat"], {"input": b"x" * 300000, "capture_output": True}),
    ("input text", ["cat"], {"input": "h\u00e9", "capture_output": True, "text": True}),
    ("stdin=PIPE", ["cat"], {"stdin": subprocess.PIPE, "capture_output": True}),
    ("input closed early", ["head", "-c", "1"], {"input": b"y" * 1000000, "capture_output": True}),
    ("env", ["sh", "-c", "echo $FOO; echo ${HOME:-unset}"], {"env": {"FOO": "bar", "PATH": "/usr/bin:/bin"},
                                                             "capture_output": True}),
    ("cwd", ["pwd"], {"cwd": "/tmp", "capture_output": True}),
    ("shell", "echo $((6*7))", {"shell": True, "capture_output": True}),
    ("check ok", ["true"], {"check": True}),
    ("check fail", ["sh", "-c", "echo o; echo e >&2; exit 5"], {"check": True, "capture_output": True}),
    ("check signal", ["sh", "-c", "kill -9 $$"], {"check": True}),
    ("check text", ["sh", "-c", "echo o; exit 1"], {"check": True, "capture_output": True, "text": True}),
    ("timeout check", ["sh", "-c", "echo before; exec sleep 10"],
     {"timeout": 0.5, "check": True, "capture_output": True}),
    # 0 or less: already expired (subprocess starts the command and kills it).
    ("timeout 0 check", ["sleep", "10"], {"timeout": 0, "check": True, "capture_output": True}),
    ("timeout -1 check", ["sleep", "10"], {"timeout": -1, "check": True, "capture_output": True}),
    ("timeout -0.5 check", ["sleep", "10"], {"timeout": -0.5, "check": True, "capture_output": True}),
    ("timeout huge", ["true"], {"timeout": 1e300}),
    ("timeout inf", ["true"], {"timeout": float("inf")}),
    ("not found", ["pmon-no-such-command-here"], {}),
    ("not found path", ["/nonexistent/cmd"], {}),
    ("not executable", [NOT_EXECUTABLE], {}),
    ("directory", ["/tmp"], {}),
    ("bad cwd", ["true"], {"cwd": "/nonexistent-dir"}),
    ("capture + stdout", ["true"], {"capture_output": True, "stdout": subprocess.PIPE}),
    ("input + stdin", ["true"], {"input": b"x", "stdin": subprocess.DEVNULL}),
    ("empty args", [], {}),
    ("empty name", [""], {}),
    ("empty name with args", ["", "x"], {}),
    ("argv0 only string", "true", {}),
]


@pytest.mark.parametrize("name,args,kw", CASES, ids=[c[0] for c in CASES])
def test_same_as_subprocess(name, args, kw):
    want = outcome(subprocess.run, args, kw)
    got = outcome(pmon.run, args, kw)
    if name == "empty args":
        assert got[0] == want[0]
        return
    assert got == want


def test_script_without_shebang_runs_with_sh_like_execvp(tmp_path):
    # A documented difference: subprocess raises ENOEXEC, pmon (like execvp
    # and every shell) runs a #!-less executable file with /bin/sh.
    f = tmp_path / "script"
    f.write_text("echo from-sh\n")
    f.chmod(0o755)
    with pytest.raises(OSError):
        subprocess.run([str(f)])
    assert pmon.run([str(f)], capture_output=True).stdout == b"from-sh\n"


def test_signal_returncode_is_negative():
    r = pmon.run(["sh", "-c", "kill -USR1 $$"])
    assert r.returncode == -signal.SIGUSR1
    assert r.outcome == "signaled"


def test_timeout_without_check_returns_result():
    # 2 s: the shell has started and written its line before the timeout on a loaded machine.
    r = pmon.run(["sh", "-c", "echo partial; exec sleep 10"], timeout=2.0, capture_output=True)
    assert r.timed_out and r.outcome == "timeout"
    assert r.returncode == -signal.SIGTERM  # the signal that stopped it
    assert r.stdout == b"partial\n"
    assert r.report["exit_status"] == 124


def test_timeout_zero_or_less_has_expired_without_check(tmp_path):
    # As subprocess (which raises TimeoutExpired): not a ValueError, the
    # deadline has passed; without check pmon returns the timed-out result.
    for t in (0, -1, -0.001):
        r = pmon.run(["sleep", "10"], timeout=t)
        assert r.timed_out and r.outcome == "timeout", t
        assert r.report["exit_status"] == 124


def test_result_fields():
    r = pmon.run(["sh", "-c", "echo hi"], capture_output=True)
    assert isinstance(r, subprocess.CompletedProcess)
    r.check_returncode()
    assert r.confinement in ("cgroup", "pidns", "subreaper", "pgroup")
    assert r.cleanup_verified is True
    assert r.leftovers == []
    assert r.duration > 0
    assert r.pid > 0 and r.cpu_usec is not None
    assert r.report["version"] == 1 and r.report["pid"] == r.pid
    assert r.report["command"] == ["sh", "-c", "echo hi"]


def test_fd_objects_and_files(tmp_path):
    f = tmp_path / "out"
    with open(f, "wb") as fh:
        r = pmon.run(["sh", "-c", "echo to-file; echo err >&2"], stdout=fh, stderr=subprocess.STDOUT)
    assert r.returncode == 0 and r.stdout is None
    assert f.read_bytes() == b"to-file\nerr\n"


def test_no_fd_leaks_into_the_child():
    r = pmon.run(["sh", "-c", "ls /proc/self/fd"], capture_output=True, text=True, input="")
    assert sorted(int(x) for x in r.stdout.split()) == [0, 1, 2, 3]  # 3: ls's own dir fd


def test_no_fd_leaks_in_the_caller():
    before = set(os.listdir("/proc/self/fd"))
    for _ in range(20):
        pmon.run(["sh", "-c", "echo x; sleep 30 &"], capture_output=True, input=b"abc")
        with pytest.raises(FileNotFoundError):
            pmon.run(["pmon-no-such-command"], capture_output=True)
    assert set(os.listdir("/proc/self/fd")) == before


def test_confine_named_unknown_and_unavailable():
    with pytest.raises(pmon.ConfinementError):
        pmon.run(["true"], confine="nonsense")
    # subreaper would make this process a subreaper whose orphans nobody reaps.
    with pytest.raises(pmon.ConfinementError):
        pmon.run(["true"], confine="subreaper")
    r = pmon.run(["true"], confine="pgroup")
    assert r.confinement == "pgroup" and r.returncode == 0


def test_nonutf8_arguments(tmp_path):
    name = os.fsdecode(b"\xff\xfe")
    r = pmon.run(["printf", "%s", name], capture_output=True)
    assert r.stdout == b"\xff\xfe"
