#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ferroce devices come and go: add, delete, re-add; two devices on two
# netdevs; the netdev's removal removes its device; rmmod removes them all.
. "$(dirname "$0")/../lib.sh"

add_dummy fl0 10.60.0.1
add_dummy fl1 10.60.1.1
modprobe -r ferroce 2>/dev/null || true

# `rdma link add` loads the module by its alias.
ferroce_add ferroce0 fl0
[ -d /sys/module/ferroce ] || fail "rdma link add did not load ferroce"
rdma link show ferroce0/1 | grep -q 'netdev fl0' || fail "link show: $(rdma link show)"
must rdma link delete ferroce0
wait_for 10 test ! -e /sys/class/infiniband/ferroce0 || fail "ferroce0 survives delete"
ferroce_add ferroce0 fl0
echo "add, delete, re-add: ok"

ferroce_add ferroce1 fl1
ibv_lists ferroce0 && ibv_lists ferroce1 || fail "ibv_devices: $(ibv_devices)"
g0=$(cat /sys/class/infiniband/ferroce0/node_guid)
g1=$(cat /sys/class/infiniband/ferroce1/node_guid)
[ "$g0" != "$g1" ] || fail "both devices have node GUID $g0"
echo "two devices: ok ($g0, $g1)"

ip link del fl1
wait_for 10 test ! -e /sys/class/infiniband/ferroce1 || fail "ferroce1 survives its netdev"
ibv_lists ferroce1 && fail "ibv_devices still lists ferroce1"
echo "netdev removal: ok"

rdma link add ferroce2 type ferroce netdev lo 2>/dev/null && fail "lo accepted"
add_dummy fl2 10.60.2.1
ferroce_add ferroce2 fl2
must modprobe -r ferroce
[ ! -d /sys/module/ferroce ] || fail "ferroce still loaded"
ls /sys/class/infiniband | grep -q ferroce && fail "devices survive rmmod: $(ls /sys/class/infiniband)"
rdma link show | grep -q ferroce && fail "rdma link show: $(rdma link show)"

# The module comes back cleanly after all that.
ferroce_add ferroce0 fl0
must rdma link delete ferroce0
ip link del fl0
ip link del fl2
echo "rmmod with devices: ok"
