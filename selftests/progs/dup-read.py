# SPDX-License-Identifier: GPL-2.0
# A duplicate READ costs a responder only what it served: RC QP A on DEV_A
# (address IP_A) and B on DEV_B (IP_B) are connected, A reads 8 KiB from B
# (8 packets at MTU 1024, PSNs 100-107) and then 20 times 64 bytes (PSNs
# 108-127: the first READ must not be forgotten), and then a hostile peer in A's
# namespace (this script re-entered there with --inject) sends B READ
# requests from A's address and port behind B's expected PSN:
#   stale:   a READ B never served (PSN 50, 64 KiB of B's MR): dropped;
#   again:   the READ B served (PSN 100, 8 KiB): answered again, 8 packets;
#   rest:    its second half (PSN 104, va + 4 KiB, 4 KiB): 4 packets;
#   forged:  its PSN with another length (PSN 100, 64 KiB): dropped.
# Prints B's sent_pkts for each, as "CASE PACKETS" lines.  Then A reads 1 MiB
# (1024 response packets, asked for in a few requests of a window each): B
# sends at most 16 of them from the softirq that took each request and the
# rest from the QP's work item; prints "paced PACKETS" (B's paced_pkts),
# "replies PACKETS" (B's sent_pkts) and "requests PACKETS" (B's rcvd_pkts).
#
# usage: dup-read.py DEV_A GIDX_A IP_A NS_A DEV_B GIDX_B IP_B
#        dup-read.py --inject IP_A IP_B QPN_B VA RKEY CASE
import json
import subprocess
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import roce_packet as rp  # noqa: E402

if sys.argv[1] == "--inject":
    ip_a, ip_b, qpn_b, va, rkey, case = sys.argv[2:8]
    qpn_b, va, rkey = int(qpn_b), int(va), int(rkey)
    psn, va_off, length = {"stale": (50, 0, 65536), "again": (100, 0, 8192),
                           "rest": (104, 4096, 4096), "forged": (100, 0, 65536)}[case]
    t = rp.bth(rp.RDMA_READ_REQUEST, qpn_b, psn, ack_req=True) + rp.reth(va + va_off, rkey, length)
    rp.Sender().send(rp.ipv4_packet(ip_a, ip_b, t))
    sys.exit(0)

from pyverbs_rc import connect_rc  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, SendWR  # noqa: E402
import pyverbs.enums as e  # noqa: E402

dev_a, gidx_a, ip_a, ns_a, dev_b, gidx_b, ip_b = sys.argv[1:8]
access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_WRITE


def side(name):
    ctx = Context(name=name)
    pd = PD(ctx)
    cq = CQ(ctx, 8)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(4, 4, 1, 1)))
    return ctx, pd, cq, qp, MR(pd, 65536, access)


def counter(dev, name):
    out = subprocess.run(["rdma", "statistic", "show", "link", f"{dev}/1"], capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[out.index(name) + 1])


def sent_pkts(dev):
    return counter(dev, "sent_pkts")


ctx_a, pd_a, cq_a, qp_a, mr_a = side(dev_a)
ctx_b, pd_b, cq_b, qp_b, mr_b = side(dev_b)
connect_rc(qp_a, gidx_a, ctx_b.query_gid(1, int(gidx_b)), qp_b.qp_num, access, psn=100, rd_atomic=4)
connect_rc(qp_b, gidx_b, ctx_a.query_gid(1, int(gidx_a)), qp_a.qp_num, access, psn=100, rd_atomic=4)
mr_b.write(bytes(range(256)) * 256, 65536)
def read(offset, length, into=None, src=None):
    into, src = into or mr_a, src or mr_b
    w = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
               sg=[SGE(into.buf + offset, length, into.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    w.set_wr_rdma(src.rkey, src.buf + offset)
    qp_a.post_send(w)
    end = time.time() + 30
    while time.time() < end:
        n, wcs = cq_a.poll(1)
        if n:
            break
        time.sleep(0.01)
    else:
        sys.exit("a READ did not complete")
    if wcs[0].status != e.IBV_WC_SUCCESS or into.read(length, offset) != src.read(length, offset):
        sys.exit(f"a READ failed: status {wcs[0].status}")


read(0, 8192)
# More READs after it (PSNs 108-127), as many as a requester with a deep READ pipeline has
# outstanding: the responder must still remember the first.
for i in range(20):
    read(16384 + 64 * i, 64)

for case in ["stale", "again", "rest", "forged"]:
    before = sent_pkts(dev_b)
    subprocess.run(["ip", "netns", "exec", ns_a, sys.executable, __file__, "--inject", ip_a, ip_b,
                    str(qp_b.qp_num), str(mr_b.buf), str(mr_b.rkey), case], check=True)
    time.sleep(1)
    print(case, sent_pkts(dev_b) - before, flush=True)

big_a, big_b = MR(pd_a, 1 << 20, access), MR(pd_b, 1 << 20, access)
big_b.write(bytes(range(251)) * 4177 + bytes((1 << 20) - 251 * 4177), 1 << 20)
names = ["paced_pkts", "sent_pkts", "rcvd_pkts"]
before = [counter(dev_b, n) for n in names]
read(0, 1 << 20, big_a, big_b)
for label, n, b in zip(["paced", "replies", "requests"], names, before):
    print(label, counter(dev_b, n) - b, flush=True)
