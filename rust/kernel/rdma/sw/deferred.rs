// SPDX-License-Identifier: GPL-2.0

//! A software device's deferred work: one `struct timer_list` per queue pair, whose expiry calls
//! the driver's [`SoftDriver::qp_timer`] in softirq context, and one `struct work_struct`, whose
//! run calls [`SoftDriver::qp_work`] in process context.
//!
//! The work item is for what cannot be done where it is asked for: a kernel user may post work
//! with interrupts disabled (ib_mad does, under its send queue's lock), where nothing may be
//! transmitted.
//!
//! A reliable transport times what it waits for (acknowledgements, RNR back-off). The timer
//! lives in the layer's part of the QP object ([`Deferred`] is a software driver's
//! [`Driver::QpDeferred`](crate::rdma::Driver::QpDeferred)), so the callback finds the QP
//! without any help from the driver, and the QP's destroy op shuts it down
//! (`timer_shutdown_sync`) after the driver's destroy hook and before the driver's data is
//! dropped: a callback never sees a QP being freed, and nothing re-arms it afterwards. The work
//! item likewise: it is disabled (`disable_work_sync`) after the timer, as either may start the
//! other.
//!
//! C headers: [`include/linux/timer.h`](srctree/include/linux/timer.h),
//! [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use super::SoftDriver;
use crate::rdma::{
    object::{Object, QpKind},
    qp::{DeferredWork, Qp, QpCore},
};
use crate::{bindings, types::Opaque};

/// A software device's timer and work item in each of its QPs.
///
/// # Invariants
///
/// `timer` and `work` are initialised (by [`DeferredWork::init`]) before the QP is published,
/// i.e. before any driver code can arm or queue them, and shut down before the QP is freed.
pub struct Deferred {
    timer: Opaque<bindings::timer_list>,
    work: Opaque<bindings::work_struct>,
}

// SAFETY: The timer and the work item are only used through the kernel's timer and workqueue
// APIs, which serialise themselves.
unsafe impl Send for Deferred {}
// SAFETY: As above.
unsafe impl Sync for Deferred {}

impl<T: SoftDriver> DeferredWork<T> for Deferred {
    fn new() -> Self {
        Deferred {
            timer: Opaque::uninit(),
            work: Opaque::uninit(),
        }
    }

    unsafe fn init(qp: &Qp<T>) {
        let d = &qp.core().deferred;
        // SAFETY: The timer and the work item are in place for the QP's life (the caller's
        // promise); lockdep gets one class for every QP timer and one for every QP work item
        // (static keys and names in the helpers).
        unsafe {
            bindings::rdma_qp_timer_setup(d.timer.get(), Some(timer_callback::<T>));
            bindings::rdma_qp_work_setup(d.work.get(), Some(work_callback::<T>));
        }
    }

    unsafe fn shutdown(&self) {
        // SAFETY: Initialised (the caller's promise). The timer goes first: its callback may
        // queue the work item, which is then cancelled; a work item running meanwhile may arm
        // the timer, which does nothing once it is shut down.
        unsafe {
            bindings::timer_shutdown_sync(self.timer.get());
            bindings::disable_work_sync(self.work.get());
        }
    }
}

/// Where the field at `field` (an offset into [`Deferred`]) of a QP of `T` lies in the QP.
fn offset_in_qp<T: SoftDriver>(field: usize) -> usize {
    core::mem::offset_of!(Object<T, QpKind>, core)
        + core::mem::offset_of!(QpCore<T>, deferred)
        + field
}

/// The timer's expiry: the QP is alive (its destroy op shuts the timer down first).
///
/// # Safety
///
/// Called by the timer core for the timer of a live `Qp<T>`, set up by `init` for `T`.
unsafe extern "C" fn timer_callback<T: SoftDriver>(timer: *mut bindings::timer_list) {
    let offset = offset_in_qp::<T>(core::mem::offset_of!(Deferred, timer));
    // SAFETY: The timer is the `core.deferred.timer` field of a live `Qp<T>` (`init` is the
    // only setup of this callback); `Opaque` is `repr(transparent)`.
    let qp = unsafe { &*timer.cast::<u8>().sub(offset).cast::<Qp<T>>() };
    T::qp_timer(qp);
}

/// The work item's run: the QP is alive (its destroy op disables the work item first).
///
/// # Safety
///
/// Called by the workqueue for the work item of a live `Qp<T>`, set up by `init` for `T`.
unsafe extern "C" fn work_callback<T: SoftDriver>(work: *mut bindings::work_struct) {
    let offset = offset_in_qp::<T>(core::mem::offset_of!(Deferred, work));
    // SAFETY: The work item is the `core.deferred.work` field of a live `Qp<T>` (`init` is the
    // only setup of this callback); `Opaque` is `repr(transparent)`.
    let qp = unsafe { &*work.cast::<u8>().sub(offset).cast::<Qp<T>>() };
    T::qp_work(qp);
}

impl<T: SoftDriver> Qp<T> {
    /// Queues the QP's work item ([`SoftDriver::qp_work`] runs soon, in process context),
    /// unless it is queued already. Any context. Does nothing once the QP is being destroyed.
    pub fn queue_work(&self) {
        // SAFETY: The work item is initialised while the QP is reachable (type invariant of
        // `Deferred`).
        unsafe { bindings::rdma_qp_work_queue(self.core().deferred.work.get()) };
    }

    /// Arms the QP's timer to expire in `usecs` microseconds (at least one tick), or moves an
    /// armed one. Any context. Does nothing once the QP is being destroyed.
    pub fn arm_timer(&self, usecs: u32) {
        // SAFETY: The timer is initialised while the QP is reachable (type invariant of
        // `Deferred`).
        unsafe { bindings::rdma_qp_timer_arm(self.core().deferred.timer.get(), usecs) };
    }

    /// Whether the timer is armed and has not expired. Read under the lock that arming and
    /// disarming take, it tells a callback that found it armed again (it expired meanwhile and
    /// waited for that lock) that this expiry is stale.
    pub fn timer_pending(&self) -> bool {
        // SAFETY: As for `arm_timer`.
        unsafe { bindings::rdma_qp_timer_pending(self.core().deferred.timer.get()) }
    }

    /// Disarms the timer; a callback already running is not waited for. Any context.
    pub fn cancel_timer(&self) {
        // SAFETY: As for `arm_timer`.
        unsafe { bindings::timer_delete(self.core().deferred.timer.get()) };
    }
}
