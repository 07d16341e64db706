# SPDX-License-Identifier: GPL-2.0
# Prints the rkey of the first MR and the number of the first QP a process
# creates on a device: "rkey=0x... qpn=0x...".
#
# usage: first-numbers.py DEV
import sys

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
import pyverbs.enums as e

ctx = Context(name=sys.argv[1])
pd = PD(ctx)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
cq = CQ(ctx, 4)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(1, 1, 1, 1)))
print(f"rkey={mr.rkey:#x} qpn={qp.qp_num:#x}")
