// SPDX-License-Identifier: GPL-2.0

//! Host tests of the refusal table (`refusal.rs`): what each side learns of a request the
//! responder refuses, as IBTA 9.9 and rdma_rxe have it.

use crate::{
    abi::WcStatus as s,
    refusal::{nak_status, Answer, Refusal},
    transport::NakCode,
};

const ALL: [Refusal; 10] = [
    Refusal::Dropped,
    Refusal::OutOfSequence,
    Refusal::NoReceiveWqe,
    Refusal::InvalidRequest,
    Refusal::RemoteAccess,
    Refusal::RemoteOperational,
    Refusal::ReceiveTooShort,
    Refusal::ReceiveUnusable,
    Refusal::BadInvalidate,
    Refusal::SourceGone,
];

#[test]
fn the_table() {
    use Answer::{Nak, Rnr, Silence};
    use NakCode::*;
    // (refusal, answer on the wire, requester's status, receive WQE's status, responder to ERR)
    let table = [
        (Refusal::Dropped, Silence, Some(s::RetryExcErr), None, false),
        (
            Refusal::OutOfSequence,
            Nak(PsnSequenceError),
            None,
            None,
            false,
        ),
        (Refusal::NoReceiveWqe, Rnr, None, None, false),
        (
            Refusal::InvalidRequest,
            Nak(InvalidRequest),
            Some(s::RemInvReqErr),
            None,
            true,
        ),
        (
            Refusal::RemoteAccess,
            Nak(RemoteAccessError),
            Some(s::RemAccessErr),
            None,
            true,
        ),
        (
            Refusal::RemoteOperational,
            Nak(RemoteOperationalError),
            Some(s::RemOpErr),
            None,
            true,
        ),
        (
            Refusal::ReceiveTooShort,
            Nak(InvalidRequest),
            Some(s::RemInvReqErr),
            Some(s::LocLenErr),
            true,
        ),
        (
            Refusal::ReceiveUnusable,
            Nak(RemoteOperationalError),
            Some(s::RemOpErr),
            Some(s::LocProtErr),
            true,
        ),
        (
            Refusal::BadInvalidate,
            Nak(InvalidRequest),
            Some(s::RemInvReqErr),
            Some(s::RemInvReqErr),
            true,
        ),
        (
            Refusal::SourceGone,
            Silence,
            Some(s::LocProtErr),
            Some(s::RemAbortErr),
            false,
        ),
    ];
    assert_eq!(table.len(), ALL.len());
    for (why, answer, requester, receiver, breaks) in table {
        assert_eq!(why.answer(), answer, "{why:?}");
        assert_eq!(why.requester_status(), requester, "{why:?}");
        assert_eq!(why.receiver_status(), receiver, "{why:?}");
        assert_eq!(why.breaks_responder(), breaks, "{why:?}");
    }
}

#[test]
fn a_requester_on_the_wire_learns_what_one_by_placement_does() {
    // The wire's requester knows only the NAK code: every refusal that NAKs must give the
    // status direct placement gives.
    for why in ALL {
        if let Answer::Nak(code) = why.answer() {
            assert_eq!(nak_status(code), why.requester_status(), "{why:?}");
        }
    }
    assert_eq!(nak_status(NakCode::InvalidRdRequest), Some(s::RemInvReqErr));
}
