// SPDX-License-Identifier: GPL-2.0

//! A spinlock that disables local interrupts while held (`spin_lock_irqsave`).
//!
//! Kernel users call the data-path verbs (`ib_post_send`, `ib_poll_cq`, `ib_req_notify_cq`)
//! from any context: process, softirq (`IB_POLL_SOFTIRQ`) or with interrupts off. State those
//! verbs share with each other and with process context (a QP's rings, a CQ's ring) needs a lock
//! that can be taken everywhere, as rxe and siw use `spin_lock_irqsave`. (This belongs in
//! `kernel::sync` once it has an interrupt-disabling spinlock.)
//!
//! C header: [`include/linux/spinlock.h`](srctree/include/linux/spinlock.h)

use crate::{bindings, sync::lock};

/// A spinlock taken with `spin_lock_irqsave`; create one with [`crate::new_irq_spinlock!`].
pub type IrqSpinLock<T> = lock::Lock<T, IrqSpinLockBackend>;

/// The backend of [`IrqSpinLock`]: a `spinlock_t`; the guard keeps the saved interrupt flags.
pub struct IrqSpinLockBackend;

// SAFETY: `spinlock_t` ensures mutual exclusion; interrupts stay off on the owning CPU until the
// guard restores the flags it saved, so the guard's CPU cannot be interrupted by a user of the
// same lock. `relock` uses the default, which takes the lock the same way.
unsafe impl lock::Backend for IrqSpinLockBackend {
    type State = bindings::spinlock_t;
    type GuardState = crate::ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const crate::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: `ptr` is valid for writes, `name` and `key` live forever (the trait's
        // requirements).
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: `ptr` is an initialised lock (the trait's requirements).
        unsafe { bindings::spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: The caller owns the lock, taken by `lock`, which returned `flags`.
        unsafe { bindings::spin_unlock_irqrestore(ptr, *flags) }
    }
}

/// Creates an [`IrqSpinLock`] initialiser with a lock class of its own, like
/// [`crate::new_spinlock!`].
#[macro_export]
macro_rules! new_irq_spinlock {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::rdma::IrqSpinLock::new(
            $inner, $crate::optional_name!($($name)?), $crate::static_lock_class!())
    };
}
