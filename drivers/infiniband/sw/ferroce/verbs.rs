// SPDX-License-Identifier: GPL-2.0

//! The verbs objects a QP works with: the device, PDs (counted), CQs, MRs and memory windows
//! and the memory their keys open, SRQs, AHs, the rings user space shares, counters. Imports
//! only `protocol`.

pub(crate) mod ah;
pub(crate) mod cq;
pub(crate) mod device;
pub(crate) mod mcast;
pub(crate) mod memory;
pub(crate) mod mr;
pub(crate) mod mw;
pub(crate) mod numbers;
pub(crate) mod queue;
pub(crate) mod srq;
pub(crate) mod stats;
pub(crate) mod wq;
