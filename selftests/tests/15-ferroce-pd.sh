#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600 (65,536 PDs made and freed: minutes on the debug kernel)
# Protection domains: rdma-core's pyverbs test_pd passes; max_pd is enforced
# (ENOMEM beyond it, and freeing makes room again); a process killed with
# SIGKILL leaves no PD behind.
. "$(dirname "$0")/../lib.sh"

add_dummy fpd0 10.65.0.1
ferroce_add ferroce0 fpd0

pyverbs_suite ferroce0 test_pd || fail "pyverbs test_pd"

max=$(dev_field ferroce0 max_pd)
kernel_pds=${RES_BASE[ferroce0.pd]}	# ib_core's MAD layer holds one
/usr/bin/python3 - "$max" "$kernel_pds" <<'PY' || fail "max_pd not enforced"
import errno, sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError

limit = int(sys.argv[1]) - int(sys.argv[2])
ctx = Context(name="ferroce0")
pds = []
try:
    while len(pds) <= limit:
        pds.append(PD(ctx))
except PyverbsRDMAError as e:
    assert e.error_code == errno.ENOMEM, f"PD {len(pds) + 1}: {e}"
assert len(pds) == limit, f"{len(pds)} PDs allocated, {limit} left of max_pd by kernel users"
pds.pop().close()
pds.append(PD(ctx))  # room again after a free
print(f"{len(pds)} PDs (max_pd {sys.argv[1]}, {sys.argv[2]} held by the kernel), then ENOMEM, then room again after a free")
for pd in pds:
    pd.close()
ctx.close()
PY

/usr/bin/python3 -c '
import os, signal, time
from pyverbs.device import Context
from pyverbs.pd import PD
ctx = Context(name="ferroce0")
pds = [PD(ctx) for _ in range(1000)]
print("holding", len(pds), "PDs", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
' || true
# The process's context is torn down asynchronously after its death.
wait_for 10 res_at_baseline ferroce0 pd ||
	fail "PDs left after SIGKILL: $(rdma resource show ferroce0)"
res_at_baseline ferroce0 ctx || fail "contexts left: $(rdma resource show ferroce0)"
rdma resource show ferroce0
echo "no PD left after SIGKILL"
