// SPDX-License-Identifier: GPL-2.0

//! User contexts (`struct ib_ucontext`): one per process that opens the device through uverbs.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::object::{Object, UContextKind};

/// A user context with the driver's data (`T::UContextData`) in ib_core's allocation.
pub type UContext<T> = Object<T, UContextKind>;
