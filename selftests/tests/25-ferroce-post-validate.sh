#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The provider refuses work before it reaches the kernel's rings: send work
# in RESET, INIT and RTR, receive work in RESET, and work requests beyond
# the QP's or SRQ's capabilities (SGEs, inline size), not allowed for the QP
# type (RDMA and atomics on UD, unsupported opcodes) or malformed (unaligned
# atomics).  Each is EINVAL with *bad_wr set, and a move to ERR flushes only
# the work that was accepted.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/post-validate "$(dirname "$0")/../progs/post-validate.c" -libverbs ||
	fail "cannot build progs/post-validate.c"
add_dummy fpv0 10.76.0.1
ferroce_add ferroce0 fpv0
timeout 120 /tmp/post-validate ferroce0 || fail "post validation"
