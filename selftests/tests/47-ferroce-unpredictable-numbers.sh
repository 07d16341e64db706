#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A peer cannot guess a fresh device's first rkey or QP number: every key
# and QP number takes a random key byte when allocated (as rxe's MR keys
# do; the host tests check the rest).  Four devices created in turn on the same netdev each give a
# process its first MR and QP; their key bytes must not all be the same
# (they were 0x01 every time: rkey 0x000201, QP 0x000101, say).  Chance of
# four equal random bytes: 2^-24.
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
add_dummy fun0 10.63.0.1
keys=()
qpns=()
for i in 1 2 3 4; do
	ferroce_add fnum fun0
	out=$(/usr/bin/python3 "$PROGS/first-numbers.py" fnum 2>&1) || fail "first-numbers.py: $out"
	echo "fresh device $i: $out"
	rkey=$(sed -n 's/.*rkey=\(0x[0-9a-f]*\).*/\1/p' <<<"$out")
	qpn=$(sed -n 's/.*qpn=\(0x[0-9a-f]*\).*/\1/p' <<<"$out")
	[ -n "$rkey" ] && [ -n "$qpn" ] || fail "no numbers in '$out'"
	keys+=($((rkey & 0xff)))
	qpns+=($((qpn & 0xff)))
	rdma link delete fnum || fail "rdma link delete fnum"
done
[ "$(printf '%s\n' "${keys[@]}" | sort -u | wc -l)" -gt 1 ] ||
	fail "the first MR of four fresh devices had the key byte ${keys[0]} each time"
[ "$(printf '%s\n' "${qpns[@]}" | sort -u | wc -l)" -gt 1 ] ||
	fail "the first QP of four fresh devices had the low byte ${qpns[0]} each time"
echo "first key bytes: ${keys[*]}; first QP low bytes: ${qpns[*]}"
