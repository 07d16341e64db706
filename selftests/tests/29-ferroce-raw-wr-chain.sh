#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Work request chains written through the raw uverbs path (POST_SEND,
# POST_RECV, POST_SRQ_RECV with work requests) on user QPs and SRQs carry
# user addresses: refused with EINVAL (bad_wr 1), nothing queued, no oops
# (progs/raw-wr-chain.c; the kernel log is checked by qemu/run and test 99).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/raw-wr-chain "$P/raw-wr-chain.c" -libverbs ||
	fail "cannot build progs/raw-wr-chain.c"
add_dummy frw0 10.81.0.1
ferroce_add ferroce0 frw0
log_start=$(dmesg | wc -l)
timeout 60 /tmp/raw-wr-chain ferroce0 || fail "raw work request chains"
! dmesg | tail -n +$((log_start + 1)) | grep -E "$KERNEL_PROBLEMS" ||
	fail "the kernel logged a problem"
wait_for 10 res_at_baseline ferroce0 pd cq qp mr srq ||
	fail "objects left: $(rdma resource show ferroce0)"
