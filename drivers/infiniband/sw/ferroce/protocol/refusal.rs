// SPDX-License-Identifier: GPL-2.0

//! Why a responder refuses a request, and what each side learns of it: the NAK on the wire
//! (IBTA 9.7.5.2), the status the requester's WQE completes with, the status of the receive
//! WQE the request had taken, and whether an RC responder goes to the error state (IBTA 9.9,
//! with the statuses rdma_rxe reports). One table for both carriers of requests: packets from
//! the wire and direct placement between QPs of one device.
//!
//! Pure `core` code, tested on the host (`host-tests/`).

use crate::protocol::{abi::WcStatus, transport::NakCode};

/// Why the responder does not execute a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The QP takes nothing from this requester now (its state, its type, the connection it
    /// has): dropped without an answer. A requester on the wire retries until `retry_cnt`
    /// runs out.
    Dropped,
    /// A request ahead of the expected PSN: a packet before it was lost (RC NAKs once).
    OutOfSequence,
    /// No receive WQE is posted: RNR NAK, the requester sends again after the RNR timer.
    NoReceiveWqe,
    /// An opcode out of sequence or not allowed for the QP's type, lengths that do not add up,
    /// an operation the QP does not enable, a misaligned atomic, no READ/atomic resources.
    InvalidRequest,
    /// The rkey does not open the range to this access (key, PD, bounds, rights, window).
    RemoteAccess,
    /// The responder failed on its own: its receive ring is corrupt, or its SRQ failed.
    RemoteOperational,
    /// A SEND longer than the receive WQE's buffers (or than any message may be).
    ReceiveTooShort,
    /// A receive WQE whose SGEs the responder cannot write to.
    ReceiveUnusable,
    /// A SEND_WITH_INV naming no memory region the responder may invalidate.
    BadInvalidate,
    /// Direct placement only: the requester's own memory went away during the copy (it
    /// deregistered an MR of a WQE in flight). The message is cut short; no one is to blame
    /// at the responder.
    SourceGone,
}

/// What the responder answers a refused request with on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Nothing.
    Silence,
    /// An RNR NAK.
    Rnr,
    /// A NAK with this code.
    Nak(NakCode),
}

impl Refusal {
    /// The answer on the wire of an RC responder (UC and UD answer nothing).
    pub(crate) fn answer(self) -> Answer {
        match self {
            Refusal::Dropped | Refusal::SourceGone => Answer::Silence,
            Refusal::OutOfSequence => Answer::Nak(NakCode::PsnSequenceError),
            Refusal::NoReceiveWqe => Answer::Rnr,
            Refusal::InvalidRequest | Refusal::ReceiveTooShort | Refusal::BadInvalidate => {
                Answer::Nak(NakCode::InvalidRequest)
            }
            Refusal::RemoteAccess => Answer::Nak(NakCode::RemoteAccessError),
            Refusal::RemoteOperational | Refusal::ReceiveUnusable => {
                Answer::Nak(NakCode::RemoteOperationalError)
            }
        }
    }

    /// The status an RC requester's WQE completes with, or `None` if it is sent again
    /// (a sequence error, an RNR wait).
    pub(crate) fn requester_status(self) -> Option<WcStatus> {
        match self {
            // What the requester sees at last: its retries run out.
            Refusal::Dropped => Some(WcStatus::RetryExcErr),
            Refusal::SourceGone => Some(WcStatus::LocProtErr),
            _ => match self.answer() {
                Answer::Nak(code) => nak_status(code),
                Answer::Rnr | Answer::Silence => None,
            },
        }
    }

    /// The status the receive WQE the request had taken completes with; `None`: it stays
    /// with the QP (and is flushed when the QP goes to the error state).
    pub(crate) fn receiver_status(self) -> Option<WcStatus> {
        match self {
            Refusal::ReceiveTooShort => Some(WcStatus::LocLenErr),
            Refusal::ReceiveUnusable => Some(WcStatus::LocProtErr),
            Refusal::BadInvalidate => Some(WcStatus::RemInvReqErr),
            Refusal::SourceGone => Some(WcStatus::RemAbortErr),
            _ => None,
        }
    }

    /// Whether an RC responder goes to the error state (IBTA 9.9.3: the responder's class B,
    /// C and D errors; not for a requester's own fault, a sequence error or an RNR wait).
    pub(crate) fn breaks_responder(self) -> bool {
        matches!(self.answer(), Answer::Nak(code) if code != NakCode::PsnSequenceError)
    }
}

/// The status a requester's WQE completes with when a NAK with `code` answers it (`None`: a
/// sequence error, it goes back and sends again).
pub(crate) fn nak_status(code: NakCode) -> Option<WcStatus> {
    match code {
        NakCode::PsnSequenceError => None,
        NakCode::InvalidRequest | NakCode::InvalidRdRequest => Some(WcStatus::RemInvReqErr),
        NakCode::RemoteAccessError => Some(WcStatus::RemAccessErr),
        NakCode::RemoteOperationalError => Some(WcStatus::RemOpErr),
    }
}
