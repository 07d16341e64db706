// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver};
use crate::{bindings, types::Opaque};

/// A protection domain with the driver's data in the same allocation.
///
/// ib_core allocates `size_of::<Pd<T>>()` bytes (the ops table's `size_ib_pd`) and refuses to
/// destroy a PD that objects still use; this layer writes `data` in `alloc_pd` and drops it in
/// `dealloc_pd`.
///
/// # Invariants
///
/// `ib` is first (ib_core's `rdma_zalloc_drv_obj` requires it) and `data` is initialised
/// between `alloc_pd` returning success and `dealloc_pd`.
#[repr(C)]
pub struct Pd<T: Driver> {
    ib: Opaque<bindings::ib_pd>,
    data: T::PdData,
}

impl<T: Driver> Pd<T> {
    /// # Safety
    ///
    /// `raw` must point to the `ib_pd` of a live, initialised `Pd<T>` that outlives `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_pd) -> &'a Self {
        // SAFETY: `ib` is the first field of a `repr(C)` struct.
        unsafe { &*raw.cast() }
    }

    /// The driver's per-PD data.
    pub fn data(&self) -> &T::PdData {
        &self.data
    }

    /// The device the PD belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: A PD's device outlives it, and only `Device<T>` uses `T`'s ops table.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Whether a user process (rather than a kernel ULP) owns the PD.
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the driver sees the PD and never changes.
        !unsafe { (*self.ib.get()).uobject }.is_null()
    }

    pub(crate) fn data_slot(raw: *mut bindings::ib_pd) -> *mut T::PdData {
        // SAFETY: Only the address is computed; `raw` heads a `Pd<T>` allocation.
        unsafe { core::ptr::addr_of_mut!((*raw.cast::<Self>()).data) }
    }
}
