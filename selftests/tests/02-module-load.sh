#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ferroce.ko loads and unloads cleanly, twice, and carries the alias that
# lets `rdma link add ... type ferroce` load it.
. "$(dirname "$0")/../lib.sh"

modinfo ferroce >/dev/null 2>&1 || fail "ferroce.ko is not installed for the guest"
modinfo -F alias ferroce | grep -qx rdma-link-ferroce || fail "no rdma-link-ferroce alias"
for round in 1 2; do
	must modprobe ferroce
	[ -d /sys/module/ferroce ] || fail "ferroce not in /sys/module after modprobe"
	must modprobe -r ferroce
	[ ! -d /sys/module/ferroce ] || fail "ferroce still loaded after modprobe -r"
done
echo "loaded and unloaded twice"
