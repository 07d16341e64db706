#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 900 (TCG)
# UCX (Debian's ucx-utils 1.13) and Open MPI over it (openmpi-bin 4.1, its
# pml and osc ucx) between two namespaces over ferroce, as a user of a
# two-node cluster would run them:
#
#   fua: fua0 10.90.0.1 ferroce1  <-veth->  fub: fub0 10.90.0.2 ferroce2
#
# ucx_perftest's UCP tests over rc_verbs (with ud_verbs for its wire-up) and
# over ud_verbs alone: tag matching (eager and rendezvous), put, get and the
# atomics; each must complete every iteration.  Then progs/mpi-check.c, one
# rank in each namespace, checks every byte of send/receive, allreduce and
# one-sided put, get and atomics.  The data must have gone over ferroce
# (rcvd_pkts of each device), and nothing is left behind.
#
# What UCX 1.13 and Open MPI need on a soft RoCE device (Documentation/
# consumers.rst):
# - UCX_UD_VERBS_ETH_DGID_CHECK=n: UCX 1.13's UD reads IPv4-or-IPv6 of a
#   datagram from its completion's sl as mlx5 sets it (2 for IPv4); a soft
#   device reports 0, so UCX takes every IPv4 datagram's GRH for an IPv6
#   header, its destination for another host's and drops it (UCX 1.19 looks
#   at the GRH itself; rxe is affected the same way).
# - rc_verbs connects through UD messages: UCX_TLS=rc_verbs,ud_verbs:aux.
# - Open MPI's pml and osc ucx rank themselves above ob1 and osc rdma only
#   on mlx* devices unless told: pml_ucx_tls any, pml_ucx_devices any (and
#   --mca pml ucx, osc ucx make a failure to use UCX an error).
# UCX's verbs transports have fetch-and-add and compare-and-swap only, not
# the full set UCP wants for device atomics, so UCP emulates the atomics
# with messages: the atomic tests here move ferroce's SENDs, not its ATOMIC
# opcodes (39 and 56 run those).
. "$(dirname "$0")/../lib.sh"

for c in ucx_perftest ucx_info mpirun mpicc; do
	command -v $c >/dev/null ||
		skip "no $c (qemu/setup installs ucx-utils, openmpi-bin and libopenmpi-dev)"
done
# The option this test needs (a hidden one: ucx_info -c shows it with -a).
grep -q '^UCX_UD_VERBS_ETH_DGID_CHECK=' <<<"$(ucx_info -ca)" ||
	fail "this UCX has no verbs transports (no UCX_UD_VERBS_ETH_DGID_CHECK): $(ucx_info -v | head -1)"
mpicc -O2 -Wall -o /tmp/mpi-check "$(dirname "$0")/../progs/mpi-check.c" ||
	fail "cannot build progs/mpi-check.c"

ferroce_over_veth fua 10.90.0.1 ferroce1 fub 10.90.0.2 ferroce2

# reap [-q]: whatever still runs in the namespaces (after a failure: a UCX
# server, Open MPI's daemon or a rank) is killed, and named unless -q; it
# holds its device's objects, and lib.sh's cleanup deletes the namespaces.
reap() {
	local pids
	pids=$({ ip netns pids fua; ip netns pids fub; } 2>/dev/null) || true
	[ -n "$pids" ] || return 0
	[ "${1:-}" = -q ] ||
		echo "(killed what was left in fua and fub: $(ps -o pid=,comm= -p "${pids//$'\n'/,}" | xargs))"
	kill -9 $pids 2>/dev/null || true
}
# (Quietly: a failure's reason stays the last line.  set +e: under lib.sh's
# set -e, the (exit $rc) that hands cleanup the status would end the trap
# before cleanup on a failure.)
trap 'rc=$?; set +e; reap -q; (exit $rc); cleanup' EXIT

pkts() { # DEV: RoCEv2 packets it took in
	port_counter "$1" rcvd_pkts
}

# UCX sees each device with both verbs transports from its namespace.
for side in "fua ferroce1" "fub ferroce2"; do
	set -- $side
	out=$(timeout 60 ip netns exec "$1" env UCX_NET_DEVICES="$2:1" ucx_info -d 2>&1) ||
		{ echo "$out"; fail "ucx_info -d in $1 failed"; }
	for tl in rc_verbs ud_verbs; do
		grep -qx "$tl $2:1" <<<"$(awk '/Transport:/ { t = $3 } /Device:/ { print t, $3 }' <<<"$out")" ||
			{ echo "$out"; fail "UCX has no $tl on $2:1"; }
	done
done
echo "UCX sees rc_verbs and ud_verbs on ferroce1:1 (fua) and ferroce2:1 (fub)"

# ucx_env DEV TLS: the environment of a UCX process on DEV with the transports TLS.
ucx_env() {
	echo "UCX_TLS=$2" "UCX_NET_DEVICES=$1:1" UCX_UD_VERBS_ETH_DGID_CHECK=n
}

# ucx_pair TLS TEST ARGS...: ucx_perftest's server on ferroce1 in fua (it
# takes the test from the client), its client on ferroce2 in fub, meeting
# over TCP port 18515; the client must report every iteration (-n) done.
ucx_pair() {
	local tls=$1 out line n
	shift
	n=$(sed -n 's/.*-n \([0-9]*\).*/\1/p' <<<"$*")
	out=$(server_client fua 10.90.0.1 fub \
		env $(ucx_env ferroce1 "$tls") ucx_perftest -p 18515 -- \
		env $(ucx_env ferroce2 "$tls") ucx_perftest -p 18515 -t "$@") ||
		{ echo "$out"; fail "ucx_perftest -t $* over $tls"; }
	line=$(grep '^Final:' <<<"$out") || { echo "$out"; fail "ucx_perftest -t $* over $tls: no result"; }
	# (Final: iterations, overhead 50%ile/average/overall, MB/s average/overall,
	# messages/s average/overall.)
	awk -v n="$n" '{ exit !($2 == n && $8 > 0) }' <<<"$line" ||
		{ echo "$out"; fail "ucx_perftest -t $* over $tls: not $n iterations, or no message rate"; }
	echo "$tls $*: $line"
	# (UCX's warnings, if any, for the record.)
	grep -h 'UCX  \(WARN\|ERROR\)' /tmp/server.log - <<<"$out" | sed 's/^/  /' || true
}

UCX_RUNS=(
	"tag_bw -s 8 -n 2000 -w 100"
	"tag_bw -s 65536 -n 200 -w 10"
	"ucp_put_bw -s 65536 -n 200 -w 10"
	"ucp_get -s 65536 -n 200 -w 10"
	"ucp_add -s 8 -n 1000 -w 100"
	"ucp_fadd -s 8 -n 1000 -w 100"
	"ucp_swap -s 8 -n 1000 -w 100"
)
b1=$(pkts ferroce1)
b2=$(pkts ferroce2)
for tls in rc_verbs,ud_verbs:aux ud_verbs; do
	for r in "${UCX_RUNS[@]}"; do
		ucx_pair "$tls" $r
	done
done
d1=$(($(pkts ferroce1) - b1))
d2=$(($(pkts ferroce2) - b2))
# Over each transport, tag_bw's and ucp_put_bw's 200 x 64 KiB went to
# ferroce1 (the server) and ucp_get's 200 x 64 KiB came back to ferroce2:
# at least one packet per 4 KiB (the largest MTU).
[ "$d1" -ge $((2 * 2 * 200 * 16)) ] && [ "$d2" -ge $((2 * 200 * 16)) ] ||
	fail "ferroce1 took in $d1 packets, ferroce2 $d2: ucx_perftest did not run over them"
echo "ferroce1 took in $d1 packets, ferroce2 $d2 for ucx_perftest"

# Open MPI: each namespace is a node, named by its address.  mpirun runs in
# fua and starts rank 0 there itself; for the node 10.90.0.2 its rsh
# launcher runs this agent instead of ssh, which starts Open MPI's daemon
# (orted) in fub, and the daemon starts rank 1.  The daemon reaches mpirun
# over the veth (TCP, oob_tcp_if_include), each rank its own node's daemon
# over that namespace's loopback (PMIx), so the two ranks are on different
# nodes for Open MPI (no shared memory between them) and UCX (each sees only
# its own device, named per rank: -x is per application context).
cat >/tmp/mpi-netns-agent <<'EOF'
#!/bin/sh
# Open MPI's rsh launcher runs AGENT HOST COMMAND...: each host is the
# address of a namespace of selftests/tests/60-ferroce-ucx-mpi.sh.
host=$1
shift
case $host in
10.90.0.1) ns=fua ;;
10.90.0.2) ns=fub ;;
*) echo "mpi-netns-agent: no namespace has the address $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" sh -c "$*"
EOF
chmod +x /tmp/mpi-netns-agent

mpi_env() { # DEV: one application context's UCX environment (-x options)
	local v
	for v in $(ucx_env "$1" self,rc_verbs,ud_verbs:aux); do
		echo -x "$v"
	done
}
b1=$(pkts ferroce1)
b2=$(pkts ferroce2)
out=$(timeout 300 ip netns exec fua mpirun --allow-run-as-root --bind-to none \
	--mca plm_rsh_agent /tmp/mpi-netns-agent --mca plm_rsh_no_tree_spawn 1 \
	--mca oob_tcp_if_include 10.90.0.0/24 \
	--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ucx --mca btl self \
	-np 1 --host 10.90.0.1 $(mpi_env ferroce1) /tmp/mpi-check : \
	-np 1 --host 10.90.0.2 $(mpi_env ferroce2) /tmp/mpi-check 2>&1) ||
	{ echo "$out"; fail "mpirun of mpi-check across fua and fub failed"; }
echo "$out"
grep -q '^mpi-check: .*: all data right$' <<<"$out" || fail "mpi-check gave no summary"
# Rank 0 ran in fua, rank 1 in fub.
want="ranks in net:[$(stat -L -c %i /run/netns/fua)] and net:[$(stat -L -c %i /run/netns/fub)]:"
grep -qF "$want" <<<"$out" || fail "mpi-check's ranks were not in fua and fub ($want)"
d1=$(($(pkts ferroce1) - b1))
d2=$(($(pkts ferroce2) - b2))
# Each device took in at least the 1 MiB message the other rank sent, the
# other rank's 256 KiB put and its own rank's 256 KiB get: one packet per
# 4 KiB at most.
[ "$d1" -ge 384 ] && [ "$d2" -ge 384 ] ||
	fail "ferroce1 took in $d1 packets, ferroce2 $d2: MPI did not run over them"
echo "ferroce1 took in $d1 packets, ferroce2 $d2 for Open MPI"

reap
no_objects_left 10 ferroce1 ferroce2
echo "UCX and Open MPI run over ferroce between two namespaces"
