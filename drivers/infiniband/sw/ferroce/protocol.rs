// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 protocol and the ABI: headers, opcodes, PSNs, ICRC, whole packets, AETH
//! syndromes and timers, the refusal table, the uverbs ABI, the limits. Pure `core` code (no
//! kernel services), built and tested on the host too (`host-tests/`); imports nothing above
//! it.

pub(crate) mod abi;
pub(crate) mod bth;
pub(crate) mod count;
pub(crate) mod eth;
pub(crate) mod grh;
pub(crate) mod guid;
pub(crate) mod icrc;
pub(crate) mod keys;
pub(crate) mod limits;
pub(crate) mod mcast;
pub(crate) mod opcode;
pub(crate) mod packet;
pub(crate) mod pkey;
pub(crate) mod psn;
pub(crate) mod refusal;
pub(crate) mod train;
pub(crate) mod transport;
pub(crate) mod wqe;
