#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fork() does not hand a process's rings to its child: a child touching the
# CQ, SQ or RQ mapping of its parent dies of SIGSEGV, and the parent's
# verbs keep working (progs/fork.c).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/fork "$P/fork.c" -libverbs ||
	fail "cannot build progs/fork.c"
add_dummy ffk0 10.84.0.1
ferroce_add ferroce0 ffk0
timeout 60 /tmp/fork ferroce0 || fail "rings across fork"
