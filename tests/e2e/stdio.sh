# SPDX-License-Identifier: Apache-2.0
# stdin, stdout and stderr pass through pmon byte-exact (binary, several MB,
# files and pipes), and --report - puts exactly one JSON object after the
# command's output on stdout.
. "$(dirname "$0")/common.inc"

head -c 6000000 /dev/urandom > "$t/in"
# Every byte value, NULs and lone CRs included, and no trailing newline.
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 64 + b"\r\0tail")' >> "$t/in"
size=$(stat -c %s "$t/in")

same() {  # A B WHAT
  cmp -s "$1" "$2" || fail "$3: $(stat -c %s "$2") bytes differ from the $(stat -c %s "$1") sent"
}

for b in $(backends); do
  # Files on all three.
  "$PMON" run -q --confine "$b" -- cat < "$t/in" > "$t/out" 2> "$t/err" || fail "$b: cat exit $?"
  same "$t/in" "$t/out" "$b: stdout (file)"
  [ ! -s "$t/err" ] || fail "$b: unexpected stderr: $(head -c 300 "$t/err")"
  "$PMON" run -q --confine "$b" -- sh -c 'cat >&2' < "$t/in" > "$t/out" 2> "$t/err" || fail "$b: cat>&2 exit $?"
  same "$t/in" "$t/err" "$b: stderr (file)"
  [ ! -s "$t/out" ] || fail "$b: unexpected stdout"

  # Pipes on all three (pipe buffers fill: pmon must not sit in the way).
  cat "$t/in" | "$PMON" run -q --confine "$b" -- cat | cat > "$t/out" || fail "$b: pipe exit ${PIPESTATUS[*]}"
  same "$t/in" "$t/out" "$b: stdout (pipe)"
  { cat "$t/in" | "$PMON" run -q --confine "$b" -- sh -c 'cat >&2' 2>&1 >/dev/null | cat > "$t/err"; } ||
    fail "$b: stderr pipe exit"
  same "$t/in" "$t/err" "$b: stderr (pipe)"

  # Both directions at once: the command echoes stdin to stdout and stderr.
  "$PMON" run -q --confine "$b" -- sh -c 'tee /dev/stderr' < "$t/in" > "$t/out" 2> "$t/err" || fail "$b: tee exit $?"
  same "$t/in" "$t/out" "$b: stdout (tee)"
  same "$t/in" "$t/err" "$b: stderr (tee)"

  # --report -: the command's bytes, then exactly one JSON object.
  "$PMON" run -q --confine "$b" --report - -- cat < "$t/in" > "$t/out" || fail "$b: --report - exit $?"
  cmp -s -n "$size" "$t/in" "$t/out" || fail "$b: --report -: the command's output is not intact before the report"
  tail -c +$((size + 1)) "$t/out" > "$t/rep"
  report_is -m "$b: --report -: one report object after the output" "$t/rep" version=1 exit_code=0 'command=["cat"]'
  # With no output of its own, stdout is exactly the object.
  "$PMON" run -q --confine "$b" --report - -- true > "$t/out" || fail "$b: --report - exit $?"
  report_is -m "$b: stdout of a silent call" "$t/out" 'command=["true"]'
  echo "ok: $b"
done
pass
