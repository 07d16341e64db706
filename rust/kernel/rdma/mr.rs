// SPDX-License-Identifier: GPL-2.0

//! Memory regions (`struct ib_mr`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver};
use crate::{bindings, types::Opaque};

/// Memory access flags (`enum ib_access_flags`).
pub mod access {
    use crate::bindings;

    /// The device may write to the memory locally.
    pub const LOCAL_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
    /// Peers may RDMA WRITE to it.
    pub const REMOTE_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
    /// Peers may RDMA READ from it.
    pub const REMOTE_READ: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ;
    /// Peers may run atomics on it.
    pub const REMOTE_ATOMIC: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
    /// Flags a device may ignore (relaxed ordering and the rest of the optional range).
    pub const OPTIONAL: u32 = bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
}

/// A memory region with the driver's data, allocated by this layer (ib_core leaves MR
/// allocation to drivers) and freed in `dereg_mr`.
///
/// # Invariants
///
/// `ib` is first; the object lives in a `KBox` from `reg_user_mr` until `dereg_mr`.
#[repr(C)]
pub struct Mr<T: Driver> {
    pub(crate) ib: Opaque<bindings::ib_mr>,
    pub(crate) data: T::MrData,
}

impl<T: Driver> Mr<T> {
    /// # Safety
    ///
    /// `raw` must point to the `ib_mr` of a live `Mr<T>` that outlives `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_mr) -> &'a Self {
        // SAFETY: `ib` is the first field of a `repr(C)` struct.
        unsafe { &*raw.cast() }
    }

    /// The driver's per-MR data.
    pub fn data(&self) -> &T::MrData {
        &self.data
    }

    /// The device the MR belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: An MR's device outlives it, and only `Device<T>` uses `T`'s ops table.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }
}
