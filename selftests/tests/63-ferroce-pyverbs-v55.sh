#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900 (TCG: 321 pyverbs tests on rxe, then on ferroce)
# rdma-core v55's whole pyverbs suite (321 tests, 48 more than Debian's v44
# in 41: test_srq among them), built in place by provider/build-pyverbs with
# v55's own libibverbs, rxe provider and ferroce provider, runs on rxe and on
# ferroce in the same guest: every test that passes on rxe must pass on
# ferroce, but for the differences listed below with their reasons, and no
# test may fail on ferroce.  v55's rdma_cm tests find a device's netdev
# through `rdma link` and bind to its first address: each device's dummy
# netdev has an IPv4 address, so they run on both devices, and so do the
# SRQ tests (--must-run).  The suite runs on each device's RoCE v2 GID of
# that address (--v2-gid): left to choose, v55 runs two commands for every
# GID of the port in every test's set-up, which under TCG more than doubles
# the run.
. "$(dirname "$0")/../lib.sh"

B=$(cd "$(dirname "$0")/../.." && pwd)/out/pyverbs-v55/build
[ -x "$B/bin/run_tests.py" ] || fail "no rdma-core v55 build in $B (make pyverbs)"

# The lists: --known, tests rxe passes that ferroce does not yet, and why;
# --different, tests rxe skips and ferroce fails, and why.
pyverbs_vs_rxe --v2-gid "$B/bin/run_tests.py" -- \
	--must-run tests.test_rdmacm. --must-run tests.test_srq. ||
	fail "pyverbs v55"

# Those runs used v55's libraries and providers, not the system's (v44).
PYTHONPATH=$B/python /usr/bin/python3 - "$B/lib" <<'PY' || fail "v55's pyverbs did not use v55's libraries"
import os, re, sys
from pyverbs.device import Context
ctxs = [Context(name=n) for n in ("rxe0", "ferroce0")]
maps = set(re.findall(r"(/\S*/lib(?:ibverbs\.so\.1|rxe-rdmav34\.so|ferroce-rdmav34\.so))\S*$",
                      open("/proc/self/maps").read(), re.M))
print("  loaded: " + ", ".join(sorted(maps)))
names = {m.rsplit("/", 1)[1] for m in maps}
sys.exit(len(maps) != 3 or names != {"libibverbs.so.1", "librxe-rdmav34.so", "libferroce-rdmav34.so"}
         or any(not m.startswith(os.path.realpath(sys.argv[1]) + "/") for m in maps))
PY
echo "ok: rdma-core v55's pyverbs suite on rxe0 and ferroce0"
