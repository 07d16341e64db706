// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Driver,
    object::{dispatch_object_event, CqKind, Object},
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
    /// Calls the CQ's completion handler: the owner asked to be told of new completions (for
    /// a user CQ, this queues an event on its completion channel).
    ///
    /// Callable from any context, including softirq.
    pub fn notify_completion(&self) {
        let raw = self.as_raw();
        // SAFETY: ib_core sets the handler and its context before the driver sees the CQ and
        // never changes them; the CQ is alive for `&self`.
        let (handler, context) = unsafe { ((*raw).comp_handler, (*raw).cq_context) };
        if let Some(handler) = handler {
            // SAFETY: The handler is ib_core's or a ULP's, called for this live CQ.
            unsafe { handler(raw, context) };
        }
    }

    /// Reports a CQ error (`IB_EVENT_CQ_ERR`), e.g. an overrun, to the CQ's owner (the async
    /// event queue of a user CQ).
    pub fn dispatch_error(&self) {
        let raw = self.as_raw();
        // SAFETY: As for `notify_completion`.
        unsafe {
            dispatch_object_event(
                (*raw).event_handler,
                (*raw).cq_context,
                (*raw).device,
                bindings::ib_event__bindgen_ty_1 { cq: raw },
                bindings::ib_event_type_IB_EVENT_CQ_ERR,
            )
        };
    }

    /// Records the number of entries the CQ really has, which ib_core reports to its creator.
    pub(crate) fn set_cqe_raw(raw: *mut bindings::ib_cq, cqe: u32) -> crate::error::Result {
        let cqe = i32::try_from(cqe).map_err(|_| crate::error::code::EINVAL)?;
        // SAFETY: ib_core only reads `cqe` after the op returns; the CQ is ours during the op.
        unsafe { (*raw).cqe = cqe };
        Ok(())
    }
}
