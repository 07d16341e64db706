// SPDX-License-Identifier: GPL-2.0

//! A QP's timer: one `struct timer_list` per queue pair, whose expiry calls the driver's
//! [`Driver::qp_timer`](super::Driver::qp_timer) in softirq context.
//!
//! A reliable transport times what it waits for (acknowledgements, RNR back-off). The timer
//! lives in the layer's part of the QP object, so the callback finds the QP without any help
//! from the driver, and the QP's destroy op shuts it down (`timer_shutdown_sync`) after the
//! driver's destroy hook and before the driver's data is dropped: a callback never sees a QP
//! being freed, and nothing re-arms it afterwards.
//!
//! C header: [`include/linux/timer.h`](srctree/include/linux/timer.h)

use super::{
    driver::Driver,
    object::{Object, QpKind},
    qp::Qp,
    registry::{Published, Users},
};
use crate::{bindings, types::Opaque};

/// The layer's part of a QP: its registry state and its timer.
///
/// # Invariants
///
/// `timer` is initialised (by [`QpCore::init_timer`]) before the QP is published, i.e. before
/// any driver code can arm it, and shut down before the QP is freed.
pub struct QpCore {
    users: Users,
    timer: Opaque<bindings::timer_list>,
}

// SAFETY: The timer is only used through the kernel's timer API, which serialises itself.
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
        }
    }

    /// Sets up the timer of the QP `qp` in place, to call `T::qp_timer`.
    ///
    /// # Safety
    ///
    /// `qp` must be initialised, never move, and not be published yet; called once.
    pub(crate) unsafe fn init_timer<T: Driver>(qp: &Qp<T>) {
        // SAFETY: The timer is in place for the QP's life (the caller's promise); lockdep
        // gets one class for every QP timer (a static key and name).
        unsafe {
            bindings::rdma_qp_timer_setup(qp.core().timer.get(), Some(timer_callback::<T>));
        }
    }

    /// Stops the timer for good: waits for a running callback; later arming does nothing.
    ///
    /// # Safety
    ///
    /// The timer must have been initialised; sleeps.
    pub(crate) unsafe fn shutdown_timer(&self) {
        // SAFETY: Initialised (the caller's promise).
        unsafe { bindings::timer_shutdown_sync(self.timer.get()) };
    }
}

/// The timer's expiry: the QP is alive (its destroy op shuts the timer down first).
///
/// # Safety
///
/// Called by the timer core for the timer of a live `Qp<T>`, set up by `init_timer::<T>`.
unsafe extern "C" fn timer_callback<T: Driver>(timer: *mut bindings::timer_list) {
    let offset =
        core::mem::offset_of!(Object<T, QpKind>, core) + core::mem::offset_of!(QpCore, timer);
    // SAFETY: The timer is the `core.timer` field of a live `Qp<T>` (`init_timer::<T>` is the
    // only setup of this callback); `Opaque` is `repr(transparent)`.
    let qp = unsafe { &*timer.cast::<u8>().sub(offset).cast::<Qp<T>>() };
    T::qp_timer(qp);
}

impl<T: Driver> Qp<T> {
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
