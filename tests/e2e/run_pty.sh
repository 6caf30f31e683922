# SPDX-License-Identifier: Apache-2.0
# pmon run --pty on every backend: the command's stdin, stdout and stderr are
# a /dev/pts terminal that is its controlling terminal, 24x80 when pmon has
# no terminal, exit codes pass through, pmon's stdin reaches it; a setsid
# grandchild that keeps the pty open is stopped with the tree and nothing it
# wrote before is lost; a process outside the call that holds the pty does
# not keep pmon waiting once the tree is gone. On a terminal of its
# own pmon sizes the pty like it, puts it in raw mode and restores it after.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

N=300   # lines the holder writes before the stop

# Waits up to 20 s (a hang guard, not a measurement) for pid $1.
returns() {
  for _ in $(seq 200); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

for b in $(backends); do
  "$PMON" run -q --confine "$b" --pty -- sh -c '
    tty
    test -t 0 && test -t 1 && test -t 2 && echo ALL-TTY
    stty size
    echo CTTY-OK > /dev/tty' < /dev/null > "$t/out" || fail "$b: pmon exit $?"
  tr -d '\r' < "$t/out" > "$t/clean"
  head -1 "$t/clean" | grep -Eqx '/dev/pts/[0-9]+' || fail "$b: tty printed: $(head -c 200 "$t/clean")"
  grep -qx ALL-TTY "$t/clean" || fail "$b: stdin/stdout/stderr are not all terminals: $(cat "$t/clean")"
  grep -qx '24 80' "$t/clean" || fail "$b: stty size without a terminal of pmon's: $(cat "$t/clean")"
  # /dev/tty opens only for a process that has a controlling terminal.
  grep -qx CTTY-OK "$t/clean" || fail "$b: the pty is not the controlling terminal: $(cat "$t/clean")"

  rc=0
  "$PMON" run -q --confine "$b" --pty -- sh -c 'exit 7' < /dev/null > /dev/null || rc=$?
  [ $rc = 7 ] || fail "$b: exit status $rc through the pty, want 7"

  printf 'abc\n' | "$PMON" run -q --confine "$b" --pty -- sh -c 'read -r l; echo "got:$l"' > "$t/out" ||
    fail "$b: input pmon exit $?"
  tr -d '\r' < "$t/out" | grep -qx 'got:abc' || fail "$b: stdin did not reach the command: $(cat "$t/out")"

  # A setsid grandchild holds the pty and writes; the main process exits.
  rm -f "$t/procs" "$t/out"
  ( run_probed run -q --confine "$b" --pty --grace 2s --report "$t/r.json" -- \
      "$ESCAPER" "$t/procs" -x exit:0 "name=h,orphan,setsid,write=$N" < /dev/null > "$t/out"
    echo "$rc" > "$t/rc" ) &
  runner=$!
  returns $runner || { record_file "$t/procs"; fail "$b: pmon still running 20 s after the main process exited"; }
  wait $runner
  record_file "$t/procs"
  [ "$(cat "$t/rc")" = 0 ] || fail "$b: holder run: pmon exit $(cat "$t/rc")"
  read -r hpid hst < <(proc_named "$t/procs" h)
  # Its stdout, then its stderr: both on the pty, so the lines come twice.
  tr -d '\r' < "$t/out" | awk -v N=$N '$1 == "h" { if ($2 == "END") { if (i != N) bad = 1; i = 0; ends++ }
      else if ($2 != ++i) bad = 1 } END { exit !(ends == 2 && !bad) }' ||
    fail "$b: holder output incomplete: $(tr -d '\r' < "$t/out" | wc -l) lines, tail $(tr -d '\r' < "$t/out" | tail -1)"
  assert_all_gone "$b" "$t/procs"
  assert_nothing_left "$b"
  if [ "$b" = pgroup ]; then
    # Outside the group, below pmon: stopped too, and listed as escaped.
    report_is -m "pgroup: the escaped holder is not reported as stopped" "$t/r.json" "escaped[pid=$hpid].action=SIGTERM"
  else
    report_is -m "$b: holder not reported as stopped" "$t/r.json" "leftovers[pid=$hpid].action=SIGTERM"
  fi

  # A holder of the pty that is no process of the call (nor below pmon): it
  # opens the command's terminal by name. pmon must not wait for it.
  rm -f "$t/name" "$t/go" "$t/out" "$t/rc"
  mkfifo "$t/name" "$t/go"
  ( rc=0
    "$PMON" run -q --confine "$b" --pty -- sh -c 'echo before; tty > "$1"; read -r _ < "$2"; echo after' \
      sh "$t/name" "$t/go" < /dev/null > "$t/out" || rc=$?
    echo "$rc" > "$t/rc" ) &
  runner=$!
  read -r ttyname < "$t/name"
  python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
open(sys.argv[2], "w").write("go\n")
time.sleep(600)' "$ttyname" "$t/go" &
  holder=$!
  record_pid $holder
  returns $runner || fail "$b: pmon still running 20 s after its tree ended, while another process holds the pty"
  wait $runner
  kill $holder
  wait $holder 2>/dev/null || true
  [ "$(cat "$t/rc")" = 0 ] || fail "$b: outside holder run: pmon exit $(cat "$t/rc")"
  [ "$(tr -d '\r' < "$t/out" | tr '\n' ' ')" = "before after " ] ||
    fail "$b: outside holder run: output $(od -c "$t/out" | head -5)"
  echo "ok: $b"
done

# pmon on a terminal of its own (33x120): the pty gets that size and follows
# a resize of it (to 40x100), keys pass through raw, and the terminal's
# settings are back once pmon is done.
python3 - "$PMON" <<'PY' || fail "pmon on a terminal: see above"
import fcntl, os, pty, select, signal, struct, sys, termios, time
pmon = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 120, 0, 0))
    script = ('"$0" run -q --pty -- sh -c \'stty size; read -r l; echo "got:$l"; echo "now:$(stty size)"\'; '
              'echo "after:$(stty -a | tr " " "\\n" | grep -x -- "-\\?icanon")"')
    os.execv("/bin/sh", ["sh", "-c", script, pmon])
out = b""
sent = False
deadline = time.monotonic() + 20  # a hang guard
while time.monotonic() < deadline:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    # Typed only once the command is reading (raw mode: Enter is CR), after
    # a resize of pmon's terminal.
    if not sent and b"33 120" in out:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        os.write(fd, b"hello\r")
        sent = True
# A hang-up ends a pmon that is still waiting (SIGHUP cancels the call).
os.close(fd)
for _ in range(100):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.1)
else:
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
text = out.decode(errors="replace").replace("\r", "")
lines = text.split("\n")
for want in ("33 120", "got:hello", "now:40 100", "after:icanon"):
    if want not in lines:
        sys.exit(f"missing {want!r} in the terminal's output: {text!r}")
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"sh exited {status}")
PY
echo "ok: on a terminal"
pass
