// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver};
use crate::{bindings, types::Opaque};

/// The attributes a CQ is created with (`struct ib_cq_init_attr`).
#[derive(Clone, Copy, Debug)]
pub struct CqInitAttr {
    /// The minimum number of entries asked for.
    pub cqe: u32,
    /// The completion vector (interrupt) to signal.
    pub comp_vector: u32,
    /// Creation flags (`IB_UVERBS_CQ_FLAGS_*`).
    pub flags: u32,
}

/// A completion queue with the driver's data in the same allocation.
///
/// ib_core allocates `size_of::<Cq<T>>()` bytes (`size_ib_cq`) and refuses to destroy a CQ
/// that QPs still use; this layer writes `data` in `create_cq` and drops it in `destroy_cq`.
///
/// # Invariants
///
/// `ib` is first and `data` is initialised between `create_cq` returning success and
/// `destroy_cq`.
#[repr(C)]
pub struct Cq<T: Driver> {
    ib: Opaque<bindings::ib_cq>,
    data: T::CqData,
}

impl<T: Driver> Cq<T> {
    /// # Safety
    ///
    /// `raw` must point to the `ib_cq` of a live, initialised `Cq<T>` that outlives `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_cq) -> &'a Self {
        // SAFETY: `ib` is the first field of a `repr(C)` struct.
        unsafe { &*raw.cast() }
    }

    /// The driver's per-CQ data.
    pub fn data(&self) -> &T::CqData {
        &self.data
    }

    /// The device the CQ belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: A CQ's device outlives it, and only `Device<T>` uses `T`'s ops table.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Records the number of entries the CQ really has, which ib_core reports to its creator.
    pub(crate) fn set_cqe_raw(raw: *mut bindings::ib_cq, cqe: u32) -> crate::error::Result {
        let cqe = i32::try_from(cqe).map_err(|_| crate::error::code::EINVAL)?;
        // SAFETY: ib_core only reads `cqe` after the op returns; the CQ is ours during the op.
        unsafe { (*raw).cqe = cqe };
        Ok(())
    }

    pub(crate) fn data_slot(raw: *mut bindings::ib_cq) -> *mut T::CqData {
        // SAFETY: Only the address is computed; `raw` heads a `Cq<T>` allocation.
        unsafe { core::ptr::addr_of_mut!((*raw.cast::<Self>()).data) }
    }
}
