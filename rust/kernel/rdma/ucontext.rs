// SPDX-License-Identifier: GPL-2.0

//! User contexts (`struct ib_ucontext`): one per process that opens the device through uverbs.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver};
use crate::{bindings, types::Opaque};

/// A user context with the driver's data in the same allocation.
///
/// ib_core allocates `size_of::<UContext<T>>()` bytes (the ops table's `size_ib_ucontext`), this
/// layer writes `data` in `alloc_ucontext` and drops it in `dealloc_ucontext`.
///
/// # Invariants
///
/// `ib` is first (ib_core's `rdma_zalloc_drv_obj` requires it) and `data` is initialised
/// between `alloc_ucontext` returning success and `dealloc_ucontext`.
#[repr(C)]
pub struct UContext<T: Driver> {
    ib: Opaque<bindings::ib_ucontext>,
    data: T::UContextData,
}

impl<T: Driver> UContext<T> {
    /// # Safety
    ///
    /// `raw` must point to the `ib_ucontext` of a live, initialised `UContext<T>` that outlives
    /// `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_ucontext) -> &'a Self {
        // SAFETY: `ib` is the first field of a `repr(C)` struct.
        unsafe { &*raw.cast() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_ucontext {
        self.ib.get()
    }

    /// The driver's per-context data.
    pub fn data(&self) -> &T::UContextData {
        &self.data
    }

    /// The device the context belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: A context's device outlives it, and only `Device<T>` uses `T`'s ops table.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    pub(crate) fn data_slot(raw: *mut bindings::ib_ucontext) -> *mut T::UContextData {
        // SAFETY: Only the address is computed; `raw` heads a `UContext<T>` allocation.
        unsafe { core::ptr::addr_of_mut!((*raw.cast::<Self>()).data) }
    }
}
