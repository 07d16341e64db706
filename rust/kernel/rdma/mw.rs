// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`struct ib_mw`): remote access to part of a memory region under an rkey of
//! its own, bound and unbound by work requests (`IBV_WR_BIND_MW`, or `ibv_bind_mw` for type 1).
//!
//! ib_core allocates the window (`rdma_zalloc_drv_obj`) and calls `alloc_mw`; the layer
//! initialises the driver's data in place and publishes the window in its device's registry
//! under its rkey's index ([`Device::mw`](super::Device::mw)), which it shares with the MRs' keys
//! (the driver hands out both from one key space). `dealloc_mw` unpublishes it, waits for the
//! data path's references to go, and drops the data.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    driver::{Adapter, Driver},
    object::{MwKind, Object},
    pd::Pd,
    registry::Users,
    udata::Udata,
};
use crate::{
    bindings,
    error::{code::*, from_result},
};

/// A memory window with the driver's data (`T::MwData`).
pub type Mw<T> = Object<T, MwKind>;

/// The type of a memory window (`enum ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwType {
    /// Type 1: bound with `ibv_bind_mw`, associated with its PD; invalidated by binding it
    /// again with length 0.
    Type1,
    /// Type 2: bound by a work request to the QP that posted it, and invalidated by LOCAL_INV
    /// or a received SEND_WITH_INV.
    Type2,
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core with a zeroed MW of `size_ib_mw` bytes whose `device`, `pd` and `type`
    /// are set, and a valid or null `udata`.
    pub(crate) unsafe extern "C" fn alloc_mw(
        mw: *mut bindings::ib_mw,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: See above.
            let (pd, ty) = unsafe { (Pd::<T>::from_raw((*mw).pd), (*mw).type_) };
            let ty = match ty {
                bindings::ib_mw_type_IB_MW_TYPE_1 => MwType::Type1,
                bindings::ib_mw_type_IB_MW_TYPE_2 => MwType::Type2,
                _ => return Err(EINVAL),
            };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let (data, rkey) = T::alloc_mw(pd, ty, &mut udata)?;
            // SAFETY: ib_core's MW allocation, never moved, its data slots uninitialised.
            unsafe { Mw::<T>::init_in_place(mw, Users::new(rkey >> 8, pd.as_raw()), data) }?;
            // SAFETY: The MW is ours during the op.
            unsafe { (*mw).rkey = rkey };
            // SAFETY: Initialised above; if publishing fails, it is dropped unpublished below.
            let m = unsafe { Mw::<T>::from_raw(mw) };
            // SAFETY: `dealloc_mw` retires the MW before its data is dropped.
            if let Err(e) = unsafe { pd.device().registries().mws.publish(m) } {
                // SAFETY: Initialised, unpublished; ib_core frees the memory when the op fails.
                unsafe { Mw::<T>::destroy(mw, |_| ()) };
                return Err(e);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for an MW whose `alloc_mw` succeeded.
    pub(crate) unsafe extern "C" fn dealloc_mw(mw: *mut bindings::ib_mw) -> crate::ffi::c_int {
        // SAFETY: The MW is alive until destroyed below.
        let m = unsafe { Mw::<T>::from_raw(mw) };
        // Nobody finds it any more, and nobody holds it.
        m.device().registries().mws.retire(m);
        // SAFETY: ib_core deallocates each MW once, after `alloc_mw` succeeded.
        unsafe { Mw::<T>::destroy(mw, T::dealloc_mw) };
        0
    }
}
