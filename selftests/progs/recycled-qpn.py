# SPDX-License-Identifier: GPL-2.0
# A QP number that comes back must not bring its old connection with it: the
# victim V (RC, on DEV through its GID GIDX) is connected to a local peer P
# that goes away without V noticing (its process died; no rdma_cm told V).
# The attacker gets P's number again: it fills the device's QP number table
# with UD QPs (cheap ones) so that P's index is the only one free, then
# creates and destroys QPs on it until the random key byte comes round to
# P's (1 in 256 per try, so 256 tries on average; the bound of 8192 tries
# fails a correct device once in 10^14 runs, where 1024 failed 1.8% of
# them); it connects that QP to V with the very addresses
# P had, and tries an RDMA WRITE into V's memory and a SEND into
# V's receive queue; V, in turn, sends to "P".  All must fail: V is
# connected to the QP that had the number, not to whoever has it now.
# Prints what happened; exits 1 if the attacker got in or got V's message.
#
# usage: recycled-qpn.py DEV GIDX
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from pyverbs_rc import connect_rc, wait_wc  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.pyverbs_error import PyverbsError  # noqa: E402
from pyverbs.qp import QP, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import RecvWR, SGE, SendWR  # noqa: E402
import pyverbs.enums as e  # noqa: E402

dev, gidx = sys.argv[1], int(sys.argv[2])
ctx = Context(name=dev)
pd = PD(ctx)
access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
vmr, amr = MR(pd, 4096, access), MR(pd, 4096, access)
vcq, acq = CQ(ctx, 16), CQ(ctx, 16)
own = str(ctx.query_gid(1, gidx))


def rc_qp(cq):
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(4, 4, 1, 1)))


def connect(qp, dest_qpn):
    connect_rc(qp, gidx, own, dest_qpn, access, timeout=8, retries=1)


v, p = rc_qp(vcq), rc_qp(acq)
connect(v, p.qp_num)
connect(p, v.qp_num)
# The connection works before P goes.
amr.write(b"from P" + bytes(58), 64)
w = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(amr.buf, 64, amr.lkey)],
           send_flags=e.IBV_SEND_SIGNALED)
w.set_wr_rdma(vmr.rkey, vmr.buf)
p.post_send(w)
wc = wait_wc(acq, "P's RDMA WRITE")
if wc.status != e.IBV_WC_SUCCESS or vmr.read(6, 0) != b"from P":
    sys.exit(f"P's RDMA WRITE into V failed: status {wc.status}")
number = p.qp_num
p.close()
vmr.write(bytes(4096), 4096)

fill, cap = {}, QPCap(1, 1, 1, 1)
while True:
    try:
        q = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=acq, rcq=acq, cap=cap))
    except PyverbsError:
        break
    fill[q.qp_num] = q
index = number >> 8
held = [n for n in fill if n >> 8 == index]
if len(held) != 1:
    sys.exit(f"{len(fill)} QPs filled the table, {len(held)} of them at P's index {index:#x}")
print(f"{len(fill)} UD QPs fill the QP number table; P's index is the only one to come back")


def number_again():
    """Creates QPs on P's index, the only one free, until one has P's number."""
    global tries
    tries = 0
    for _ in range(8192):
        q = rc_qp(acq)
        tries += 1
        if q.qp_num == number:
            return q
        if q.qp_num >> 8 != index:
            sys.exit(f"QP {q.qp_num:#x} is not at P's index: the table was not full")
        q.close()
    sys.exit(f"QP number {number:#x} did not come back in {tries} QPs")


fill.pop(held[0]).close()
a = number_again()
print(f"the attacker got P's number {number:#x} back after {tries} QPs")
connect(a, v.qp_num)
got_in = []

amr.write(b"hijacked through a recycled number" + bytes(30), 64)
a.post_send(w)
wc = wait_wc(acq, "the attacker's RDMA WRITE")
print(f"the attacker's RDMA WRITE into V: status {wc.status}")
if wc.status == e.IBV_WC_SUCCESS or vmr.read(64, 0) != bytes(64):
    got_in.append("RDMA WRITE")

# V's own message to its (gone) peer must not reach the attacker's receive queue.
a2 = None
if "RDMA WRITE" not in got_in:
    # The attacker is in ERR after its refused WRITE: again, for V's SEND.
    a.close()
    a2 = number_again()
    connect(a2, v.qp_num)
    a2.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(amr.buf + 2048, 64, amr.lkey)]))
    vmr.write(b"for P only" + bytes(54), 64)
    s = SendWR(wr_id=2, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(vmr.buf, 64, vmr.lkey)],
               send_flags=e.IBV_SEND_SIGNALED)
    v.post_send(s)
    wc = wait_wc(vcq, "V's SEND")
    print(f"V's SEND to the recycled number: status {wc.status}")
    n, wcs = acq.poll(4)
    if wc.status == e.IBV_WC_SUCCESS or any(x.wr_id == 7 for x in wcs[:n]) or \
            amr.read(10, 2048) == b"for P only":
        got_in.append("SEND")

if got_in:
    sys.exit("a recycled QP number took over the connection: " + ", ".join(got_in))
print("a recycled QP number reaches nothing of its predecessor's connection")
