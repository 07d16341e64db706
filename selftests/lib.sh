# SPDX-License-Identifier: GPL-2.0
#
# Helpers for ferroce selftests.  Each test is a bash script in tests/ that
# runs as root inside the guest and exits 0 (pass), 1 (fail) or 4 (skip,
# the kselftest convention), with its reason on the last line of output.
set -euo pipefail

KSFT_SKIP=4

# What a test creates is removed when it exits, whatever the outcome, so that
# one failing test does not break the next.
CLEANUP_LINKS=()
CLEANUP_NETDEVS=()
CLEANUP_NETNS=()
cleanup() {
	local rc=$? l n
	set +e
	# (Background jobs first: a perftest server holds its device.)
	kill $(jobs -p) 2>/dev/null
	wait 2>/dev/null
	# (NVMe/RDMA next: its queues are QPs of the links below.)
	! grep -qE '^(nvme_rdma|nvmet|null_blk) ' /proc/modules || nvme_teardown
	for l in "${CLEANUP_LINKS[@]}"; do
		[ -e "/sys/class/infiniband/$l" ] && rdma link delete "$l" 2>/dev/null
	done
	for n in "${CLEANUP_NETDEVS[@]}"; do
		ip link del "$n" 2>/dev/null
	done
	# Deleting a namespace deletes its netdevs (and their veth peers).
	for n in "${CLEANUP_NETNS[@]}"; do
		ip netns del "$n" 2>/dev/null
	done
	exit $rc
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

# The debug kernel (KASAN, lockdep, kmemleak) runs about three times slower,
# allocation-heavy work more: a test's own time limits stretch with it, as
# selftests/run stretches the test's (select.sh's test_limit).
SLOWDOWN=1
[ ! -e /proc/lockdep ] || SLOWDOWN=3
# timeout [OPTION...] SECONDS COMMAND...: coreutils' timeout with SECONDS
# times SLOWDOWN.  (Commands run by others, e.g. `ip netns exec timeout`,
# get the plain one.)
timeout() {
	local -a opts=()
	local d
	while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
		case $1 in
		-k | -s) opts+=("$1" "$2"); shift ;;
		*) opts+=("$1") ;;
		esac
		shift
	done
	d=$1
	shift
	case $d in
	'' | *[!0-9]*) ;;
	*) d=$((d * SLOWDOWN)) ;;
	esac
	command timeout "${opts[@]}" "$d" "$@"
}

skip() {
	echo "SKIP: $*"
	exit $KSFT_SKIP
}

# Run a command and fail the test with its output if it fails.
must() {
	local out
	if ! out=$("$@" 2>&1); then
		echo "$out"
		fail "'$*' failed"
	fi
	printf '%s' "$out"
}

# Fail unless a command fails (misuse must be refused).
must_fail() {
	if "$@" >/dev/null 2>&1; then
		fail "'$*' succeeded but must fail"
	fi
}

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds.
wait_for() {
	local end
	# Wall-clock seconds (stretched on the debug kernel, as `timeout` is), not a count of
	# tries: each try of COMMAND may itself take seconds on a starved debug guest.
	end=$((SECONDS + $1 * SLOWDOWN))
	shift
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

# wait_output SECONDS EXPECTED COMMAND...: poll until COMMAND prints EXPECTED.
# (Not `wait_for N test "$(cmd)" = x`: the shell runs a $(...) argument once,
# before wait_for starts, so such a wait never sees a change.)
wait_output() {
	local t=$1 want=$2 i
	shift 2
	for ((i = 0; i < t * 10; i++)); do
		[ "$("$@" 2>/dev/null)" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

# A dummy netdev with an IPv4 address: the cheapest place for a loopback
# RDMA device.  add_dummy NAME IP [MTU]
add_dummy() {
	CLEANUP_NETDEVS+=("$1")
	ip link add "$1" type dummy
	ip link set "$1" mtu "${3:-1500}"
	ip addr add "$2/24" dev "$1"
	ip link set "$1" up
}

# add_netns NAME: a network namespace with its loopback up.
add_netns() {
	CLEANUP_NETNS+=("$1")
	ip netns add "$1"
	ip -n "$1" link set lo up
}

# in_ns NS COMMAND...: run COMMAND in the network namespace NS ("-": init_net).
in_ns() {
	local ns=$1
	shift
	if [ "$ns" = - ]; then
		"$@"
	else
		ip netns exec "$ns" "$@"
	fi
}

# add_veth NAME NS IP PEER PEER_NS PEER_IP [MTU]: a veth pair, each end in
# its namespace ("-": init_net) with its /24 address, both up.
add_veth() {
	local n=$1 ns=$2 ip=$3 p=$4 pns=$5 pip=$6 mtu=${7:-1500}
	ip link add "$n" mtu "$mtu" type veth peer name "$p" mtu "$mtu"
	if [ "$ns" = - ]; then
		CLEANUP_NETDEVS+=("$n")
	else
		ip link set "$n" netns "$ns"
	fi
	[ "$pns" = - ] || ip link set "$p" netns "$pns"
	in_ns "$ns" ip addr add "$ip/24" dev "$n"
	in_ns "$pns" ip addr add "$pip/24" dev "$p"
	in_ns "$ns" ip link set "$n" up
	in_ns "$pns" ip link set "$p" up
}

# static_neighbours N NS IP P PNS PIP: each end of a veth pair (as add_veth
# made it) knows the other's MAC for good, so that address resolution (ARP,
# which rxe's modify to RTR waits for) does not depend on a lossy link.
static_neighbours() {
	local n=$1 ns=$2 ip=$3 p=$4 pns=$5 pip=$6 mac pmac
	mac=$(in_ns "$ns" cat "/sys/class/net/$n/address")
	pmac=$(in_ns "$pns" cat "/sys/class/net/$p/address")
	in_ns "$ns" ip neigh replace "$pip" lladdr "$pmac" dev "$n" nud permanent
	in_ns "$pns" ip neigh replace "$ip" lladdr "$mac" dev "$p" nud permanent
}

# rdma_link_add DEV TYPE NETDEV [NS] (loads the driver's module on demand):
# the netdev and the `rdma link add` are in the namespace NS (default
# init_net); ib_core's shared mode shows the device in every namespace.
rdma_link_add() {
	CLEANUP_LINKS+=("$1")
	in_ns "${4:--}" rdma link add "$1" type "$2" netdev "$3"
	wait_for 10 test -e "/sys/class/infiniband/$1" ||
		fail "$1 did not appear in /sys/class/infiniband"
}

# roce_gid DEV IPV4: the index of DEV's RoCE v2 GID for the address IPV4
# (it appears once the address is up, from a workqueue: waits for it).
roce_gid_now() {
	ibv_devinfo -v -d "$1" |
		sed -n "s/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*::ffff:${2//./\\.}, RoCE v2\$/\1/p" |
		head -1 | grep .
}
roce_gid() {
	wait_for 10 roce_gid_now "$1" "$2" || {
		ibv_devinfo -v -d "$1" | grep GID >&2
		return 1
	}
	roce_gid_now "$1" "$2"
}

# listening NS PORT: a TCP socket listens on PORT in NS.
listening() {
	[ -n "$(in_ns "$1" ss -Hltn "sport = :$2")" ]
}

# cm_listening SRV_IP: an rdma_cm ID listens on SRV_IP, or SRV_IP:PORT (any namespace).
cm_listening() { # IP or IP:PORT
	rdma resource show cm_id | grep -q "state LISTEN .*src-addr $1[: ]"
}

# server_client SRV_NS SRV_IP CLI_NS SERVER_CMD... -- CLIENT_CMD...: the
# server and client of a tool that meet over TCP port 18515 (perftest,
# ibv_*_pingpong), each run in its namespace with a time limit; the client
# is given SRV_IP last, once the server listens.  Prints the client's
# output, and the server's too on failure.  With SERVER_LISTENS=rdma_cm,
# the tool meets over rdma_cm instead (rping, ucmatose, udaddy): the
# client starts once an rdma_cm ID listens on SRV_IP (or CM_LISTEN_ADDR:
# perftest's -R server listens on 0.0.0.0).
server_client() {
	local sns=$1 sip=$2 cns=$3 server rc=0
	local -a srv=() cli=() sx=() cx=() ready=()
	shift 3
	while [ "$1" != -- ]; do
		srv+=("$1")
		shift
	done
	shift
	cli=("$@")
	[ "$sns" = - ] || sx=(ip netns exec "$sns")
	[ "$cns" = - ] || cx=(ip netns exec "$cns")
	# (timeout first: its pid is the job's, and it passes a kill on.)
	timeout 120 "${sx[@]}" "${srv[@]}" >/tmp/server.log 2>&1 &
	server=$!
	if [ "${SERVER_LISTENS:-tcp}" = rdma_cm ]; then
		ready=(cm_listening "${CM_LISTEN_ADDR:-$sip}")
	else
		ready=(listening "$sns" 18515)
	fi
	if ! wait_for 60 "${ready[@]}"; then
		kill "$server" 2>/dev/null
		wait "$server"
		cat /tmp/server.log
		echo "${srv[0]} server never listened (${ready[*]})"
		return 1
	fi
	timeout 120 "${cx[@]}" "${cli[@]}" "$sip" >/tmp/client.log 2>&1 || rc=$?
	if [ $rc != 0 ]; then
		kill "$server" 2>/dev/null
		wait "$server"
		cat /tmp/server.log /tmp/client.log
		echo "${cli[0]} client exited $rc"
		return 1
	fi
	if ! wait "$server"; then
		cat /tmp/server.log /tmp/client.log
		echo "${srv[0]} server failed"
		return 1
	fi
	cat /tmp/client.log
}

# perftest_pair SRV_NS SRV_DEV SRV_GIDX SRV_IP CLI_NS CLI_DEV CLI_GIDX TOOL ARGS...:
# a perftest server on SRV_DEV, its TCP side in SRV_NS at SRV_IP, and a
# client on CLI_DEV whose TCP side runs in CLI_NS; prints the client's
# output.  (RoCE: each end names the index of its own RoCE v2 GID.)
#
# perftest times latencies with the CPU's cycle counter, calibrated against
# the clock when it starts; in a starved guest (a debug kernel under TCG,
# another guest on the same CPUs) the calibration can fail ("Correlation
# coefficient r^2 < 0.9") and every figure reads inf.  Such a run says
# nothing of the device: it is run again, three times at most.
perftest_pair() {
	perftest_calibrated perftest_pair_once "$@"
}
perftest_pair_once() {
	local sns=$1 sdev=$2 sgid=$3 sip=$4 cns=$5 cdev=$6 cgid=$7 tool=$8
	shift 8
	server_client "$sns" "$sip" "$cns" "$tool" -d "$sdev" -x "$sgid" -F "$@" -- \
		"$tool" -d "$cdev" -x "$cgid" -F "$@"
}

# perftest_calibrated CMD...: run CMD (a perftest run that prints the
# client's output) again, three times at most, while perftest's clock
# calibration fails; print the last run's output and return its status.
perftest_calibrated() {
	local try rc out
	for try in 1 2 3; do
		rc=0
		out=$("$@") || rc=$?
		if [ $rc = 0 ] && { { grep -qF 'Correlation coefficient r^2' <<<"$out" &&
			! perftest_result "$out" >/dev/null; } || perftest_nonsense "$out"; }; then
			echo "(perftest's clock calibration failed, try $try: run again)" >&2
			continue
		fi
		break
	done
	printf '%s\n' "$out"
	return $rc
}

# perftest_nonsense OUTPUT: perftest's result line has a first figure of 0 or inf (its
# cycle counter's calibration failed on a loaded host: seen with rxe's ib_write_bw while
# another build ran, "BW peak 0.00").
perftest_nonsense() {
	perftest_result "$1" | awk '{ exit !($3 == "inf" || $3 + 0 == 0) }'
}

# perftest_value TOOL SIZE OUTPUT: the figure perftest's TOOL printed for
# SIZE (BW average in MB/s, or typical latency in us; empty if none).
perftest_value() {
	case $1 in
	*_lat) awk -v s="$2" '$1 == s && NF >= 6 { v = $5 } END { print v }' <<<"$3" ;;
	*) awk -v s="$2" '$1 == s && NF >= 5 { v = $4 } END { print v }' <<<"$3" ;;
	esac
}

# iperf3_figure OUTPUT: what the receiver took in, in MB/s, from an iperf3
# client's JSON report (-J), TCP or UDP.
iperf3_figure() {
	python3 -c '
import json, sys
text = sys.stdin.read()
report, _ = json.JSONDecoder().raw_decode(text[text.index("{"):])
print("%.2f" % (report["end"]["sum_received"]["bits_per_second"] / 8 / 2**20))
' <<<"$1"
}

# qperf_latency OUTPUT: the latency qperf printed, in us.
qperf_latency() {
	awk '$1 == "latency" && $2 == "=" {
		v = $3; u = $4
		if (u == "ns") v /= 1000; else if (u == "ms") v *= 1000; else if (u == "sec") v *= 1000000
		printf "%.2f\n", v
	}' <<<"$1" | grep .
}

# perftest_result OUTPUT: perftest's last result line (size, iterations, figures...).
perftest_result() {
	awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ { l = $0 } END { print l }' <<<"$1" | grep .
}

# ibv_devices lists DEV.
ibv_lists() {
	ibv_devices | awk 'NR > 2 { print $1 }' | grep -qx "$1"
}

# perftest_loopback DEV IP TOOL ARGS...: run a perftest server and a client
# against it on the same device; print the client's output (run again when
# the clock calibration fails, as perftest_pair).
perftest_loopback() {
	perftest_calibrated perftest_loopback_once "$@"
}
perftest_loopback_once() {
	local dev=$1 ip=$2 tool=$3 i
	shift 3
	timeout 120 "$tool" -d "$dev" -F "$@" >/tmp/perftest-server.log 2>&1 &
	local server=$!
	for ((i = 0; i < 50; i++)); do
		sleep 0.2
		if timeout 120 "$tool" -d "$dev" -F "$@" "$ip" >/tmp/perftest-client.log 2>&1; then
			wait "$server" || { cat /tmp/perftest-server.log; return 1; }
			cat /tmp/perftest-client.log
			return 0
		fi
		grep -q "Couldn't connect\|Unable to open file descriptor for socket connection" \
			/tmp/perftest-client.log || break
	done
	kill "$server" 2>/dev/null || true
	cat /tmp/perftest-server.log /tmp/perftest-client.log
	return 1
}

# The kernel log's reports of a broken kernel (kept in step with qemu/run).
KERNEL_PROBLEMS='(Oops|BUG:|WARNING:|KASAN:|UBSAN:|kernel BUG|general protection fault|Kernel panic|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked|rcu: INFO|unreferenced object|Call Trace:|RIP: )'

# unload_modules MODULE...: unload each driver module, as after a fresh
# boot; fails the test if one stays loaded (a device of it still exists).
unload_modules() {
	local m
	for m in "$@"; do
		modprobe -r "$m" 2>/dev/null || true
		! grep -q "^$m " /proc/modules || fail "cannot unload $m: $(rdma link show)"
	done
}

# ferroce_add DEV NETDEV [NS]: create a ferroce device (loads the module on
# demand), on a netdev of the namespace NS (default init_net), and note the
# objects kernel users hold on it right away (res_baseline).
ferroce_add() {
	rdma_link_add "$1" ferroce "$2" "${3:--}"
	res_baseline "$1"
}

# ferroce_pair NSA IPA NSB IPB: the namespaces NSA and NSB joined by a veth
# (NSA0 with IPA, NSB0 with IPB), ferroce1 on NSA0 and ferroce2 on NSB0;
# their RoCE v2 GIDs of those addresses in G1 and G2.
ferroce_pair() {
	add_netns "$1"
	add_netns "$3"
	add_veth "${1}0" "$1" "$2" "${3}0" "$3" "$4"
	ferroce_add ferroce1 "${1}0" "$1"
	ferroce_add ferroce2 "${3}0" "$3"
	G1=$(roce_gid ferroce1 "$2") || fail "ferroce1 has no RoCE v2 GID for $2"
	G2=$(roce_gid ferroce2 "$4") || fail "ferroce2 has no RoCE v2 GID for $4"
}

# Kernel users hold objects on every device from its creation (ib_core's MAD
# layer: a PD, a CQ and QP1), so tests that check for leftovers compare the
# counts of `rdma resource show DEV` with those noted at creation.
declare -A RES_BASE
# res_count DEV TYPE: how many TYPE (pd cq qp cm_id mr ctx srq) objects DEV has.
res_count() {
	rdma resource show "$1" | grep -o " $2 [0-9]*" | awk '{ print $2 }'
}
res_baseline() {
	local t
	for t in pd cq qp mr ctx srq; do
		RES_BASE[$1.$t]=$(res_count "$1" $t)
	done
}
# res_at_baseline DEV TYPE...: whether DEV is back to its creation-time counts.
res_at_baseline() {
	local dev=$1 t
	shift
	for t in "$@"; do
		[ "$(res_count "$dev" "$t")" = "${RES_BASE[$dev.$t]}" ] || return 1
	done
}

# port_field DEV FIELD: a field of port 1 in `ibv_devinfo -v` (e.g. state, active_mtu).
port_field() {
	ibv_devinfo -v -d "$1" | awk -v f="$2:" '$1 == f { print $2; exit }'
}

# dev_field DEV FIELD: a device-level field of `ibv_devinfo -v` (e.g. max_qp).
dev_field() {
	ibv_devinfo -v -d "$1" | awk -v f="$2:" '$1 == f { print $2; exit }'
}

# pyverbs_suite DEV MODULE: run rdma-core's pyverbs tests of MODULE (e.g.
# test_cq) on DEV.  Tests that fail only because they need a verb ferroce does
# not support yet (EOPNOTSUPP, errno 95) count as skipped and are listed with
# that reason; any other failure fails the test, unless it is one of the
# TEST=REASON arguments (known differences, each with its reason).
pyverbs_suite() { # DEV MODULE [TEST=REASON...]
	local dev=$1 module=$2 T=/tmp/pyverbs-tests out
	[ -d /usr/share/doc/rdma-core/tests ] || skip "python3-pyverbs tests not installed"
	if [ ! -d $T ]; then
		cp -r /usr/share/doc/rdma-core/tests $T
		gunzip -f $T/*.gz 2>/dev/null || true
	fi
	out=$(cd /tmp && /usr/bin/python3 $T/run_tests.py --dev "$dev" -v -k "tests.$module." 2>&1)
	shift 2
	/usr/bin/python3 - "$out" "$@" <<'PY'
import re, sys
out = sys.argv[1]
known = dict(a.split("=", 1) for a in sys.argv[2:])
# unittest -v: "name (tests.module.Class.name)\nDoc ... ok" and a traceback per error.
results = re.findall(r"^(\w+) \((tests\.[\w.]+)\)(?:\n.*?| )\.\.\. (ok|skipped.*|ERROR|FAIL)$", out, re.M)
ran = re.search(r"^Ran (\d+) tests?", out, re.M)
blocks = re.split(r"^={50,}\n", out, flags=re.M)
why = {}
for b in blocks[1:]:
    m = re.match(r"(ERROR|FAIL): (\w+) \(", b)
    if m:
        why[m.group(2)] = b
bad = 0
for name, full, res in results:
    if res == "ok":
        print(f"  ok    {name}")
    elif res.startswith("skipped"):
        print(f"  skip  {name}: {res[len('skipped '):]}")
    elif name in known:
        print(f"  skip  {name}: {known[name]}")
    elif "Errno: 95" in why.get(name, "") or "EOPNOTSUPP" in why.get(name, ""):
        verb = re.findall(r"PyverbsRDMAError: ([^.]*)", why[name])
        print(f"  skip  {name}: needs a verb ferroce lacks yet ({verb[-1] if verb else 'EOPNOTSUPP'})")
    else:
        bad += 1
        print(f"  FAIL  {name}\n{why.get(name, '')}")
if not results or not ran or int(ran.group(1)) != len(results):
    print(out)
    print(f"parsed {len(results)} results of {ran.group(1) if ran else '?'} tests")
    sys.exit(1)
print(f"  {ran.group(0)}: {sum(r[2] == 'ok' for r in results)} ok")
sys.exit(1 if bad else 0)
PY
}

# pyverbs_vs_rxe [--v2-gid] RUN_TESTS... -- [--known TEST=REASON | --different TEST=REASON]...:
# rdma-core's whole pyverbs suite (the command RUN_TESTS..., a run_tests.py)
# on rxe0 and then on ferroce0 in this guest, each device on a dummy netdev of
# its own with an IPv4 address (where rdma_cm's tests bind, if they find the
# netdev), and the two runs compared by progs/pyverbs-compare.py with the lists
# given: no failure on ferroce, and every test ok on rxe ok on ferroce, but for
# the listed differences.  --v2-gid runs the suite on the device's RoCE v2 GID
# of that address (--gid) rather than on the first GID whose netdev has an
# address.  The logs stay in /tmp/TESTNAME-DEV.log.
pyverbs_vs_rxe() {
	local -a run=() gid=()
	local dev ip g start log v2=
	[ "$1" != --v2-gid ] || { v2=1; shift; }
	while [ "$1" != -- ]; do
		run+=("$1")
		shift
	done
	shift
	add_dummy fpy0 10.81.0.1
	add_dummy fpy1 10.81.1.1
	rdma_link_add rxe0 rxe fpy0
	ferroce_add ferroce0 fpy1
	for dev in rxe0 ferroce0; do
		start=$SECONDS
		log=/tmp/$(basename "$0" .sh)-$dev.log
		if [ -n "$v2" ]; then
			ip=10.81.0.1
			[ $dev = rxe0 ] || ip=10.81.1.1
			g=$(roce_gid $dev $ip) || fail "$dev has no RoCE v2 GID for $ip"
			gid=(--gid "$g")
		fi
		# (Unbuffered: a test's output must not sit in a buffer that the
		# processes later tests fork inherit and print again.)
		(cd /tmp && timeout 900 env PYTHONUNBUFFERED=1 "${run[@]}" --dev "$dev" "${gid[@]}" -v \
			>"$log" 2>&1) || true
		echo "  $dev ${gid[*]}: $(grep -m1 '^Ran ' "$log" || echo 'no result'), $((SECONDS - start)) s"
	done
	/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/progs/pyverbs-compare.py" \
		"/tmp/$(basename "$0" .sh)-rxe0.log" "/tmp/$(basename "$0" .sh)-ferroce0.log" "$@"
}

# port_counter DEV NAME: the counter NAME of DEV's port 1 (`rdma statistic`),
# e.g. rcvd_pkts; fails if the port has no such counter.
port_counter() {
	rdma statistic show link "$1/1" |
		awk -v c="$2" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }' | grep .
}

# ferroce_over_veth NS_A IP_A DEV_A NS_B IP_B DEV_B: two namespaces joined by a
# veth (NS_A0 and NS_B0, static neighbours), a ferroce device on each end,
# each with its RoCE v2 GID up.
ferroce_over_veth() {
	add_netns "$1"
	add_netns "$4"
	add_veth "${1}0" "$1" "$2" "${4}0" "$4" "$5"
	static_neighbours "${1}0" "$1" "$2" "${4}0" "$4" "$5"
	ferroce_add "$3" "${1}0" "$1"
	ferroce_add "$6" "${4}0" "$4"
	roce_gid "$3" "$2" >/dev/null || fail "$3 has no RoCE v2 GID"
	roce_gid "$6" "$5" >/dev/null || fail "$6 has no RoCE v2 GID"
}

# no_objects_left SECONDS DEV...: each DEV's QPs, CQs, MRs and PDs are back at
# their creation-time counts within SECONDS, or the test fails naming them.
no_objects_left() {
	local secs=$1 d t
	shift
	for d in "$@"; do
		for t in qp cq mr pd; do
			wait_for "$secs" res_at_baseline "$d" $t ||
				fail "$d: $t objects left: $(rdma resource show "$d")"
		done
	done
}

# Two guests (qemu/pair): FERROCE_PAIR_ROLE is a or b, FERROCE_PAIR_SELF and
# FERROCE_PAIR_PEER the two addresses on the link between them.
pair_role() { echo "${FERROCE_PAIR_ROLE:?not in a qemu/pair guest}"; }

# pair_link: the NIC of the link between the guests, renamed fab0, up with
# this guest's address (idempotent).
pair_link() {
	local dev
	[ -e /sys/class/net/fab0 ] && return 0
	dev=$(ip -o link | awk -v m="${FERROCE_PAIR_MAC:?}" 'tolower($0) ~ m { sub(":", "", $2); print $2; exit }')
	[ -n "$dev" ] || fail "no NIC with the pair link's MAC $FERROCE_PAIR_MAC"
	ip link set "$dev" down
	ip link set "$dev" name fab0
	ip addr add "$FERROCE_PAIR_SELF/24" dev fab0
	ip link set fab0 up
}

# pair_sync NAME [VALUE]: wait (up to FERROCE_PAIR_WAIT seconds, default
# 600) until the other guest reaches the point NAME too; both exchange a
# VALUE (default 0) over TCP port 19000 of the link, and each prints the
# other's.  Guest a listens, b calls until a answers.  Fails if the two
# guests name different points (they are out of step).
pair_sync() {
	local name=$1 value=${2:-0}
	python3 - "$(pair_role)" "$FERROCE_PAIR_SELF" "$FERROCE_PAIR_PEER" "$name" "$value" \
		"${FERROCE_PAIR_WAIT:-600}" <<'PY'
import socket, sys, time
role, me, peer, name, value, wait = sys.argv[1:]
deadline = time.time() + int(wait)
mine = f"{name} {value}".encode()

def exchange(c):
    c.settimeout(max(1, deadline - time.time()))
    c.sendall(mine + b"\n")
    got = b""
    while not got.endswith(b"\n"):
        b = c.recv(4096)
        if not b:
            break
        got += b
    # (A point's name may hold spaces, its value none.)
    n, _, v = got.decode().strip().rpartition(" ")
    if n != name:
        sys.exit(f"pair_sync: this guest is at '{name}', the other at '{n}'")
    print(v)

if role == "a":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((me, 19000))
    s.listen(1)
    s.settimeout(max(1, deadline - time.time()))
    try:
        c, _ = s.accept()
    except socket.timeout:
        sys.exit(f"pair_sync: the other guest never reached '{name}'")
    # Closed before answering: b's call for the next point cannot reach
    # this point's listener.
    s.close()
    exchange(c)
else:
    while True:
        try:
            c = socket.create_connection((peer, 19000), timeout=2)
            break
        except OSError:
            if time.time() > deadline:
                sys.exit(f"pair_sync: the other guest never reached '{name}'")
            time.sleep(0.5)
    exchange(c)
PY
}

# pair_run SERVER_ROLE LABEL READY SERVER_CMD... [-- CLIENT_CMD...]: a
# client/server tool across the two guests: the guest in SERVER_ROLE runs
# SERVER_CMD; once READY says it listens ("tcp" for perftest's and the
# pingpongs' port 18515, "rdma_cm" for an rdma_cm listener on this guest's
# address), the other guest runs CLIENT_CMD (default: SERVER_CMD) with the
# server's address last.  Both print their tool's output; each fails if its
# own side failed, and the guests meet at the end so that a failure on one
# side does not leave the other waiting.
pair_run() {
	local srole=$1 label=$2 ready=$3 pid rc=0
	local -a srv=() cli=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		srv+=("$1")
		shift
	done
	if [ $# -gt 0 ]; then
		shift
		cli=("$@")
	else
		cli=("${srv[@]}")
	fi
	if [ "$(pair_role)" = "$srole" ]; then
		timeout 120 "${srv[@]}" >/tmp/pair-server.log 2>&1 &
		pid=$!
		if [ "$ready" = tcp ]; then
			wait_for 60 listening - 18515 || rc=1
		else
			wait_for 60 cm_listening "$FERROCE_PAIR_SELF" || rc=1
		fi
		FERROCE_PAIR_WAIT=150 pair_sync "up:$label" $rc >/dev/null || rc=1
		if [ $rc = 0 ]; then
			wait $pid || rc=$?
		else
			kill $pid 2>/dev/null
			wait $pid
		fi
		cat /tmp/pair-server.log
	else
		[ "$(FERROCE_PAIR_WAIT=150 pair_sync "up:$label")" = 0 ] || rc=1
		if [ $rc = 0 ]; then
			timeout 120 "${cli[@]}" "$FERROCE_PAIR_PEER" >/tmp/pair-client.log 2>&1 || rc=$?
			cat /tmp/pair-client.log
		fi
	fi
	FERROCE_PAIR_WAIT=150 pair_sync "done:$label" $rc >/dev/null
	[ $rc = 0 ] || fail "$label: $([ "$(pair_role)" = "$srole" ] && echo server || echo client) exited $rc"
	echo "ok $label"
}

# pair_tools DEV GIDX: stock tools across the two guests on this guest's
# DEV (its RoCE v2 GID index GIDX), each guest serving in turn: perftest
# WRITE, READ, SEND (RC and UD) and atomics, ibv_rc_pingpong and
# ibv_ud_pingpong checking their payload (--chk), rping verifying every
# buffer (-V) through rdma_cm.
pair_tools() {
	local dev=$1 gid=$2 server
	for server in a b; do
		pair_run $server "ib_write_bw, $server serving" tcp ib_write_bw -d "$dev" -x "$gid" -F -s 65536 -n 200
		pair_run $server "ib_read_bw, $server serving" tcp ib_read_bw -d "$dev" -x "$gid" -F -s 65536 -n 100
		pair_run $server "ib_send_bw, $server serving" tcp ib_send_bw -d "$dev" -x "$gid" -F -s 65536 -n 200
		pair_run $server "ib_send_bw UD, $server serving" tcp ib_send_bw -d "$dev" -x "$gid" -F -c UD -s 1024 -D 5
		pair_run $server "ib_atomic_bw, $server serving" tcp ib_atomic_bw -d "$dev" -x "$gid" -F -n 500
		pair_run $server "ibv_rc_pingpong --chk, $server serving" tcp \
			ibv_rc_pingpong -d "$dev" -g "$gid" -n 200 -s 4096 -c
		pair_run $server "ibv_ud_pingpong --chk, $server serving" tcp \
			ibv_ud_pingpong -d "$dev" -g "$gid" -n 200 -s 1024 -c
	done
	for server in a b; do
		pair_run $server "rping -V, $server serving" rdma_cm \
			rping -s -V -C 200 -S 4096 -a "$FERROCE_PAIR_SELF" -- rping -c -V -C 200 -S 4096 -a
	done
}

# pair_integrity LABEL ARGS...: the integrity program (built in
# /tmp/integrity) with side a on guest a and side b on guest b, both given
# ARGS (they meet over TCP at guest a's address); each guest fails if
# either side failed.
pair_integrity() {
	local label=$1 role a_addr=$FERROCE_PAIR_SELF rc=0 peer
	shift
	role=$(pair_role)
	[ "$role" = a ] || a_addr=$FERROCE_PAIR_PEER
	pair_sync "integrity: $label" >/dev/null || fail "integrity $label: the other guest is lost"
	timeout 300 /tmp/integrity -H "$role,$a_addr" "$@" >/tmp/integrity-$role.log 2>&1 || rc=$?
	cat /tmp/integrity-$role.log
	peer=$(FERROCE_PAIR_WAIT=$((300 * SLOWDOWN + 60)) pair_sync "integrity done: $label" $rc) ||
		fail "integrity $label: the other guest is lost"
	[ $rc = 0 ] || fail "integrity $label: this guest's side exited $rc"
	[ "$peer" = 0 ] ||
		fail "integrity $label: the other guest's side exited $peer (its output is in its part)"
	echo "ok integrity $label"
}

# NVMe over Fabrics on RDMA (the kernel's target, nvmet, and host,
# nvme-rdma), for 58, pair/30 and the bench.  One subsystem, NVME_NQN, per
# guest; cleanup tears it down before the links go.
NVME_CFG=/sys/kernel/config/nvmet
NVME_PORT=4420
NVME_NQN=nqn.2026-11.org.ferroce:selftest

# nvmet_export ADDR: export a 1 GiB memory-backed null_blk (it keeps what
# is written; its pages come as they are written) as namespace 1 of NVME_NQN
# on an RDMA port at ADDR:4420; returns once nvmet-rdma listens there.
nvmet_export() {
	local addr=$1 sub
	sub=$NVME_CFG/subsystems/$NVME_NQN
	must modprobe null_blk nr_devices=1 memory_backed=1 gb=1 bs=4096 >/dev/null
	wait_for 10 test -b /dev/nullb0 || fail "null_blk made no /dev/nullb0"
	must modprobe nvmet_rdma >/dev/null
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir "$sub"
	echo 1 >"$sub/attr_allow_any_host"
	mkdir "$sub/namespaces/1"
	echo /dev/nullb0 >"$sub/namespaces/1/device_path"
	echo 1 >"$sub/namespaces/1/enable"
	mkdir "$NVME_CFG/ports/1"
	echo rdma >"$NVME_CFG/ports/1/addr_trtype"
	echo ipv4 >"$NVME_CFG/ports/1/addr_adrfam"
	echo "$addr" >"$NVME_CFG/ports/1/addr_traddr"
	echo $NVME_PORT >"$NVME_CFG/ports/1/addr_trsvcid"
	ln -s "$sub" "$NVME_CFG/ports/1/subsystems/$NVME_NQN"
	wait_for 10 cm_listening "$addr" ||
		{ rdma resource show cm_id; fail "nvmet-rdma does not listen on $addr:$NVME_PORT"; }
	echo "nvmet: $NVME_NQN exports /dev/nullb0 over rdma at $addr:$NVME_PORT"
}

# nvme_namespace_disk: the block device of NVME_NQN's namespace 1 on this
# host (its parent, the controller or with multipath the subsystem, names
# the NQN).
nvme_namespace_disk() {
	local n
	for n in /sys/block/nvme*n1; do
		[ "$(cat "$n/device/subsysnqn" 2>/dev/null)" = "$NVME_NQN" ] &&
			echo "/dev/${n##*/}" && return 0
	done
	return 1
}

# nvme_connect ADDR: connect this host to NVME_NQN at ADDR:4420 over RDMA
# (nvme-cli) with two I/O queues; sets NVME_DEV to the namespace's disk.
nvme_connect() {
	local out
	must modprobe nvme_rdma >/dev/null
	out=$(timeout 120 nvme connect -t rdma -a "$1" -s $NVME_PORT -n "$NVME_NQN" -i 2 2>&1) ||
		{ echo "$out"; dmesg | tail -20; fail "nvme connect -t rdma -a $1"; }
	wait_for 20 nvme_namespace_disk >/dev/null || fail "no block device for the namespace of $NVME_NQN"
	NVME_DEV=$(nvme_namespace_disk)
	[ -b "$NVME_DEV" ] || fail "$NVME_DEV is no block device"
	echo "nvme: connected to $NVME_NQN over rdma at $1: $NVME_DEV," \
		"$(($(cat "/sys/block/${NVME_DEV#/dev/}/size") / 2048)) MiB"
}

# nvme_fio_verify NAME FIO_OPTION...: fio writes NVME_DEV and reads every
# block back with its checksum (verify=crc32c), direct I/O through libaio;
# prints what it moved and fails on any error or mismatch.
nvme_fio_verify() {
	local name=$1 out
	shift
	out=$(timeout 600 fio --name="$name" --filename="$NVME_DEV" --direct=1 --ioengine=libaio \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --output-format=terse \
		--terse-version=3 "$@" 2>&1) || { echo "$out"; fail "fio $name"; }
	# terse v3: field 3 the job's name, 5 its error, 6 and 7 KiB read and
	# KiB/s (the reads include the verification's), 47 and 48 the writes'.
	echo "$out" | awk -F';' -v n="$name" '$3 == n {
		printf "fio %s: error %s; wrote %d KiB (%d KiB/s), read and checked %d KiB (%d KiB/s)\n",
			n, $5, $47, $48, $6, $7
		ok = $5 == 0 && $6 > 0 && $47 > 0 }
		END { exit !ok }' || { echo "$out"; fail "fio $name did not verify"; }
}

# nvme_teardown: disconnect NVME_NQN, remove the target's port and
# subsystem, unload the NVMe and null_blk modules (what exists of them;
# never fails).
nvme_teardown() {
	local sub=$NVME_CFG/subsystems/$NVME_NQN
	nvme disconnect -n "$NVME_NQN" >/dev/null 2>&1 || true
	rm -f "$NVME_CFG/ports/1/subsystems/$NVME_NQN"
	rmdir "$NVME_CFG/ports/1" 2>/dev/null || true
	echo 0 2>/dev/null >"$sub/namespaces/1/enable" || true
	rmdir "$sub/namespaces/1" "$sub" 2>/dev/null || true
	modprobe -r nvme_rdma nvmet_rdma nvmet null_blk 2>/dev/null || true
}
