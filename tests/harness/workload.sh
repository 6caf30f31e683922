#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# workload.sh RECORD PORT [hold]
#
# What a model asks a harness's shell tool to run in the harness tests: a
# daemon in a session of its own (setsid) and a dev server listening on
# 127.0.0.1:PORT in the background. Every process it starts, itself included,
# appends "pid start_time name" to RECORD, so the test checks each one by pid
# AND start time. It prints "workload ready" once the port accepts
# connections; with "hold" it then waits for the server, as a tool call that
# runs a dev server in the foreground does, else it exits 0 at once.
set -u
rec=$1 port=$2 mode=${3:-}
record() {
  local rest
  rest=$(< "/proc/$1/stat") || return 0
  rest=${rest##*) }
  set -- "$1" "$2" $rest
  echo "$1 ${22} $2" >> "$rec"
}
record $$ shell
setsid sleep 600 < /dev/null > /dev/null 2>&1 &
record $! daemon
python3 -m http.server "$port" --bind 127.0.0.1 < /dev/null > /dev/null 2>&1 &
server=$!
record $server server
for _ in $(seq 1 500); do
  (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
  kill -0 $server 2> /dev/null || { echo "workload: the server did not start"; exit 1; }
  sleep 0.02
done
echo "workload ready"
if [ "$mode" = hold ]; then wait $server; fi
exit 0
