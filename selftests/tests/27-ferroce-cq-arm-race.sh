#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Arming races completions: one thread makes flush completions while another
# runs the canonical poll / arm / poll / wait loop on a completion channel.
# Every completion must be polled, and an armed empty CQ must signal the
# channel when a completion arrives (completions in the CQ and no event
# within 8 s is a lost wakeup; the event itself may come late under TCG).
# The barriers are covered only probabilistically here; deterministically by
# test 24 and the provider/ring unit tests.  Bounded: a few seconds of
# completions.
. "$(dirname "$0")/../lib.sh"

cc -O2 -Wall -o /tmp/cq-arm "$(dirname "$0")/../progs/cq-arm.c" -libverbs -lpthread ||
	fail "cannot build progs/cq-arm.c"
add_dummy fcr0 10.75.1.1
ferroce_add ferroce0 fcr0
timeout 120 /tmp/cq-arm ferroce0 race 4 || fail "arm/poll race"
