# SPDX-License-Identifier: GPL-2.0
#
# ferroce: a software RoCEv2 RDMA device in Rust-for-Linux.
#
#   make run            build everything, boot the guest, show the RDMA device;
#                       then two guests, ferroce between them
#   make test           build everything, boot the guest, run all selftests
#   make bench          perftest benchmarks of every soft RDMA device
#   make soak           30 minutes of lossy wire traffic, kills and link flaps
#                       (SOAK_MINUTES=N for another length)
#   make shell          an interactive guest
#   make kernel         only the guest kernel (cached in ~/.cache/ferroce)
#   make module         only ferroce.ko
#   make test-module    only the kernel-verbs test module (selftests/kmod)
#   make provider       only the rdma-core provider (out/provider)
#   make pyverbs        rdma-core v55 with its pyverbs and tests, in place
#                       (out/pyverbs-v55; make test runs that suite)
#   make kernel-series  export the kernel change as a git-am series (out/)
#   make setup          only install the build and test dependencies
#
# FLAVOUR=debug selects the debug kernel (KASAN, lockdep, kmemleak).
# GUESTS=N spreads make test's one-guest selftests over N guests side by side.
# The kernel build (kbuild) reads ./Kbuild, not this file.

export FLAVOUR ?= default
GUESTS ?= 1
LLVM := 1
KERNEL = "$$(qemu/kernel dir)"

.PHONY: all setup kernel module test-module provider pyverbs run test bench soak shell kernel-series clean

all: module provider

setup:
	qemu/setup

kernel: setup
	qemu/kernel build >/dev/null

module: kernel
	$(MAKE) -s -C $(KERNEL) M=$(CURDIR) LLVM=$(LLVM) modules

test-module: kernel
	$(MAKE) -s -C $(KERNEL) M=$(CURDIR)/selftests/kmod LLVM=$(LLVM) modules

provider: setup
	provider/build >/dev/null

pyverbs: provider
	provider/build-pyverbs >/dev/null

run: module provider
	qemu/run -- qemu/demo
	qemu/pair -- qemu/demo-pair

test: module test-module provider pyverbs
	FERROCE_GUESTS=$(GUESTS) selftests/run-host $(TESTS)

bench: module provider
	qemu/bench/run-host

soak: module provider
	mkdir -p out
	FERROCE_SOAK_MINUTES=$${SOAK_MINUTES:-30} qemu/run --timeout $$(( ($${SOAK_MINUTES:-30} + 30) * 60 )) \
		--console out/soak-console.log -- qemu/soak

shell: module provider
	qemu/run --shell

kernel-series: setup
	qemu/kernel series out/kernel-series

clean:
	@if kdir=$$(qemu/kernel dir 2>/dev/null); then \
		$(MAKE) -s -C "$$kdir" M=$(CURDIR) LLVM=$(LLVM) clean; \
		$(MAKE) -s -C "$$kdir" M=$(CURDIR)/selftests/kmod LLVM=$(LLVM) clean; fi
	rm -rf out
