#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1800 (TCG: 100 processes started and killed, four teardowns)
# Things go away in the middle of wire transfers, and nothing is lost:
#   1. kill -9 of integrity and perftest processes mid-transfer, KILLS
#      times (FERROCE_KILLS, default 100): resources back at the devices' creation-time
#      counts, pinned pages (nr_foll_pin_acquired - released) back at the
#      baseline, and a fresh integrity run passes;
#   2. modprobe -r ferroce while a process moves data is refused, and the
#      transfer completes intact;
#   3. rdma link delete, ip link del of the netdev and ip netns del of the
#      namespace while integrity runs: each completes (the first once the
#      device's user has gone: ib_core waits for it, as with every driver
#      without disassociate_ucontext; the netdev ones at once), the device
#      goes, the user's transfers fail instead of hanging;
#   4. the module unloads, pinned pages are back at the baseline.
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
KILLS=${FERROCE_KILLS:-100}
cc -O2 -Wall -o /tmp/integrity "$PROGS/integrity.c" -libverbs || fail "cannot build integrity.c"

pinned() {
	awk '$1 == "nr_foll_pin_acquired" { a = $2 } $1 == "nr_foll_pin_released" { r = $2 }
	     END { print a - r }' /proc/vmstat
}
pair() { # the two namespaces, their veth and a ferroce device on each end
	add_netns fka
	add_netns fkb
	add_veth fka0 fka 10.69.0.1 fkb0 fkb 10.69.0.2
	static_neighbours fka0 fka 10.69.0.1 fkb0 fkb 10.69.0.2
	ferroce_add fka fka0 fka
	ferroce_add fkb fkb0 fkb
	ga=$(roce_gid fka 10.69.0.1) || fail "fka has no RoCE v2 GID"
	gb=$(roce_gid fkb 10.69.0.2) || fail "fkb has no RoCE v2 GID"
}
transfer() { # ITERATIONS SEED: integrity between fka and fkb, 1 MiB messages
	# (exec: run in the background, $! is integrity itself, which kill -9 must hit.)
	exec /tmp/integrity -s 1048576 -t 20 -b fkb -x "$ga" -X "$gb" fka "$1" "$2"
}
gone() { ! [ -e "/sys/class/infiniband/$1" ]; }
dead() { # PID: gone or a zombie
	! grep -q '^State:[[:space:]]*[^Z]' "/proc/$1/status" 2>/dev/null
}
must_die() { # PID...: each dies within a minute of SIGKILL, or the test fails showing where it hangs
	local p
	for p in "$@"; do
		wait_for 60 dead "$p" && continue
		echo "process $p ($(cat /proc/$p/comm 2>/dev/null)) does not die; its kernel stack:"
		cat "/proc/$p/stack" 2>/dev/null || true
		fail "a process killed with SIGKILL hangs in the kernel"
	done
}

base=$(pinned)
pins_back() { [ "$(pinned)" -le "$base" ]; }
echo "pinned pages before: $base"
pair

# 1. kill -9 mid-transfer.
for i in $(seq 1 "$KILLS"); do
	pids=()
	if [ $((i % 2)) = 1 ]; then
		transfer 100000 "$i" >/dev/null 2>&1 &
		pids+=($!)
	else
		ip netns exec fkb ib_write_bw -d fkb -x "$gb" -s 65536 -D 20 -F >/dev/null 2>&1 &
		pids+=($!)
		wait_for 20 listening fkb 18515 || fail "ib_write_bw server $i never listened"
		ip netns exec fka ib_write_bw -d fka -x "$ga" -s 65536 -D 20 -F 10.69.0.2 >/dev/null 2>&1 &
		pids+=($!)
	fi
	# Anywhere from setting up to the middle of the transfers.
	sleep "$((RANDOM % 3)).$((RANDOM % 10))"
	kill -9 "${pids[@]}" 2>/dev/null || true
	must_die "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null || true
	[ $((i % 20)) != 0 ] || echo "$(date +%T) $i processes killed"
done
wait_for 60 res_at_baseline fka pd cq qp mr ctx srq ||
	{ rdma resource show; fail "fka holds objects after $KILLS killed processes"; }
wait_for 60 res_at_baseline fkb pd cq qp mr ctx srq ||
	{ rdma resource show; fail "fkb holds objects after $KILLS killed processes"; }
wait_for 30 pins_back || fail "pinned pages: $(pinned), more than $base, after $KILLS kills"
out=$(transfer 50 1 2>&1) || { echo "$out"; fail "integrity after the kills"; }
echo "$KILLS processes killed mid-transfer: nothing left, pinned pages back at $base"
rdma statistic show link fka/1

# 2. modprobe -r with live QPs: refused, and the transfer goes on intact.
transfer 200 2 >/tmp/transfer.log 2>&1 &
t=$!
sleep 2
if modprobe -r ferroce 2>/tmp/modprobe.log; then
	fail "modprobe -r ferroce succeeded while a process used its devices"
fi
grep -q "^ferroce " /proc/modules || fail "ferroce went away under its users"
wait $t || { cat /tmp/transfer.log; fail "the transfer failed after modprobe -r was refused"; }
echo "modprobe -r refused while in use ($(head -1 /tmp/modprobe.log)); the transfer completed"

# 3. The device, the netdev, the namespace go under traffic.
transfer 100000 3 >/tmp/transfer.log 2>&1 &
t=$!
sleep 3
timeout 300 rdma link delete fkb &
del=$!
sleep 2
gone fkb && fail "fkb went while its user still had it open (ib_core waits for users)"
kill -9 $t
wait $t 2>/dev/null || true
wait $del || fail "rdma link delete under traffic did not complete once the user was gone"
gone fkb || fail "fkb is still there after rdma link delete"
echo "rdma link delete under traffic: done once the user went"
rdma link delete fka
ip netns del fka
ip netns del fkb

for how in link netns; do
	pair
	transfer 100000 4 >/tmp/transfer.log 2>&1 &
	t=$!
	sleep 3
	if [ $how = link ]; then
		timeout 120 ip -n fkb link del fkb0 || fail "ip link del fkb0 under traffic did not complete"
	else
		timeout 120 ip netns del fkb || fail "ip netns del fkb under traffic did not complete"
	fi
	wait_for 120 gone fkb || fail "fkb is still there after its netdev went ($how)"
	# The user's transfers fail (the peer is gone) instead of hanging.
	timeout 300 tail --pid=$t -f /dev/null || fail "integrity hangs after its device's netdev went ($how)"
	if wait $t; then fail "integrity succeeded with its peer's netdev gone ($how)"; fi
	wait_for 120 gone fka || true
	gone fka || rdma link delete fka
	ip netns del fka 2>/dev/null || true
	ip netns del fkb 2>/dev/null || true
	echo "$how deleted under traffic: the device went, the transfer failed cleanly"
done

wait_for 30 pins_back || fail "pinned pages: $(pinned), more than $base, at the end"
unload_modules ferroce
echo "teardown under traffic leaves nothing behind; pinned pages back at $base"
