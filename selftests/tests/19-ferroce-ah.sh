#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Address handles: pyverbs test_addr (RoCE needs a GRH); AHs to IPv4 and IPv6
# GIDs; bad port and GID index are refused; a SIGKILLed process leaves none.
. "$(dirname "$0")/../lib.sh"

add_dummy fah0 10.69.0.1
ip addr add fd00:69::1/64 dev fah0 nodad
ferroce_add ferroce0 fah0
wait_for 10 sh -c 'ibv_devinfo -v -d ferroce0 | grep -q "fd00:69::1"' || fail "no IPv6 GID"

pyverbs_suite ferroce0 test_addr || fail "pyverbs test_addr"

/usr/bin/python3 - <<'PY' || fail "AH checks"
import errno
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.addr import AH, AHAttr, GlobalRoute, GID
from pyverbs.pyverbs_error import PyverbsRDMAError

ctx = Context(name="ferroce0")
pd = PD(ctx)
gids = {}
for i in range(ctx.query_port(1).gid_tbl_len):
    try:
        g = ctx.query_gid(1, i)
    except PyverbsRDMAError:
        continue
    if str(g) != "0000:0000:0000:0000:0000:0000:0000:0000":
        gids[i] = g
v4 = [i for i, g in gids.items() if str(g).startswith("0000:0000:0000:0000:0000:ffff")]
v6 = [i for i, g in gids.items() if str(g).startswith("fd00:0069")]
assert v4 and v6, f"GIDs: {gids}"
ahs = []
for idx in (v4[0], v6[0]):
    gr = GlobalRoute(dgid=gids[idx], sgid_index=idx, hop_limit=64)
    ahs.append(AH(pd, attr=AHAttr(gr=gr, is_global=1, port_num=1)))
print(f"AHs over GID {v4[0]} (IPv4) and {v6[0]} (IPv6): ok")
for a in ahs:
    a.close()

def refused(what, **kw):
    try:
        AH(pd, attr=AHAttr(**kw)).close()
    except PyverbsRDMAError as e:
        print(f"refused: {what} -> errno {e.error_code}")
        return
    raise AssertionError(f"{what} succeeded")

gr = GlobalRoute(dgid=gids[v4[0]], sgid_index=v4[0])
refused("no GRH", is_global=0, port_num=1)
refused("port 2", gr=gr, is_global=1, port_num=2)
refused("unused GID index", gr=GlobalRoute(dgid=gids[v4[0]], sgid_index=100), is_global=1, port_num=1)
pd.close()
ctx.close()
PY

/usr/bin/python3 -c '
import os, signal
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.addr import AH, AHAttr, GlobalRoute
ctx = Context(name="ferroce0"); pd = PD(ctx)
g = ctx.query_gid(1, 1)
ahs = [AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=g, sgid_index=1), is_global=1, port_num=1)) for _ in range(100)]
os.kill(os.getpid(), signal.SIGKILL)
' || true
wait_for 10 res_at_baseline ferroce0 pd ||
	fail "objects left after SIGKILL: $(rdma resource show ferroce0)"
echo "SIGKILL: nothing left"
