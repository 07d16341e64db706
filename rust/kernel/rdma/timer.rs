// SPDX-License-Identifier: GPL-2.0

//! A QP's deferred work: one `struct timer_list` per queue pair, whose expiry calls the
//! driver's [`Driver::qp_timer`](super::Driver::qp_timer) in softirq context, and one
//! `struct work_struct`, whose run calls [`Driver::qp_work`](super::Driver::qp_work) in process
//! context.
//!
//! The work item is for what cannot be done where it is asked for: a kernel user may post work
//! with interrupts disabled (ib_mad does, under its send queue's lock), where nothing may be
//! transmitted.
//!
//! A reliable transport times what it waits for (acknowledgements, RNR back-off). The timer
//! lives in the layer's part of the QP object, so the callback finds the QP without any help
//! from the driver, and the QP's destroy op shuts it down (`timer_shutdown_sync`) after the
//! driver's destroy hook and before the driver's data is dropped: a callback never sees a QP
//! being freed, and nothing re-arms it afterwards. The work item likewise: it is disabled
//! (`disable_work_sync`) after the timer, as either may start the other.
//!
//! C headers: [`include/linux/timer.h`](srctree/include/linux/timer.h),
//! [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use super::{
    driver::Driver,
    object::{Object, QpKind},
    qp::Qp,
    registry::{Published, Users},
};
use crate::{bindings, types::Opaque};

/// The layer's part of a QP: its registry state, its timer and its work item.
///
/// # Invariants
///
/// `timer` and `work` are initialised (by [`QpCore::init_deferred`]) before the QP is
/// published, i.e. before any driver code can arm or queue them, and shut down before the QP
/// is freed.
pub struct QpCore {
    users: Users,
    timer: Opaque<bindings::timer_list>,
    work: Opaque<bindings::work_struct>,
}

// SAFETY: The timer and the work item are only used through the kernel's timer and workqueue
// APIs, which serialise themselves.
unsafe impl Send for QpCore {}
// SAFETY: As above.
unsafe impl Sync for QpCore {}

impl Published for QpCore {
    fn users(&self) -> &Users {
        &self.users
    }
}

impl QpCore {
    /// The core of a QP published as `users`; its timer is set up in place later.
    pub(crate) fn new(users: Users) -> Self {
        QpCore {
            users,
            timer: Opaque::uninit(),
            work: Opaque::uninit(),
        }
    }

    /// Sets up the timer and the work item of the QP `qp` in place, to call `T::qp_timer` and
    /// `T::qp_work`.
    ///
    /// # Safety
    ///
    /// `qp` must be initialised, never move, and not be published yet; called once.
    pub(crate) unsafe fn init_deferred<T: Driver>(qp: &Qp<T>) {
        // SAFETY: The timer and the work item are in place for the QP's life (the caller's
        // promise); lockdep gets one class for every QP timer and one for every QP work item
        // (static keys and names in the helpers).
        unsafe {
            bindings::rdma_qp_timer_setup(qp.core().timer.get(), Some(timer_callback::<T>));
            bindings::rdma_qp_work_setup(qp.core().work.get(), Some(work_callback::<T>));
        }
    }

    /// Stops the timer and the work item for good: waits for a running callback of either;
    /// later arming or queueing does nothing.
    ///
    /// # Safety
    ///
    /// Both must have been initialised; sleeps.
    pub(crate) unsafe fn shutdown_deferred(&self) {
        // SAFETY: Initialised (the caller's promise). The timer goes first: its callback may
        // queue the work item, which is then cancelled; a work item running meanwhile may arm
        // the timer, which does nothing once it is shut down.
        unsafe {
            bindings::timer_shutdown_sync(self.timer.get());
            bindings::disable_work_sync(self.work.get());
        }
    }
}

/// The timer's expiry: the QP is alive (its destroy op shuts the timer down first).
///
/// # Safety
///
/// Called by the timer core for the timer of a live `Qp<T>`, set up by `init_deferred::<T>`.
unsafe extern "C" fn timer_callback<T: Driver>(timer: *mut bindings::timer_list) {
    let offset =
        core::mem::offset_of!(Object<T, QpKind>, core) + core::mem::offset_of!(QpCore, timer);
    // SAFETY: The timer is the `core.timer` field of a live `Qp<T>` (`init_deferred::<T>` is
    // the only setup of this callback); `Opaque` is `repr(transparent)`.
    let qp = unsafe { &*timer.cast::<u8>().sub(offset).cast::<Qp<T>>() };
    T::qp_timer(qp);
}

/// The work item's run: the QP is alive (its destroy op disables the work item first).
///
/// # Safety
///
/// Called by the workqueue for the work item of a live `Qp<T>`, set up by
/// `init_deferred::<T>`.
unsafe extern "C" fn work_callback<T: Driver>(work: *mut bindings::work_struct) {
    let offset =
        core::mem::offset_of!(Object<T, QpKind>, core) + core::mem::offset_of!(QpCore, work);
    // SAFETY: The work item is the `core.work` field of a live `Qp<T>` (`init_deferred::<T>`
    // is the only setup of this callback); `Opaque` is `repr(transparent)`.
    let qp = unsafe { &*work.cast::<u8>().sub(offset).cast::<Qp<T>>() };
    T::qp_work(qp);
}

impl<T: Driver> Qp<T> {
    /// Queues the QP's work item ([`Driver::qp_work`](super::Driver::qp_work) runs soon, in
    /// process context), unless it is queued already. Any context. Does nothing once the QP is
    /// being destroyed.
    pub fn queue_work(&self) {
        // SAFETY: The work item is initialised while the QP is reachable (type invariant of
        // `QpCore`).
        unsafe { bindings::rdma_qp_work_queue(self.core().work.get()) };
    }

    /// Arms the QP's timer to expire in `usecs` microseconds (at least one tick), or moves an
    /// armed one. Any context. Does nothing once the QP is being destroyed.
    pub fn arm_timer(&self, usecs: u32) {
        // SAFETY: The timer is initialised while the QP is reachable (type invariant of
        // `QpCore`).
        unsafe { bindings::rdma_qp_timer_arm(self.core().timer.get(), usecs) };
    }

    /// Whether the timer is armed and has not expired. Read under the lock that arming and
    /// disarming take, it tells a callback that found it armed again (it expired meanwhile and
    /// waited for that lock) that this expiry is stale.
    pub fn timer_pending(&self) -> bool {
        // SAFETY: As for `arm_timer`.
        unsafe { bindings::rdma_qp_timer_pending(self.core().timer.get()) }
    }

    /// Disarms the timer; a callback already running is not waited for. Any context.
    pub fn cancel_timer(&self) {
        // SAFETY: As for `arm_timer`.
        unsafe { bindings::timer_delete(self.core().timer.get()) };
    }
}
