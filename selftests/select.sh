# SPDX-License-Identifier: GPL-2.0
#
# Which tests a run takes, and how long each may run: sourced by
# selftests/run, selftests/run-pair (in the guest) and selftests/run-host.

# selected_tests DIR [PATTERN...]: DIR/*.sh in order, all of them or those
# whose names contain one of the patterns; one path a line.
selected_tests() {
	local dir=$1 t p name
	shift
	for t in "$dir"/*.sh; do
		[ -e "$t" ] || continue
		name=$(basename "$t" .sh)
		if [ $# = 0 ]; then
			echo "$t"
			continue
		fi
		for p in "$@"; do
			case "$name" in *"$p"*) echo "$t"; break ;; esac
		done
	done
}

# test_limit FILE DEFAULT: the seconds FILE may run: its "# timeout: SECONDS"
# line if longer than DEFAULT, three times that on the debug kernel (KASAN,
# lockdep: /proc/lockdep), which runs about 3x slower; or there, its
# "# debug-timeout: SECONDS" line if it has one (allocation-heavy tests:
# kmemleak and KASAN slow every allocation down far more).
test_limit() {
	local limit debug
	limit=$(sed -n 's/^# timeout: *\([0-9][0-9]*\).*/\1/p' "$1" | head -n 1)
	limit=${limit:-$2}
	[ "$limit" -ge "$2" ] || limit=$2
	if [ -e /proc/lockdep ]; then
		debug=$(sed -n 's/^# debug-timeout: *\([0-9][0-9]*\).*/\1/p' "$1" | head -n 1)
		limit=${debug:-$((limit * 3))}
	fi
	echo "$limit"
}
