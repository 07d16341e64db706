#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ferroce.ko loads and unloads cleanly, twice.
. "$(dirname "$0")/../lib.sh"

modinfo ferroce >/dev/null 2>&1 || fail "ferroce.ko is not installed for the guest"
for round in 1 2; do
	mark="ferroce selftest round $round"
	echo "$mark" >/dev/kmsg
	must modprobe ferroce
	[ -d /sys/module/ferroce ] || fail "ferroce not in /sys/module after modprobe"
	must modprobe -r ferroce
	[ ! -d /sys/module/ferroce ] || fail "ferroce still loaded after modprobe -r"
	dmesg | sed -n "/$mark/,\$p" | grep -q 'ferroce: loaded' || fail "no load message"
	dmesg | sed -n "/$mark/,\$p" | grep -q 'ferroce: unloaded' || fail "no unload message"
done
echo "loaded and unloaded twice"
