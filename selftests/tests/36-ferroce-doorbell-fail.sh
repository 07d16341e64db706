#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A doorbell write() that fails before the driver runs (injected by the test
# program's own write()): EINTR, EAGAIN and ENOMEM are retried a bounded
# number of times; any other error, or one that outlasts the retries, is
# returned with *bad_wr naming the first work request, and the next doorbell
# runs that work (progs/doorbell-fail.c).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -rdynamic -o /tmp/doorbell-fail "$P/doorbell-fail.c" -libverbs ||
	fail "cannot build progs/doorbell-fail.c"
add_dummy fdf0 10.88.0.1
ferroce_add ferroce0 fdf0
timeout 60 /tmp/doorbell-fail ferroce0 || fail "doorbell failures"
