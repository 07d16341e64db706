// SPDX-License-Identifier: GPL-2.0

//! Memory regions (`struct ib_mr`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::object::{MrKind, Object};

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
    /// Flags a device may ignore (relaxed ordering and the rest of the optional range).
    pub const OPTIONAL: u32 = bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
}

/// A memory region with the driver's data (`T::MrData`); ib_core leaves MR allocation to drivers,
/// so this layer allocates it in `reg_user_mr` and frees it in `dereg_mr`.
pub type Mr<T> = Object<T, MrKind>;

impl<T: super::device::Driver> Mr<T> {
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
