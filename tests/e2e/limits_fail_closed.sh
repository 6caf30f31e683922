# Limits fail closed: --memory-max, --pids-max and --cpu-max where the
# call's cgroup leaf cannot get the controller (a hybrid host: cgroup v2 has
# none of them; or a leaf parent that holds processes) end with 125 and one
# line naming the controller and the fix, and the command never runs: on
# run, supervise, init, a serve job and an mcp tool alike. Backends without
# a cgroup refuse every limit. Bad values are refused with one line naming
# the flag. Where a controller is enabled for the leaves (the pure cgroup v2
# guest), each of those calls runs instead, with the limit written to its
# leaf; the scenario says which case it ran. What the limits do is tested
# in that guest (tests/guest/limits_*.sh).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

# Where the leaves of the default cgroup backend go, and whether a
# controller is enabled for them there already (then a limit is set, not
# refused: such a host shows the other branch of each check).
# The call reads it itself: where systemd gives each pmon a scope of its
# own (a pure cgroup v2 host), the scope is gone once pmon has exited.
leaves=$("$PMON" run -v --confine cgroup -- true 2>&1 | sed -n 's/.*leaves under \([^,]*\),.*/\1/p')
[ -n "$leaves" ] || fail "pmon run -v does not say where the leaves go"
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
for_leaves=$("$PMON" run -q --confine cgroup -- \
  sh -c 'cg=$(sed -n "s/^0:://p" /proc/self/cgroup); cat "$0${cg%/*}/cgroup.subtree_control"' "$cg2") ||
  fail "a call could not read its leaf parent's cgroup.subtree_control"
enabled() { case " $for_leaves " in *" $1 "*) return 0 ;; esac; return 1; }
for ctl in memory pids cpu; do
  if enabled "$ctl"; then echo "case: the $ctl controller is enabled for the leaves in $leaves: $ctl limits are set and checked"
  else echo "case: no $ctl controller for the leaves in $leaves: $ctl limits are refused and checked"; fi
done
# The call's own limit file, as its leaf has it: "<limit file>: <content>".
LIMIT_SH='cg=$(sed -n "s/^0:://p" /proc/self/cgroup)
  root=$(awk "\$9==\"cgroup2\" { print \$5; exit }" /proc/self/mountinfo)
  echo "$(cat "$root$cg/$0")" > "$1"'
# expect_limited WHAT FILE WANT CMD...: exit 0, and the call's leaf had FILE
# (memory.max ...) set to WANT. CMD is the pmon command line without the
# command, which is added.
expect_limited() {
  local what=$1 file=$2 want=$3 rc=0
  shift 3
  rm -f "$t/limit"
  "$@" -- sh -c "$LIMIT_SH" "$file" "$t/limit" 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] || fail "$what: exit $rc with the controller enabled: $(cat "$t/err")"
  [ "$(cat "$t/limit" 2>/dev/null)" = "$want" ] || fail "$what: the call's $file is '$(cat "$t/limit" 2>/dev/null)', want '$want'"
  echo "ok: $what: $file is $want"
}
# Where --isolate can run: root with a bind mount of /proc (as for pidns).
isolate_ok=0
if [ "$(id -u)" = 0 ]; then
  [ -n "$PMON_TEST_HOSTPROC" ] || fail "root, but no bind mount of /proc: the --isolate part cannot run"
  err=$("$PMON" run -q --isolate -- true 2>&1) || fail "pmon run --isolate does not work here, so its part cannot run: $err"
  isolate_ok=1
else
  echo "note: not root: --isolate is not tried"
fi

# expect_refused WHAT PATTERN CMD...: 125, one stderr line matching PATTERN,
# the command (which would write $t/ran) not run.
expect_refused() {
  local what=$1 pattern=$2 rc=0
  shift 2
  rm -f "$t/ran"
  "$@" 2> "$t/err" > "$t/out" || rc=$?
  [ "$rc" = 125 ] || fail "$what: exit $rc, want 125: $(cat "$t/err")"
  [ ! -e "$t/ran" ] || fail "$what: the command ran"
  [ "$(wc -l < "$t/err")" = 1 ] || fail "$what: want one stderr line, got: $(cat "$t/err")"
  grep -q -- "$pattern" "$t/err" || fail "$what: '$pattern' not in: $(cat "$t/err")"
  echo "ok: $what: $(cat "$t/err")"
}
RAN=(sh -c "echo ran > $t/ran")

# 1. The cgroup backend without the controller, for each limit and each
#    subcommand that starts calls.
for lim in "memory --memory-max 100M 104857600 memory.max 104857600" "pids --pids-max 50 50 pids.max 50" \
           "cpu --cpu-max 0.5 0.5 cpu.max 50000_100000"; do
  set -- $lim
  ctl=$1 flag=$2 value=$3 reported=$4 file=$5 want=${6/_/ }
  if enabled "$ctl"; then
    expect_limited "run $flag" "$file" "$want" "$PMON" run -q "$flag" "$value"
    expect_limited "run --confine cgroup $flag" "$file" "$want" "$PMON" run -q --confine cgroup "$flag" "$value"
    expect_limited "supervise $flag" "$file" "$want" "$PMON" supervise -q "$flag" "$value"
    expect_limited "init $flag" "$file" "$want" "$PMON" init "$flag" "$value"
    "$PMON" run -q --report "$t/rep.json" "$flag" "$value" -- true || fail "run --report $flag: exit $? with $ctl enabled"
    python3 - "$t/rep.json" "$ctl" "$reported" <<'PY' || fail "run --report $flag: wrong report: $(cat "$t/rep.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["exit_status"] == 0, r["exit_status"]
assert r["limits"][sys.argv[2] + "_max"] == json.loads(sys.argv[3]), r["limits"]
PY
    if [ $isolate_ok = 1 ]; then
      rm -f "$t/ran"
      "$PMON" run -q --isolate "$flag" "$value" -- "${RAN[@]}" 2> "$t/err" || fail "run --isolate $flag: exit $? with $ctl enabled: $(cat "$t/err")"
      [ -e "$t/ran" ] || fail "run --isolate $flag: the command did not run"
      echo "ok: run --isolate $flag: ran"
    fi
    continue
  fi
  line="cannot set the $ctl limit: the $ctl controller is not"
  expect_refused "run $flag" "$line" "$PMON" run "$flag" "$value" -- "${RAN[@]}"
  grep -q -- "--cgroup-root" "$t/err" || fail "run $flag: the line does not say what to do: $(cat "$t/err")"
  grep -q -- "run without the limit" "$t/err" || fail "run $flag: the line does not offer to drop it"
  expect_refused "run --confine cgroup $flag" "$line" "$PMON" run --confine cgroup "$flag" "$value" -- "${RAN[@]}"
  expect_refused "supervise $flag" "$line" "$PMON" supervise "$flag" "$value" -- "${RAN[@]}"
  expect_refused "init $flag" "$line" "$PMON" init "$flag" "$value" -- "${RAN[@]}"
  # The report of the call that never ran says what was asked for.
  expect_refused "run --report $flag" "$line" "$PMON" run --report "$t/rep.json" "$flag" "$value" -- "${RAN[@]}"
  python3 - "$t/rep.json" "$ctl" "$reported" <<'PY' || fail "run --report $flag: wrong report: $(cat "$t/rep.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outcome"] == "not_started", r["outcome"]
assert r["exit_status"] == 125
assert "cannot set the %s limit" % sys.argv[2] in r["error"], r["error"]
want = {"memory_max": None, "pids_max": None, "cpu_max": None}
want[sys.argv[2] + "_max"] = json.loads(sys.argv[3])
assert r["limits"] == want, r["limits"]
assert r["oom_killed"] is None and r["pids_max_hit"] is None
PY
  if [ $isolate_ok = 1 ]; then
    expect_refused "run --isolate $flag" "$line" "$PMON" run --isolate "$flag" "$value" -- "${RAN[@]}"
  fi
done

# 2. Backends without a cgroup refuse every limit.
for b in subreaper pgroup; do
  have_backend "$b" || continue
  expect_refused "run --confine $b" "limits need a cgroup, and the $b backend has none" \
    "$PMON" run --confine "$b" --memory-max 1G --pids-max 10 -- "${RAN[@]}"
  expect_refused "supervise --confine $b" "cannot set the cpu limit: limits need a cgroup" \
    "$PMON" supervise --confine "$b" --cpu-max 1 -- "${RAN[@]}"
  expect_refused "init --confine $b" "cannot set the pids limit: limits need a cgroup" \
    "$PMON" init --confine "$b" --pids-max 10 -- "${RAN[@]}"
done
if [ -n "$PMON_TEST_HOSTPROC" ] && have_backend pidns; then
  expect_refused "run --confine pidns" "a PID namespace without --isolate has none" \
    "$PMON" run --confine pidns --memory-max 1G -- "${RAN[@]}"
fi

# pmon init as PID 1 of a new PID namespace (root: unshare needs it).
if [ "$(id -u)" = 0 ]; then
  command -v unshare > /dev/null || fail "unshare is not installed: the PID 1 part cannot run"
  unshare --pid --fork true || fail "unshare --pid --fork does not work here: the PID 1 part cannot run"
  expect_refused "init as PID 1" "a PID namespace whose init is pmon (without --confine cgroup) has none" \
    unshare --pid --fork "$PMON" init --memory-max 1G -- "${RAN[@]}"
else
  echo "note: not root: pmon init as PID 1 is not tried"
fi

# 3. Bad values: one line naming the flag, before anything runs.
expect_refused "size with a bad suffix" "run: --memory-max: '100X' is not a size" "$PMON" run --memory-max 100X -- "${RAN[@]}"
expect_refused "size 0" "run: --memory-max: '0' must be more than 0" "$PMON" run --memory-max 0 -- "${RAN[@]}"
expect_refused "negative size" "run: --memory-max: '-5M' is not a size" "$PMON" run --memory-max=-5M -- "${RAN[@]}"
expect_refused "fractional size" "is not a size" "$PMON" run --memory-max 1.5G -- "${RAN[@]}"
expect_refused "empty size" "run: --memory-max: '' is not a size" "$PMON" run --memory-max "" -- "${RAN[@]}"
expect_refused "huge size" "is too large" "$PMON" run --memory-max 99999999999999999999 -- "${RAN[@]}"
expect_refused "size overflowing with its suffix" "is too large" "$PMON" run --memory-max 17179869184G -- "${RAN[@]}"
expect_refused "pids 0" "supervise: --pids-max: '0' must be at least 1" "$PMON" supervise --pids-max 0 -- "${RAN[@]}"
expect_refused "pids word" "init: --pids-max: 'many' is not a whole number" "$PMON" init --pids-max many -- "${RAN[@]}"
expect_refused "pids too many" "run: --pids-max: '3000000000' is too large" "$PMON" run --pids-max 3000000000 -- "${RAN[@]}"
expect_refused "cores word" "run: --cpu-max: 'half' is not a number of cores" "$PMON" run --cpu-max half -- "${RAN[@]}"
expect_refused "cores too few" "run: --cpu-max: '0.001' is out of range" "$PMON" run --cpu-max 0.001 -- "${RAN[@]}"
expect_refused "cores 0" "run: --cpu-max: '0' is out of range" "$PMON" run --cpu-max 0 -- "${RAN[@]}"
"$PMON" run --help | grep -q -- "--memory-max SIZE" || fail "run --help lacks --memory-max"
"$PMON" run --help | grep -q -- "powers of" || fail "run --help does not say what K, M, G mean"

# 4. A serve job: the same line as the error of terminal/create, and bad
#    values named by their field.
serve_start
client_open c
expect_rpc_error() {  # expect_rpc_error CODE MESSAGE-PART REPLY
  [ "$(jf "$3" 'm["error"]["code"]')" = "$1" ] || fail "expected error $1, got: $3"
  case $(jf "$3" 'm["error"]["message"]') in *"$2"*) ;; *) fail "error message lacks '$2': $3" ;; esac
  echo "ok: serve: $(jf "$3" 'm["error"]["message"]')"
}
create() { call c terminal/create '{"command":"sh","args":["-c","echo ran > '"$t/ran"'"],'"$1"'}'; }
# With the controller: the job runs, its leaf has the limit.
expect_job_limited() {  # expect_job_limited FIELDS FILE WANT
  local r id i
  rm -f "$t/limit"
  r=$(call c terminal/create "$(python3 -c 'import json,sys; p={"command":"sh","args":["-c",sys.argv[1],sys.argv[2],sys.argv[3]]}; p.update(json.loads("{"+sys.argv[4]+"}")); print(json.dumps(p))' \
    "$LIMIT_SH" "$2" "$t/limit" "$1")")
  id=$(jf "$r" 'm["result"]["terminalId"]') || fail "serve $1: refused with the controller enabled: $r"
  r=$(call c terminal/wait_for_exit '{"terminalId":"'"$id"'"}')
  [ "$(jf "$r" 'm["result"]["exitCode"]')" = 0 ] || fail "serve $1: the job did not exit 0: $r"
  [ "$(cat "$t/limit" 2>/dev/null)" = "$3" ] || fail "serve $1: the job's $2 is '$(cat "$t/limit" 2>/dev/null)', want '$3'"
  call c terminal/release '{"terminalId":"'"$id"'"}' > /dev/null
  echo "ok: serve $1: $2 is $3"
}
if enabled memory; then
  expect_job_limited '"memoryMax":"100M"' memory.max 104857600
  expect_job_limited '"memoryMax":104857600' memory.max 104857600
else
  expect_rpc_error -32000 "cannot set the memory limit: the memory controller is not" "$(create '"memoryMax":"100M"')"
  expect_rpc_error -32000 "cannot set the memory limit" "$(create '"memoryMax":104857600')"
fi
if enabled pids; then expect_job_limited '"pidsMax":50' pids.max 50
else expect_rpc_error -32000 "cannot set the pids limit" "$(create '"pidsMax":50')"; fi
if enabled cpu; then expect_job_limited '"cpuMax":0.5' cpu.max "50000 100000"
else expect_rpc_error -32000 "cannot set the cpu limit" "$(create '"cpuMax":0.5')"; fi
rm -f "$t/ran"
expect_rpc_error -32602 "'memoryMax' '12Q' is not a size" "$(create '"memoryMax":"12Q"')"
expect_rpc_error -32602 "'memoryMax' must be a number of bytes" "$(create '"memoryMax":-1')"
expect_rpc_error -32602 "'pidsMax' '0' must be at least 1" "$(create '"pidsMax":0')"
expect_rpc_error -32602 "'pidsMax' must be a whole number" "$(create '"pidsMax":"lots"')"
expect_rpc_error -32602 "'cpuMax' must be a number of cores" "$(create '"cpuMax":"1"')"
expect_rpc_error -32602 "out of range" "$(create '"cpuMax":0')"
[ ! -e "$t/ran" ] || fail "serve: a refused job ran"
r=$(call c terminal/list)
[ "$(jf "$r" 'len(m["result"]["terminals"])')" = 0 ] || fail "serve: a refused job is listed: $r"
client_close c

# 5. An mcp tool: the tool's error, and the input schema offers the limits.
python3 - "$PMON" "$t/ran" "$(enabled memory && echo 1 || echo 0)" <<'PY' || fail "mcp: see above"
import json, os, subprocess, sys
pmon, ran, mem_enabled = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
msgs = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "run", "arguments": {"command": "echo ran > " + ran, "memory_max": "100M"}}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "start", "arguments": {"command": "echo ran > " + ran, "pids_max": 0}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "run", "arguments": {"command": "true", "cpu_max": "fast"}}},
]
p = subprocess.run([pmon, "mcp"], input="".join(json.dumps(m) + "\n" for m in msgs), capture_output=True, text=True, timeout=60)
replies = {m["id"]: m for m in map(json.loads, p.stdout.splitlines()) if "id" in m}
tools = {t["name"]: t for t in replies[2]["result"]["tools"]}
for name in ("run", "start"):
    props = tools[name]["inputSchema"]["properties"]
    assert all(k in props for k in ("memory_max", "pids_max", "cpu_max")), (name, props.keys())
def err_text(i):
    r = replies[i]["result"]
    assert r["isError"] is True, r
    return r["content"][0]["text"]
if not mem_enabled:
    text = err_text(3)
    assert "cannot set the memory limit: the memory controller is not" in text, text
    print("ok: mcp run:", text)
else:
    r = replies[3]["result"]
    assert r["isError"] is False and r["structuredContent"]["exit_code"] == 0, r
    assert os.path.exists(ran), "mcp run with memory_max: the command did not run"
    os.remove(ran)
    print("ok: mcp run with memory_max: ran")
assert "invalid arguments: 'pids_max' '0' must be at least 1" in err_text(4), err_text(4)
assert "invalid arguments: 'cpu_max' must be a number of cores" in err_text(5), err_text(5)
import os
assert not os.path.exists(ran), "mcp: a refused tool call ran"
PY

pass
