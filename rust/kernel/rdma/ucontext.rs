// SPDX-License-Identifier: GPL-2.0

//! User contexts (`struct ib_ucontext`): one per process that opens the device through uverbs.
//!
//! ib_core destroys every object of a context before the context itself, and requires its mmap
//! entries gone by then; this layer removes those of buffers that outlive their objects
//! ([`super::mmap::MmapContext`]).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Device,
    driver::{Adapter, Driver},
    mmap::MmapContext,
    object::{Object, UContextKind},
    udata::Udata,
};
use crate::{bindings, error::from_result};

/// A user context with the driver's data (`T::UContextData`) in ib_core's allocation.
pub type UContext<T> = Object<T, UContextKind>;

impl<T: Driver> UContext<T> {
    /// The user context of a uverbs call, from its udata (`rdma_udata_to_drv_context`).
    ///
    /// # Safety
    ///
    /// `udata` must be null or the `driver_udata` of a live `uverbs_attr_bundle` whose context
    /// belongs to this driver.
    pub(crate) unsafe fn of_udata<'a>(udata: *mut bindings::ib_udata) -> Option<&'a Self> {
        if udata.is_null() {
            return None;
        }
        // SAFETY: `driver_udata` starts the bundle, whose context is the caller's, alive for
        // the call.
        Some(unsafe {
            Self::from_raw(
                (*udata.cast::<bindings::uverbs_attr_bundle>())
                    .__bindgen_anon_1
                    .__bindgen_anon_1
                    .context,
            )
        })
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core with a zeroed context of `size_ib_ucontext` bytes whose `device` is a
    /// `Device<T>`.
    pub(crate) unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The context's device is live for the call.
            let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let mmaps = MmapContext::new()?;
            let data = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: ib_core's context allocation, never moved, its data slots uninitialised.
            unsafe { UContext::<T>::init_in_place(uctx, mmaps, data) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a context whose `alloc_ucontext` succeeded, after every object
    /// of the context is destroyed.
    pub(crate) unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: ib_core deallocates each context once, after `alloc_ucontext` succeeded; the
        // context is alive in the hook.
        unsafe {
            UContext::<T>::destroy(uctx, |u| {
                T::dealloc_ucontext(u);
                u.core().close(uctx);
            })
        };
    }
}
