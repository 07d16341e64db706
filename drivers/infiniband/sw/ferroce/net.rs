// SPDX-License-Identifier: GPL-2.0

//! The network side: routes and transmission of RoCEv2 packets over the UDP tunnel, and the
//! netdev's events. Imports `protocol` and `verbs`.

pub(crate) mod netevent;
pub(crate) mod wire;
