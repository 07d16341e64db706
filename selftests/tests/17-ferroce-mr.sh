#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Memory regions: pyverbs test_mr; registration pins the pages (and
# unregistration unpins them); keys never repeat on reuse; bad requests fail
# with the right errno: unmapped memory, zero and huge lengths, write access
# to read-only memory, unsupported access, RLIMIT_MEMLOCK; a SIGKILLed
# process leaves no MR and no pinned page behind.
. "$(dirname "$0")/../lib.sh"

add_dummy fmr0 10.67.0.1
ferroce_add ferroce0 fmr0

# Every test passes, rereg_pd and rereg_addr too: they take failed QPs
# through RESET to RTS, and the provider cleans a reset QP's completions out
# of its CQs (Documentation/datapath.rst).
pyverbs_suite ferroce0 test_mr || fail "pyverbs test_mr"

pins() { # pages pinned right now, system-wide (stat_refresh folds per-CPU counts)
	echo 1 >/proc/sys/vm/stat_refresh 2>/dev/null || true
	awk '/^nr_foll_pin_acquired/ { a = $2 } /^nr_foll_pin_released/ { r = $2 } END { print a - r }' /proc/vmstat
}
base=$(pins)

/usr/bin/python3 - <<'PY' || fail "MR checks"
import ctypes, errno, mmap
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.mr import MR
from pyverbs.pyverbs_error import PyverbsRDMAError
import pyverbs.enums as e

ctx = Context(name="ferroce0")
pd = PD(ctx)
LW, RW, RR = e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_READ
max_mr_size = ctx.query_device().max_mr_size

def pins():
    """Pages this process has pinned (mm->pinned_vm, which ib_umem charges)."""
    for l in open("/proc/self/status"):
        if l.startswith("VmPin:"):
            return int(l.split()[1]) // 4
    raise AssertionError("no VmPin in /proc/self/status")

def refused(code, what, **kw):
    try:
        MR(pd, **kw).close()
    except PyverbsRDMAError as ex:
        assert ex.error_code == code, f"{what}: errno {ex.error_code}, expected {code}"
        print(f"refused: {what} -> errno {ex.error_code}")
        return
    raise AssertionError(f"{what} succeeded")

# Pinning: 64 pages while registered, none after.
buf = mmap.mmap(-1, 64 * 4096)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
p0 = pins()
mr = MR(pd, 64 * 4096, LW | RW | RR, address=addr)
assert pins() - p0 == 64, f"{pins() - p0} pages pinned for a 64-page MR"
assert mr.lkey == mr.rkey and mr.lkey >> 8 != 0
mr.close()
assert pins() == p0, "pages still pinned after dereg"

# Unaligned start and odd length are fine: the pages around them are pinned.
mr = MR(pd, 5000, LW, address=addr + 123)
assert pins() - p0 == 2
mr.close()

# Keys: each registration gets a key no earlier registration had.
seen = set()
for _ in range(300):
    m = MR(pd, 4096, LW, address=addr)
    assert m.lkey not in seen, f"key {m.lkey:#x} reused"
    seen.add(m.lkey)
    m.close()

# Bad requests.
hole = mmap.mmap(-1, 4 * 4096)
hole_addr = ctypes.addressof(ctypes.c_char.from_buffer(hole))
hole.close()
refused(errno.EFAULT, "unmapped memory", length=4 * 4096, access=LW, address=hole_addr)
refused(errno.EINVAL, "zero length", length=0, access=LW, address=addr)
refused(errno.EINVAL, "length beyond max_mr_size", length=max_mr_size + 4096, access=LW, address=addr)
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
ro_addr = libc.mmap(None, 4 * 4096, mmap.PROT_READ, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
refused(errno.EFAULT, "local write to read-only memory", length=4 * 4096, access=LW, address=ro_addr)
MR(pd, 4 * 4096, RR, address=ro_addr).close()   # reading it is fine
MR(pd, 4096, LW | e.IBV_ACCESS_MW_BIND, address=addr).close()   # memory windows may bind
refused(errno.EINVAL, "remote write without local write", length=4096, access=RW, address=addr)

# Re-registration (ibv_rereg_mr): a new PD or access the pinned pages allow
# is changed in place, keeping the keys (as rxe and NICs do); new memory, or
# write access to pages pinned read-only, gives a new MR with new keys;
# what the flags do not name is kept; a failed one changes nothing.
def rereg_fails(m, what, *args):
    try:
        m.rereg(*args)
    except PyverbsRDMAError:
        print(f"refused: rereg {what}")
        return
    raise AssertionError(f"rereg {what} succeeded")

mr = MR(pd, 8 * 4096, LW, address=addr)
keys = (mr.lkey, mr.rkey)
mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, None, 0, 0, LW | RW | RR)
assert (mr.lkey, mr.rkey) == keys, "an access rereg in place changed the keys"
assert pins() - p0 == 8, f"access rereg: {pins() - p0} pages pinned"
mr.rereg(e.IBV_REREG_MR_CHANGE_TRANSLATION, None, addr + 8 * 4096, 16 * 4096, 0)
assert (mr.lkey, mr.rkey) != keys and mr.lkey >> 8 != 0, "a translation rereg kept the keys"
assert mr.lkey not in seen and pins() - p0 == 16, f"translation rereg: {pins() - p0} pages pinned, expected 16"
pd2 = PD(ctx)
keys = (mr.lkey, mr.rkey)
mr.rereg(e.IBV_REREG_MR_CHANGE_PD, pd2, 0, 0, 0)
assert (mr.lkey, mr.rkey) == keys and pins() - p0 == 16, "PD rereg in place"
# Pinned read-only, then asked for writes: the pages are pinned again.
ro_mr = MR(pd, 4096, e.IBV_ACCESS_REMOTE_READ, address=addr)
ro_keys = (ro_mr.lkey, ro_mr.rkey)
ro_mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, None, 0, 0, LW)
assert (ro_mr.lkey, ro_mr.rkey) != ro_keys, "write access to read-only pins kept the keys"
ro_mr.close()
keys = (mr.lkey, mr.rkey)
rereg_fails(mr, "to unmapped memory", e.IBV_REREG_MR_CHANGE_TRANSLATION, None, hole_addr, 4096, 0)
rereg_fails(mr, "with write access to read-only memory",
            e.IBV_REREG_MR_CHANGE_TRANSLATION | e.IBV_REREG_MR_CHANGE_ACCESS, None, ro_addr, 4096, LW)
mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, None, 0, 0, LW | e.IBV_ACCESS_MW_BIND)   # in place
assert (mr.lkey, mr.rkey) == keys and pins() - p0 == 16, "a failed rereg changed the MR"
mr.close()
pd2.close()
assert pins() == p0, "pages still pinned after a re-registered MR's dereg"
print("rereg: access and PD in place with the keys kept, translation and write pins with new keys; failures leave the MR intact")

pd.close()
ctx.close()
print("pinning, keys and bad requests: ok")
PY

# RLIMIT_MEMLOCK applies without CAP_IPC_LOCK.
out=$(ulimit -l 64; setpriv --inh-caps=-ipc_lock --ambient-caps=-ipc_lock --bounding-set=-ipc_lock \
	/usr/bin/python3 -c '
import ctypes, errno, mmap
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.mr import MR
from pyverbs.pyverbs_error import PyverbsRDMAError
import pyverbs.enums as e
ctx = Context(name="ferroce0"); pd = PD(ctx)
buf = mmap.mmap(-1, 1 << 20)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
MR(pd, 8 * 4096, e.IBV_ACCESS_LOCAL_WRITE, address=addr).close()  # within the limit
try:
    MR(pd, 1 << 20, e.IBV_ACCESS_LOCAL_WRITE, address=addr)
except PyverbsRDMAError as ex:
    print("errno", ex.error_code)
' 2>&1) || true
[ "$out" = "errno $(python3 -c 'import errno; print(errno.ENOMEM)')" ] ||
	fail "1 MiB MR with a 64 KiB memlock limit: $out"
echo "memlock limit: ENOMEM"

/usr/bin/python3 -c '
import ctypes, mmap, os, signal
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.mr import MR
import pyverbs.enums as e
ctx = Context(name="ferroce0"); pd = PD(ctx)
buf = mmap.mmap(-1, 256 * 4096)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
mrs = [MR(pd, 256 * 4096, e.IBV_ACCESS_LOCAL_WRITE, address=addr) for _ in range(20)]
os.kill(os.getpid(), signal.SIGKILL)
' || true
wait_for 10 res_at_baseline ferroce0 mr ||
	fail "MRs left after SIGKILL: $(rdma resource show ferroce0)"
wait_output 10 "$base" pins || fail "$(( $(pins) - base )) pages still pinned after SIGKILL"
echo "SIGKILL: no MR, no pinned page left"
