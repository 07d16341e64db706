#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# No object exceeds the limits the device advertises: a CQ of max_cqe
# entries has max_cqe, QPs and SRQs get at most max_qp_wr, max_sge,
# max_srq_wr; one more than a limit is refused with EINVAL
# (progs/max-sizes.c).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/max-sizes "$P/max-sizes.c" -libverbs ||
	fail "cannot build progs/max-sizes.c"
add_dummy fms0 10.86.0.1
ferroce_add ferroce0 fms0
timeout 120 /tmp/max-sizes ferroce0 || fail "sizes beyond the advertised limits"
wait_for 10 res_at_baseline ferroce0 pd cq qp srq ||
	fail "objects left: $(rdma resource show ferroce0)"
