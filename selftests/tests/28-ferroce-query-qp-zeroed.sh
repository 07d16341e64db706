#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# query_qp leaks no kernel memory: what the driver does not write (the
# alternate path, the primary path of a QP without one, sq_draining) reads as
# zero, even right after the kmalloc caches uverbs uses were filled with a
# pattern (progs/query-zeroed.c).  The kernel-user side (ib_query_qp on an
# attribute full of garbage) is checked by the test module (test 23).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/query-zeroed "$P/query-zeroed.c" -libverbs ||
	fail "cannot build progs/query-zeroed.c"
add_dummy fqz0 10.80.0.1
ferroce_add ferroce0 fqz0
timeout 60 /tmp/query-zeroed ferroce0 || fail "query_qp leaks what the driver did not write"
