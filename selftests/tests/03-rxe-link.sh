#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdma_rxe (an anchor) comes up on a dummy netdev and stock tools see it.
. "$(dirname "$0")/../lib.sh"

add_dummy rxed0 10.81.0.1
rdma_link_add rxe0 rxe rxed0
rdma link show rxe0/1 | grep -q 'netdev rxed0' || fail "rdma link show: $(rdma link show)"
ibv_lists rxe0 || fail "ibv_devices does not list rxe0: $(ibv_devices)"
info=$(must ibv_devinfo -d rxe0)
grep -q 'transport:.*InfiniBand' <<<"$info" || fail "rxe0 transport: $info"
grep -q 'state:.*PORT_ACTIVE' <<<"$info" || fail "rxe0 port not active: $info"
grep -q 'link_layer:.*Ethernet' <<<"$info" || fail "rxe0 link layer: $info"
must rdma link delete rxe0
wait_for 10 test ! -e /sys/class/infiniband/rxe0 || fail "rxe0 still present after delete"
ip link del rxed0
echo "rxe0 added, listed and deleted"
