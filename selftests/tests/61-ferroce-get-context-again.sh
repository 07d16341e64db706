#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A second GET_CONTEXT on a uverbs file is refused with EINVAL, by the
# write() command and by the ioctl method, and keeps nothing: ib_core's
# ioctl method kept the caller's task_struct (the reference its resource
# tracking takes) whenever it refused a context, so any user could pin
# dead tasks in kernel memory (patches/0008).  progs/get-context-again.c
# counts task_struct objects in /proc/slabinfo around 300 refused calls
# each way, as an unprivileged user, on ferroce and on rxe (the path is
# ib_core's, under every driver).
. "$(dirname "$0")/../lib.sh"

P="$(dirname "$0")/../progs"
[ -r /proc/slabinfo ] || skip "no /proc/slabinfo (CONFIG_SLUB_DEBUG)"
cc -O2 -Wall -I"$P/../../include/uapi" -o /tmp/get-context-again "$P/get-context-again.c" ||
	fail "cannot build progs/get-context-again.c"
add_dummy fga0 10.88.0.1
add_dummy fga1 10.88.1.1
ferroce_add ferroce0 fga0
rdma_link_add rxe0 rxe fga1
# The children become nobody; counting task_structs needs root.
# ferroce's enum rdma_driver_id, as provider/build finds it.
fid=$(sed -n 's/^+\s*RDMA_DRIVER_FERROCE = \([0-9]*\),$/\1/p' "$P"/../../patches/*-RDMA-uapi-add-a-driver-id-for-ferroce.patch)
[ -n "$fid" ] || fail "no RDMA_DRIVER_FERROCE in patches/"
# On the debug kernel KASAN's quarantine keeps freed task_structs counted
# in use for a while: there the refusals are checked, and kmemleak (99)
# finds a task kept for good.
mode=
[ "$SLOWDOWN" = 1 ] || mode=nocount
timeout 600 /tmp/get-context-again ferroce0 "$fid" 300 $mode || fail "ferroce0: a refused GET_CONTEXT kept something"
timeout 600 /tmp/get-context-again rxe0 rxe 300 $mode || fail "rxe0: a refused GET_CONTEXT kept something"
wait_for 10 res_at_baseline ferroce0 ctx || fail "contexts left: $(rdma resource show ferroce0)"
