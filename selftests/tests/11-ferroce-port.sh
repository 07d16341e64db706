#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The port follows its netdev: down/up changes the port state and raises
# IB_EVENT_PORT_ERR/PORT_ACTIVE; the active MTU follows the netdev MTU; the
# node GUID comes from the MAC; the GID table holds the netdev's addresses.
. "$(dirname "$0")/../lib.sh"

add_dummy fp0 10.61.0.1 1500
ip link set fp0 address 52:54:00:aa:bb:cc
ferroce_add ferroce0 fp0

[ "$(cat /sys/class/infiniband/ferroce0/node_guid)" = 5054:00ff:feaa:bbcc ] ||
	fail "node GUID $(cat /sys/class/infiniband/ferroce0/node_guid) for MAC 52:54:00:aa:bb:cc"
[ "$(port_field ferroce0 state)" = PORT_ACTIVE ] || fail "port not active on an up netdev"
[ "$(port_field ferroce0 active_mtu)" = 1024 ] || fail "MTU 1500: active_mtu $(port_field ferroce0 active_mtu)"
[ "$(port_field ferroce0 link_layer)" = Ethernet ] || fail "link layer $(port_field ferroce0 link_layer)"

# RoCEv2 GIDs from the netdev's addresses (ib_core's GID management).
gids=$(ibv_devinfo -v -d ferroce0 | grep GID)
grep -q '::ffff:10.61.0.1, RoCE v2' <<<"$gids" || fail "no RoCEv2 GID for 10.61.0.1: $gids"

ibv_asyncwatch -d ferroce0 >/tmp/asyncwatch.log 2>&1 &
watcher=$!
sleep 1
ip link set fp0 down
wait_output 10 PORT_DOWN port_field ferroce0 state || fail "port still $(port_field ferroce0 state) after down"
[ "$(port_field ferroce0 phys_state)" = DISABLED ] || fail "phys_state $(port_field ferroce0 phys_state)"
ip link set fp0 up
wait_output 10 PORT_ACTIVE port_field ferroce0 state || fail "port not active after up"
wait_for 10 grep -q 'IBV_EVENT_PORT_ACTIVE' /tmp/asyncwatch.log || true
kill $watcher 2>/dev/null
cat /tmp/asyncwatch.log
grep -q 'IBV_EVENT_PORT_ERR' /tmp/asyncwatch.log || fail "no PORT_ERR event"
grep -q 'IBV_EVENT_PORT_ACTIVE' /tmp/asyncwatch.log || fail "no PORT_ACTIVE event"

ip link set fp0 mtu 9000
[ "$(port_field ferroce0 active_mtu)" = 4096 ] || fail "MTU 9000: active_mtu $(port_field ferroce0 active_mtu)"
ip link set fp0 mtu 2200
[ "$(port_field ferroce0 active_mtu)" = 2048 ] || fail "MTU 2200: active_mtu $(port_field ferroce0 active_mtu)"
ip link set fp0 mtu 1280
[ "$(port_field ferroce0 active_mtu)" = 1024 ] || fail "MTU 1280: active_mtu $(port_field ferroce0 active_mtu)"

rdma link delete ferroce0
ip link del fp0
echo "port state, events, MTU, GUID and GIDs follow the netdev"
