#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Queue flags change one bit at a time: a send queue the process corrupted
# is put in error by its doorbell (EINVAL) and keeps asking for doorbells
# (FERROCE_QUEUE_ERROR | FERROCE_QUEUE_NEED_WAKEUP; progs/sq-flags.c).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/sq-flags "$P/sq-flags.c" -libverbs ||
	fail "cannot build progs/sq-flags.c"
add_dummy fsf0 10.83.0.1
ferroce_add ferroce0 fsf0
timeout 60 /tmp/sq-flags ferroce0 || fail "SQ flags after a corrupted doorbell"
