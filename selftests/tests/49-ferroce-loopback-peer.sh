#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Direct placement admits exactly what the wire would: a QP of the device
# that is connected to another host takes nothing from a local QP, even one
# whose number is the remote peer's (QP numbers are per device, so such a
# collision is ordinary) and which names the victim through the device's
# own GID.  Otherwise any local user could write into, read or send to
# another process's connection.  The remote host (10.65.0.99) is only an
# address with a fixed neighbour: nothing is sent to it.  And a QP number
# that comes back to another QP (its old QP gone, the victim not told) does
# not inherit the connection (recycled-qpn.py): the victim is connected to
# the QP that had the number, not to the number.
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
add_dummy fhk0 10.65.0.1
ip neigh replace 10.65.0.99 lladdr 02:00:00:00:00:99 dev fhk0 nud permanent
ferroce_add fhk fhk0
gidx=$(roce_gid fhk 10.65.0.1) || fail "fhk has no RoCE v2 GID for 10.65.0.1"
out=$(timeout 120 /usr/bin/python3 "$PROGS/loopback-hijack.py" fhk "$gidx" \
	0000:0000:0000:0000:0000:ffff:0a41:0063 2>&1) || { echo "$out"; fail "loopback-hijack.py"; }
echo "$out"
for t in qp cq mr pd; do
	wait_for 5 res_at_baseline fhk $t || fail "fhk: $t objects left: $(rdma resource show fhk)"
done
out=$(timeout 300 /usr/bin/python3 "$PROGS/recycled-qpn.py" fhk "$gidx" 2>&1) ||
	{ echo "$out"; fail "recycled-qpn.py"; }
echo "$out"
for t in qp cq mr pd; do
	wait_for 5 res_at_baseline fhk $t || fail "fhk: $t objects left: $(rdma resource show fhk)"
done
