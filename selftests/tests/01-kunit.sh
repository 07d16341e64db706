#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every KUnit suite that ran at boot (the kernel crate's doctests among
# them, including kernel::rdma's examples) passed.
. "$(dirname "$0")/../lib.sh"

results=$(ls /sys/kernel/debug/kunit/*/results 2>/dev/null || true)
[ -n "$results" ] || fail "no KUnit results in /sys/kernel/debug/kunit"
suites=0
for r in $results; do
	suite=$(basename "$(dirname "$r")")
	suites=$((suites + 1))
	if grep -Eq '^ *not ok ' "$r"; then
		grep -E '^ *not ok ' "$r"
		fail "KUnit suite $suite has failures"
	fi
	grep -Eq '^ok [0-9]+ ' "$r" || fail "KUnit suite $suite has no final result"
	echo "$suite: $(grep -Ec '^ +ok [0-9]+ ' "$r") cases ok"
done
echo "$suites suites ok"
grep -q rust_doctests_kernel <<<"$results" || fail "the kernel crate's doctests did not run"
