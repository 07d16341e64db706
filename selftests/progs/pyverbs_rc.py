# SPDX-License-Identifier: GPL-2.0
# Connecting a pyverbs RC QP by hand (INIT, RTR, RTS), for test programs
# that need every number of the connection under their control, and
# waiting for one completion.
import sys
import time

from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.qp import QPAttr
import pyverbs.enums as e


def connect_rc(qp, gidx, dgid, dest_qpn, access, psn=0, rd_atomic=1, timeout=14, retries=7):
    """Moves `qp` to RTS, connected from its GID index `gidx` to the QP `dest_qpn` at `dgid`
    (a GID or its string); both directions' PSNs start at `psn`."""
    a = QPAttr()
    a.qp_state, a.pkey_index, a.port_num, a.qp_access_flags = e.IBV_QPS_INIT, 0, 1, access
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr()
    a.qp_state, a.path_mtu, a.dest_qp_num, a.rq_psn = e.IBV_QPS_RTR, e.IBV_MTU_1024, dest_qpn, psn
    a.max_dest_rd_atomic, a.min_rnr_timer = rd_atomic, 1
    gid = dgid if isinstance(dgid, GID) else GID(dgid)
    gr = GlobalRoute(dgid=gid, sgid_index=int(gidx), hop_limit=64)
    a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
              e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr()
    a.qp_state, a.timeout, a.retry_cnt, a.rnr_retry, a.sq_psn, a.max_rd_atomic = \
        e.IBV_QPS_RTS, timeout, retries, retries, psn, rd_atomic
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
              e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


def wait_wc(cq, what, seconds=30):
    """The next completion on `cq`; exits naming `what` if none comes within `seconds`."""
    end = time.time() + seconds
    while time.time() < end:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        time.sleep(0.01)
    sys.exit(f"no completion for {what} in {seconds} s")
