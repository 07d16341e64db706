#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's pyverbs device tests (python3-pyverbs) pass on ferroce0.
. "$(dirname "$0")/../lib.sh"

[ -d /usr/share/doc/rdma-core/tests ] || skip "python3-pyverbs tests not installed"
T=/tmp/pyverbs-tests
rm -rf $T
cp -r /usr/share/doc/rdma-core/tests $T
gunzip -f $T/*.gz 2>/dev/null || true

# A netdev with a parent device, as the tests look for device/net/.
NET=$(for n in /sys/class/net/*; do [ -e "$n/device" ] && basename "$n"; done | head -1 || true)
[ -n "$NET" ] || skip "no netdev with a parent device"
ip link set "$NET" up
ferroce_add ferroce0 "$NET"

cd /tmp
out=$(/usr/bin/python3 $T/run_tests.py --dev ferroce0 -v -k tests.test_device. 2>&1)
rc=$?
echo "$out" | grep -E ' \.\.\. |^Ran |^OK|^FAILED'
rdma link delete ferroce0
[ $rc = 0 ] || { echo "$out" | tail -40; fail "pyverbs test_device failed"; }
echo "$out" | grep -q '^OK' || fail "no OK from pyverbs"
