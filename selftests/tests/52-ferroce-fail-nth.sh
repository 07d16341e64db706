#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1500 (TCG: every allocation of every create verb, one run each)
# debug-timeout: 9000 (over 4500 s on the debug kernel: kmemleak and KASAN on every allocation)
# Allocation failures unwind: progs/fail-nth.c makes the n-th kernel
# allocation of each create verb fail (fail-nth with failslab; n = 1, 2, ...
# until the verb makes no n-th allocation): opening a context, PD, MR, CQ,
# RC and UD QPs and an RC QP's moves to RTS, SRQ, AH, MW; then `rdma link
# add` over netlink.  No oops or warning (the harness reads the log), every
# failed verb leaves nothing behind (rdma resource counts back at the
# device's creation-time values; kmemleak in the debug flavour), the device
# still moves data afterwards, and the module unloads.
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
[ -e /proc/self/fail-nth ] || skip "no CONFIG_FAULT_INJECTION in this kernel"
F=/sys/kernel/debug/failslab
[ -d /sys/kernel/debug/failslab ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
[ -d $F ] || skip "no CONFIG_FAILSLAB with CONFIG_FAULT_INJECTION_DEBUG_FS"

# failslab passes over sleeping allocations by default (nearly all of a
# verb's): it must not here.  Quietly: its reports are stack dumps.
old_wait=$(cat $F/ignore-gfp-wait)
old_verbose=$(cat $F/verbose)
restore() {
	echo "$old_wait" >$F/ignore-gfp-wait
	echo "$old_verbose" >$F/verbose
}
trap 'rc=$?; set +e; restore; (exit $rc); cleanup' EXIT
echo N >$F/ignore-gfp-wait
echo 0 >$F/verbose

cc -O2 -Wall -o /tmp/fail-nth "$PROGS/fail-nth.c" -libverbs || fail "cannot build fail-nth.c"
cc -O2 -Wall -o /tmp/integrity "$PROGS/integrity.c" -libverbs || fail "cannot build integrity.c"
add_dummy fnd0 10.68.0.1
ferroce_add fn0 fnd0
gid=$(roce_gid fn0 10.68.0.1) || fail "fn0 has no RoCE v2 GID"

must /tmp/fail-nth verbs fn0 "$gid"
echo
res_at_baseline fn0 pd cq qp mr ctx srq ||
	{ rdma resource show fn0; fail "objects are left on fn0 after the failed verbs"; }
out=$(/tmp/integrity -s 65536 -x "$gid" fn0 20 2>&1) || { echo "$out"; fail "integrity on fn0 afterwards"; }
echo "fn0 moves data after the faults: ${out##*$'\n'}"
rdma link delete fn0

# Each run of the link sweep makes n allocations and unwinds them, so the
# sweep grows with the square of their count; on the debug kernel, where
# KASAN and kmemleak slow each allocation, it ran past 4500 s.  There it
# makes every one of the first 64 allocations fail and then every 8th (the
# unwinding of ferroce's device is the same from any allocation of
# ib_register_device on); the default kernel's run makes each one fail.
stride=1
[ -e /proc/lockdep ] && stride=8
CLEANUP_LINKS+=(fn1)
must /tmp/fail-nth link fn1 fnd0 $stride
echo
res_baseline fn1
gid=$(roce_gid fn1 10.68.0.1) || fail "fn1 (made after the faults) has no RoCE v2 GID"
out=$(/tmp/integrity -s 65536 -x "$gid" fn1 20 2>&1) || { echo "$out"; fail "integrity on fn1"; }
echo "fn1 moves data: ${out##*$'\n'}"
rdma link delete fn1
unload_modules ferroce
echo "every allocation failure of the create verbs and of rdma link add unwound"
