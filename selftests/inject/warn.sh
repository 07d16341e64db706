#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Not a real test: makes the guest kernel WARN (through LKDTM) so that the
# harness's own check can show that `make test` fails on a kernel warning.
. "$(dirname "$0")/../lib.sh"

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo WARNING >/sys/kernel/debug/provoke-crash/DIRECT
