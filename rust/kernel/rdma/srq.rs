// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`struct ib_srq`): one receive queue that many QPs take their receive
//! work requests from.
//!
//! This layer offers basic SRQs only: XRC and tag-matching SRQs are refused (`EOPNOTSUPP`)
//! before the driver sees them.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    driver::{Adapter, Driver},
    object::{dispatch_object_event, Object, SrqKind},
    pd::Pd,
    ucontext::UContext,
    udata::Udata,
    wr::{post_chain, RecvWr},
};
use crate::{
    bindings,
    error::{code::*, from_result},
};

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

    /// Reads the attributes of a `modify_srq` call: only those `mask` names (kernel callers
    /// need not initialise the others); the rest are 0.
    ///
    /// # Safety
    ///
    /// `a` must be valid for reads of the fields `mask` names, for the call.
    unsafe fn from_raw_masked(a: *const bindings::ib_srq_attr, mask: u32) -> Self {
        SrqAttr {
            max_wr: if mask & mask::MAX_WR != 0 {
                // SAFETY: Named by the mask: initialised (the caller's promise).
                unsafe { (*a).max_wr }
            } else {
                0
            },
            max_sge: 0,
            srq_limit: if mask & mask::LIMIT != 0 {
                // SAFETY: As above.
                unsafe { (*a).srq_limit }
            } else {
                0
            },
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

impl<T: Driver> Srq<T> {
    /// Whether a user process (rather than a kernel ULP) owns the SRQ.
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the driver sees the SRQ and never changes.
        !unsafe { (*self.as_raw()).uobject }.is_null()
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core with a zeroed SRQ of `size_ib_srq` bytes whose `device` and `pd` are
    /// set, a valid `init` and a valid or null `udata`.
    pub(crate) unsafe extern "C" fn create_srq(
        srq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: See above.
            let (pd, init) = unsafe { (Pd::<T>::from_raw((*srq).pd), &mut *init) };
            if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
                return Err(EOPNOTSUPP);
            }
            let mut attr = SrqAttr::from_raw(&init.attr);
            // SAFETY: See above.
            let uctx = unsafe { UContext::<T>::of_udata(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let data = T::create_srq(pd, &mut attr, uctx, &mut udata)?;
            // SAFETY: ib_core's SRQ allocation, never moved, its data slots uninitialised.
            unsafe { Srq::<T>::init_in_place(srq, (), data) }?;
            attr.write_to(&mut init.attr);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live SRQ with a valid attribute and a valid or null `udata`.
    pub(crate) unsafe extern "C" fn modify_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The fields the mask names are valid for the call.
            let a = unsafe { SrqAttr::from_raw_masked(attr, mask) };
            // SAFETY: `udata` is null or a uverbs call's driver udata.
            let uctx = unsafe { UContext::<T>::of_udata(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            T::modify_srq(
                // SAFETY: The SRQ is alive for the call.
                unsafe { Srq::<T>::from_raw(srq) },
                &a,
                mask,
                uctx,
                &mut udata,
            )?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live SRQ with a valid output attribute.
    pub(crate) unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The SRQ is alive for the call.
            let a = T::query_srq(unsafe { Srq::<T>::from_raw(srq) })?;
            // SAFETY: Valid for writes for the call.
            a.write_to(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for an SRQ whose `create_srq` succeeded and that nothing uses.
    pub(crate) unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys each SRQ once, after `create_srq` succeeded.
        unsafe { Srq::<T>::destroy(srq, T::destroy_srq) };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core with a live SRQ, a chain of valid requests and a valid `bad_wr`.
    pub(crate) unsafe extern "C" fn post_srq_recv(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: The SRQ is alive for the call.
        let s = unsafe { Srq::<T>::from_raw(srq) };
        let post = |w: &bindings::ib_recv_wr| {
            // SAFETY: A kernel user's valid work request, alive for the call (`post_chain`
            // refuses users' chains).
            unsafe { RecvWr::from_raw(w) }.and_then(|w| T::post_srq_recv(s, &w))
        };
        // SAFETY: ib_core passes a valid chain and a valid `bad_wr`. An SRQ has no doorbell.
        unsafe { post_chain(s.is_user(), wr, bad_wr, post, || Ok(())) }
    }
}
