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
cleanup() {
	local rc=$? l n
	set +e
	for l in "${CLEANUP_LINKS[@]}"; do
		[ -e "/sys/class/infiniband/$l" ] && rdma link delete "$l" 2>/dev/null
	done
	for n in "${CLEANUP_NETDEVS[@]}"; do
		ip link del "$n" 2>/dev/null
	done
	exit $rc
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
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
	local t=$1 i
	shift
	for ((i = 0; i < t * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
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

# rdma_link_add DEV TYPE NETDEV (loads the driver's module on demand).
rdma_link_add() {
	CLEANUP_LINKS+=("$1")
	rdma link add "$1" type "$2" netdev "$3"
	wait_for 10 test -e "/sys/class/infiniband/$1" ||
		fail "$1 did not appear in /sys/class/infiniband"
}

# ibv_devices lists DEV.
ibv_lists() {
	ibv_devices | awk 'NR > 2 { print $1 }' | grep -qx "$1"
}

# perftest_loopback DEV IP TOOL ARGS...: run a perftest server and a client
# against it on the same device; print the client's output.
perftest_loopback() {
	local dev=$1 ip=$2 tool=$3 i rc
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

# ferroce_add DEV NETDEV: create a ferroce device (loads the module on demand)
# and note the objects kernel users hold on it right away (res_baseline).
ferroce_add() {
	rdma_link_add "$1" ferroce "$2"
	res_baseline "$1"
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
