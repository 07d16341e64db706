// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Driver,
    object::{CqKind, Object},
};
use crate::bindings;

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

/// A completion queue with the driver's data (`T::CqData`) in ib_core's allocation.
///
/// ib_core refuses to destroy a CQ that QPs still use.
pub type Cq<T> = Object<T, CqKind>;

impl<T: Driver> Cq<T> {
    /// Records the number of entries the CQ really has, which ib_core reports to its creator.
    pub(crate) fn set_cqe_raw(raw: *mut bindings::ib_cq, cqe: u32) -> crate::error::Result {
        let cqe = i32::try_from(cqe).map_err(|_| crate::error::code::EINVAL)?;
        // SAFETY: ib_core only reads `cqe` after the op returns; the CQ is ours during the op.
        unsafe { (*raw).cqe = cqe };
        Ok(())
    }
}
