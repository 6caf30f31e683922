# SPDX-License-Identifier: Apache-2.0
# pmon sandboxd on aarch64 (pmon-sandboxd, dynamically linked, with the
# libraries of its release tarball), served to a real gRPC client on the
# host: the guest's network card is qemu's user-mode network, whose only way
# in is the host's 127.0.0.1 port forwarded to the process service here.
# Once it listens, this says so on the console; the host's client
# (sandboxd_client.py) then runs its Execute and a Start whose setsid daemon
# SIGTERM must stop, and writes its verdict into the sandbox root. Here: the
# verdict, the daemon gone (its pid and start time), pmon sandboxd's exit.
# Run only when scripts/guest-aarch64.sh is given the sandboxd tarball.
. "$(dirname "$0")/common.inc"

# The network card (virtio-net on virtio-mmio, modules of the guest's
# kernel) with qemu's user-mode guest address, and loopback.
for m in virtio_ring virtio virtio_mmio failover net_failover virtio_net; do
  insmod "/opt/pmon/modules/$m.ko" 2> "$t/insmod" || fail "insmod $m: $(cat "$t/insmod")"
done
wait_until 30 [ -e /sys/class/net/eth0 ] || fail "no eth0 after loading virtio_net: $(ls /sys/class/net)"
ip link set lo up || fail "cannot bring lo up"
ip link set eth0 up || fail "cannot bring eth0 up"
ip addr add 10.0.2.15/24 dev eth0 || fail "cannot give eth0 its address"

root=/tmp/sandboxd-root
"$PMON" sandboxd --listen-host 0.0.0.0 --grpc-port 9090 --rest-port 8080 --root-dir "$root" \
  --grace 1s 2> "$t/err" &
svc=$!
svc_st=$(start_time_of "$svc")
# (not left running by a failed check: the scenarios after this one)
trap '[ -z "$svc_st" ] || ! alive "$svc" "$svc_st" || kill -KILL "$svc"' EXIT
# Until it listens, or has exited (a zombie until waited for).
up_or_gone() {
  grep -q 'process service on 0\.0\.0\.0:9090' "$t/err" && return 0
  st=$(state_of "$svc"); [ -z "$st" ] || [ "$st" = Z ]
}
wait_until 90 up_or_gone
grep -q 'process service on 0\.0\.0\.0:9090' "$t/err" || fail "pmon sandboxd did not start: $(cat "$t/err")"
ok "pmon sandboxd (pmon-sandboxd $(wc -c < /opt/pmon/libexec/pmon/pmon-sandboxd) bytes, $(ls /opt/pmon/libexec/pmon/lib | wc -l) libraries) listening"

# The host's client starts when it reads this line.
echo "pmon-aarch64: sandboxd: listening, root $root" > /dev/console
wait_until 150 [ -s "$root/client-done" ] || fail "no verdict from the host's client within 150 s"
verdict=$(cat "$root/client-done")
[ "$verdict" = ok ] || fail "the host's client: $verdict"
ok "the host's gRPC client: Execute and Start/SendSignal as expected"

# The setsid daemon that Start's command left: gone once the exit event came.
read -r pid st < "$root/daemon" || fail "no daemon recorded"
[ -n "$st" ] || fail "the daemon's record is not 'pid start-time': $(cat "$root/daemon")"
! alive "$pid" "$st" || fail "the setsid daemon $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline")) is still running"
ok "the setsid daemon $pid (start time $st) is gone"

kill -TERM "$svc"
rc=0; wait "$svc" || rc=$?
[ $rc = 0 ] || fail "pmon sandboxd after SIGTERM: exit $rc: $(cat "$t/err")"
! alive "$svc" "$svc_st" || fail "pmon sandboxd $svc still runs"
ok "SIGTERM of pmon sandboxd: exit 0"
