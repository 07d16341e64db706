#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Objects destroyed in the wrong order or twice, bogus handles, garbage in
# the shared rings, and a process exiting with objects open: clean errors,
# nothing left behind.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/misuse "$(dirname "$0")/../progs/misuse.c" -libverbs ||
	fail "cannot build progs/misuse.c"
add_dummy fmu0 10.68.0.1
ferroce_add ferroce0 fmu0
/tmp/misuse ferroce0 || fail "misuse checks"
wait_for 10 res_at_baseline ferroce0 pd cq ||
	fail "objects left: $(rdma resource show ferroce0)"
res_at_baseline ferroce0 qp mr ctx || fail "objects left: $(rdma resource show ferroce0)"
rdma resource show ferroce0
