#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's whole pyverbs suite (Debian's python3-pyverbs, v44; its rdma_cm
# tests skip: they look for the netdev under the device's sysfs directory,
# which soft devices lack) runs on rxe and on ferroce in the same guest:
# every test that passes on rxe must pass on ferroce, but for the
# differences listed below with their reasons, and no test may fail on
# ferroce.  (63-ferroce-pyverbs-v55 runs v55's larger suite the same way.)
. "$(dirname "$0")/../lib.sh"

[ -d /usr/share/doc/rdma-core/tests ] || skip "python3-pyverbs tests not installed"
T=/tmp/pyverbs-tests
if [ ! -d $T ]; then
	cp -r /usr/share/doc/rdma-core/tests $T
	gunzip -f $T/*.gz 2>/dev/null || true
fi
# The lists (none today): --known, tests rxe passes that ferroce does not yet,
# and why; --different, tests rxe skips and ferroce fails, and why.
pyverbs_vs_rxe /usr/bin/python3 $T/run_tests.py -- || fail "pyverbs (v44)"
