// SPDX-License-Identifier: GPL-2.0

//! What code running in a system call may do between steps of long work: the data path
//! executes a send queue in the system call that rang its doorbell.
//!
//! C header: [`include/linux/sched.h`](srctree/include/linux/sched.h)

use crate::bindings;

/// Lets other tasks run if this one has had the CPU long enough (`cond_resched`).
///
/// Only where sleeping is allowed (process context, no spinlock held); elsewhere it is a bug
/// that the kernel reports ("sleeping function called from invalid context").
pub fn cond_resched() {
    // SAFETY: No memory is touched; the context rule is the caller's (see above).
    unsafe { bindings::rdma_cond_resched() }
}

/// Whether the current task has been killed (`fatal_signal_pending(current)`): long work done
/// on its behalf should stop.
pub fn fatal_signal_pending() -> bool {
    // SAFETY: Reads the current task's signal state; valid in any context.
    unsafe { bindings::rdma_fatal_signal_pending() }
}

/// Whether interrupts are disabled on this CPU (`irqs_disabled()`): kernel users may post work
/// under an irq-disabling lock (ib_mad does), where nothing may be transmitted.
pub fn irqs_disabled() -> bool {
    // SAFETY: Reads this CPU's interrupt flag; valid in any context.
    unsafe { bindings::rdma_irqs_disabled() }
}

/// Whether this CPU runs an interrupt or a softirq, or has them disabled (`in_interrupt()`):
/// long work asked for there is better left to a worker.
pub fn in_interrupt() -> bool {
    // SAFETY: Reads this CPU's preemption count; valid in any context.
    unsafe { bindings::rdma_in_interrupt() }
}
