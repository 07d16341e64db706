#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900 (TCG: fio checks every block it wrote, through two NVMe stacks)
# NVMe over Fabrics over ferroce, as a user testing a storage stack would:
# the kernel's NVMe target (nvmet, configured through configfs) exports a
# memory-backed null_blk device on an RDMA port (trtype rdma, 4420), the
# kernel's NVMe host connects to it (nvme-cli: `nvme connect -t rdma`), and
# fio writes the namespace and reads it back with a checksum on every block
# (verify=crc32c), sequential and random, 4 KiB to 1 MiB, several I/Os in
# flight.  nvmet-rdma and nvme-rdma open their rdma_cm IDs in init_net, so
# in one guest target and host share the device: their queues are QP pairs
# of one ferroce device (direct placement).  Each I/O is a SEND of the
# command, an RDMA READ or WRITE of the data by the target through the
# host's fast registration (IB_WR_REG_MR) of its pages, and a SEND of the
# response that invalidates that registration (SEND_WITH_INV): what
# nvme-rdma requires of a device.  Then disconnect and teardown: nothing
# is left on the device.  (Across two hosts, with loss and with rxe as the
# target: pair/30.)
. "$(dirname "$0")/../lib.sh"

command -v nvme >/dev/null || fail "no nvme (nvme-cli; qemu/setup installs it)"
command -v fio >/dev/null || fail "no fio (qemu/setup installs it)"

add_dummy nvd0 10.70.0.1
ferroce_add nv0 nvd0
roce_gid nv0 10.70.0.1 >/dev/null || fail "nv0 has no RoCE v2 GID"
nvmet_export 10.70.0.1
nvme_connect 10.70.0.1
# The queues are RC QPs of nv0, beside the device's own (QP1 and friends):
# the admin queue and two I/O queues, each a QP of the host and one of the
# target.
qps=$(res_count nv0 qp)
[ "$qps" -ge $((RES_BASE[nv0.qp] + 6)) ] ||
	fail "nv0 has $qps QPs with NVMe/RDMA connected (${RES_BASE[nv0.qp]} before): its queues are not on ferroce"
echo "nv0 holds $((qps - RES_BASE[nv0.qp])) QPs for the NVMe queues"

nvme_fio_verify seq-1m --rw=write --bs=1m --size=64m --iodepth=4
nvme_fio_verify rand-4k-1m --rw=randwrite --bsrange=4k-1m --size=64m --iodepth=8 --randrepeat=0
nvme_fio_verify rand-4k --rw=randwrite --bs=4k --size=8m --iodepth=16 --randrepeat=0

out=$(timeout 60 nvme disconnect -n "$NVME_NQN" 2>&1) || { echo "$out"; fail "nvme disconnect"; }
echo "$out"
nvme_teardown
# Nothing is left but what ib_core keeps on purpose: nvmet-rdma takes its
# CQs from the device's shared CQ pool (ib_cq_pool_get), which keeps them
# until the device goes (ib_cq_pool_cleanup at unregistration).
for t in qp mr pd; do
	wait_for 20 res_at_baseline nv0 $t || fail "nv0: $t objects left: $(rdma resource show nv0)"
done
echo "nv0 after teardown: $(rdma resource show nv0 | cut -d: -f2-); its CQs:"
rdma resource show cq dev nv0
rdma link delete nv0
unload_modules ferroce
echo "NVMe/RDMA connected, checked and torn down over ferroce; the device and module go"
