// SPDX-License-Identifier: GPL-2.0

//! The engine: QPs and their state machine, the send queue's executors, the requester,
//! completer and responder (`rc`), a responder's paced replies, direct placement between QPs
//! of one device, and the dispatch of received packets. Imports the layers below.

pub(crate) mod executor;
pub(crate) mod placement;
pub(crate) mod qp;
pub(crate) mod rc;
pub(crate) mod receive;
pub(crate) mod reply;
pub(crate) mod responder;
