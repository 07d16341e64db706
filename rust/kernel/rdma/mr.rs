// SPDX-License-Identifier: GPL-2.0

//! Memory regions (`struct ib_mr`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    driver::{Adapter, Driver},
    object::{MrKind, Object},
    pd::Pd,
    registry::Users,
    udata::Udata,
};
use crate::{
    alloc::{flags::GFP_KERNEL, KBox},
    bindings,
    error::{code::*, Error, Result},
    init::{InPlaceInit, PinInit},
};

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
    /// Memory windows may be bound to it.
    pub const MW_BIND: u32 = bindings::ib_access_flags_IB_ACCESS_MW_BIND;
    /// Peers may ask for its writes to be made globally visible (RDMA FLUSH, IBTA 1.5 A19).
    pub const FLUSH_GLOBAL: u32 = bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL;
    /// Peers may ask for its writes to be made persistent (RDMA FLUSH); only persistent memory
    /// can grant it.
    pub const FLUSH_PERSISTENT: u32 = bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT;
    /// Flags a device may ignore (relaxed ordering and the rest of the optional range).
    pub const OPTIONAL: u32 = bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
}

/// A memory region with the driver's data (`T::MrData`); ib_core leaves MR allocation to drivers,
/// so this layer allocates it in `reg_user_mr` and frees it in `dereg_mr`.
pub type Mr<T> = Object<T, MrKind>;

impl<T: Driver> Mr<T> {
    /// The address the MR starts at, as peers and work requests name it (set by ib_core for
    /// fast-registration MRs when they are mapped).
    pub fn iova(&self) -> u64 {
        // SAFETY: The MR is alive; ib_core writes these fields only in the verbs that map or
        // re-register it, which its owner does not run concurrently with its use.
        unsafe { (*self.as_raw()).iova }
    }

    /// The MR's length in bytes (see [`Mr::iova`]).
    pub fn length(&self) -> u64 {
        // SAFETY: As for `iova`.
        unsafe { (*self.as_raw()).length }
    }

    /// The page size a fast-registration MR is mapped with.
    pub fn page_size(&self) -> u32 {
        // SAFETY: As for `iova`.
        unsafe { (*self.as_raw()).page_size }
    }
}

/// What a re-registration changes (`enum ib_mr_rereg_flags`).
pub mod rereg {
    use crate::bindings;

    /// New memory: `start`, `length` and `iova`.
    pub const TRANS: u32 = bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS;
    /// A new protection domain.
    pub const PD: u32 = bindings::ib_mr_rereg_flags_IB_MR_REREG_PD;
    /// New access flags.
    pub const ACCESS: u32 = bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS;
}

/// A re-registration request (`rereg_user_mr`): the fields named by `flags` replace the MR's.
#[derive(Clone, Copy, Debug)]
pub struct MrChange {
    /// [`rereg`] flags; ib_core accepts no others.
    pub flags: u32,
    /// With [`rereg::TRANS`]: the new user address.
    pub start: u64,
    /// With [`rereg::TRANS`]: the new length.
    pub length: u64,
    /// With [`rereg::TRANS`]: the new address peers use.
    pub iova: u64,
    /// With [`rereg::ACCESS`]: the new access flags (ib_core has checked them).
    pub access: u32,
}

impl<T: Driver> Adapter<T> {
    /// Allocates an MR for ib_core (which leaves MR allocation to drivers), with the driver's
    /// data initialised in place.
    ///
    /// The MR is published in the device's registry under its key's index (see
    /// `Device::mr`), for the data path.
    fn new_mr(
        pd: &Pd<T>,
        (data, lkey, rkey): (impl PinInit<T::MrData, Error>, u32, u32),
    ) -> Result<*mut bindings::ib_mr> {
        // SAFETY: ib_core expects a zeroed `ib_mr` (it fills in the rest).
        let mut ib: bindings::ib_mr = unsafe { core::mem::zeroed() };
        ib.lkey = lkey;
        ib.rkey = rkey;
        // ib_core sets these once the op returns; set before, `Mr::device` works at once.
        ib.device = pd.device().as_raw();
        ib.pd = pd.as_raw();
        let users = Users::new(lkey >> 8, pd.as_raw());
        let mr = KBox::pin_init(Mr::<T>::new(ib, users, data), GFP_KERNEL)?;
        // SAFETY: `dereg_mr` retires the MR before it frees it; if publishing fails, the MR is
        // dropped unpublished.
        unsafe { pd.device().registries().mrs.publish(&mr) }?;
        // SAFETY: The MR is never moved out of its allocation: `dereg_mr` frees it in place.
        Ok(KBox::into_raw(unsafe { core::pin::Pin::into_inner_unchecked(mr) }).cast())
    }

    /// An MR pointer for ib_core, or the error as an `ERR_PTR`.
    fn mr_or_err(r: Result<*mut bindings::ib_mr>) -> *mut bindings::ib_mr {
        r.unwrap_or_else(|e| e.to_ptr())
    }

    /// # Safety
    ///
    /// Called by ib_core for a live PD of this driver.
    pub(crate) unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // SAFETY: The PD is alive for the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: `udata` is valid or null for the call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        Self::mr_or_err(
            T::reg_user_mr(pd, start, length, iova, access as u32, &mut udata)
                .and_then(|m| Self::new_mr(pd, m)),
        )
    }

    /// # Safety
    ///
    /// Called by ib_core for a live user MR of this driver and a live PD of its device.
    pub(crate) unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: crate::ffi::c_int,
        start: u64,
        length: u64,
        iova: u64,
        access: crate::ffi::c_int,
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let r = (|| -> Result<*mut bindings::ib_mr> {
            let change = MrChange {
                flags: flags as u32,
                start,
                length,
                iova,
                access: access as u32,
            };
            // SAFETY: The MR and the PD are alive for the call.
            let (mr, pd) = unsafe { (Mr::<T>::from_raw(mr), Pd::<T>::from_raw(pd)) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let rereg = T::rereg_user_mr(mr, &change, pd, &mut udata)?;
            let new = match rereg {
                // Changed in place: ib_core sees NULL, keeps the MR and its keys, and sets its
                // `pd` itself; the registry's copy follows.
                None => {
                    if change.flags & rereg::PD != 0 {
                        mr.core().set_pd(pd.as_raw());
                    }
                    Ok(core::ptr::null_mut())
                }
                Some(m) => Self::new_mr(pd, m),
            };
            new
        })();
        Self::mr_or_err(r)
    }

    /// # Safety
    ///
    /// Called by ib_core once for an MR one of the ops above returned.
    pub(crate) unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: The MR is alive until we free it below.
        let m = unsafe { Mr::<T>::from_raw(mr) };
        // Nobody finds it any more, and nobody holds it.
        m.device().registries().mrs.retire(m);
        T::dereg_mr(m);
        // SAFETY: `new_mr` made it with `KBox::into_raw`; this is its only free, in place.
        drop(unsafe { KBox::from_raw(mr.cast::<Mr<T>>()) });
        0
    }

    /// # Safety
    ///
    /// Called by ib_core for a live kernel PD of this driver.
    pub(crate) unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: crate::ffi::c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: The PD is alive for the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        Self::mr_or_err(T::get_dma_mr(pd, access as u32).and_then(|m| Self::new_mr(pd, m)))
    }

    /// # Safety
    ///
    /// Called by ib_core for a live kernel PD of this driver.
    pub(crate) unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return EOPNOTSUPP.to_ptr();
        }
        // SAFETY: The PD is alive for the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        Self::mr_or_err(T::alloc_mr(pd, max_num_sg).and_then(|m| Self::new_mr(pd, m)))
    }

    /// # Safety
    ///
    /// Called by ib_core for a live fast-registration MR of this driver and a valid
    /// scatterlist.
    pub(crate) unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: crate::ffi::c_int,
        sg_offset: *mut crate::ffi::c_uint,
    ) -> crate::ffi::c_int {
        // SAFETY: The MR is alive for the call.
        if let Err(e) = T::map_mr_begin(unsafe { Mr::<T>::from_raw(mr) }) {
            return e.to_errno();
        }
        // SAFETY: Forwarded from ib_core; `set_page` is called with this MR.
        unsafe { bindings::ib_sg_to_pages(mr, sg, sg_nents, sg_offset, Some(Self::set_page)) }
    }

    /// # Safety
    ///
    /// Called by `ib_sg_to_pages` from `map_mr_sg`, for a live MR of this driver.
    unsafe extern "C" fn set_page(mr: *mut bindings::ib_mr, addr: u64) -> crate::ffi::c_int {
        // SAFETY: The MR is alive for the call.
        match T::map_mr_page(unsafe { Mr::<T>::from_raw(mr) }, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}
