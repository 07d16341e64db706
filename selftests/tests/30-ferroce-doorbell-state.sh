#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The send doorbell of a QP whose send queue takes no work yet (RESET, INIT,
# RTR) fails with EINVAL and queues nothing; in RTS it is taken
# (progs/doorbell-state.c).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/doorbell-state "$P/doorbell-state.c" -libverbs ||
	fail "cannot build progs/doorbell-state.c"
add_dummy fdb0 10.82.0.1
ferroce_add ferroce0 fdb0
timeout 60 /tmp/doorbell-state ferroce0 || fail "doorbell by QP state"
