#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 1200 (TCG: 100,000 packets built in Python and taken in softirq)
# Packets from the network are hostile.  Two ferroce devices in two
# namespaces over a veth (MTU 9000, so packets of up to 4200 payload bytes
# pass) run an RC connection that progs/fuzz-wire.py drives while its two
# injectors send FERROCE_FUZZ_PACKETS (default 100,000) RoCEv2 packets between
# them: every opcode with boundary values in every field, raw bytes,
# packets aimed at the live connection (its QPs, PSNs, rkeys, buffers),
# datagrams at QP 1, damaged packets, trains of them (UDP GSO datagrams the
# veth passes whole).  Meanwhile a bystander connection
# between the same devices (the integrity program, in a loop) must keep
# every message intact: hostile packets that do not name it change nothing
# for it.  Afterwards:
#   - every UDP datagram to port 4791 of each namespace is accounted for by
#     its device's counters (bad_pkts + no_qp_pkts + rcvd_pkts, where a
#     train taken whole is one datagram of rcvd_train_pkts pieces), and the
#     single packets sent with a bad ICRC are among bad_pkts (the pieces of
#     trains are not: their sender's UDP socket left the checksums to fill
#     in, so the device takes their ICRCs on trust and their transport
#     headers meet its other checks instead);
#   - a fresh integrity run passes on the same devices, and rdma_cm still
#     connects them (rping; QP 1 survived the datagrams);
#   - the devices go and the module unloads;
#   - the kernel log is clean (the harness checks it after every test).
#
#   fza: fza0 10.67.0.1   <-veth, MTU 9000->   fzb: fzb0 10.67.0.2
. "$(dirname "$0")/../lib.sh"

PROGS=$(cd "$(dirname "$0")/../progs" && pwd)
PACKETS=${FERROCE_FUZZ_PACKETS:-100000}
SEED=${FERROCE_FUZZ_SEED:-$(date +%s)}
echo "seed $SEED (FERROCE_FUZZ_SEED=$SEED replays it), $PACKETS packets"

add_netns fza
add_netns fzb
add_veth fza0 fza 10.67.0.1 fzb0 fzb 10.67.0.2 9000
static_neighbours fza0 fza 10.67.0.1 fzb0 fzb 10.67.0.2
ferroce_add fza fza0 fza
ferroce_add fzb fzb0 fzb
ga=$(roce_gid fza 10.67.0.1) || fail "fza has no RoCE v2 GID"
gb=$(roce_gid fzb 10.67.0.2) || fail "fzb has no RoCE v2 GID"
cc -O2 -Wall -o /tmp/integrity "$PROGS/integrity.c" -libverbs || fail "cannot build integrity.c"

counter() { # DEV NAME
	rdma statistic show link "$1/1" | tr ' ' '\n' | awk -v c="$2" 'f { print; exit } $0 == c { f = 1 }'
}
taken() { # DEV: datagrams the device was handed (a train taken whole is one)
	echo $(($(counter "$1" bad_pkts) + $(counter "$1" no_qp_pkts) + $(counter "$1" rcvd_pkts) -
		$(counter "$1" rcvd_train_pkts) + $(counter "$1" rcvd_trains)))
}
udp_in() { # NS: UDP datagrams (v4 and v6) delivered in the namespace
	local v4 v6
	v4=$(in_ns "$1" awk '$1 == "Udp:" && $2 ~ /^[0-9]/ { print $2 }' /proc/net/snmp)
	v6=$(in_ns "$1" awk '$1 == "Udp6InDatagrams" { print $2 }' /proc/net/snmp6 2>/dev/null || true)
	echo $((v4 + ${v6:-0}))
}

integrity() { # LABEL ITERATIONS SEED
	/tmp/integrity -s 65536 -t 60 -b fzb -x "$ga" -X "$gb" fza "$2" "$3" >"/tmp/integrity-$1.log" 2>&1
}

# Counted before any traffic, and again once all of it is over.
declare -A udp0 taken0 bad0 trains0
for ns in fza fzb; do
	udp0[$ns]=$(udp_in $ns)
	taken0[$ns]=$(taken $ns)
	bad0[$ns]=$(counter $ns bad_pkts)
	trains0[$ns]=$(counter $ns rcvd_trains)
done

# The bystander: integrity runs back to back until the fuzzing is over.
rm -f /tmp/fuzz-over
(
	i=0
	while [ ! -e /tmp/fuzz-over ]; do
		i=$((i + 1))
		integrity bystander 20 $((SEED + i)) || { echo "bystander run $i failed"; exit 1; }
	done
	echo "bystander: $i integrity runs passed"
) >/tmp/bystander.log 2>&1 &
bystander=$!

out=$(timeout 1000 /usr/bin/python3 "$PROGS/fuzz-wire.py" fza "$ga" 10.67.0.1 fza \
	fzb "$gb" 10.67.0.2 fzb "$PACKETS" "$SEED" 2>&1) || { echo "$out"; fail "fuzz-wire.py"; }
echo "$out"
touch /tmp/fuzz-over
wait $bystander || { cat /tmp/bystander.log /tmp/integrity-bystander.log; fail "the bystander connection failed while hostile packets flew"; }
cat /tmp/bystander.log

injected=$(awk '$1 == "injected" { print $2 }' <<<"$out")
bad_icrc=$(awk '$1 == "bad_icrc" { print $2 }' <<<"$out")
[ "$injected" -ge $((PACKETS * 99 / 100)) ] || fail "only $injected of $PACKETS packets were sent"

# Every datagram to the port reached the device and was counted once.
sleep 2
bad_total=0
for ns in fza fzb; do
	rdma statistic show link "$ns/1"
	udp=$(($(udp_in $ns) - udp0[$ns]))
	got=$(($(taken $ns) - taken0[$ns]))
	bad_total=$((bad_total + $(counter $ns bad_pkts) - bad0[$ns]))
	echo "$ns: $udp UDP datagrams in, $got taken by the device ($(counter $ns rcvd_trains) trains whole)"
	[ "$udp" = "$got" ] || fail "$ns: $udp datagrams arrived but the device counted $got"
	[ "$(counter $ns rcvd_trains)" -gt "${trains0[$ns]}" ] || fail "$ns took no train whole"
done
[ "$bad_total" -ge "$bad_icrc" ] || fail "$bad_icrc packets had a bad ICRC but only $bad_total were counted bad"

# Afterwards the devices work as before.
integrity fresh 50 "$SEED" || { cat /tmp/integrity-fresh.log; fail "a fresh integrity run after the fuzzing"; }
tail -1 /tmp/integrity-fresh.log
out=$(SERVER_LISTENS=rdma_cm server_client fzb 10.67.0.2 fza \
	rping -s -C 10 -S 256 -V -a 10.67.0.2 -- rping -c -C 10 -S 256 -V -a) ||
	{ echo "$out"; fail "rdma_cm no longer connects fza and fzb"; }
echo "rping: connected and moved verified data"
rdma link delete fza
rdma link delete fzb
unload_modules ferroce
echo "100% of $injected hostile packets accounted for; the devices still work; the module unloads"
