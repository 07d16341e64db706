#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# P_Key partitions (IBTA 10.9).  A port has a table of 16 P_Keys, the
# default full-membership 0xffff at index 0; the administrator sets entries
# through /sys/class/infiniband/DEV/ports/1/pkey_table ("INDEX PKEY"),
# which raises IB_EVENT_PKEY_CHANGE.  A QP sends with the P_Key at its
# pkey_index and takes only packets whose P_Key matches it: the same
# partition, and not both limited members (bit 15 clear); QP1 takes those
# of any entry.  Refused packets are dropped and counted (pkey_violations,
# and bad_pkts).  progs/pkey-traffic.c moves RC and UD traffic between two
# devices over a veth with chosen indices; rping (rdma_cm, which uses the
# default P_Key on RoCE) shows QP1 needs the default partition; a table
# changed under a live RC pair cuts it off.
#
#   pka: pka0 10.92.0.1 ferroce1  <-veth->  pkb: pkb0 10.92.0.2 ferroce2
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/pkey-traffic "$(dirname "$0")/../progs/pkey-traffic.c" -libverbs ||
	fail "cannot build progs/pkey-traffic.c"

add_netns pka
add_netns pkb
add_veth pka0 pka 10.92.0.1 pkb0 pkb 10.92.0.2
ferroce_add ferroce1 pka0 pka
ferroce_add ferroce2 pkb0 pkb
g1=$(roce_gid ferroce1 10.92.0.1) || fail "ferroce1 has no RoCE v2 GID"
g2=$(roce_gid ferroce2 10.92.0.2) || fail "ferroce2 has no RoCE v2 GID"

P=/sys/class/infiniband
pkset() { echo "${*:2}" >"$P/$1/ports/1/pkey_table"; } # DEV WORDS...
pkget() { cat "$P/$1/ports/1/pkeys/$2"; }

# The table: 16 entries, the default at 0, and what ibv_devinfo reports.
[ "$(pkget ferroce1 0)" = 0xffff ] || fail "pkeys/0 is $(pkget ferroce1 0), not 0xffff"
[ "$(pkget ferroce1 15)" = 0x0000 ] || fail "pkeys/15 is $(pkget ferroce1 15)"
[ ! -e "$P/ferroce1/ports/1/pkeys/16" ] || fail "a 17th P_Key entry"
[ "$(dev_field ferroce1 max_pkeys)" = 16 ] || fail "max_pkeys is $(dev_field ferroce1 max_pkeys), not 16"
# Refused writes.
for bad in "16 0x8001" "1" "1 0x10000" "x 1" "1 2 3" "-1 5"; do
	pkset ferroce1 $bad 2>/dev/null && fail "pkey_table took \"$bad\""
	true
done

# A change raises IB_EVENT_PKEY_CHANGE.
coproc WATCH { exec timeout 60 stdbuf -oL ibv_asyncwatch -d ferroce1 2>&1; }
sleep 2
pkset ferroce1 1 0x8001 || fail "cannot set ferroce1's entry 1"
pkset ferroce2 1 0x8001 || fail "cannot set ferroce2's entry 1"
got=
while read -r -t 20 line <&"${WATCH[0]}"; do
	case "$line" in *IBV_EVENT_PKEY_CHANGE*) got=$line; break ;; esac
done
kill "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
[ -n "$got" ] || fail "no IBV_EVENT_PKEY_CHANGE"
echo "ok $got"
[ "$(pkget ferroce1 1)" = 0x8001 ] || fail "pkeys/1 is $(pkget ferroce1 1) after the write"
grep -qx "1 0x8001" "$P/ferroce1/ports/1/pkey_table" || fail "pkey_table does not list 1 0x8001"

# traffic TYPE PKIDX_A PKIDX_B: ferroce1 sends 20 messages to ferroce2.
traffic() {
	timeout 60 /tmp/pkey-traffic "$1" ferroce1 "$g1" "$2" ferroce2 "$g2" "$3" 20 2>&1
}
viol() { port_counter ferroce2 pkey_violations; }

# talks TYPE A B LABEL / refused TYPE A B LABEL
talks() {
	local out
	out=$(traffic "$1" "$2" "$3")
	[ "$out" = "sent 20 received 20 status success" ] || fail "$4 ($1): $out"
	echo "ok $4 ($1): $out"
}
refused() {
	local out v0 v1
	v0=$(viol)
	out=$(traffic "$1" "$2" "$3")
	v1=$(viol)
	case "$out" in "sent "*" received 0 status "*) ;; *) fail "$4 ($1): $out" ;; esac
	[ "$v1" -gt "$v0" ] || fail "$4 ($1): no P_Key violation counted ($v0 -> $v1)"
	echo "ok $4 ($1) cannot talk: $out, pkey_violations $v0 -> $v1"
}

for t in rc ud; do
	talks "$t" 0 0 "the default partition"
	talks "$t" 1 1 "both full members of 0x0001"
	refused "$t" 1 0 "0x8001 to the default partition"
done
pkset ferroce2 2 0x8002
for t in rc ud; do refused "$t" 1 2 "0x8001 to 0x8002"; done
# Membership: a limited member talks with a full one, not with another limited one.
pkset ferroce1 3 0x0003
pkset ferroce2 3 0x8003
pkset ferroce2 4 0x0003
for t in rc ud; do
	talks "$t" 3 3 "limited 0x0003 to full 0x8003"
	refused "$t" 3 4 "limited 0x0003 to limited 0x0003"
done
# An empty entry matches nothing.
for t in rc ud; do refused "$t" 5 5 "two empty entries"; done

# rdma_cm on RoCE uses the default P_Key (0xffff; a limited member's entry
# 0x7fff will do): it connects while the tables hold it, and not from a
# device whose table has none (rdma_cm finds no index for its QPs).
# (Each on a port of its own: a server killed after its client failed may
# listen a moment longer, and the next client must not meet it.)
CM_PORT=7300
cm() {
	local rc=0
	CM_PORT=$((CM_PORT + 1))
	SERVER_LISTENS=rdma_cm CM_LISTEN_ADDR=10.92.0.2:$CM_PORT server_client pkb 10.92.0.2 pka \
		rping -s -p $CM_PORT -C 3 -S 64 -V -a 10.92.0.2 -- \
		rping -c -p $CM_PORT -C 3 -S 64 -V -a >/tmp/cm.log 2>&1 || rc=$?
	# (A server whose client failed is killed; let it be gone.)
	pkill -x rping || true
	wait_for 10 no_rping || fail "an rping process does not exit"
	return $rc
}
no_rping() { ! pgrep -x rping >/dev/null; }
cm || { cat /tmp/cm.log; fail "rping on the default partition"; }
pkset ferroce1 0 0x8002
cm && fail "rping connected from ferroce1, which has no default P_Key"
pkset ferroce1 0 0x7fff
cm || { cat /tmp/cm.log; fail "rping from ferroce1 as a limited member of the default partition"; }
pkset ferroce1 0 0xffff
echo "ok rdma_cm needs the default partition (full or limited)"

# A table change under a live RC pair cuts it off.
coproc LIVE { exec timeout 60 /tmp/pkey-traffic rc ferroce1 "$g1" 1 ferroce2 "$g2" 1 2000 30 2>&1; }
read -r -t 30 line <&"${LIVE[0]}" || true
[ "$line" = ready ] || fail "the live pair did not start: $line"
sleep 1
v0=$(viol)
pkset ferroce2 1 0x8009
read -r -t 40 line <&"${LIVE[0]}" || true
wait "$LIVE_PID" 2>/dev/null || true
case "$line" in *"status transport retry counter exceeded"*) ;; *) fail "live pair after the change: $line" ;; esac
[ "$(viol)" -gt "$v0" ] || fail "no P_Key violation counted after the change"
echo "ok a table change cut a live RC pair off: $line"
pkset ferroce2 1 0x8001
talks rc 1 1 "the entry set back"

no_objects_left 10 ferroce1 ferroce2
echo "P_Key partitions: table, event, RC and UD membership rules, rdma_cm, live change"
