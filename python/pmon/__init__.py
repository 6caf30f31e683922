# SPDX-License-Identifier: Apache-2.0
"""pmon: run a command so that nothing it starts outlives the call.

A drop-in for ``subprocess.run`` built on libpmon (a cgroup leaf per call, or
the strongest confinement this host offers): when the call is over, the whole
process tree it started is stopped, verified gone and reaped, and captured
output is complete even when an escaped grandchild held the pipe.

    result = pmon.run(["make", "test"], timeout=600, capture_output=True)
    result.returncode, result.stdout, result.leftovers, result.report

Differences from ``subprocess.run`` (documented, deliberate):
  * a timeout with ``check=False`` returns a result with ``timed_out=True``
    and the returncode of the stopped process (e.g. ``-15``) instead of
    raising ``TimeoutExpired``; with ``check=True`` it raises
    ``subprocess.TimeoutExpired`` carrying the output captured so far;
  * processes left running when the main process exits are stopped (TERM,
    ``grace`` seconds, KILL) and listed in ``result.leftovers``;
  * ``output_limit=N`` keeps the first N/2 and last N/2 bytes of each stream
    (``result.truncated``).

Limits (all calls): ``memory_max`` (bytes, or a string with K, M, G: powers
of 1024), ``pids_max``, ``cpu_max`` (cores) are set on the call's cgroup leaf;
where the leaf cannot get the controller the call raises ``ConfinementError``
and never runs. ``cgroup_root`` names the delegated cgroup for the leaves.
The report says ``limits``, ``oom_killed`` and ``pids_max_hit``.
"""

import asyncio
import atexit
import concurrent.futures
import errno
import json
import locale
import os
import subprocess
import threading
from subprocess import DEVNULL, PIPE, STDOUT, CalledProcessError, TimeoutExpired

from . import _pmon

__all__ = [
    "run", "run_async", "start", "Process", "CompletedProcess", "ConfinementError",
    "PIPE", "STDOUT", "DEVNULL", "CalledProcessError", "TimeoutExpired",
]

atexit.register(_pmon.shutdown)


def _find_pmon_executable():
    # The pidns backend's init is the pmon executable (a Python process is
    # not one): PMON_BINARY, the copy installed beside the package, or PATH.
    for cand in (os.environ.get("PMON_BINARY"),
                 os.path.join(os.path.dirname(__file__), "libexec", "pmon")):
        if cand and os.access(cand, os.X_OK):
            return cand
    import shutil
    return shutil.which("pmon") or ""


_pmon.set_init_exe(_find_pmon_executable())


class ConfinementError(OSError):
    """The requested confinement is not available on this host."""


class CompletedProcess(subprocess.CompletedProcess):
    """``subprocess.CompletedProcess`` plus what pmon knows about the call.

    returncode: the exit code, or -N when the main process died by signal N
    (also after a timeout or a cancel: the signal that stopped it).
    """

    def __init__(self, args, native, stdout, stderr):
        super().__init__(args, _returncode(native), stdout, stderr)
        self._native = native
        self._report = None
        self.pid = native.pid
        self.timed_out = native.timed_out
        self.idle_timed_out = native.idle_timed_out  # stopped for no output in idle_timeout seconds
        self.outcome = native.outcome  # exited | signaled | timeout | cancelled
        self.duration = native.duration  # seconds
        self.confinement = native.confinement
        self.leftovers = native.leftovers  # [{pid, start_time, cmdline, action}]
        self.cleanup_verified = native.cleanup_verified
        self.cpu_usec = native.cpu_usec
        self.memory_peak_bytes = native.memory_peak_bytes
        self.truncated = native.truncated
        self.stdout_bytes = native.stdout_total  # written, kept or not
        self.stderr_bytes = native.stderr_total

    @property
    def report(self):
        """The JSON report of the call (DESIGN.md section 4) as a dict."""
        if self._report is None:
            self._report = json.loads(self._native.report_json())
        return self._report

    def __repr__(self):
        return (f"pmon.CompletedProcess(args={self.args!r}, returncode={self.returncode!r}, "
                f"timed_out={self.timed_out}, leftovers={len(self.leftovers)}, "
                f"cleanup_verified={self.cleanup_verified})")


def _returncode(native):
    if native.exit_code is not None:
        return native.exit_code
    if native.signal is not None:
        return -native.signal
    return None


_MAX_TIMEOUT = 1e9  # seconds, libpmon's longest duration


def _fs(x):
    return os.fsencode(x) if not isinstance(x, bytes) else x


def _set_limits(spec, memory_max, pids_max, cpu_max, memory_high=None):
    # Checked as the CLI checks --memory-max, --memory-high, --pids-max and --cpu-max.
    for name, v in (("memory_max", memory_max), ("memory_high", memory_high)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise TypeError(f"{name} must be a number of bytes or a string such as '512M'")
            setattr(spec, name, _pmon.parse_size(str(v)))
    if spec.memory_max is not None and spec.memory_high is not None and spec.memory_high >= spec.memory_max:
        raise ValueError("memory_high must be below memory_max (past memory_max the call is killed before it "
                         "could be slowed down)")
    if pids_max is not None:
        if isinstance(pids_max, bool) or not isinstance(pids_max, int):
            raise TypeError("pids_max must be a whole number of processes")
        spec.pids_max = _pmon.parse_pids(str(pids_max))
    if cpu_max is not None:
        if isinstance(cpu_max, bool) or not isinstance(cpu_max, (int, float)):
            raise TypeError("cpu_max must be a number of cores (e.g. 0.5)")
        spec.cpu_max = _pmon.check_cores(float(cpu_max))


class _Prepared:
    """One call's arguments turned into a native Spec, and back."""

    def __init__(self, args, *, stdin=None, input=None, stdout=None, stderr=None,
                 capture_output=False, cwd=None, env=None, timeout=None, grace=2.0,
                 text=False, encoding=None, errors=None, universal_newlines=None,
                 confine="auto", isolate=False, output_limit=None, shell=False,
                 wait_tree=False, memory_max=None, memory_high=None, pids_max=None, cpu_max=None,
                 cgroup_root=None, idle_timeout=None):
        self.args = args
        self.timeout = timeout
        self.cwd = cwd
        self.text = bool(text or universal_newlines or encoding or errors)
        self.encoding = encoding
        self.errors = errors
        self._close = []

        if shell:
            if not isinstance(args, (str, bytes)):
                args = list(args)
                argv = ["/bin/sh", "-c"] + args if args else ["/bin/sh", "-c"]
            else:
                argv = ["/bin/sh", "-c", args]
        elif isinstance(args, (str, bytes, os.PathLike)):
            argv = [args]
        else:
            argv = list(args)
        if not argv:
            raise IndexError("list index out of range")  # as subprocess
        self.argv0 = argv[0]

        spec = _pmon.Spec()
        spec.argv = [_fs(a) for a in argv]
        if env is not None:
            spec.env = [_fs(k) + b"=" + _fs(v) for k, v in env.items()]
        if cwd is not None:
            spec.cwd = _fs(cwd)
        if timeout is not None:
            # As subprocess: 0 or less has already expired (the command is
            # started and stopped at once); a deadline past the longest pmon
            # can count (about 31 years, float("inf") too) is none.
            t = float(timeout)
            if t <= _MAX_TIMEOUT:
                spec.timeout = max(0.0, t)
        if idle_timeout is not None:
            t = float(idle_timeout)
            if t <= 0:
                raise ValueError("idle_timeout must be > 0 seconds")
            if t <= _MAX_TIMEOUT:
                spec.idle_timeout = t
        if grace < 0:
            raise ValueError("grace must be >= 0")
        spec.grace = float(grace)
        if isolate:
            if confine not in ("auto", "pidns"):
                raise ValueError("isolate=True needs confine='pidns' (or 'auto')")
            confine = "isolate"  # pidns + cgroup namespace + the cgroup leaf
        spec.confine = confine
        spec.wait_tree = wait_tree
        if cgroup_root is not None:
            spec.cgroup_root = os.fsdecode(cgroup_root)
        _set_limits(spec, memory_max, pids_max, cpu_max, memory_high)
        if output_limit is not None:
            if output_limit < 0:
                raise ValueError("output_limit must be >= 0")
            spec.output_limit = int(output_limit)

        if capture_output:
            if stdout is not None or stderr is not None:
                raise ValueError("stdout and stderr arguments may not be used with capture_output.")
            stdout = stderr = PIPE
        if input is not None:
            if stdin is not None:
                raise ValueError("stdin and input arguments may not both be used.")
            if isinstance(input, str):
                if not self.text:
                    raise TypeError("input must be bytes unless text=True")
                input = input.encode(self._encoding())
            spec.input = bytes(input)
        elif stdin == PIPE:
            spec.input = b""  # a pipe nobody writes to: the command sees EOF
        else:
            spec.stdin_fd = self._fd(stdin, os.O_RDONLY)

        if stdout == PIPE:
            spec.capture_out = True
        else:
            spec.stdout_fd = self._fd(stdout, os.O_WRONLY)
        if stderr == STDOUT:
            if stdout == PIPE:
                spec.err_to_out = True
            else:
                spec.stderr_fd = spec.stdout_fd if spec.stdout_fd >= 0 else 1
        elif stderr == PIPE:
            spec.capture_err = True
        else:
            spec.stderr_fd = self._fd(stderr, os.O_WRONLY)
        if spec.idle_timeout is not None and not (spec.capture_out or spec.capture_err):
            self.close_fds()
            raise ValueError("idle_timeout needs the output captured (capture_output=True, or stdout=PIPE "
                             "or stderr=PIPE): pmon sees only output it reads")
        self.spec = spec

    def _encoding(self):
        return self.encoding or locale.getpreferredencoding(False)

    def _fd(self, what, mode):
        if what is None:
            return -1
        if what == DEVNULL:
            fd = os.open(os.devnull, mode | os.O_CLOEXEC)
            self._close.append(fd)
            return fd
        if isinstance(what, int):
            if what < 0:
                raise ValueError(f"bad file descriptor {what}")
            return what
        if hasattr(what, "fileno"):
            return what.fileno()
        raise TypeError(f"unsupported stdio argument {what!r}")

    def close_fds(self):
        for fd in self._close:
            os.close(fd)
        self._close = []

    def error(self, failure):
        kind, exit_code, err, message = failure
        if kind == "confine":
            return ConfinementError(message)
        if kind == "spawn" and exit_code in (126, 127) and err:
            if not self.argv0 and err == errno.ENOENT:
                # subprocess joins "" to each PATH directory and gets EACCES
                # from the first; libpmon says "no such file", as execvp does.
                err = errno.EACCES
            return OSError(err, os.strerror(err), os.fsdecode(self.argv0))
        if kind == "spawn" and message.startswith("cannot change directory") and err:
            return OSError(err, os.strerror(err), os.fsdecode(self.cwd))
        return OSError(err or 5, message)

    def decode(self, data, truncated):
        if data is None or not self.text:
            return data
        # A head + tail cut may split a character: never fail on that.
        errors = self.errors or ("replace" if truncated else "strict")
        s = data.decode(self._encoding(), errors)
        return s.replace("\r\n", "\n").replace("\r", "\n")

    def result(self, native, check):
        out = self.decode(native.stdout, native.truncated)
        err = self.decode(native.stderr, native.truncated)
        res = CompletedProcess(self.args, native, out, err)
        if check and res.timed_out:
            # As subprocess: the raw bytes captured so far, None when none.
            raise TimeoutExpired(self.args, self.timeout, output=native.stdout or None,
                                 stderr=native.stderr or None)
        if check and res.returncode:
            raise CalledProcessError(res.returncode, self.args, output=out, stderr=err)
        return res


def run(args, *, timeout=None, grace=2.0, input=None, capture_output=False, stdin=None,
        stdout=None, stderr=None, cwd=None, env=None, check=False, text=False, encoding=None,
        errors=None, universal_newlines=None, shell=False, confine="auto", isolate=False,
        output_limit=None, wait_tree=False, memory_max=None, memory_high=None, pids_max=None, cpu_max=None,
        cgroup_root=None, idle_timeout=None):
    """Runs a command like ``subprocess.run`` and guarantees its whole tree is gone.

    ``idle_timeout``: seconds without output (captured stdout or stderr) after
    which the whole tree is stopped, as by ``timeout`` (``idle_timed_out``).

    The GIL is released for the whole call; any number of threads may call it.
    """
    p = _Prepared(args, stdin=stdin, input=input, stdout=stdout, stderr=stderr,
                  capture_output=capture_output, cwd=cwd, env=env, timeout=timeout,
                  grace=grace, text=text, encoding=encoding, errors=errors,
                  universal_newlines=universal_newlines, confine=confine, isolate=isolate,
                  output_limit=output_limit, shell=shell, wait_tree=wait_tree,
                  memory_max=memory_max, memory_high=memory_high, pids_max=pids_max, cpu_max=cpu_max, cgroup_root=cgroup_root,
                  idle_timeout=idle_timeout)
    try:
        r = _pmon.run(p.spec)
    finally:
        p.close_fds()
    if isinstance(r, tuple):
        raise p.error(r)
    return p.result(r, check)


# Threads only for stop phases that must wait (a grace period, a tree to
# confirm gone); waiting for the command itself happens on the event loop.
_stop_pool = None
_stop_pool_lock = threading.Lock()


def _pool():
    global _stop_pool
    with _stop_pool_lock:
        if _stop_pool is None:
            _stop_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=64, thread_name_prefix="pmon-stop")
        return _stop_pool


async def run_async(args, *, timeout=None, grace=2.0, input=None, capture_output=False,
                    stdin=None, stdout=None, stderr=None, cwd=None, env=None, check=False,
                    text=False, encoding=None, errors=None, universal_newlines=None,
                    shell=False, confine="auto", isolate=False, output_limit=None,
                    wait_tree=False, memory_max=None, memory_high=None, pids_max=None, cpu_max=None,
                    cgroup_root=None, idle_timeout=None):
    """``run`` for asyncio. The main process's pidfd and the output pipes are
    watched by the event loop (no thread per call). Cancelling the task stops
    the whole tree, verified, before ``CancelledError`` propagates; a second
    cancel skips the grace period."""
    p = _Prepared(args, stdin=stdin, input=input, stdout=stdout, stderr=stderr,
                  capture_output=capture_output, cwd=cwd, env=env, timeout=timeout,
                  grace=grace, text=text, encoding=encoding, errors=errors,
                  universal_newlines=universal_newlines, confine=confine, isolate=isolate,
                  output_limit=output_limit, shell=shell, wait_tree=wait_tree,
                  memory_max=memory_max, memory_high=memory_high, pids_max=pids_max, cpu_max=cpu_max, cgroup_root=cgroup_root,
                  idle_timeout=idle_timeout)
    loop = asyncio.get_running_loop()
    call = _pmon.Call(p.spec)
    try:
        failure = call.start()
    finally:
        p.close_fds()
    if failure is not None:
        raise p.error(failure)

    ended = loop.create_future()

    def end(why):
        if not ended.done():
            ended.set_result(why)

    watched = {}  # fd -> is_writer

    def unwatch(fd):
        if watched.pop(fd):
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)

    def on_pipe():
        # The fds stay open until every watcher of theirs is gone. (What is
        # read starts the call's idle time again.)
        for fd in call.pump():
            if fd in watched:
                unwatch(fd)
        call.close_finished()

    # The call's own time limits (its timeout, its idle timeout) say when it
    # ends: one timer, set for the next of them; when it fires early (output
    # came and moved the idle time on) it is set again.
    timer = None

    def on_time():
        nonlocal timer
        due = call.due_end()
        if due is not None:
            end(due)
            return
        left = call.next_end_in()
        timer = loop.call_later(left, on_time) if left is not None else None

    pidfd = call.pidfd
    loop.add_reader(pidfd, end, _pmon.END_MAIN_EXITED)
    first = call.next_end_in()
    timer = loop.call_later(first, on_time) if first is not None else None
    for fd, is_writer in call.capture_fds():
        (loop.add_writer if is_writer else loop.add_reader)(fd, on_pipe)
        watched[fd] = is_writer
    cancelled = False
    try:
        why = await ended
    except asyncio.CancelledError:
        why = _pmon.END_CANCEL
        cancelled = True
    finally:
        loop.remove_reader(pidfd)
        if timer is not None:
            timer.cancel()
        for fd in list(watched):
            unwatch(fd)

    if why == _pmon.END_MAIN_EXITED and not call.finish_may_block():
        native = call.finish(why)  # nothing to stop: no thread needed
    else:
        fut = loop.run_in_executor(_pool(), call.finish, why)
        while True:
            try:
                native = await asyncio.shield(fut)
                break
            except asyncio.CancelledError:
                # The tree is stopped before the cancel goes on; a second
                # cancel only makes that faster.
                cancelled = True
                call.escalate()
    if cancelled:
        raise asyncio.CancelledError()
    return p.result(native, check)


class Process:
    """A long-lived call (a dev server, a watcher). Use ``pmon.start``.

    As a context manager it stops the whole tree on exit.
    """

    def __init__(self, prepared, call):
        self._p = prepared
        self._call = call
        self.args = prepared.args
        self.pid = call.pid
        self.result = None
        self._watch_lock = threading.Lock()
        self._callbacks = []
        self._watcher = None

    @property
    def returncode(self):
        return None if self.result is None else self.result.returncode

    def _finish(self, why):
        if self.result is None:
            self.result = self._p.result(self._call.finish(why), False)
        return self.result

    def poll(self):
        """The returncode once the call is over, else None (never blocks long:
        leftovers of an exited main process are stopped here)."""
        if self.result is not None:
            return self.returncode
        self._call.pump()
        self._call.close_finished()
        if not self._call.main_exited():
            return None
        if self._p.spec.wait_tree and self._call.finish_may_block():
            return None
        return self._finish(_pmon.END_MAIN_EXITED).returncode

    def wait(self, timeout=None):
        """Waits for the main process (and, with wait_tree, the whole tree);
        raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
        if self.result is not None:
            return self.returncode
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        if self._call.wait_main(ms) == 0:
            raise TimeoutExpired(self.args, timeout)
        # Exited, or another thread's stop() interrupted us: its end applies.
        return self._finish(_pmon.END_MAIN_EXITED).returncode

    async def wait_async(self):
        """Awaitable ``wait()``: returns the returncode once the main process
        has exited and what it left running is stopped and verified gone
        (with wait_tree: once the whole tree has ended). The event loop is
        never blocked: the wait runs on a thread of its own."""
        if self.result is not None:
            return self.returncode
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def waiter():
            try:
                code = self.wait()
            except BaseException as e:  # handed to the awaiting task
                loop.call_soon_threadsafe(lambda: done.done() or done.set_exception(e))
            else:
                loop.call_soon_threadsafe(lambda: done.done() or done.set_result(code))

        threading.Thread(target=waiter, name="pmon-wait", daemon=True).start()
        return await done

    def on_exit(self, callback):
        """Calls ``callback(result)`` once the call is over, whatever ended it
        (its main process exiting, ``stop()``, a timeout): ``result`` is the
        CompletedProcess, with what the call left running already stopped and
        verified gone. The callback runs on a thread of pmon's (or at once, on
        this thread, when the call is already over); an exception in it is
        printed and otherwise ignored. While a callback waits, the handle
        stays alive. Returns the handle, so calls chain."""
        with self._watch_lock:
            over = self.result is not None
            if not over:
                self._callbacks.append(callback)
                if self._watcher is None:
                    self._watcher = threading.Thread(target=self._watch, name="pmon-on-exit", daemon=True)
                    self._watcher.start()
        if over:
            callback(self.result)
        return self

    def _watch(self):
        try:
            self.wait()
        except BaseException:  # the end is still reported below
            pass
        result = self.result
        with self._watch_lock:
            callbacks, self._callbacks = self._callbacks, []
            self._watcher = None
        for cb in callbacks:
            try:
                cb(result)
            except Exception:
                import traceback
                traceback.print_exc()

    def stop(self, grace=None):
        """Stops the whole tree (TERM, ``grace`` seconds, KILL), verifies it is
        gone, and returns the CompletedProcess."""
        if grace is not None and self.result is None:
            self._call.set_grace(float(grace))
        return self._finish(_pmon.END_CANCEL)

    def processes(self):
        """The live processes of the call now: [{pid, cmdline}]."""
        return [{"pid": pid, "cmdline": cmd} for pid, cmd in self._call.members()]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return f"pmon.Process(pid={self.pid}, args={self.args!r}, returncode={self.returncode!r})"


def start(args, *, stdin=None, stdout=None, stderr=None, cwd=None, env=None, grace=2.0,
          text=False, encoding=None, errors=None, shell=False, confine="auto",
          isolate=False, output_limit=None, wait_tree=False, memory_max=None, memory_high=None, pids_max=None,
          cpu_max=None, cgroup_root=None):
    """Starts a long-lived call and returns its ``Process`` handle.

    stdout/stderr=PIPE are read whenever the handle is polled, waited or
    stopped; bound them with ``output_limit`` for a chatty server.
    """
    p = _Prepared(args, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, env=env,
                  grace=grace, text=text, encoding=encoding, errors=errors, shell=shell,
                  confine=confine, isolate=isolate, output_limit=output_limit,
                  wait_tree=wait_tree, memory_max=memory_max, memory_high=memory_high, pids_max=pids_max, cpu_max=cpu_max,
                  cgroup_root=cgroup_root)
    call = _pmon.Call(p.spec)
    try:
        failure = call.start()
    finally:
        p.close_fds()
    if failure is not None:
        raise p.error(failure)
    return Process(p, call)
