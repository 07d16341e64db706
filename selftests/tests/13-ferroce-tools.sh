#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stock tools see ferroce0 through ferroce's provider with its true
# attributes, next to rxe0 driven by rxe's own provider.
. "$(dirname "$0")/../lib.sh"

add_dummy ft0 10.63.0.1
add_dummy ft1 10.63.1.1
ferroce_add ferroce0 ft0
rdma_link_add rxe0 rxe ft1

ibv_lists ferroce0 || fail "ibv_devices: $(ibv_devices)"
ibv_lists rxe0 || fail "ibv_devices: $(ibv_devices)"
rdma dev show ferroce0 | grep -q 'node_type ca' || fail "rdma dev show: $(rdma dev show)"
rdma link show ferroce0/1 | grep -q 'state ACTIVE physical_state LINK_UP netdev ft0' ||
	fail "rdma link show: $(rdma link show ferroce0/1)"

# The limits documented in Documentation/limits.rst.
check() { # field expected
	local v
	v=$(dev_field ferroce0 "$1")
	[ "$v" = "$2" ] || fail "ibv_devinfo $1 = '$v', expected '$2'"
}
check max_qp 16384
check max_qp_wr 16384
check max_sge 32
check max_sge_rd 32
check max_cq 16384
check max_cqe 65536
check max_mr 65536
check max_mr_size 0x10000000000
check max_pd 65536
check max_qp_rd_atom 128
check max_qp_init_rd_atom 128
check atomic_cap ATOMIC_HCA
check max_ah 65536
check max_srq 16384
check max_srq_wr 16384
check max_srq_sge 32
check max_pkeys 16
check max_mcast_grp 128
check max_mcast_qp_attach 32
check max_total_mcast_qp_attach 512
check phys_port_cnt 1
check transport InfiniBand
[ "$(port_field ferroce0 max_mtu)" = 4096 ] || fail "max_mtu"
[ "$(port_field ferroce0 gid_tbl_len)" = 128 ] || fail "gid_tbl_len"
[ "$(port_field ferroce0 max_msg_sz)" = 0x80000000 ] || fail "max_msg_sz $(port_field ferroce0 max_msg_sz)"

# Each device is bound by its own provider: without ferroce's provider
# ferroce0 disappears from libibverbs (rxe's provider does not take it),
# while rxe0 stays.
drv=/etc/libibverbs.d/ferroce.driver
[ -f $drv ] || fail "ferroce's provider is not installed in the guest"
mv $drv /tmp/ferroce.driver.off
ibv_lists ferroce0 && { mv /tmp/ferroce.driver.off $drv; fail "ferroce0 listed without ferroce's provider"; }
ibv_lists rxe0 || { mv /tmp/ferroce.driver.off $drv; fail "rxe0 needs ferroce's provider?"; }
mv /tmp/ferroce.driver.off $drv
ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE || fail "rxe0 broken next to ferroce0"

rdma link delete rxe0
rdma link delete ferroce0
ip link del ft0
ip link del ft1
echo "ibv_devices, ibv_devinfo -v, rdma link/dev show: ok"
