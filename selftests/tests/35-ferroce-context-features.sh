#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# GET_CONTEXT negotiates features: a provider's comp_mask with unknown bits
# is accepted and answered with known features only; no driver data is
# fine; non-zero bytes beyond the known command are refused with EOPNOTSUPP
# (progs/get-context.c, raw writes to the uverbs file).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/get-context "$P/get-context.c" -libverbs ||
	fail "cannot build progs/get-context.c"
add_dummy fcf0 10.87.0.1
ferroce_add ferroce0 fcf0
timeout 60 /tmp/get-context ferroce0 || fail "context feature negotiation"
wait_for 10 res_at_baseline ferroce0 ctx || fail "contexts left: $(rdma resource show ferroce0)"
