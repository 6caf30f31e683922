# SPDX-License-Identifier: Apache-2.0
# The host's side of the aarch64 guest's sandboxd scenario (sandboxd.sh): a
# real gRPC client (python3-grpcio, on stubs generated from pmon's .proto)
# talking to pmon sandboxd in the guest through the port qemu forwards from
# 127.0.0.1. Checks an Execute's output and exit status, and that SIGTERM
# to a Start whose command left a setsid daemon brings the exit event (143);
# then writes its verdict into the sandbox root ("ok", or what went wrong),
# where the guest checks, by pid and start time, that the daemon is gone.
#
#   python3 sandboxd_client.py STUBS_DIR PORT ROOT
import sys
import time

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
from process.v1 import process_pb2 as pb  # noqa: E402
from process.v1 import process_pb2_grpc as pbg  # noqa: E402

PORT, ROOT = int(sys.argv[2]), sys.argv[3]
# Under emulation a call takes far longer than on a host: generous, bounded.
DEADLINE = 60

# The command Start runs: a double fork + setsid daemon that records its
# "pid start-time" (fields 1 and 22 of its /proc stat) in ROOT/daemon, then
# says so and waits for a signal.
START_LINE = """( setsid sh -c 'echo $$ $(cut -d" " -f22 /proc/$$/stat) > daemon.tmp; mv daemon.tmp daemon; exec sleep 1001' & )
until [ -s daemon ]; do sleep 0.05; done
echo started
exec sleep 1000"""


def sh(line, **env):
    return pb.ProcessConfig(command=["/bin/sh", "-c", line], env_vars=env, cwd=ROOT)


def log(msg):
    print(f"client: {msg}", flush=True)


def checks(stub):
    t = time.monotonic()
    r = stub.Execute(pb.ExecuteRequest(config=sh("echo hello")), timeout=DEADLINE)
    got = (r.stdout, r.stderr, r.exit_code)
    if got != (b"hello\n", b"", 0):
        return f"Execute of sh -c 'echo hello': (stdout, stderr, exit) {got!r}"
    log(f"Execute sh -c 'echo hello': 'hello', exit 0 ({time.monotonic() - t:.1f} s)")

    t = time.monotonic()
    stream = stub.Start(pb.StartRequest(config=sh(START_LINE)), timeout=DEADLINE)
    pid, out, code = None, b"", None
    for ev in stream:
        kind = ev.WhichOneof("event")
        if kind == "init":
            pid = ev.init.process_id
        elif kind == "stdout":
            out += ev.stdout
            if out == b"started\n":
                break
        elif kind == "exit":
            return f"Start: the command exited ({ev.exit.exit_code}) before its daemon was up: {out!r}"
    if pid is None or out != b"started\n":
        return f"Start: no init event or no 'started' line (process id {pid}, stdout {out!r})"
    r = stub.Execute(pb.ExecuteRequest(config=sh(
        'read p s < daemon && [ "$(cut -d" " -f22 /proc/$p/stat)" = "$s" ] && echo "$p $s"')), timeout=DEADLINE)
    if r.exit_code != 0:
        return f"the daemon recorded is not running: {r.stdout!r} {r.stderr!r}"
    log(f"Start: process id {pid}; its setsid daemon (pid, start time) {r.stdout.decode().strip()} "
        f"runs ({time.monotonic() - t:.1f} s)")

    t = time.monotonic()
    stub.SendSignal(pb.SendSignalRequest(process_id=pid, signal=pb.SIGNAL_SIGTERM), timeout=DEADLINE)
    for ev in stream:
        if ev.WhichOneof("event") == "exit":
            code = ev.exit.exit_code
    if code != 143:
        return f"SendSignal SIGTERM: exit event {code}, want 143"
    log(f"SendSignal SIGTERM: exit event 143 ({time.monotonic() - t:.1f} s)")
    return "ok"


def main():
    channel = grpc.insecure_channel(f"127.0.0.1:{PORT}")
    try:
        grpc.channel_ready_future(channel).result(timeout=DEADLINE)
    except grpc.FutureTimeoutError:
        log(f"FAIL: no connection to 127.0.0.1:{PORT} within {DEADLINE} s")
        return 1
    stub = pbg.ProcessServiceStub(channel)
    try:
        verdict = checks(stub)
    except grpc.RpcError as e:
        verdict = f"a call failed: {e.code()}: {e.details()}"
    log(verdict if verdict == "ok" else f"FAIL: {verdict}")
    # The verdict, for the guest (which waits for it).
    stub.Execute(pb.ExecuteRequest(config=sh('printf "%s\\n" "$V" > client-done', V=verdict)), timeout=DEADLINE)
    channel.close()
    return 0 if verdict == "ok" else 1


sys.exit(main())
