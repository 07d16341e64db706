// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Device,
    driver::{Adapter, Driver},
    object::{dispatch_object_event, CqKind, Object},
    ucontext::UContext,
    udata::Udata,
    wr::Wc,
};
use crate::{
    bindings,
    error::{code::*, from_result},
};

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
        // SAFETY: ib_core sets the handler and its context as it creates the CQ (right after the
        // create op, before any QP can complete to the CQ) and never changes them; the CQ is
        // alive for `&self`.
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
    fn set_cqe_raw(raw: *mut bindings::ib_cq, cqe: i32) {
        // SAFETY: ib_core only reads `cqe` after the op returns; the CQ is ours during the op.
        unsafe { (*raw).cqe = cqe };
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core with a zeroed CQ of `size_ib_cq` bytes whose `device` is a `Device<T>`;
    /// `attrs` is null for kernel users.
    pub(crate) unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The CQ's device is live for the call.
            let dev = unsafe { Device::<T>::from_raw((*cq).device) };
            // SAFETY: `attr` is valid for the call.
            let a = unsafe { &*attr };
            let attr = CqInitAttr {
                cqe: a.cqe,
                comp_vector: a.comp_vector,
                flags: a.flags,
            };
            let (uctx, mut udata) = if attrs.is_null() {
                // SAFETY: No udata for kernel users.
                (None, unsafe { Udata::from_raw(core::ptr::null_mut()) })
            } else {
                // SAFETY: A user call's bundle names the live context of the caller, whose
                // device is `dev`; its driver udata is valid for the call.
                unsafe {
                    let hdr = &mut (*attrs).__bindgen_anon_1.__bindgen_anon_1;
                    (
                        Some(UContext::<T>::from_raw(hdr.context)),
                        Udata::from_raw(&mut hdr.driver_udata),
                    )
                }
            };
            let (data, cqe) = T::create_cq(dev, &attr, uctx, &mut udata)?;
            let cqe = i32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: ib_core's CQ allocation, never moved, its data slots uninitialised.
            unsafe { Cq::<T>::init_in_place(cq, (), data) }?;
            Cq::<T>::set_cqe_raw(cq, cqe);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live CQ of this driver.
    pub(crate) unsafe extern "C" fn resize_cq(
        cq: *mut bindings::ib_cq,
        cqe: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: `udata` is null or a uverbs call's driver udata.
            let uctx = unsafe { UContext::<T>::of_udata(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            // SAFETY: The CQ is alive for the call.
            let new = T::resize_cq(unsafe { Cq::<T>::from_raw(cq) }, cqe, uctx, &mut udata)?;
            Cq::<T>::set_cqe_raw(cq, i32::try_from(new).map_err(|_| EINVAL)?);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a CQ whose `create_cq` succeeded and that nothing uses.
    pub(crate) unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys each CQ once, after `create_cq` succeeded.
        unsafe { Cq::<T>::destroy(cq, T::destroy_cq) };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core for a live CQ with room for `num` completions at `wc`.
    pub(crate) unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        num: crate::ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> crate::ffi::c_int {
        // SAFETY: The CQ is alive for the call.
        let c = unsafe { Cq::<T>::from_raw(cq) };
        let num = usize::try_from(num).unwrap_or(0);
        let mut done = 0usize;
        let mut chunk = [Wc::default(); 16];
        while done < num {
            let want = (num - done).min(chunk.len());
            let n = match T::poll_cq(c, &mut chunk[..want]) {
                Ok(n) => n.min(want),
                Err(e) if done == 0 => return e.to_errno(),
                Err(_) => break,
            };
            for (i, w) in chunk[..n].iter().enumerate() {
                // SAFETY: `done + i < num`: inside the caller's array.
                w.write_to(unsafe { &mut *wc.add(done + i) });
            }
            done += n;
            if n < want {
                break;
            }
        }
        done as crate::ffi::c_int
    }

    /// # Safety
    ///
    /// Called by ib_core for a live CQ.
    pub(crate) unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> crate::ffi::c_int {
        let solicited = flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
        let missed = flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
        // SAFETY: The CQ is alive for the call.
        match T::req_notify_cq(unsafe { Cq::<T>::from_raw(cq) }, solicited, missed) {
            Ok(waiting) => waiting as crate::ffi::c_int,
            Err(e) => e.to_errno(),
        }
    }
}
