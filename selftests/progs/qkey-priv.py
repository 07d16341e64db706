# SPDX-License-Identifier: GPL-2.0
# Controlled Q_Keys (high bit set, such as QP 1's 0x80010000) are for
# privileged users (IBTA 10.2.4; ib_core's modify_qp asks for CAP_NET_RAW
# unless `rdma system set privileged-qkey on`).  A UD QP on DEV (source GID
# index SGID) sends one MAD-sized datagram to QP 1 of the host at DEST with
# a work request naming QP 1's Q_Key; a Q_Key with the high bit set in a
# work request means "the QP's own Q_Key", so the datagram carries the
# QP's.  Run unprivileged, the QP cannot take 0x80010000 (EPERM) and its
# datagram carries 0x11111111 (QP 1 drops it); run as root, it can and QP 1
# takes it.  Prints "qkey QKEY" (the QP's Q_Key) once sent.
#
# usage: qkey-priv.py DEV SGID DEST
import errno
import sys
import time

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR
import pyverbs.enums as e

dev, sgid, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
a, b, c, d = (int(x) for x in dest.split("."))
dgid = f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"
GSI_QKEY = 0x80010000

ctx = Context(name=dev)
pd = PD(ctx)
cq = CQ(ctx, 4)
mr = MR(pd, 256, e.IBV_ACCESS_LOCAL_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=QPCap(4, 1, 1, 1)))
mask = e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY
attr = QPAttr()
attr.qp_state, attr.pkey_index, attr.port_num, attr.qkey = e.IBV_QPS_INIT, 0, 1, GSI_QKEY
try:
    qp.modify(attr, mask)
    qkey = GSI_QKEY
except PyverbsRDMAError as err:
    if err.error_code != errno.EPERM:
        raise
    print("the QP may not take the controlled Q_Key 0x80010000: EPERM")
    attr.qkey = qkey = 0x11111111
    qp.modify(attr, mask)
attr = QPAttr()
attr.qp_state = e.IBV_QPS_RTR
qp.modify(attr, e.IBV_QP_STATE)
attr = QPAttr()
attr.qp_state, attr.sq_psn = e.IBV_QPS_RTS, 0
qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
gr = GlobalRoute(dgid=GID(dgid), sgid_index=sgid, hop_limit=64)
ah = AH(pd, attr=AHAttr(gr=gr, is_global=1, port_num=1))
# A MAD header ib_mad drops quietly: base version 1, an unknown class.
mr.write(bytes([1, 0x2F, 1, 1]) + bytes(252), 256)
wr = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 256, mr.lkey)],
            send_flags=e.IBV_SEND_SIGNALED)
wr.set_wr_ud(ah, 1, GSI_QKEY)
qp.post_send(wr)
end = time.time() + 30
while time.time() < end:
    n, wcs = cq.poll(1)
    if n:
        if wcs[0].status != e.IBV_WC_SUCCESS:
            sys.exit(f"the datagram failed: status {wcs[0].status}")
        break
    time.sleep(0.01)
else:
    sys.exit("the datagram did not complete")
print(f"qkey {qkey:#x}")
