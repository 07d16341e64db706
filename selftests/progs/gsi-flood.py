# SPDX-License-Identifier: GPL-2.0
# Sends COUNT UD datagrams of SIZE bytes from a user QP on DEV (source GID
# index SGID) to QP 1 of the host at the IPv4 address DEST, with QP 1's
# Q_Key: what any host on the network can send (locally, only a user with
# CAP_NET_RAW may take the controlled Q_Key 0x80010000: the test runs as
# root).  Datagrams longer than a MAD must not consume QP 1's receive
# buffers.
#
# usage: gsi-flood.py DEV SGID DEST COUNT SIZE
import sys

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR
import pyverbs.enums as e

dev, sgid, dest, count, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
# The RoCE v2 GID of an IPv4 address: ::ffff:a.b.c.d.
a, b, c, d = (int(x) for x in dest.split("."))
dgid = f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"
GSI_QKEY = 0x80010000
DEPTH = 64

ctx = Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, DEPTH)
mr = MR(pd, size, e.IBV_ACCESS_LOCAL_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=QPCap(DEPTH, 1, 1, 1)))
a = QPAttr()
a.qp_state, a.pkey_index, a.port_num, a.qkey = e.IBV_QPS_INIT, 0, 1, GSI_QKEY
qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
a = QPAttr()
a.qp_state = e.IBV_QPS_RTR
qp.modify(a, e.IBV_QP_STATE)
a = QPAttr()
a.qp_state, a.sq_psn = e.IBV_QPS_RTS, 0
qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
gr = GlobalRoute(dgid=GID(dgid), sgid_index=sgid, hop_limit=64)
ah = AH(pd, attr=AHAttr(gr=gr, is_global=1, port_num=1))

sent = outstanding = 0
while sent < count or outstanding:
    while sent < count and outstanding < DEPTH:
        wr = SendWR(wr_id=sent, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, size, mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_ud(ah, 1, GSI_QKEY)
        qp.post_send(wr)
        sent += 1
        outstanding += 1
    n, wcs = cq.poll(DEPTH)
    for wc in wcs[:n]:
        if wc.status != e.IBV_WC_SUCCESS:
            sys.exit(f"send {wc.wr_id}: status {wc.status}")
    outstanding -= n
print(f"sent {sent} datagrams of {size} bytes to QP 1 of {dest}")
