#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900 (TCG: rxe is slow, and both drivers load and unload twice)
# ferroce and rdma_rxe share each namespace's RoCEv2 port (UDP 4791, the
# kernel's ib_roce_udp): each packet goes to the device of the netdev it
# arrived on, whichever driver made it.  Both namespaces below hold a
# device of each driver, each on its own netdev, and each device talks to
# its peer in the other namespace over a veth pair:
#
#   init_net: sa0 10.84.0.1 rxe  srxa  <-veth->  shb: sb0 10.84.0.2 rxe  srxb
#   init_net: sa1 10.84.1.1 ferroce sfa <-veth-> shb: sb1 10.84.1.2 ferroce sfb
#
# Checked, with each driver loaded first in turn: the integrity program and
# ib_write_bw on both pairs (the second driver's arrival leaves the first
# one's devices hearing, and the second one's hear too); `rdma link add` of
# either driver on a netdev the other serves fails with EBUSY and a kernel
# message naming the device that serves it; each driver is unloaded and
# loaded again while the other's integrity run goes on, which completes
# exactly; the packets came through the shared port (the receivers'
# counters).  The guest log is checked by the harness and 99-kernel-log.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/integrity "$(dirname "$0")/../progs/integrity.c" -libverbs ||
	fail "cannot build progs/integrity.c"

unload_modules rdma_rxe ferroce

add_netns shb
add_veth sa0 - 10.84.0.1 sb0 shb 10.84.0.2
add_veth sa1 - 10.84.1.1 sb1 shb 10.84.1.2

add_rxe() {
	modprobe rdma_rxe
	rdma_link_add srxa rxe sa0
	rdma_link_add srxb rxe sb0 shb
}
add_ferroce() {
	modprobe ferroce
	ferroce_add sfa sa1
	ferroce_add sfb sb1 shb
}
del_links() {
	local l
	for l in "$@"; do
		rdma link delete "$l" || fail "rdma link delete $l"
	done
}

# integrity_pair A B: the integrity program between the devices A and B
# (ITERATIONS, default 40; rxe devices are reference peers).
integrity_args() {
	local a=$1 b=$2 ipa ipb ga gb d
	declare -A ip=([srxa]=10.84.0.1 [srxb]=10.84.0.2 [sfa]=10.84.1.1 [sfb]=10.84.1.2)
	ga=$(roce_gid "$a" "${ip[$a]}") || fail "$a has no RoCE v2 GID for ${ip[$a]}"
	gb=$(roce_gid "$b" "${ip[$b]}") || fail "$b has no RoCE v2 GID for ${ip[$b]}"
	ARGS=(-b "$b" -x "$ga" -X "$gb")
	for d in "$a" "$b"; do
		case $d in srx*) ARGS+=(-r "$d") ;; esac
	done
	ARGS+=("$a" "${ITERATIONS:-40}")
}
integrity_pair() {
	local out
	integrity_args "$1" "$2"
	out=$(timeout 300 /tmp/integrity "${ARGS[@]}" 2>&1) || { echo "$out"; fail "integrity $1 <-> $2"; }
	echo "integrity $1 <-> $2: $(tail -1 <<<"$out")"
}

# write_bw SERVER CLIENT: ib_write_bw, SERVER's TCP side in init_net.
write_bw() {
	local s=$1 c=$2 gs gc sip out line
	declare -A ip=([srxa]=10.84.0.1 [srxb]=10.84.0.2 [sfa]=10.84.1.1 [sfb]=10.84.1.2)
	sip=${ip[$s]}
	gs=$(roce_gid "$s" "$sip") || fail "$s has no RoCE v2 GID"
	gc=$(roce_gid "$c" "${ip[$c]}") || fail "$c has no RoCE v2 GID"
	out=$(perftest_pair - "$s" "$gs" "$sip" shb "$c" "$gc" ib_write_bw -s 65536 -n 100) ||
		{ echo "$out"; fail "ib_write_bw $c -> $s"; }
	line=$(perftest_result "$out") || { echo "$out"; fail "ib_write_bw $c -> $s: no result"; }
	echo "ib_write_bw $c -> $s: $line"
}

both_pairs() { # LABEL
	echo "== $1"
	integrity_pair srxa srxb
	integrity_pair sfa sfb
	write_bw srxa srxb
	write_bw sfa sfb
}

counter() { # NAME STATISTIC-LINE
	awk -v c="$1" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }' <<<"$2"
}

# 1. rdma_rxe first, then ferroce.
add_rxe
echo "== rxe alone"
integrity_pair srxa srxb
add_ferroce
both_pairs "rxe loaded first, then ferroce"

# 2. Either driver on a netdev the other serves: refused, and said why.
conflict() { # NS NAME TYPE NETDEV SERVED_BY
	local out
	if out=$(in_ns "$1" rdma link add "$2" type "$3" netdev "$4" 2>&1); then
		CLEANUP_LINKS+=("$2")
		fail "rdma link add $2 type $3 on $4, which $5 serves, succeeded"
	fi
	echo "rdma link add $2 type $3 netdev $4: $out"
	grep -q "Device or resource busy" <<<"$out" || fail "not EBUSY: $out"
	dmesg | tail -20 | grep -q "$4 is already served by RDMA device $5" ||
		fail "no kernel message names $5 as serving $4: $(dmesg | tail -5)"
	[ ! -e "/sys/class/infiniband/$2" ] || fail "$2 exists after a failed rdma link add"
}
conflict - xfer ferroce sa0 srxa
conflict shb xfer ferroce sb0 srxb
conflict - xrxe rxe sa1 sfa
conflict shb xrxe rxe sb1 sfb

# 3. Each driver unloaded and loaded again under the other's traffic.
reload_under() { # LABEL BUSY_A BUSY_B -- RELOAD_CMDS...
	local label=$1 a=$2 b=$3 pid rc=0
	shift 4
	ITERATIONS=400 integrity_args "$a" "$b"
	timeout 600 /tmp/integrity "${ARGS[@]}" >/tmp/busy.log 2>&1 &
	pid=$!
	sleep 3
	kill -0 "$pid" 2>/dev/null || { cat /tmp/busy.log; fail "$a <-> $b ended before the reload"; }
	"$@"
	kill -0 "$pid" 2>/dev/null ||
		{ cat /tmp/busy.log; fail "$a <-> $b ended during the reload: not under traffic (or failed)"; }
	wait "$pid" || rc=$?
	[ $rc = 0 ] || { cat /tmp/busy.log; fail "integrity $a <-> $b failed while $label"; }
	echo "integrity $a <-> $b while $label: $(tail -1 /tmp/busy.log)"
}
reload_rxe() {
	del_links srxa srxb
	unload_modules rdma_rxe
	add_rxe
}
reload_ferroce() {
	del_links sfa sfb
	unload_modules ferroce
	add_ferroce
}
reload_under "rdma_rxe was unloaded and loaded again" sfa sfb -- reload_rxe
integrity_pair srxa srxb
reload_under "ferroce was unloaded and loaded again" srxa srxb -- reload_ferroce
integrity_pair sfa sfb

# 4. ferroce first, then rdma_rxe.
del_links srxa srxb sfa sfb
unload_modules rdma_rxe ferroce
add_ferroce
echo "== ferroce alone"
integrity_pair sfa sfb
rx_before=$(($(counter rcvd_msgs "$(rdma statistic show link sfa/1)") +
	$(counter rcvd_msgs "$(rdma statistic show link sfb/1)")))
add_rxe
both_pairs "ferroce loaded first, then rxe"

# The packets came in through the shared port: the receivers counted them.
for d in srxa srxb; do
	n=$(counter rcvd_pkts "$(rdma statistic show link $d/1)")
	echo "$d received $n packets"
	[ "${n:-0}" -gt 500 ] || fail "$d received only '$n' packets"
done
rx_after=$(($(counter rcvd_msgs "$(rdma statistic show link sfa/1)") +
	$(counter rcvd_msgs "$(rdma statistic show link sfb/1)")))
echo "sfa and sfb received $((rx_after - rx_before)) messages after rdma_rxe arrived"
[ "$rx_after" -gt "$((rx_before + 100))" ] || fail "sfa and sfb received too little after rdma_rxe arrived"
no_objects_left 5 sfa sfb
echo "ferroce and rdma_rxe share the namespaces' RoCEv2 port in either load order"
