// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! ib_core refuses to destroy a PD that objects still use.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Driver,
    object::{Object, PdKind},
};

/// A protection domain with the driver's data (`T::PdData`) in ib_core's allocation.
pub type Pd<T> = Object<T, PdKind>;

impl<T: Driver> Pd<T> {
    /// Whether a user process (rather than a kernel ULP) owns the PD.
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the driver sees the PD and never changes.
        !unsafe { (*self.as_raw()).uobject }.is_null()
    }
}
