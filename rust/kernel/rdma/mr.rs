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
