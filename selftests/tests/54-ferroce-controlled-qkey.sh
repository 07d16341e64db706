#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A user without privilege cannot send MADs to any host's QP 1: QP 1's
# Q_Key 0x80010000 is controlled (high bit set), ib_core refuses it to a
# user QP without CAP_NET_RAW, and a work request's Q_Key with the high bit
# set means the QP's own (ferroce resolves it when it builds the DETH, on
# the wire and by direct placement alike).  progs/qkey-priv.py runs as
# nobody (its datagram to fqb's QP 1 carries 0x11111111: fqb drops it) and
# as root (0x80010000: QP 1 takes it).
#
#   fqa: fqa0 10.70.0.1   <-veth->   fqb: fqb0 10.70.0.2
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
add_netns fqa
add_netns fqb
add_veth fqa0 fqa 10.70.0.1 fqb0 fqb 10.70.0.2
static_neighbours fqa0 fqa 10.70.0.1 fqb0 fqb 10.70.0.2
ferroce_add fqa fqa0 fqa
ferroce_add fqb fqb0 fqb
ga=$(roce_gid fqa 10.70.0.1) || fail "fqa has no RoCE v2 GID"
roce_gid fqb 10.70.0.2 >/dev/null || fail "fqb has no RoCE v2 GID"
[ "$(rdma system show | grep -o 'privileged-qkey [a-z]*' || echo 'privileged-qkey off')" = \
	"privileged-qkey off" ] || skip "rdma system privileged-qkey is on"

dropped() { rdma statistic show link fqb/1 | tr ' ' '\n' | awk '$0 == "dropped" { getline; print }'; }
send() { # WHO: nobody or root
	local -a as=()
	[ "$1" = root ] || as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
	"${as[@]}" /usr/bin/python3 "$PROGS/qkey-priv.py" fqa "$ga" 10.70.0.2
}

before=$(dropped)
out=$(send nobody 2>&1) || { echo "$out"; fail "qkey-priv.py as nobody"; }
echo "$out"
grep -q EPERM <<<"$out" || fail "an unprivileged QP took the controlled Q_Key 0x80010000"
grep -q "qkey 0x11111111" <<<"$out" || fail "the unprivileged datagram did not carry its QP's Q_Key"
wait_for 10 [ "$(dropped)" -gt "$before" ] || fail "fqb's QP 1 did not drop the unprivileged MAD"
echo "nobody: EPERM for 0x80010000; the MAD sent with Q_Key 0x11111111 was dropped by QP 1"

before=$(dropped)
out=$(send root 2>&1) || { echo "$out"; fail "qkey-priv.py as root"; }
echo "$out"
grep -q "qkey 0x80010000" <<<"$out" || fail "root could not take the controlled Q_Key"
sleep 2
[ "$(dropped)" = "$before" ] || fail "fqb dropped root's MAD with QP 1's Q_Key"
echo "root: QP 1's Q_Key taken, the MAD taken by QP 1"
