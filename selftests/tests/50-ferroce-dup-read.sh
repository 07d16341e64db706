#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A READ request behind the expected PSN is served again only if it is one
# the responder served (or the rest of one, IBTA 9.7.5.1.6): one 60-byte
# packet from anyone who can reach UDP 4791 must not make the responder send
# a burst of whatever its rkey reaches.  The hostile packets are built by
# progs/roce_packet.py (ICRC included) and sent from a raw socket in the
# requester's namespace with its address; B's sent_pkts counts the answers.
#
#   fda: fda0 10.66.0.1 fda   <-veth->   fdb: fdb0 10.66.0.2 fdb
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
add_netns fda
add_netns fdb
add_veth fda0 fda 10.66.0.1 fdb0 fdb 10.66.0.2
static_neighbours fda0 fda 10.66.0.1 fdb0 fdb 10.66.0.2
ferroce_add fda fda0 fda
ferroce_add fdb fdb0 fdb
ga=$(roce_gid fda 10.66.0.1) || fail "fda has no RoCE v2 GID"
gb=$(roce_gid fdb 10.66.0.2) || fail "fdb has no RoCE v2 GID"
out=$(timeout 120 /usr/bin/python3 "$PROGS/dup-read.py" fda "$ga" 10.66.0.1 fda fdb "$gb" 10.66.0.2 2>&1) ||
	{ echo "$out"; fail "dup-read.py"; }
echo "$out"
sent() { awk -v c="$1" '$1 == c { print $2 }' <<<"$out"; }
[ "$(sent stale)" -le 1 ] || fail "a READ never served made the responder send $(sent stale) packets"
[ "$(sent forged)" -le 1 ] || fail "a served READ's PSN with another length made it send $(sent forged)"
[ "$(sent again)" -ge 8 ] || fail "the READ asked again was answered with $(sent again) packets, not 8"
[ "$(sent rest)" -ge 4 ] || fail "the rest of the READ was answered with $(sent rest) packets, not 4"
# The 1 MiB READ: 1024 response packets, asked for in chunks of a window (256
# packets), so in about 4 requests; each request may have 16 answered from the
# softirq that took it, the rest must come from the QP's work item.
replies=$(sent replies) requests=$(sent requests) paced=$(sent paced)
[ "$replies" -ge 1024 ] || fail "a 1 MiB READ was answered with $replies packets"
[ "$requests" -ge 1 ] && [ "$requests" -le 16 ] ||
	fail "a 1 MiB READ took $requests request packets"
[ $((replies - paced)) -le $((16 * requests)) ] ||
	fail "$((replies - paced)) of $replies READ response packets were sent from softirq for $requests requests"
echo "duplicate READs cost only what the responder served; long READ responses are paced"
