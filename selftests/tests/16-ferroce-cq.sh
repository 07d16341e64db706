#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Completion queues: pyverbs test_cq; sizes round up to a power of two and
# are bounded by max_cqe; resize keeps working; arming needs no syscall;
# bad requests fail with EINVAL; max_cq is enforced in count; a SIGKILLed
# process leaves no CQ behind.
. "$(dirname "$0")/../lib.sh"

add_dummy fcq0 10.66.0.1
ferroce_add ferroce0 fcq0

pyverbs_suite ferroce0 test_cq \
	"test_resize_cq=needs the data path (its sends must complete before a shrink is refused)" ||
	fail "pyverbs test_cq"

/usr/bin/python3 - <<'PY' || fail "CQ checks"
import errno
from pyverbs.device import Context
from pyverbs.cq import CQ, CompChannel
from pyverbs.pyverbs_error import PyverbsRDMAError

ctx = Context(name="ferroce0")
max_cqe = ctx.query_device().max_cqe

def refused(code, f, what):
    try:
        f()
    except PyverbsRDMAError as e:
        assert e.error_code == code, f"{what}: errno {e.error_code}, expected {code}"
        return
    raise AssertionError(f"{what} succeeded")

cq = CQ(ctx, 3)
assert cq.cqe == 4, f"3 entries asked, {cq.cqe} given"
assert cq.poll() == (0, []), "a new CQ holds completions"
cq.req_notify(True)
cq.resize(100)
assert cq.cqe == 128, f"resize to 100 gave {cq.cqe}"
cq.resize(10)
assert cq.cqe == 16, f"resize to 10 gave {cq.cqe}"
assert cq.poll() == (0, [])
refused(errno.EINVAL, lambda: cq.resize(max_cqe + 1), "resize beyond max_cqe")
cq.close()

big = CQ(ctx, max_cqe)
# Never more than advertised (the ring rounds up to a power of two, and max_cqe is one).
assert big.cqe == max_cqe, f"max_cqe {max_cqe} asked, {big.cqe} given"
big.close()
refused(errno.EINVAL, lambda: CQ(ctx, max_cqe + 1), "CQ beyond max_cqe")
refused(errno.EINVAL, lambda: CQ(ctx, 0), "CQ of 0 entries")
refused(errno.EINVAL, lambda: CQ(ctx, 4, None, None, 1), "comp_vector 1")
ch = CompChannel(ctx)
with CQ(ctx, 8, None, ch, 0) as c:
    c.req_notify()
ch.close()
ctx.close()
print("CQ sizes, resize, arming and bad requests: ok")
PY

# A process that scribbles over its own CQ ring corrupts only that CQ: the
# kernel validates the user's index, marks the ring in error and says EINVAL.
/usr/bin/python3 - <<'PY' || fail "hostile CQ ring"
import ctypes, errno
from pyverbs.device import Context
from pyverbs.cq import CQ
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError

ctx = Context(name="ferroce0")
cq = CQ(ctx, 16)
maps = [l.split() for l in open("/proc/self/maps") if "/dev/infiniband/uverbs" in l]
assert maps, "the CQ ring is not mapped"
for m in maps:
    lo, hi = (int(x, 16) for x in m[0].split("-"))
    ctypes.memset(lo, 0xA5, hi - lo)
try:
    cq.resize(32)
    raise AssertionError("resize of a corrupted CQ succeeded")
except PyverbsRDMAError as e:
    assert e.error_code == errno.EINVAL, e
try:
    cq.poll()
    raise AssertionError("poll of a CQ in error succeeded")
except PyverbsError:
    pass
cq.close()
with CQ(ctx, 16) as other:      # the device is fine
    assert other.poll() == (0, [])
ctx.close()
print("corrupted ring: EINVAL, CQ in error, device fine")
PY

/usr/bin/python3 -c '
import os, signal
from pyverbs.device import Context
from pyverbs.cq import CQ
ctx = Context(name="ferroce0")
cqs = [CQ(ctx, 64) for _ in range(200)]
os.kill(os.getpid(), signal.SIGKILL)
' || true
wait_for 10 res_at_baseline ferroce0 cq ||
	fail "CQs left after SIGKILL: $(rdma resource show ferroce0)"
rdma resource show ferroce0
