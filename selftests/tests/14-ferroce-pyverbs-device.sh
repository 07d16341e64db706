#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's pyverbs device tests (python3-pyverbs) pass on ferroce0.
. "$(dirname "$0")/../lib.sh"

# A netdev with a parent device, as the tests look for device/net/.
NET=$(for n in /sys/class/net/*; do [ -e "$n/device" ] && basename "$n"; done | head -1 || true)
[ -n "$NET" ] || skip "no netdev with a parent device"
ip link set "$NET" up
ferroce_add ferroce0 "$NET"

pyverbs_suite ferroce0 test_device || fail "pyverbs test_device"
