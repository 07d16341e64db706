#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 400
# QP 1 stays hearing under a flood of datagrams that are no MADs.  ib_mad
# posts 512 receive buffers of a MAD's size on QP 1 and stops reposting one
# that completes in error, so each datagram longer than a MAD that took a
# buffer (completing it with a length error) deafened QP 1 a little more,
# until rdma_cm could not connect to the port.  Here a user UD QP of fga
# (any local user may take QP 1's Q_Key) sends 1100 datagrams of 1024
# bytes to QP 1 of fgb over a veth pair; then rping must connect and move
# data between them, and fgb's counters must show the datagrams dropped.
#
#   ga: fga0 10.64.0.1 fga   <-veth->   gb: fgb0 10.64.0.2 fgb
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
add_netns ga
add_netns gb
add_veth fga0 ga 10.64.0.1 fgb0 gb 10.64.0.2
ferroce_add fga fga0 ga
ferroce_add fgb fgb0 gb
ga_gid=$(roce_gid fga 10.64.0.1) || fail "fga has no RoCE v2 GID"
counter() { # NAME STATISTIC-LINE
	awk -v c="$1" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }' <<<"$2"
}
dropped_before=$(counter dropped "$(rdma statistic show link fgb/1)")
out=$(timeout 200 /usr/bin/python3 "$PROGS/gsi-flood.py" fga "$ga_gid" 10.64.0.2 1100 1024 2>&1) ||
	fail "gsi-flood.py: $out"
echo "$out"
dropped=$(($(counter dropped "$(rdma statistic show link fgb/1)") - dropped_before))
echo "fgb dropped $dropped datagrams"
[ "$dropped" -ge 1100 ] || fail "fgb dropped only $dropped of the 1100 datagrams to QP 1"

out=$(SERVER_LISTENS=rdma_cm server_client gb 10.64.0.2 ga \
	rping -s -C 10 -S 256 -V -a 10.64.0.2 -- rping -c -C 10 -S 256 -V -a) ||
	{ echo "$out"; fail "rping fga -> fgb after the flood"; }
echo "rping -V (10 pings, data checked) connected after the flood"
echo "QP 1 still hears rdma_cm after 1100 oversized datagrams"
