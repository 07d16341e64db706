#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Concurrent `rdma link add` on one netdev: exactly one device is created,
# the other requests fail with EEXIST ("File exists").  Ten rounds of six
# concurrent requests under different names, each round cleaned up.
. "$(dirname "$0")/../lib.sh"

ROUNDS=10
RACERS=6
NETDEV=flr0
add_dummy $NETDEV 10.85.0.1
modprobe ferroce || fail "cannot load ferroce"

# The ferroce devices bound to NETDEV, one name a line.
bound() {
	rdma link show | awk -v nd=$NETDEV '{
		for (i = 1; i < NF; i++)
			if ($i == "netdev" && $(i + 1) == nd) { split($2, d, "/"); print d[1] }
	}'
}

# The racers are started first and held at a lock, then released together,
# so that their requests reach the driver at the same time rather than in
# the order bash forked them.
LOCK=/tmp/link-race.lock
all_ready() { [ "$(ls /tmp/link-race.ready.* 2>/dev/null | wc -l)" = $RACERS ]; }
for ((r = 0; r < ROUNDS; r++)); do
	exec 9>$LOCK
	flock 9
	rm -f /tmp/link-race.ready.*
	pids=()
	for ((i = 0; i < RACERS; i++)); do
		CLEANUP_LINKS+=("flr${r}x$i")
		sh -c 'touch /tmp/link-race.ready.$1; exec flock -s -w 30 '$LOCK' \
			timeout 30 rdma link add "flr$2x$1" type ferroce netdev '$NETDEV \
			sh "$i" "$r" >/tmp/link-race.$i 2>&1 9>&- &
		pids+=($!)
	done
	wait_for 30 all_ready ||
		fail "round $r: the racers did not start"
	sleep 0.2
	flock -u 9
	exec 9>&-
	ok=0
	for ((i = 0; i < RACERS; i++)); do
		if wait "${pids[$i]}"; then
			ok=$((ok + 1))
		else
			grep -q "File exists" /tmp/link-race.$i || {
				cat /tmp/link-race.$i
				fail "round $r: flr${r}x$i failed, but not with EEXIST"
			}
		fi
	done
	devs=$(bound)
	n=$(grep -c . <<<"$devs" || true)
	[ "$n" = 1 ] && [ $ok = 1 ] ||
		fail "round $r: $ok of $RACERS concurrent link adds succeeded, $n devices on $NETDEV: $(echo $devs)"
	for d in $devs; do
		rdma link delete "$d" || fail "round $r: cannot delete $d"
	done
	wait_output 10 "" bound || fail "round $r: devices left on $NETDEV: $(bound)"
done
echo "$ROUNDS rounds of $RACERS concurrent link adds: one device each, the others EEXIST"
