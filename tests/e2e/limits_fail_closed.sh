# SPDX-License-Identifier: Apache-2.0
# Limits fail closed: --memory-max, --memory-high, --pids-max and --cpu-max where the
# call's cgroup leaf cannot get the controller (a hybrid host: cgroup v2 has
# none of them; or a leaf parent that holds processes) end with 125 and one
# line naming the controller and the fix, and the command never runs: on
# run, supervise, init, a serve job and an mcp tool alike. Backends without
# a cgroup refuse every limit. Bad values are refused with one line naming
# the flag. The limits that do hold are tested in a pure cgroup v2 guest
# (tests/guest/limits_*.sh).
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
# Where a controller is enabled the limit is set instead: the command reads
# its own cgroup's FILE (under --isolate its cgroup namespace shows its leaf
# as /, mounted where the host has cgroup2) into $t/val.
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
READ_SH='cg=$(sed -n "s/^0:://p" /proc/self/cgroup); cat "$0${cg%/}/$1" > "$2"'
read_limit() { READ=(sh -c "$READ_SH" "$cg2" "$1" "$t/val"); }
# expect_set WHAT WANT CMD...: exit 0 and the file read as WANT.
expect_set() {
  local what=$1 want=$2 rc=0
  shift 2
  rm -f "$t/val"
  "$@" > "$t/out" 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] || fail "$what: exit $rc although the controller is enabled: $(cat "$t/err")"
  [ "$(cat "$t/val" 2>/dev/null)" = "$want" ] || fail "$what: the limit reads '$(cat "$t/val" 2>/dev/null)', want '$want'"
  echo "ok: $what: set ($want)"
}

# 1. The cgroup backend without the controller, for each limit and each
#    subcommand that starts calls.
for lim in "memory --memory-max 100M 104857600 memory.max 104857600 memory_max" \
           "memory --memory-high 80M 83886080 memory.high 83886080 memory_high" "pids --pids-max 50 50 pids.max 50 pids_max" \
           "cpu --cpu-max 0.5 0.5 cpu.max 50000_100000 cpu_max"; do
  set -- $lim
  ctl=$1 flag=$2 value=$3 reported=$4 file=$5 want=${6//_/ } key=$7
  if enabled "$ctl"; then
    echo "note: $ctl is enabled for the leaves in $leaves: the limit is set there"
    read_limit "$file"
    expect_set "run $flag" "$want" "$PMON" run -q "$flag" "$value" -- "${READ[@]}"
    expect_set "run --confine cgroup $flag" "$want" "$PMON" run -q --confine cgroup "$flag" "$value" -- "${READ[@]}"
    expect_set "supervise $flag" "$want" "$PMON" supervise --max-restarts 0 "$flag" "$value" -- "${READ[@]}"
    expect_set "init $flag" "$want" "$PMON" init "$flag" "$value" -- "${READ[@]}"
    if [ -n "$PMON_TEST_HOSTPROC" ] && "$PMON" run -q --isolate -- true 2>/dev/null; then
      expect_set "run --isolate $flag" "$want" "$PMON" run -q --isolate "$flag" "$value" -- "${READ[@]}"
    else
      echo "note: run --isolate $flag: --isolate does not work here"
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
  lims=('limits.#=4')
  for k in memory_max memory_high pids_max cpu_max; do
    if [ "$k" = "$key" ]; then lims+=("limits.$k=$reported"); else lims+=("limits.$k=null"); fi
  done
  report_is -m "run --report $flag" "$t/rep.json" outcome=not_started exit_status=125 "error~cannot set the $ctl limit" \
    "${lims[@]}" oom_killed=null pids_max_hit=null memory_high_hit=null
  if [ -n "$PMON_TEST_HOSTPROC" ] && "$PMON" run -q --isolate -- true 2>/dev/null; then
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

if command -v unshare > /dev/null && unshare --pid --fork true 2>/dev/null; then
  expect_refused "init as PID 1" "a PID namespace whose init is pmon (without --confine cgroup) has none" \
    unshare --pid --fork "$PMON" init --memory-max 1G -- "${RAN[@]}"
fi

# 3. Bad values: one line naming the flag, before anything runs.
expect_refused "size with a bad suffix" "run: --memory-max: '100X' is not a size" "$PMON" run --memory-max 100X -- "${RAN[@]}"
expect_refused "size 0" "run: --memory-max: '0' must be more than 0" "$PMON" run --memory-max 0 -- "${RAN[@]}"
expect_refused "negative size" "run: --memory-max: '-5M' is not a size" "$PMON" run --memory-max=-5M -- "${RAN[@]}"
expect_refused "fractional size" "is not a size" "$PMON" run --memory-max 1.5G -- "${RAN[@]}"
expect_refused "empty size" "run: --memory-max: '' is not a size" "$PMON" run --memory-max "" -- "${RAN[@]}"
expect_refused "huge size" "is too large" "$PMON" run --memory-max 99999999999999999999 -- "${RAN[@]}"
expect_refused "size overflowing with its suffix" "is too large" "$PMON" run --memory-max 17179869184G -- "${RAN[@]}"
expect_refused "memory-high bad" "run: --memory-high: '1Q' is not a size" "$PMON" run --memory-high 1Q -- "${RAN[@]}"
expect_refused "memory-high over memory-max" "run: --memory-high must be below --memory-max" \
  "$PMON" run --memory-high 200M --memory-max 100M -- "${RAN[@]}"
expect_refused "pids -1" "supervise: --pids-max: '-1' is not a whole number of processes (e.g. 100)" "$PMON" supervise --pids-max -1 -- "${RAN[@]}"
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
  reply_error "$3" "$1" "$2"
  echo "ok: serve: $(jget "$3" error.message)"
}
create() { call c terminal/create '{"command":"sh","args":["-c","echo ran > '"$t/ran"'"],'"$1"'}'; }
rm -f "$t/ran"
if ! enabled memory; then
  expect_rpc_error -32000 "cannot set the memory limit: the memory controller is not" "$(create '"memoryMax":"100M"')"
  expect_rpc_error -32000 "cannot set the memory limit" "$(create '"memoryMax":104857600')"
else
  # Set: the job reads it back.
  rm -f "$t/val"
  r=$(call c terminal/create "$(jparams memoryMax=100M -- sh -c "$READ_SH" "$cg2" memory.max "$t/val")")
  id=$(jget "$r" result.terminalId)
  r=$(call c terminal/wait_for_exit '{"terminalId":"'"$id"'"}')
  reply_is -m "serve: the job with memoryMax" "$r" result.exitCode=0
  [ "$(cat "$t/val")" = 104857600 ] || fail "serve: memoryMax reads '$(cat "$t/val")'"
  call c terminal/release '{"terminalId":"'"$id"'"}' > /dev/null
  echo "ok: serve: memoryMax set (104857600)"
fi
enabled pids || expect_rpc_error -32000 "cannot set the pids limit" "$(create '"pidsMax":50')"
enabled cpu || expect_rpc_error -32000 "cannot set the cpu limit" "$(create '"cpuMax":0.5')"
expect_rpc_error -32602 "'memoryMax' '12Q' is not a size" "$(create '"memoryMax":"12Q"')"
expect_rpc_error -32602 "'memoryMax' must be a number of bytes" "$(create '"memoryMax":-1')"
expect_rpc_error -32602 "'pidsMax' '-1' is not a whole number of processes" "$(create '"pidsMax":-1')"
expect_rpc_error -32602 "'pidsMax' must be a whole number" "$(create '"pidsMax":"lots"')"
expect_rpc_error -32602 "'cpuMax' must be a number of cores" "$(create '"cpuMax":"1"')"
expect_rpc_error -32602 "out of range" "$(create '"cpuMax":0')"
[ ! -e "$t/ran" ] || fail "serve: a refused job ran"
r=$(call c terminal/list)
reply_is -m "serve: a refused job is listed" "$r" result.terminals.#=0
client_close c

# 5. An mcp tool: the tool's error, and the input schema offers the limits.
PYTHONPATH="$(dirname "$0")" python3 - "$PMON" "$t/ran" "$(enabled memory && echo 1 || echo 0)" "$cg2" "$t/val" <<'PY' || fail "mcp: see above"
import sys
from mcp_stdio import Mcp
pmon, ran, mem_enabled, cg2, val = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4], sys.argv[5]
mcp = Mcp(pmon)
def call(name, args):
    return mcp.req("tools/call", {"name": name, "arguments": args})
tools = {t["name"]: t for t in mcp.req("tools/list", {})["tools"]}
replies = {
    # (Where memory is enabled this one runs, as it should: into a file of its own.)
    3: call("run", {"command": "echo ran > " + ran + (".3" if mem_enabled else ""), "memory_max": "100M"}),
    4: call("start", {"command": "echo ran > " + ran, "pids_max": -1}),
    5: call("run", {"command": "true", "cpu_max": "fast"}),
    6: call("run", {"command": "cg=$(sed -n 's/^0:://p' /proc/self/cgroup); cat \"%s${cg%%/}/memory.max\" > %s" % (cg2, val),
                    "memory_max": "100M"}),
}
mcp.close()
for name in ("run", "start"):
    props = tools[name]["inputSchema"]["properties"]
    assert all(k in props for k in ("memory_max", "pids_max", "cpu_max")), (name, props.keys())
def err_text(i):
    r = replies[i]
    assert r["isError"] is True, r
    return r["content"][0]["text"]
if not mem_enabled:
    text = err_text(3)
    assert "cannot set the memory limit: the memory controller is not" in text, text
    print("ok: mcp run:", text)
else:
    r = replies[6]
    assert r.get("isError") is not True, r
    assert open(val).read().strip() == "104857600", open(val).read()
    print("ok: mcp run: memory_max set")
assert "invalid arguments: 'pids_max' '-1' is not a whole number of processes" in err_text(4), err_text(4)
assert "invalid arguments: 'cpu_max' must be a number of cores" in err_text(5), err_text(5)
import os
assert not os.path.exists(ran), "mcp: a refused tool call ran"
PY

pass
