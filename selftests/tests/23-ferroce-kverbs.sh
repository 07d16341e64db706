#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Kernel users: the kernel verbs as ULPs (NVMe-oF, RDS, SMB Direct) use them,
# from a test module (selftests/kmod, built by `make test`): ib_alloc_pd's
# DMA MR, kernel CQs (poll, arming, missed events, overrun), RC and UD QPs
# with kernel work requests, fast registration, kernel AHs and SRQs,
# ib_drain_qp.
. "$(dirname "$0")/../lib.sh"

ko="$(cd "$(dirname "$0")/../kmod" && pwd)/ferroce_kverbs_test.ko"
[ -f "$ko" ] || fail "$ko is not built (make test-module)"
add_dummy fkv0 10.75.0.1
ferroce_add ferroce0 fkv0
insmod "$ko" dev=ferroce0 || {
	dmesg | grep ferroce_kverbs_test | tail -20
	fail "kernel verbs checks"
}
rmmod ferroce_kverbs_test
dmesg | grep 'ferroce_kverbs_test: ok' | sed 's/^.*ferroce_kverbs_test: //'
dmesg | grep -q 'ferroce_kverbs_test: all checks passed on ferroce0' || fail "no summary in the log"
wait_for 10 test "$(rdma resource show ferroce0 | grep -o ' pd [0-9]* cq [0-9]* qp [0-9]*')" = " pd 0 cq 0 qp 0" ||
	fail "kernel objects left: $(rdma resource show ferroce0)"
