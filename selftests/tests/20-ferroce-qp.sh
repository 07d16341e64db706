#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Queue pairs: pyverbs test_qp; capacities within the limits and raised to
# what the rings hold; the whole IBTA state machine (every invalid
# transition refused); every out-of-range attribute refused with EINVAL;
# query returns what was set; posting fills the shared rings; SIGKILL.
. "$(dirname "$0")/../lib.sh"

add_dummy fqp0 10.71.0.1
ferroce_add ferroce0 fqp0

pyverbs_suite ferroce0 test_qp || fail "pyverbs test_qp"

/usr/bin/python3 - <<'PY' || fail "QP checks"
import errno, itertools
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.wr import RecvWR, SendWR, SGE
from pyverbs.pyverbs_error import PyverbsRDMAError
import pyverbs.enums as e

ctx = Context(name="ferroce0")
dev = ctx.query_device()
pd = PD(ctx)
cq = CQ(ctx, 64)
gid = ctx.query_gid(1, 1)

def qp(qp_type=e.IBV_QPT_RC, **cap):
    c = QPCap(**{"max_send_wr": 4, "max_recv_wr": 4, "max_send_sge": 1, "max_recv_sge": 1, **cap})
    return QP(pd, QPInitAttr(qp_type=qp_type, scq=cq, rcq=cq, cap=c))

def mkattr(**kw):
    a = QPAttr()
    for k, v in kw.items():
        setattr(a, k, v)
    return a

def refused(code, f, what):
    try:
        f()
    except PyverbsRDMAError as ex:
        assert ex.error_code == code, f"{what}: errno {ex.error_code}, expected {code}"
        return
    raise AssertionError(f"{what} succeeded")

# Capacities: raised to the ring sizes, bounded by the limits.
q = qp(max_send_wr=5, max_recv_wr=3, max_send_sge=3, max_recv_sge=2, max_inline_data=100)
attr, init = q.query(e.IBV_QP_CAP)
assert init.cap.max_send_wr == 8 and init.cap.max_recv_wr == 4, init.cap
assert init.cap.max_send_sge >= 3 and init.cap.max_recv_sge >= 2 and init.cap.max_inline_data >= 100
q.close()
refused(errno.EINVAL, lambda: qp(max_send_wr=dev.max_qp_wr + 1), "max_send_wr beyond max_qp_wr")
refused(errno.EINVAL, lambda: qp(max_recv_sge=dev.max_sge + 1), "max_recv_sge beyond max_sge")
refused(errno.EINVAL, lambda: qp(max_inline_data=4096), "inline beyond 512")
assert qp(qp_type=e.IBV_QPT_UC).qp_type == e.IBV_QPT_UC, "UC QP"
print("capacities: ok")

# The state machine: from each state, every target with the attributes the
# standard requires; only the transitions ib_core's table allows succeed.
gr = GlobalRoute(dgid=gid, sgid_index=1)
ah = AHAttr(gr=gr, is_global=1, port_num=1)
S = [e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS, e.IBV_QPS_SQD, e.IBV_QPS_ERR]
def bring(q, target):
    a = mkattr(qp_state=e.IBV_QPS_INIT, port_num=1)
    a.pkey_index = 0
    a.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE
    if target == e.IBV_QPS_RESET: return
    q.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    if target == e.IBV_QPS_INIT: return
    if target == e.IBV_QPS_ERR:
        q.modify(mkattr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE); return
    a = mkattr(qp_state=e.IBV_QPS_RTR, path_mtu=e.IBV_MTU_1024, dest_qp_num=q.qp_num, rq_psn=1,
               max_dest_rd_atomic=1, min_rnr_timer=12)
    a.ah_attr = ah
    q.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
             e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    if target == e.IBV_QPS_RTR: return
    a = mkattr(qp_state=e.IBV_QPS_RTS, timeout=14, retry_cnt=7, rnr_retry=7, sq_psn=1, max_rd_atomic=1)
    q.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
             e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)
    if target == e.IBV_QPS_RTS: return
    q.modify(mkattr(qp_state=e.IBV_QPS_SQD), e.IBV_QP_STATE)

# Transitions with no required attribute (IBTA table, RC): besides any state
# to RESET, and any state but RESET to ERR.
bare = {(e.IBV_QPS_INIT, e.IBV_QPS_INIT), (e.IBV_QPS_RTS, e.IBV_QPS_RTS),
        (e.IBV_QPS_RTS, e.IBV_QPS_SQD), (e.IBV_QPS_SQD, e.IBV_QPS_RTS),
        (e.IBV_QPS_SQD, e.IBV_QPS_SQD)}
n = 0
for cur, nxt in itertools.product(S, S):
    q = qp()
    bring(q, cur)
    assert q.query(e.IBV_QP_STATE)[0].qp_state == cur
    # A bare state change: legal only where no attribute is required.
    try:
        q.modify(mkattr(qp_state=nxt), e.IBV_QP_STATE)
        ok = True
    except PyverbsRDMAError as ex:
        assert ex.error_code == errno.EINVAL, f"{cur}->{nxt}: errno {ex.error_code}"
        ok = False
    bare_ok = (nxt == e.IBV_QPS_RESET or (nxt == e.IBV_QPS_ERR and cur != e.IBV_QPS_RESET)
               or (cur, nxt) in bare)
    assert ok == bare_ok, f"{cur} -> {nxt}: {'accepted' if ok else 'refused'}"
    n += 1
    q.close()
print(f"state machine: {n} bare transitions as the standard says")

# Out-of-range attributes, on the way to RTR and RTS.  (PSNs are not among
# them: libibverbs keeps only their 24 bits before the kernel sees them.)
q = qp()
bring(q, e.IBV_QPS_INIT)
def rtr(**kw):
    a = mkattr(qp_state=e.IBV_QPS_RTR, path_mtu=e.IBV_MTU_1024, dest_qp_num=q.qp_num, rq_psn=1,
               max_dest_rd_atomic=1, min_rnr_timer=12)
    a.ah_attr = ah
    for k, v in kw.items():
        setattr(a, k, v)
    q.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
             e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
refused(errno.EINVAL, lambda: rtr(path_mtu=e.IBV_MTU_4096), "path MTU above the port's active MTU")
refused(errno.EINVAL, lambda: rtr(dest_qp_num=1 << 24), "24-bit dest QPN")
refused(errno.EINVAL, lambda: rtr(min_rnr_timer=32), "min_rnr_timer 32")
refused(errno.EINVAL, lambda: rtr(max_dest_rd_atomic=dev.max_qp_rd_atom + 1), "max_dest_rd_atomic")
bad_gr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=100), is_global=1, port_num=1)
def rtr_bad_av():
    a = mkattr(qp_state=e.IBV_QPS_RTR, path_mtu=e.IBV_MTU_1024, dest_qp_num=q.qp_num, rq_psn=1,
               max_dest_rd_atomic=1, min_rnr_timer=12)
    a.ah_attr = bad_gr
    q.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
             e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
refused(errno.ENODATA, rtr_bad_av, "unused source GID index (ib_core finds no GID entry)")
rtr()
def rts(**kw):
    a = mkattr(qp_state=e.IBV_QPS_RTS, timeout=14, retry_cnt=7, rnr_retry=7, sq_psn=1, max_rd_atomic=1)
    for k, v in kw.items():
        setattr(a, k, v)
    q.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
             e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)
refused(errno.EINVAL, lambda: rts(timeout=32), "timeout 32")
refused(errno.EINVAL, lambda: rts(retry_cnt=8), "retry_cnt 8")
refused(errno.EINVAL, lambda: rts(rnr_retry=8), "rnr_retry 8")
rts(sq_psn=0x123456)
a, _ = q.query(e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_RQ_PSN | e.IBV_QP_DEST_QPN | e.IBV_QP_TIMEOUT)
assert (a.qp_state, a.sq_psn, a.rq_psn, a.dest_qp_num, a.timeout, a.retry_cnt, a.path_mtu) == \
    (e.IBV_QPS_RTS, 0x123456, 1, q.qp_num, 14, 7, e.IBV_MTU_1024), "query_qp"
print("attributes: out-of-range refused, query returns what was set")

# Posting fills the shared rings (nothing consumes them before the data path).
buf = bytearray(64)
mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
for i in range(4):
    q.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
refused(errno.ENOMEM, lambda: q.post_recv(RecvWR(wr_id=9, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)])), "a full RQ")
q.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
print("post_recv/post_send fill the rings; the doorbell accepts them")
q.close()
ctx.close()
PY

/usr/bin/python3 -c '
import os, signal
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPCap, QPInitAttr
import pyverbs.enums as e
ctx = Context(name="ferroce0"); pd = PD(ctx); cq = CQ(ctx, 16)
qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(4, 4, 1, 1))) for _ in range(50)]
os.kill(os.getpid(), signal.SIGKILL)
' || true
wait_for 10 res_at_baseline ferroce0 qp ||
	fail "QPs left after SIGKILL: $(rdma resource show ferroce0)"
echo "SIGKILL: no QP left"
