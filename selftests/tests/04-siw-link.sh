#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# siw (an anchor) comes up on a veth netdev and stock tools see it.
. "$(dirname "$0")/../lib.sh"

CLEANUP_NETDEVS+=(siwv0)
ip link add siwv0 type veth peer name siwv1
ip addr add 10.82.0.1/24 dev siwv0
ip link set siwv0 up
ip link set siwv1 up
rdma_link_add siw0 siw siwv0
rdma link show siw0/1 | grep -q 'netdev siwv0' || fail "rdma link show: $(rdma link show)"
ibv_lists siw0 || fail "ibv_devices does not list siw0: $(ibv_devices)"
info=$(must ibv_devinfo -d siw0)
grep -q 'transport:.*iWARP' <<<"$info" || fail "siw0 transport: $info"
must rdma link delete siw0
wait_for 10 test ! -e /sys/class/infiniband/siw0 || fail "siw0 still present after delete"
ip link del siwv0
echo "siw0 added, listed and deleted"
