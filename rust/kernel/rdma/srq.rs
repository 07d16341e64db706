// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`struct ib_srq`): one receive queue that many QPs take their receive
//! work requests from.
//!
//! This layer offers basic SRQs only: XRC and tag-matching SRQs are refused (`EOPNOTSUPP`)
//! before the driver sees them.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Driver,
    object::{dispatch_object_event, Object, SrqKind},
};
use crate::bindings;

/// A shared receive queue with the driver's data (`T::SrqData`) in ib_core's allocation.
///
/// ib_core refuses to destroy an SRQ that QPs still use.
pub type Srq<T> = Object<T, SrqKind>;

/// SRQ attributes (`struct ib_srq_attr`), as created, modified and queried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Depth in work requests.
    pub max_wr: u32,
    /// SGEs per work request.
    pub max_sge: u32,
    /// The armed limit: when fewer work requests remain, the SRQ reports
    /// [`SrqEvent::LimitReached`] once and disarms (0: not armed).
    pub srq_limit: u32,
}

impl SrqAttr {
    pub(crate) fn from_raw(a: &bindings::ib_srq_attr) -> Self {
        SrqAttr {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }

    pub(crate) fn write_to(&self, a: &mut bindings::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.srq_limit;
    }
}

/// What `modify_srq` changes (`enum ib_srq_attr_mask`).
pub mod mask {
    use crate::bindings;

    /// Resize to `max_wr`.
    pub const MAX_WR: u32 = bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR;
    /// Arm the limit event at `srq_limit`.
    pub const LIMIT: u32 = bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
}

/// Asynchronous events of an SRQ (`enum ib_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SrqEvent {
    /// Fewer work requests than the armed limit remain.
    LimitReached = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
    /// The SRQ failed and can no longer be used.
    Error = bindings::ib_event_type_IB_EVENT_SRQ_ERR,
}

impl<T: Driver> Srq<T> {
    /// Reports `event` to the SRQ's owner (the async event queue of a user SRQ).
    pub fn dispatch_event(&self, event: SrqEvent) {
        let raw = self.as_raw();
        // SAFETY: ib_core sets the handler and its context before the driver sees the SRQ and
        // never changes them; the SRQ is alive for `&self`.
        unsafe {
            dispatch_object_event(
                (*raw).event_handler,
                (*raw).srq_context,
                (*raw).device,
                bindings::ib_event__bindgen_ty_1 { srq: raw },
                event as u32,
            )
        };
    }
}
