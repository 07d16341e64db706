#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bad `rdma link add` requests fail with a clear error and leave nothing
# behind: unknown netdev, non-Ethernet netdev, a VLAN of a served netdev, a netdev that already
# has a ferroce device or another driver's, a name in use, a name too long,
# a pattern name.
. "$(dirname "$0")/../lib.sh"

add_dummy fb0 10.62.0.1
add_dummy fb1 10.62.1.1
add_dummy fb2 10.62.2.1
ferroce_add ferroce0 fb0

expect_error() { # expected-text command...
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "'$*' succeeded"
	fi
	grep -qi "$want" <<<"$out" || fail "'$*' said '$out', expected '$want'"
	echo "refused: $* -> $out"
}

expect_error 'No such device' rdma link add fbad type ferroce netdev nosuchdev
expect_error 'Invalid argument' rdma link add fbad type ferroce netdev lo
# A VLAN netdev is taken (65-ferroce-vlan), but not one whose real device a
# device serves: that device has the VLAN's GIDs already.
ip link add link fb0 name fb0.5 type vlan id 5
expect_error 'Device or resource busy' rdma link add fbad type ferroce netdev fb0.5
dmesg | tail -5 | grep -q 'fb0.5 is a VLAN of, or under, fb0, which RDMA device ferroce0 serves' ||
	fail "no kernel message names ferroce0 as serving fb0.5's real device"
expect_error 'File exists' rdma link add ferroce1 type ferroce netdev fb0
expect_error 'File exists' rdma link add ferroce0 type ferroce netdev fb1
expect_error 'Invalid argument' rdma link add "$(printf 'f%.0s' $(seq 1 80))" type ferroce netdev fb1
expect_error 'Invalid argument' rdma link add 'ferroce%d' type ferroce netdev fb1

# A name taken by another driver's device, and a netdev another driver's
# device serves (the namespace's RoCEv2 port has one device per netdev).
rdma link add rxeb0 type rxe netdev fb2
expect_error 'File exists' rdma link add rxeb0 type ferroce netdev fb1
expect_error 'Device or resource busy' rdma link add fbusy type ferroce netdev fb2
dmesg | tail -5 | grep -q 'fb2 is already served by RDMA device rxeb0' ||
	fail "no kernel message names rxeb0 as serving fb2"
rdma link delete rxeb0

[ "$(ls /sys/class/infiniband)" = ferroce0 ] || fail "left behind: $(ls /sys/class/infiniband)"
ferroce_add ferroce1 fb1
rdma link delete ferroce1
rdma link delete ferroce0
ip link del fb0
ip link del fb1
ip link del fb2
