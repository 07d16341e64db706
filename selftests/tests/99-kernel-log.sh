#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# After all the tests, the guest kernel log holds no oops, BUG, WARNING,
# KASAN, lockdep or hung-task report.
. "$(dirname "$0")/../lib.sh"

if dmesg | grep -Eq "$KERNEL_PROBLEMS"; then
	dmesg | grep -E -A15 "$KERNEL_PROBLEMS" | head -80
	fail "the kernel log reports a problem"
fi
echo "kernel log clean ($(dmesg | wc -l) lines)"
