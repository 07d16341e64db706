#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Shared receive queues: sizes and limits, the limit event, resize, QPs on an
# SRQ (no own receive queue, LAST_WQE_REACHED), destroy while in use; a
# SIGKILLed process leaves no SRQ behind.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/srq "$(dirname "$0")/../progs/srq.c" -libverbs ||
	fail "cannot build progs/srq.c"
add_dummy fsr0 10.74.0.1
ferroce_add ferroce0 fsr0
/tmp/srq ferroce0 || fail "SRQ checks"

ibv_devinfo -v -d ferroce0 | grep -E 'max_srq(_wr|_sge)?:' || fail "ibv_devinfo shows no SRQ limits"

/usr/bin/python3 -c '
import os, signal
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.srq import SRQ, SrqInitAttr, SrqAttr
ctx = Context(name="ferroce0"); pd = PD(ctx)
srqs = [SRQ(pd, SrqInitAttr(SrqAttr(max_wr=64, max_sge=2))) for _ in range(50)]
os.kill(os.getpid(), signal.SIGKILL)
' || true
wait_for 10 res_at_baseline ferroce0 srq ||
	fail "SRQs left after SIGKILL: $(rdma resource show srq dev ferroce0)"
wait_for 10 res_at_baseline ferroce0 pd ||
	fail "objects left after SIGKILL: $(rdma resource show ferroce0)"
echo "SIGKILL: no SRQ left"
