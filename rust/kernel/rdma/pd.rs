// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! ib_core refuses to destroy a PD that objects still use.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Device,
    driver::{Adapter, Driver},
    object::{Object, PdKind},
    udata::Udata,
};
use crate::{bindings, error::from_result};

/// A protection domain with the driver's data (`T::PdData`) in ib_core's allocation.
pub type Pd<T> = Object<T, PdKind>;

impl<T: Driver> Pd<T> {
    /// Whether a user process (rather than a kernel ULP) owns the PD.
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the driver sees the PD and never changes.
        !unsafe { (*self.as_raw()).uobject }.is_null()
    }

    /// An identity of the PD, equal to the `pd_id` of its QPs and MRs.
    pub fn id(&self) -> usize {
        self.as_raw() as usize
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core with a zeroed PD of `size_ib_pd` bytes whose `device` is a `Device<T>`.
    pub(crate) unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The PD's device is live for the call.
            let dev = unsafe { Device::<T>::from_raw((*pd).device) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let data = T::alloc_pd(dev, &mut udata)?;
            // SAFETY: ib_core's PD allocation, never moved, its data slots uninitialised.
            unsafe { Pd::<T>::init_in_place(pd, (), data) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a PD whose `alloc_pd` succeeded and that nothing uses.
    pub(crate) unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core deallocates each PD once, after `alloc_pd` succeeded.
        unsafe { Pd::<T>::destroy(pd, T::dealloc_pd) };
        0
    }
}
