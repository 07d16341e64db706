# SPDX-License-Identifier: GPL-2.0
# A local QP must not reach a QP of the same device that is connected to
# another host: the victim V is an RC QP connected to a remote GID (RGID)
# whose QP number happens to be the attacker's, M; M connects to V through
# the device's own GID (GIDX).  M's RDMA WRITE into V's memory and SEND
# into V's receive queue must both fail (as the same packets from the wire
# would be dropped: they do not come from V's peer), leaving V's memory and
# receive queue untouched.  Prints what happened; exits 1 if M got in.
#
# usage: loopback-hijack.py DEV GIDX RGID
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from pyverbs_rc import connect_rc, wait_wc  # noqa: E402
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE, SendWR
import pyverbs.enums as e

dev, gidx, rgid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = Context(name=dev)
pd = PD(ctx)
access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
vmr, mmr = MR(pd, 4096, access), MR(pd, 4096, access)
vcq, mcq = CQ(ctx, 8), CQ(ctx, 8)


def rc_qp(cq):
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(4, 4, 1, 1)))


def connect(qp, dgid, dest_qpn):
    # A short retry: a refused local message fails the requester at once anyway.
    connect_rc(qp, gidx, dgid, dest_qpn, access, timeout=8, retries=1)


own = str(ctx.query_gid(1, gidx))
m, v = rc_qp(mcq), rc_qp(vcq)
connect(v, rgid, m.qp_num)    # V: connected elsewhere, to a QP numbered as M
connect(m, own, v.qp_num)     # M: names V through this device's GID
vmr.write(bytes(4096), 4096)
v.post_recv(RecvWR(wr_id=5, num_sge=1, sg=[SGE(vmr.buf + 2048, 64, vmr.lkey)]))
mmr.write(b"hijacked by a local QP" + bytes(42), 64)
got_in = []

w = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mmr.buf, 64, mmr.lkey)],
           send_flags=e.IBV_SEND_SIGNALED)
w.set_wr_rdma(vmr.rkey, vmr.buf)
m.post_send(w)
wc = wait_wc(mcq, "M's RDMA WRITE")
print(f"M's RDMA WRITE into V: status {wc.status}")
if wc.status == e.IBV_WC_SUCCESS or vmr.read(64, 0) != bytes(64):
    got_in.append("RDMA WRITE")

# M is in ERR now: a fresh attacker, and a fresh victim connected to a QP numbered as it.
m2, v2 = rc_qp(mcq), rc_qp(vcq)
connect(v2, rgid, m2.qp_num)
v2.post_recv(RecvWR(wr_id=6, num_sge=1, sg=[SGE(vmr.buf + 2048, 64, vmr.lkey)]))
connect(m2, own, v2.qp_num)
s = SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mmr.buf, 64, mmr.lkey)],
           send_flags=e.IBV_SEND_SIGNALED)
m2.post_send(s)
wc = wait_wc(mcq, "M's SEND")
print(f"M's SEND into V: status {wc.status}")
n, wcs = vcq.poll(4)
if wc.status == e.IBV_WC_SUCCESS or any(x.status == e.IBV_WC_SUCCESS for x in wcs[:n]) \
        or vmr.read(64, 2048) != bytes(64):
    got_in.append("SEND")
if got_in:
    sys.exit(f"a local QP reached a QP connected to another host: {', '.join(got_in)}")
print("V, connected to another host, took nothing from a local QP naming it")
