# SPDX-License-Identifier: Apache-2.0
# The operator's --spool-limit bounds every job's spool: a job that asks
# for more (spoolByteLimit 256M) writing 5 MiB under --spool-limit 1M holds
# at most 1 MiB a file (two files: 2 MiB on disk), both removed with the
# job; a job may ask for less.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"
export XDG_RUNTIME_DIR=$t/xdg
mkdir -m 700 "$XDG_RUNTIME_DIR"
serve_start --spool-limit 1M
client_open c

spool_of() {  # spool_of SPOOL-BYTE-LIMIT: the spool of a job that wrote 5 MiB
  local r id
  r=$(call c terminal/create '{"command":"head","args":["-c","5242880","/dev/zero"],"spoolByteLimit":'"$1"'}')
  id=$(jget "$r" result.terminalId)
  call c terminal/wait_for_exit '{"terminalId":"'"$id"'"}' > /dev/null
  r=$(call c terminal/report '{"terminalId":"'"$id"'"}')
  jget "$r" result.job.spoolPath
}
on_disk() { cat "$1" "$1.1" 2>/dev/null | wc -c; }

big=$(spool_of 268435456)
[ -f "$big" ] && [ -f "$big.1" ] || fail "the job's spool was not rotated at the operator's limit: $(ls -l "$(dirname "$big")")"
[ "$(stat -c %s "$big")" -le 1048576 ] && [ "$(stat -c %s "$big.1")" -le 1048576 ] ||
  fail "a job's spool file grew past --spool-limit 1M: $(ls -l "$(dirname "$big")")"
[ "$(on_disk "$big")" -le 2097152 ] || fail "a job holds $(on_disk "$big") bytes on disk under --spool-limit 1M"
echo "ok: a job asking for 256M is held to the operator's 1M"
big_id=$(basename "$big" .out)
call c terminal/release '{"terminalId":"'"$big_id"'"}' | grep -q '"result"' || fail "the job $big_id was not released"
[ ! -e "$big" ] && [ ! -e "$big.1" ] || fail "a released job's rotated spool was left on disk: $(ls -l "$(dirname "$big")")"
echo "ok: both files of a rotated spool removed with the job"

small=$(spool_of 65536)
[ "$(stat -c %s "$small")" -le 65536 ] && [ "$(on_disk "$small")" -le 131072 ] ||
  fail "a job's own smaller spoolByteLimit was not kept: $(ls -l "$(dirname "$small")")"
echo "ok: a job may ask for less"
pass
