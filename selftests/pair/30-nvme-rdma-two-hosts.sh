#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1500 (TCG, two guests; fio checks every block it wrote, three times)
# NVMe over Fabrics across two hosts: guest a is the target (nvmet exports
# a memory-backed null_blk on an RDMA port), guest b the host (nvme-cli's
# `nvme connect -t rdma`, then fio writes the namespace and reads every
# block back with its checksum), in three rounds:
#
#   1. ferroce target, ferroce host;
#   2. the same over a lossy link (netem on both ends' fab0: 1% loss), so
#      RC's go-back-N carries the NVMe queues;
#   3. rxe as the target (guest a's device is rxe0 on fab0), ferroce host.
#
# Each round ends with disconnect and teardown, nothing left on the
# devices; ferroce's counters show the data crossed the link.
. "$(dirname "$0")/../lib.sh"

# (Until the requester's window became a congestion window this stalled:
# the QEMU link drops bursts, and go-back-N sent a full window again into
# every loss; nvme's 30 s I/O timeout fired and the host reconnected again
# and again.  See Documentation/datapath.rst.)
command -v nvme >/dev/null || fail "no nvme (nvme-cli; qemu/setup installs it)"
command -v fio >/dev/null || fail "no fio (qemu/setup installs it)"
role=$(pair_role)
CLEANUP_QDISC=
trap 'rc=$?; set +e; [ -z "$CLEANUP_QDISC" ] || tc qdisc del dev fab0 root 2>/dev/null; (exit $rc); cleanup' EXIT

pkts() { # DEV: RoCEv2 packets it took in
	port_counter "$1" rcvd_pkts
}

# round LABEL DEV: a exports over DEV, b (ferroce0) connects and checks;
# each guest fails if its own part or the other's did.
round() {
	local label=$1 dev=$2 rc=0 peer before
	if [ "$role" = a ]; then
		(nvmet_export "$FERROCE_PAIR_SELF") || rc=1
		peer=$(pair_sync "exported:$label" $rc) || fail "$label: guest b is lost"
		[ $rc = 0 ] || fail "$label: the target could not export"
		# (The host's whole part happens now, on guest b.)
		peer=$(FERROCE_PAIR_WAIT=1200 pair_sync "checked:$label" 0) || fail "$label: guest b is lost"
		nvme_teardown
		[ "$peer" = 0 ] || fail "$label: the host's part failed (its output is above, guest b)"
	else
		peer=$(pair_sync "exported:$label" 0) || fail "$label: guest a is lost"
		[ "$peer" = 0 ] || fail "$label: the target could not export (guest a)"
		before=$(pkts ferroce0)
		(
			nvme_connect "$FERROCE_PAIR_PEER"
			nvme_fio_verify "$label-seq-1m" --rw=write --bs=1m --size=32m --iodepth=4
			nvme_fio_verify "$label-rand" --rw=randwrite --bsrange=4k-1m --size=32m --iodepth=8 \
				--randrepeat=0
			out=$(timeout 60 nvme disconnect -n "$NVME_NQN" 2>&1) || { echo "$out"; fail "nvme disconnect"; }
			# 2 x 32 MiB written and read back: at least a packet per 4 KiB each way.
			[ $(($(pkts ferroce0) - before)) -ge $((2 * 2 * 32 * 256)) ] ||
				fail "ferroce0 took in $(($(pkts ferroce0) - before)) packets: NVMe did not cross the link"
			echo "$label: ferroce0 took in $(($(pkts ferroce0) - before)) packets"
		) || rc=1
		nvme_teardown
		FERROCE_PAIR_WAIT=120 pair_sync "checked:$label" $rc >/dev/null || fail "$label: guest a is lost"
		[ $rc = 0 ] || fail "$label: the host's part failed"
	fi
	# (ib_core's shared CQ pool keeps nvmet-rdma's CQs until the device goes.)
	local t
	for t in qp mr pd; do
		wait_for 20 res_at_baseline "$dev" $t || fail "$dev: $t objects left: $(rdma resource show "$dev")"
	done
	echo "ok $label"
}

ferroce_add ferroce0 fab0
roce_gid ferroce0 "$FERROCE_PAIR_SELF" >/dev/null || fail "ferroce0 has no RoCE v2 GID"
round ferroce ferroce0

tc qdisc add dev fab0 root netem loss 1%
CLEANUP_QDISC=1
round ferroce-lossy ferroce0
tc qdisc del dev fab0 root
CLEANUP_QDISC=

if [ "$role" = a ]; then
	rdma link delete ferroce0
	rdma_link_add rxe0 rxe fab0
	res_baseline rxe0
	roce_gid rxe0 "$FERROCE_PAIR_SELF" >/dev/null || fail "rxe0 has no RoCE v2 GID"
	pair_sync rxe-up >/dev/null
	round rxe-target rxe0
	rdma link delete rxe0
else
	pair_sync rxe-up >/dev/null
	round rxe-target ferroce0
fi
pair_sync finished >/dev/null
