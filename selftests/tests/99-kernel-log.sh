#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# After all the tests, the guest kernel log holds no oops, BUG, WARNING,
# KASAN, lockdep or hung-task report, and (in the debug flavour, which has
# kmemleak) a leak scan finds nothing but the known leaks of ib_core
# itself that fault injection provokes (each listed with its reason).
. "$(dirname "$0")/../lib.sh"

if [ -e /sys/kernel/debug/kmemleak ] || { mountpoint -q /sys/kernel/debug ||
	mount -t debugfs none /sys/kernel/debug 2>/dev/null; [ -e /sys/kernel/debug/kmemleak ]; }; then
	# Two scans: objects freed in flight show up in one scan only.
	echo scan >/sys/kernel/debug/kmemleak
	sleep 1
	echo scan >/sys/kernel/debug/kmemleak
	# (Leaks of the kernel's own code that the tests provoke, matched by
	# their allocation stacks, are listed with their reasons, not failed:
	# progs/kmemleak-known.py.)
	out=$(/usr/bin/python3 "$(dirname "$0")/../progs/kmemleak-known.py" </sys/kernel/debug/kmemleak) ||
		{ echo "$out" | head -80; fail "kmemleak reports leaks"; }
	echo "$out"
fi
# (Allocation failures' stack dumps are no problem: 52 injects them.)
if dmesg | "$FERROCE_TOP/qemu/kernel-log-filter" | grep -Eq "$KERNEL_PROBLEMS"; then
	dmesg | "$FERROCE_TOP/qemu/kernel-log-filter" | grep -E -A15 "$KERNEL_PROBLEMS" | head -80
	fail "the kernel log reports a problem"
fi
echo "kernel log clean ($(dmesg | wc -l) lines)"
