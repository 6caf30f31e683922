# SPDX-License-Identifier: Apache-2.0
# pmon sandboxd's process service through a real gRPC client: what the
# contract asks (Execute, Start, WriteStdin, SendSignal, ResizeTTY and their
# status codes) and pmon's guarantee on top of it: a signal reaches setsid
# daemons, a deadline, a cancel, SIGTERM or SIGKILL of the daemon stop the
# whole tree, and a command's end stops what it left without losing a byte
# or waiting on a grandchild that holds its pipe.
import os
import pathlib
import signal
import subprocess
import sys
import time

import grpc
import pytest
from google.protobuf import empty_pb2

from conftest import HOLDS, alive, config, escaper, gone, how, pb, read_procs, sh, start_time, stat_of, wait_until, Sandboxd


def start(s, cfg, **kw):
    stream = s.stub.Start(pb.StartRequest(config=cfg, **kw))
    first = next(stream)
    assert first.WhichOneof("event") == "init", first
    return stream, first.init.process_id


def drain(stream):
    out, err, code = b"", b"", None
    for ev in stream:
        kind = ev.WhichOneof("event")
        if kind == "stdout":
            out += ev.stdout
        elif kind == "stderr":
            err += ev.stderr
        elif kind == "exit":
            code = ev.exit.exit_code
    return out, err, code


def test_execute_answers_output_and_exit_code(sandboxd):
    r = sandboxd.stub.Execute(pb.ExecuteRequest(config=sh("printf 'a\\0\\377b'; echo e >&2; exit 3")), timeout=30)
    assert (r.exit_code, r.stdout, r.stderr) == (3, b"a\x00\xffb", b"e\n")
    r = sandboxd.stub.Execute(pb.ExecuteRequest(config=sh("kill -TERM $$")), timeout=30)
    assert r.exit_code == 143, "a signal's exit code as a shell gives it (128 + n)"
    r = sandboxd.stub.Execute(pb.ExecuteRequest(config=sh('echo "$FOO" "$PWD"', env={"FOO": "bar"})), timeout=30)
    assert r.stdout == f"bar {sandboxd.root}\n".encode(), "env laid over the daemon's; cwd the sandbox root"
    (sandboxd.root / "sub").mkdir()
    r = sandboxd.stub.Execute(pb.ExecuteRequest(config=sh("pwd", cwd="sub")), timeout=30)
    assert r.stdout == f"{sandboxd.root}/sub\n".encode()


def test_execute_ends_with_its_main_process(sandboxd, recorded):
    # The main process writes 20000 lines and exits; the setsid daemon it left
    # holds the pipe (write=) and sleeps: Execute answers at once with every
    # line, and the daemon is stopped.
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    line = f"seq 20000; exec {escaper()} {procs} -x exit:7 name=d,orphan,setsid,write=3"
    t = time.monotonic()
    r = sandboxd.stub.Execute(pb.ExecuteRequest(config=sh(line)), timeout=60)
    took = time.monotonic() - t
    assert r.exit_code == 7
    lines = r.stdout.decode().splitlines()
    assert lines[:20000] == [str(i) for i in range(1, 20001)], "output written before the exit was lost"
    assert took < 30, f"Execute waited {took:.1f} s on a daemon that holds its pipe"
    names = [n for _, _, n in read_procs(procs)]
    assert "d" in names, names
    assert gone(read_procs(procs)) == [], "the command's setsid daemon outlived it"


def test_execute_past_its_deadline_stops_the_whole_tree(sandboxd, recorded):
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    line = f"exec {escaper()} {procs} -x sleep name=d,orphan,setsid name=t,ignore"
    with pytest.raises(grpc.RpcError) as e:
        sandboxd.stub.Execute(pb.ExecuteRequest(config=sh(line)), timeout=2)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    p = read_procs(procs)
    assert sorted(n for _, _, n in p) == ["d", "main", "t"], p
    assert gone(p) == [], "processes of an Execute past its deadline are still running"


def test_execute_past_its_output_bound_stops_the_whole_tree(sandboxd, recorded):
    # 70 MB to stdout, past Execute's 64 MiB: RESOURCE_EXHAUSTED once the
    # whole tree is stopped, the setsid daemon that ignores SIGTERM too.
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    line = f"{escaper()} {procs} -x exit:0 name=d,orphan,setsid,ignore; head -c 70000000 /dev/zero; exec sleep 600"
    with pytest.raises(grpc.RpcError) as e:
        sandboxd.stub.Execute(pb.ExecuteRequest(config=sh(line)), timeout=60)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
    p = read_procs(procs)
    assert sorted(n for _, _, n in p) == ["d", "main"], p
    assert [q for q in p if alive(q[0], q[1])] == [], "the answer came before the tree was stopped"


def test_a_cancelled_execute_stops_the_whole_tree(sandboxd, recorded):
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    call = sandboxd.stub.Execute.future(pb.ExecuteRequest(config=sh(f"exec {escaper()} {procs} -x sleep name=d,orphan,setsid")))
    assert wait_until(lambda: len(read_procs(procs)) == 2)
    call.cancel()
    assert gone(read_procs(procs)) == [], "a cancelled Execute left processes running"
    # (and the daemon takes the next one)
    assert sandboxd.stub.Execute(pb.ExecuteRequest(config=config("true")), timeout=30).exit_code == 0


def test_a_cancelled_start_stops_the_whole_tree(sandboxd, recorded):
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    stream, _ = start(sandboxd, sh(f"echo up; exec {escaper()} {procs} -x sleep name=d,orphan,setsid"))
    assert next(stream).stdout == b"up\n"
    assert wait_until(lambda: len(read_procs(procs)) == 2)
    stream.cancel()
    assert gone(read_procs(procs)) == [], "a cancelled Start left processes running"


def test_start_streams_and_takes_stdin(sandboxd):
    stream, pid = start(sandboxd, sh("echo a; cat; echo b >&2; exit 4"))
    sandboxd.stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"x\0y\n"))
    sandboxd.stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, eof=empty_pb2.Empty()))
    out, err, code = drain(stream)
    assert (out, err, code) == (b"a\nx\0y\n", b"b\n", 4)
    with pytest.raises(grpc.RpcError) as e:
        sandboxd.stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"late"))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_sigterm_stops_the_tree_and_the_exit_event_follows(sandboxd, recorded):
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    stream, pid = start(sandboxd, sh(f"exec {escaper()} {procs} -x sleep name=d,orphan,setsid name=i,setsid,ignore"))
    assert wait_until(lambda: len(read_procs(procs)) == 3)
    sandboxd.stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGTERM))
    _, _, code = drain(stream)
    assert code == 143
    # The exit event comes once the tree is verified gone.
    assert [p for p in read_procs(procs) if alive(p[0], p[1])] == []


def test_sigkill_kills_the_tree_at_once(sandboxd, recorded):
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    stream, pid = start(sandboxd, sh(f"exec {escaper()} {procs} -x sleep name=d,orphan,setsid,ignore"))
    assert wait_until(lambda: len(read_procs(procs)) == 2)
    t = time.monotonic()
    sandboxd.stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGKILL))
    _, _, code = drain(stream)
    assert code == 137
    assert time.monotonic() - t < 0.9, "SIGKILL waited for a grace"
    assert [p for p in read_procs(procs) if alive(p[0], p[1])] == []


def test_sigint_reaches_a_setsid_daemon(sandboxd, recorded):
    flag = sandboxd.root / "got-int"
    daemon = ("import os, signal, sys, time\n"
              "if os.fork(): sys.exit(0)\n"
              "os.setsid()\n"
              f"signal.signal(signal.SIGINT, lambda *a: open({str(flag)!r}, 'w').write('int'))\n"
              f"open({str(sandboxd.root / 'd.tmp')!r}, 'w').write(str(os.getpid()))\n"
              f"os.rename({str(sandboxd.root / 'd.tmp')!r}, {str(sandboxd.root / 'd')!r})\n"
              "time.sleep(300)\n")
    # (the main process waits: the call, and its daemon, run until stopped)
    # (its shell catches SIGINT and runs on)
    line = f"trap 'echo int' INT; {sys.executable} -c \"$1\"; echo ready; while :; do sleep 0.2; done"
    stream, pid = start(sandboxd, config("/bin/sh", "-c", line, "sh", daemon))
    assert next(stream).stdout == b"ready\n"
    # (its pid is written once its handler is set)
    assert wait_until(lambda: (sandboxd.root / "d").exists() and (sandboxd.root / "d").read_text() != "", 10)
    d = int((sandboxd.root / "d").read_text())
    d_st = start_time(d)
    sandboxd.stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGINT))
    assert wait_until(lambda: flag.exists(), 10), "SIGINT did not reach the setsid daemon"
    assert alive(d, d_st), "SIGINT is a signal, not a stop: the daemon handles it and runs on"
    sandboxd.stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGTERM))
    drain(stream)
    assert not alive(d, d_st)


def test_a_terminal(sandboxd):
    stream, pid = start(sandboxd, sh("stty size; read x; stty size"), pty=pb.PTY(cols=100, rows=30))
    assert b"30 100" in next(stream).stdout
    sandboxd.stub.ResizeTTY(pb.ResizeTTYRequest(process_id=pid, cols=120, rows=40))
    sandboxd.stub.WriteStdin(pb.WriteStdinRequest(process_id=pid, input=b"go\n"))
    out, _, code = drain(stream)
    assert code == 0
    assert b"40 120" in out, out


def test_errors_are_status_codes(sandboxd, tmp_path):
    def code_of(call):
        with pytest.raises(grpc.RpcError) as e:
            call()
        return e.value.code()
    S = grpc.StatusCode
    stub = sandboxd.stub
    assert code_of(lambda: stub.SendSignal(pb.SendSignalRequest(process_id=9999, signal=pb.SIGNAL_SIGTERM))) == S.NOT_FOUND
    assert code_of(lambda: stub.SendSignal(pb.SendSignalRequest(process_id=1, signal=pb.SIGNAL_UNSPECIFIED))) == S.INVALID_ARGUMENT
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest(config=config()), timeout=10)) == S.INVALID_ARGUMENT
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest(config=config("/no/such/program")), timeout=10)) == S.NOT_FOUND
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest(config=config("true", cwd="../..")), timeout=10)) == S.PERMISSION_DENIED
    # An absolute cwd is a path in the root, as the contract takes it.
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest(config=config("true", cwd="/etc")), timeout=10)) == S.NOT_FOUND
    (sandboxd.root / "etc").mkdir()
    r = stub.Execute(pb.ExecuteRequest(config=config("pwd", cwd="/etc")), timeout=10)
    assert r.stdout == f"{sandboxd.root}/etc\n".encode()
    r = stub.Execute(pb.ExecuteRequest(config=config("pwd", cwd=f"{sandboxd.root}/etc")), timeout=10)
    assert r.stdout == f"{sandboxd.root}/etc\n".encode()
    os.symlink("/", sandboxd.root / "out")
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest(config=config("true", cwd="out")), timeout=10)) == S.PERMISSION_DENIED
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest(config=config("true", cwd="nope")), timeout=10)) == S.NOT_FOUND
    assert code_of(lambda: stub.Execute(pb.ExecuteRequest(config=config("true", env={"A=B": "c"})), timeout=10)) == S.INVALID_ARGUMENT
    stream, pid = start(sandboxd, sh("exec sleep 300"))
    assert code_of(lambda: stub.ResizeTTY(pb.ResizeTTYRequest(process_id=pid, cols=80, rows=24))) == S.FAILED_PRECONDITION
    stream.cancel()


@pytest.mark.parametrize("holds", list(HOLDS))
def test_sigterm_of_sandboxd_ends_every_stream_and_tree(tmp_path, recorded, holds):
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, *HOLDS[holds])
    streams = []
    for i in range(3):
        procs = root / f"procs{i}"
        recorded.add_file(procs)
        stream, _ = start(s, sh(f"echo up; exec {escaper()} {procs} -x sleep name=d,orphan,setsid name=i,ignore"))
        assert next(stream).stdout == b"up\n"
        streams.append((stream, procs))
    for _, procs in streams:
        assert wait_until(lambda: len(read_procs(procs)) == 3)
    s.proc.send_signal(signal.SIGTERM)
    for stream, procs in streams:
        _, _, code = drain(stream)
        assert code == 143, "an open Start stream did not get its exit event"
        assert [p for p in read_procs(procs) if alive(p[0], p[1])] == []
    assert s.proc.wait(60) == 0, s.err.read_text()
    s.channel.close()


@pytest.mark.parametrize("holds", list(HOLDS))
def test_sigkill_of_sandboxd_leaves_nothing(tmp_path, recorded, holds):
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, *HOLDS[holds])
    procs = root / "procs"
    recorded.add_file(procs)
    stream, _ = start(s, sh(f"echo up; exec {escaper()} {procs} -x sleep name=d,orphan,setsid,ignore"))
    assert next(stream).stdout == b"up\n"
    assert wait_until(lambda: len(read_procs(procs)) == 2)
    s.proc.kill()
    s.proc.wait(30)
    assert gone(read_procs(procs)) == [], "the crash guard did not stop the commands of a SIGKILLed sandboxd"
    s.channel.close()


def test_a_command_s_own_pmon_killed_from_outside_leaves_nothing(tmp_path, recorded):
    # Held as in a container with neither cgroup2 nor PID namespaces: the
    # command's own pmon, killed by someone else (an out-of-memory kill), leaves
    # the command and its setsid daemon (which ignores TERM) to pmon sandboxd.
    # The exit event comes once they are stopped and reaped.
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, *HOLDS["own-pmon"])
    procs = root / "procs"
    recorded.add_file(procs)
    # (their output elsewhere, so that the stream's end does not wait on what
    # was left holding its pipes)
    stream, _ = start(s, sh(f"exec {escaper()} {procs} -x sleep name=d,orphan,setsid,ignore > /dev/null 2>&1"))
    assert wait_until(lambda: len(read_procs(procs)) == 2)
    listed = read_procs(procs)
    main = next(p for p in listed if p[2] == "main")
    own_pid = int(pathlib.Path(f"/proc/{main[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert own_pid != s.proc.pid, "the command runs below a pmon of its own"
    os.kill(own_pid, signal.SIGKILL)
    _, _, code = drain(stream)
    assert code == 137
    left = [(p, st, n) for p, st, n in listed if stat_of(p) is not None and stat_of(p)[1] == st]
    assert left == [], f"left running or unreaped once the exit event came: {[(*x, how(x[0])) for x in left]}"
    assert s.stop() == 0, s.err.read_text()


def test_too_many_at_once_is_refused(tmp_path, recorded):
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, "--max-streams", "2")
    a, _ = start(s, sh("exec sleep 300"))
    b, _ = start(s, sh("exec sleep 300"))
    with pytest.raises(grpc.RpcError) as e:
        start(s, sh("exec sleep 300"))
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    a.cancel()
    b.cancel()
    assert s.stop() == 0


def test_an_execute_counts_among_the_calls_at_once(tmp_path, recorded):
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, "--max-streams", "1")
    a, _ = start(s, sh("exec sleep 300"))
    with pytest.raises(grpc.RpcError) as e:
        s.stub.Execute(pb.ExecuteRequest(config=config("true")), timeout=30)
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    a.cancel()
    # Its place is free once the Start has ended: an Execute holds it in turn.
    procs = root / "procs"
    recorded.add_file(procs)
    def runs():
        try:
            return s.stub.Execute(pb.ExecuteRequest(config=config("true")), timeout=30).exit_code == 0
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            return False
    assert wait_until(runs)
    call = s.stub.Execute.future(pb.ExecuteRequest(config=sh(f"exec {escaper()} {procs} -x sleep")))
    assert wait_until(lambda: len(read_procs(procs)) == 1)
    with pytest.raises(grpc.RpcError) as e:
        start(s, sh("exec sleep 300"))
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    call.cancel()
    assert gone(read_procs(procs)) == []
    assert s.stop() == 0


@pytest.mark.parametrize("holds", list(HOLDS))
def test_sigterm_of_sandboxd_answers_an_execute_in_flight(tmp_path, recorded, holds):
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, *HOLDS[holds])
    procs = root / "procs"
    recorded.add_file(procs)
    call = s.stub.Execute.future(pb.ExecuteRequest(config=sh(f"echo up; exec {escaper()} {procs} -x sleep name=d,orphan,setsid")),
                                 timeout=60)
    assert wait_until(lambda: len(read_procs(procs)) == 2)
    s.proc.send_signal(signal.SIGTERM)
    r = call.result()
    assert (r.exit_code, r.stdout) == (143, b"up\n"), "the Execute in flight did not get its command's end"
    assert gone(read_procs(procs)) == []
    assert s.proc.wait(60) == 0, s.err.read_text()
    s.channel.close()


def test_as_a_pid_namespace_s_first_process(tmp_path, recorded):
    # As a container's PID 1 it reaps what is reparented to it (orphans that
    # exit), and SIGTERM to it still ends every stream with its exit event.
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, prefix=("unshare", "--pid", "--fork", "--kill-child", "--mount-proc"))
    procs = root / "orphans"
    stream, _ = start(s, sh(f"for i in 1 2 3 4 5; do (sh -c 'echo $$ $PPID >> {procs}; exec sleep 0.2' &); done; "
                            "echo up; exec sleep 300"))
    assert next(stream).stdout == b"up\n"
    assert wait_until(lambda: procs.exists() and len(procs.read_text().split()) == 10)
    # The namespace's processes as its PID 1 sees them: no zombie stays.
    # (unshare's one child is the namespace's PID 1)
    init = [int(c) for c in pathlib.Path(f"/proc/{s.proc.pid}/task/{s.proc.pid}/children").read_text().split()]
    assert len(init) == 1, init
    nspid = [line for line in pathlib.Path(f"/proc/{init[0]}/status").read_text().splitlines() if line.startswith("NSpid:")]
    assert nspid[0].split()[-1] == "1", nspid
    def zombies():
        out = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                st = pathlib.Path(f"/proc/{p}/stat").read_text()
            except OSError:
                continue
            f = st[st.rindex(")") + 2:].split()
            if f[0] == "Z" and int(f[1]) == init[0]:
                out.append(int(p))
        return out
    assert wait_until(lambda: zombies() == [], 10), f"zombies left under the namespace's first process: {zombies()}"
    os.kill(init[0], signal.SIGTERM)
    _, _, code = drain(stream)
    assert code == 143
    assert s.proc.wait(60) == 0, s.err.read_text()
    s.channel.close()


def status_line(pid):
    return {k: v for k, v in (l.split(":", 1) for l in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines())}


def test_a_client_killed_mid_stream_stops_the_tree(sandboxd, recorded, tmp_path):
    # The client is a process of its own, SIGKILLed while its Start streams:
    # its connection drops, and the command's tree is stopped.
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    client = tmp_path / "client.py"
    client.write_text(
        "import sys, grpc\n"
        "from process.v1 import process_pb2 as pb, process_pb2_grpc as pbg\n"
        f"s = pbg.ProcessServiceStub(grpc.insecure_channel('127.0.0.1:{sandboxd.port}'))\n"
        f"line = 'exec {escaper()} {procs} -x sleep name=d,orphan,setsid'\n"
        "for ev in s.Start(pb.StartRequest(config=pb.ProcessConfig(command=['/bin/sh', '-c', line]))):\n"
        "    print(ev.WhichOneof('event'), flush=True)\n")
    c = subprocess.Popen([sys.executable, str(client)], stdout=subprocess.PIPE, env=os.environ)
    recorded.add(c.pid, start_time(c.pid))
    assert c.stdout.readline() == b"init\n"
    assert wait_until(lambda: len(read_procs(procs)) == 2)
    c.kill()
    c.wait()
    assert gone(read_procs(procs)) == [], \
        f"the tree of a Start whose client was killed is still running; pmon sandboxd said: {sandboxd.err.read_text()[-4000:]}"


def test_a_client_that_never_reads_holds_memory_bounded(sandboxd, recorded):
    # A command writing flat out to a Start stream nobody reads: the
    # daemon's memory stays bounded (the job's pipe is not read while its
    # output waits), and the command waits for its reader.
    pidfile = sandboxd.root / "cat.pid"
    stream = sandboxd.stub.Start(pb.StartRequest(config=sh(f"echo $$ > {pidfile}; exec cat /dev/zero")))
    assert next(stream).WhichOneof("event") == "init"
    pid = sandboxd.proc.pid
    def hwm():
        return int(status_line(pid)["VmHWM"].split()[0])
    before = hwm()
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip() != "", 10)
    cat = int(pidfile.read_text())
    recorded.add(cat, start_time(cat))
    # Until the command is held up (its output stops moving): an unbounded
    # relay would have taken gigabytes by then.
    def written():
        return int(pathlib.Path(f"/proc/{cat}/io").read_text().split("wchar:")[1].split()[0])
    last = [-1]
    def held():
        w = written()
        still = w == last[0]
        last[0] = w
        return still and w > 0
    assert wait_until(lambda: (time.sleep(0.2), held())[1], 30), "the command's writes never waited for its reader"
    assert last[0] < (512 << 20), f"the command wrote {last[0]} bytes that nobody read"
    grown = hwm() - before
    # (The sanitizers' shadow memory and quarantine: PMON_TEST_RSS_SCALE.)
    bound = 64 * 1024 * int(os.environ.get("PMON_TEST_RSS_SCALE", "1"))
    assert grown < bound, f"the daemon grew by {grown} KiB for a stream nobody reads"
    stream.cancel()


def test_oversized_and_odd_requests_get_a_status(sandboxd):
    S = grpc.StatusCode
    with pytest.raises(grpc.RpcError) as e:
        sandboxd.stub.Execute(pb.ExecuteRequest(config=config("true", env={"BIG": "x" * (8 << 20)})), timeout=30)
    assert e.value.code() == S.RESOURCE_EXHAUSTED
    # A thousand variables within the message limit are fine.
    r = sandboxd.stub.Execute(pb.ExecuteRequest(config=sh('echo "$V999"', env={f"V{i}": str(i) for i in range(1000)})),
                              timeout=30)
    assert r.stdout == b"999\n"
    with pytest.raises(grpc.RpcError) as e:
        sandboxd.stub.Execute(pb.ExecuteRequest(config=config("tr\0ue")), timeout=30)
    assert e.value.code() == S.INVALID_ARGUMENT
    # The daemon is still there for the next client.
    assert sandboxd.stub.Execute(pb.ExecuteRequest(config=config("true")), timeout=30).exit_code == 0


def test_reset_stops_everything_and_releases_ports(sandboxd, recorded):
    # pmon's POST /v1/reset: every command of every client stopped, each tree
    # verified gone, each port it listened on released.
    import json
    import socket
    import urllib.request
    procs = sandboxd.root / "procs"
    recorded.add_file(procs)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = (f"import os, socket, time\n"
              f"if os.fork(): os._exit(0)\n"
              f"os.setsid()\n"
              f"s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
              f"s.bind(('127.0.0.1', {port})); s.listen()\n"
              f"st = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]\n"
              f"open({str(procs)!r}, 'a').write(f'{{os.getpid()}} {{st}} server\\n')\n"
              f"time.sleep(300)\n")
    a, a_id = start(sandboxd, config("/bin/sh", "-c", f"{sys.executable} -c \"$1\"; exec sleep 300", "sh", server))
    b, b_id = start(sandboxd, sh(f"exec {escaper()} {procs} -x sleep name=d,orphan,setsid,ignore"))
    assert wait_until(lambda: len(read_procs(procs)) == 3)
    req = urllib.request.Request(sandboxd.rest + "/v1/reset", method="POST", data=b"")
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200
        answer = json.loads(r.read())
    assert answer["cleanup_verified"] and answer["ports_released"], answer
    by_id = {s["process_id"]: s for s in answer["stopped"]}
    assert set(by_id) == {a_id, b_id}, answer
    assert by_id[a_id]["ports"] == [port], answer
    assert [p for p in read_procs(procs) if alive(p[0], p[1])] == [], "reset left processes running"
    assert drain(a)[2] == 143 and drain(b)[2] == 143
    # The port is free again.
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.close()


def test_health_says_how_commands_are_held(sandboxd):
    import json
    import urllib.request
    with urllib.request.urlopen(sandboxd.rest + "/v1/health", timeout=30) as r:
        h = json.loads(r.read())
    assert h["status"] == "ok"
    if sandboxd.holds == "own-pmon":
        assert h["confinement"] == "subreaper, a pmon of each command's own", h
    else:
        assert h["confinement"] in ("cgroup", "pidns"), h
    assert f"each command held by {h['confinement']}" in sandboxd.err.read_text()


def test_in_a_cgroup_namespace_root_it_moves_out_of_it(tmp_path, recorded):
    # As in a container with a cgroup namespace of its own and a writable
    # cgroup2 (here: a cgroup of the test's, a cgroup namespace rooted there
    # and cgroup2 mounted again where the host has it, in a mount namespace
    # of its own): the daemon and another process (the container's first one)
    # sit in the namespace's root. The daemon moves them both into a cgroup
    # of their own, so the root holds no process (and could give the
    # commands' leaves controllers), and makes each command's leaf in the
    # root, beside it; a command's tree is still stopped whole.
    mount = pathlib.Path("/sys/fs/cgroup/unified")
    if not (mount / "cgroup.procs").exists():
        mount = pathlib.Path("/sys/fs/cgroup")
    if os.geteuid() != 0 or not (mount / "cgroup.subtree_control").exists():
        pytest.skip("needs root and a cgroup2 hierarchy")
    ns_root = mount / f"pmon-test-nsroot-{os.getpid()}"
    ns_root.mkdir()
    other = tmp_path / "other"
    script = (f'echo $$ > {ns_root}/cgroup.procs && exec unshare -C -m --propagation private sh -c '
              f'\'mount -t tmpfs tmpfs {mount} && mount -t cgroup2 cgroup2 {mount} && {{ sleep 300 & echo $! > {other}; }} && exec "$@"\' sh "$@"')
    root = tmp_path / "ws"
    root.mkdir()
    try:
        s = Sandboxd(root, recorded, prefix=("sh", "-c", script, "sh"))
        assert wait_until(lambda: other.exists() and other.read_text().strip())
        sleeper = int(other.read_text())
        recorded.add(sleeper, start_time(sleeper))
        assert f"moved from its cgroup namespace's root to {mount}/sandboxd" in s.err.read_text(), s.err.read_text()
        assert (ns_root / "cgroup.procs").read_text() == "", "the namespace's root still holds processes"
        held = sorted(int(p) for p in (ns_root / "sandboxd" / "cgroup.procs").read_text().split())
        # (and the daemon's crash guard, started after the move)
        assert {s.proc.pid, sleeper} <= set(held), held
        procs = root / "procs"
        recorded.add_file(procs)
        stream, pid = start(s, sh(f"exec {escaper()} {procs} -x sleep name=d,orphan,setsid,ignore"))
        assert wait_until(lambda: len(read_procs(procs)) == 2)
        leaves = [d for d in ns_root.iterdir() if d.is_dir() and d.name != "sandboxd"]
        assert len(leaves) == 1 and leaves[0].name.startswith("pmon-"), leaves
        in_leaf = (leaves[0] / "cgroup.procs").read_text().split()
        assert all(str(p) in in_leaf for p, _, _ in read_procs(procs)), (in_leaf, read_procs(procs))
        s.stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGTERM))
        _, _, code = drain(stream)
        assert code == 143
        assert gone(read_procs(procs)) == []
        assert s.stop() == 0, s.err.read_text()
    finally:
        recorded.cleanup()
        def removed(d):
            try:
                d.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                return False
        # (deepest first; a cgroup whose last process is still exiting is busy a moment)
        for d in sorted([d for d in ns_root.rglob("*") if d.is_dir()], key=lambda p: -len(p.parts)) + [ns_root]:
            assert wait_until(lambda: removed(d), 10), f"cannot remove {d}"


def test_one_envelope_for_the_sandbox(tmp_path, recorded):
    # --session-*: every command of the sandbox a leaf in one session cgroup
    # of the daemon's own (pmon-session-p<pid>-...), each in a cgroup
    # namespace of its own (as root); the session is gone once the daemon
    # has stopped. pids_max 0 writes no limit: any cgroup2 host can make it
    # (the limits themselves are the guest suite's).
    mount = pathlib.Path("/sys/fs/cgroup/unified")
    if not (mount / "cgroup.procs").exists():
        mount = pathlib.Path("/sys/fs/cgroup")
    if os.geteuid() != 0 or not (mount / "cgroup.subtree_control").exists():
        pytest.skip("needs root and a cgroup2 hierarchy")
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, "--confine", "cgroup", "--session-pids-max", "0")
    try:
        r = s.stub.Execute(pb.ExecuteRequest(config=sh("cat /proc/self/cgroup; cat /proc/$$/cgroup >&2")), timeout=30)
        assert r.exit_code == 0, r
        assert b"0::/\n" in r.stdout, r.stdout
        stream, _ = start(s, sh(f"echo $$ > {tmp_path}/pid; exec sleep 300"))
        assert wait_until(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text().strip())
        pid = int((tmp_path / "pid").read_text())
        st = start_time(pid)
        recorded.add(pid, st)
        leaf = next(line for line in pathlib.Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::"))
        session = pathlib.PurePosixPath(leaf[3:]).parent
        assert session.name.startswith(f"pmon-session-p{s.proc.pid}-"), leaf
        found = [d for d in mount.rglob(session.name) if d.is_dir()]
        assert found, f"no {session.name} under {mount}"
        assert s.stop() == 0, s.err.read_text()
        assert not alive(pid, st), "the command outlived the daemon"
        assert not any(d.exists() for d in found), "the session's cgroup outlived the daemon"
    finally:
        s.stop()
