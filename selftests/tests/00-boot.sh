#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest runs the kernel that qemu/kernel built, with Rust enabled.
. "$(dirname "$0")/../lib.sh"

[ -n "${FERROCE_KBUILD:-}" ] || fail "FERROCE_KBUILD not set by qemu/run"
want=$(cat "$FERROCE_KBUILD/include/config/kernel.release")
[ "$(uname -r)" = "$want" ] || fail "running $(uname -r), built $want"
grep -qF "\"$(uname -v)\"" "$FERROCE_KBUILD/include/generated/utsversion.h" ||
	fail "running kernel '$(uname -v)' is not the build in $FERROCE_KBUILD"
grep -qx CONFIG_RUST=y "$FERROCE_KBUILD/.config" || fail "kernel built without CONFIG_RUST"
grep -qx CONFIG_INFINIBAND=y "$FERROCE_KBUILD/.config" || fail "ib_core is not built in"
echo "booted $(uname -r) $(uname -v)"
