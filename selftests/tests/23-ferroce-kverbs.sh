#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Kernel users: ib_core's MAD layer opens the port (QP1, GSI), and a test
# module (selftests/kmod, built by `make test`) uses the kernel verbs as ULPs
# (NVMe-oF, RDS, SMB Direct) do: ib_alloc_pd's DMA MR, kernel CQs (poll,
# arming, missed events, overrun), RC and UD QPs with kernel work requests,
# fast registration, kernel AHs and SRQs, ib_drain_qp.
. "$(dirname "$0")/../lib.sh"

# ib_core's MAD layer opens the port: QP1 (GSI) up in RTS, no complaint.
rdma_qp1() { rdma resource show qp link ferroce0/1 | grep 'lqpn 1 type GSI'; }
ko="$(cd "$(dirname "$0")/../kmod" && pwd)/ferroce_kverbs_test.ko"
[ -f "$ko" ] || fail "$ko is not built (make test-module)"
add_dummy fkv0 10.75.0.1
ferroce_add ferroce0 fkv0
rdma_qp1 | grep -q 'state RTS' || fail "no QP1 in RTS: $(rdma resource show qp link ferroce0/1)"
! dmesg | grep -E "ferroce0: Couldn't" || fail "ib_core could not open ferroce0's port"
echo "QP1: $(rdma_qp1)"
insmod "$ko" dev=ferroce0 || {
	dmesg | grep ferroce_kverbs_test | tail -20
	fail "kernel verbs checks"
}
rmmod ferroce_kverbs_test
dmesg | grep 'ferroce_kverbs_test: ok' | sed 's/^.*ferroce_kverbs_test: //'
dmesg | grep -q 'ferroce_kverbs_test: all checks passed on ferroce0' || fail "no summary in the log"
wait_for 10 res_at_baseline ferroce0 pd cq qp mr srq ||
	fail "kernel objects left: $(rdma resource show ferroce0)"
