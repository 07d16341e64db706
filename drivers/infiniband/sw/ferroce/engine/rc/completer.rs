// SPDX-License-Identifier: GPL-2.0

//! The completer of a connected QP on the wire (RC): acknowledgements complete the messages
//! they cover, in order; READ responses and atomic acknowledgements carry data back; a NAK for
//! a PSN sequence error (or a timeout, [`super::timer`]) goes back to the first unacknowledged
//! PSN and sends again from there (go-back-N, `retry_cnt` timeouts at most); an RNR NAK waits
//! the time it names and sends again (`rnr_retry` times, 7 = for ever); other NAKs fail the WQE
//! and put the QP in error. An ACK that covers a READ or an atomic whose response has not come
//! means the response was lost: the request is sent again.

use kernel::rdma::{access, Qp, QpState, QpToken, QpType};

use crate::verbs::memory;
use crate::{
    engine::qp::{After, QpShared, SEND_WQE_MAX},
    protocol::{
        abi::{self, wc_opcode, wr_opcode as wop, Cqe, WcStatus},
        opcode::op,
        packet::Parsed,
        psn, refusal,
        transport::{self, Syndrome},
    },
    verbs::{
        device::Ferroce,
        memory::{Fault, Source, Walk},
        stats::Stat,
    },
};

use super::{
    mtu_of,
    requester::parse_message,
    window::{answered_by_empty_read_response, ReadPacket, Rec},
    TimerUse,
};

/// Completes the oldest record with `status` (its WQE leaves the ring); an error puts an RC QP
/// in error, a UC QP's send queue in SQE.
pub(super) fn complete_front(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    status: WcStatus,
    after: &mut After,
) {
    if st.conn.tx.count() == 0 {
        return;
    }
    let r = st.conn.tx.pop();
    let _ = st.sq.consume(1);
    let counters = &qp.device().data().counters;
    if status == WcStatus::Success {
        counters.add(Stat::SentMsgs, 1);
        counters.add(Stat::SentBytes, r.len.into());
    }
    if r.signaled || status != WcStatus::Success {
        let cqe = Cqe {
            wr_id: r.wr_id,
            status,
            opcode: abi::wc_opcode_of(r.op).unwrap_or(wc_opcode::SEND),
            byte_len: r.len,
            qp_num: qp.qp_num(),
            port_num: 1,
            kernel_qp: QpToken::of(qp).to_bits(),
            ..Cqe::default()
        };
        if let Ok(n) = crate::verbs::cq::post(qp.send_cq(), &cqe) {
            after.notices.send = after.notices.send.or(n);
        }
    }
    if status != WcStatus::Success {
        if qp.data().qp_type() == QpType::Rc {
            st.enter_error(qp, after);
        } else if matches!(st.attr.qp_state, QpState::Rts | QpState::Sqd) {
            st.attr.qp_state = QpState::Sqe;
            st.attr.cur_qp_state = QpState::Sqe;
        }
    }
    if st.conn.tx.count() == 0 && st.conn.timer == TimerUse::Ack {
        st.conn.timer = TimerUse::Idle;
        qp.cancel_timer();
    }
}

/// Sends again from PSN `p` (go-back-N), counting what goes again.
pub(super) fn go_back(qp: &Qp<Ferroce>, st: &mut QpShared, p: u32) {
    let mtu = mtu_of(st);
    if let Some(resent) = st.conn.tx.go_back(p, mtu) {
        qp.device().data().counters.add(Stat::Retransmits, resent);
    }
}

/// Every PSN up to `p` is acknowledged: completes the messages it covers, in order. A READ or
/// an atomic it covers whose answer has not come was lost if `implicit_nak` (an ACK came past
/// it): it goes again; otherwise (an answer to a later request overtook its own) the
/// completions stop there.
fn ack_upto(qp: &Qp<Ferroce>, st: &mut QpShared, p: u32, implicit_nak: bool, after: &mut After) {
    if !st.conn.tx.in_flight(p) {
        // Old, or for PSNs never sent.
        return;
    }
    // Past the send cursor (it went back, and the responder had more than it knew of).
    let mtu = mtu_of(st);
    st.conn.tx.skip_to(psn::add(p, 1), mtu);
    while st.conn.tx.count() > 0 {
        let r = st.conn.tx.rec(0);
        if r.local {
            // Executed when taken: it completes once it is the oldest, even while the
            // requester sends again from before it.
            complete_front(qp, st, r.status(), after);
            continue;
        }
        if st.conn.tx.next() == 0 || !r.started || psn::diff(r.last_psn(), p) > 0 {
            break;
        }
        if r.waits_response() && !r.answered {
            st.conn.tx.set_una(r.first_psn);
            // Acknowledged past a READ or an atomic whose response did not come: it was lost.
            // A READ's missing bytes are asked for again beside what goes on; an atomic goes
            // back (unless it is already being asked for again).
            let resume_at = psn::add(r.first_psn, r.done / mtu);
            if implicit_nak && !st.conn.tx.answer_lost(0) && !st.conn.tx.is_stale(resume_at) {
                go_back(qp, st, resume_at);
            }
            return;
        }
        complete_front(qp, st, r.status(), after);
    }
    st.conn.tx.acked(p);
    st.conn.retries = st.attr.retry_cnt;
    // Answers that came before this acknowledgement complete after it.
    drain_answered(qp, st, after);
    st.conn.tx.finish_round();
    progress(qp, st);
}

/// The oldest unacknowledged PSN moved: the timer stops if nothing is in flight (otherwise,
/// when it expires, it sees the progress against `una_at_arm` and starts again).
fn progress(qp: &Qp<Ferroce>, st: &mut QpShared) {
    if st.conn.timer == TimerUse::Ack && st.conn.tx.outstanding() == 0 && st.conn.tx.count() == 0 {
        st.conn.timer = TimerUse::Idle;
        qp.cancel_timer();
    }
}

/// Completes, in order, the oldest records whose answers are all in (READs and atomics whose
/// answers overtook those of the requests before them complete once those do).
pub(super) fn drain_answered(qp: &Qp<Ferroce>, st: &mut QpShared, after: &mut After) {
    while st.conn.tx.count() > 0 {
        let r = st.conn.tx.rec(0);
        if r.local {
            complete_front(qp, st, r.status(), after);
            continue;
        }
        if st.conn.tx.next() == 0 || !(r.started && r.waits_response() && r.answered) {
            break;
        }
        st.conn.tx.advance_una(psn::add(r.last_psn(), 1));
        complete_front(qp, st, r.status(), after);
    }
}

/// Fails the oldest WQE with `status` (a NAK or exhausted retries).
pub(super) fn fail_front(qp: &Qp<Ferroce>, st: &mut QpShared, status: WcStatus, after: &mut After) {
    complete_front(qp, st, status, after);
}

/// A response (ACK, NAK, READ response, atomic acknowledgement) for the requester.
pub(super) fn on_response(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>, after: &mut After) {
    if !matches!(st.attr.qp_state, QpState::Rts | QpState::Sqd) {
        return;
    }
    let counters = &qp.device().data().counters;
    let bpsn = p.hdr.bth.psn;
    let opc = p.hdr.bth.opcode & 0x1f;
    match opc {
        op::ACKNOWLEDGE => {
            let Some(aeth) = p.hdr.aeth else { return };
            let in_flight =
                psn::diff(bpsn, st.conn.tx.una()) >= 0 && psn::diff(bpsn, st.conn.tx.max_psn()) < 0;
            match Syndrome::from_byte(aeth.syndrome) {
                Some(Syndrome::Ack { .. }) => ack_upto(qp, st, bpsn, true, after),
                Some(Syndrome::RnrNak { timer }) if in_flight => {
                    counters.add(Stat::NaksRcvd, 1);
                    ack_upto(qp, st, psn::add(bpsn, psn::MASK), true, after);
                    if st.conn.rnr_retries == 0 {
                        fail_front(qp, st, WcStatus::RnrRetryExcErr, after);
                        return;
                    }
                    if st.conn.rnr_retries != 7 {
                        st.conn.rnr_retries -= 1;
                    }
                    go_back(qp, st, bpsn);
                    st.conn.rnr_hold = true;
                    st.conn.timer = TimerUse::Rnr;
                    let us = transport::rnr_timer_ns(timer) / 1000;
                    qp.arm_timer(us.min(u64::from(u32::MAX)) as u32);
                }
                Some(Syndrome::Nak(code)) if in_flight => {
                    counters.add(Stat::NaksRcvd, 1);
                    ack_upto(qp, st, psn::add(bpsn, psn::MASK), true, after);
                    match refusal::nak_status(code) {
                        Some(status) => fail_front(qp, st, status, after),
                        // A sequence error: a packet was lost; send again from its PSN
                        // (once per round), with a smaller window.
                        None if !st.conn.tx.is_stale(bpsn) => {
                            st.conn.tx.lost();
                            go_back(qp, st, bpsn);
                        }
                        None => {}
                    }
                }
                _ => {}
            }
        }
        // An ATOMIC_WRITE or a FLUSH is answered by an empty READ response (IBTA A19.4.3).
        op::RDMA_READ_RESPONSE_ONLY if single_at(st, bpsn, true).is_some() => {
            let acked = p.hdr.aeth.is_some_and(|a| {
                matches!(Syndrome::from_byte(a.syndrome), Some(Syndrome::Ack { .. }))
            });
            if acked && p.payload.is_empty() {
                answer_single(qp, st, bpsn, None, after);
            }
        }
        op::RDMA_READ_RESPONSE_FIRST
        | op::RDMA_READ_RESPONSE_MIDDLE
        | op::RDMA_READ_RESPONSE_LAST
        | op::RDMA_READ_RESPONSE_ONLY => read_response(qp, st, p, after),
        op::ATOMIC_ACKNOWLEDGE => {
            if let Some(orig) = p.hdr.atomic_ack {
                answer_single(qp, st, bpsn, Some(orig), after);
            }
        }
        _ => {}
    }
}

/// The sent record whose one request has PSN `bpsn`: an ATOMIC_WRITE or a FLUSH if
/// `empty_read_response`, an atomic otherwise (each kind has its own response).
fn single_at(st: &QpShared, bpsn: u32, empty_read_response: bool) -> Option<usize> {
    st.conn.tx.find(st.conn.tx.next(), |r| {
        r.started
            && r.first_psn == bpsn
            && r.is_single()
            && answered_by_empty_read_response(r.op) == empty_read_response
    })
}

/// The answer to the single-packet request `bpsn`: an atomic's original value (placed in its
/// local buffer), or `None` for the acknowledgement of an ATOMIC_WRITE or a FLUSH.
fn answer_single(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    bpsn: u32,
    orig: Option<u64>,
    after: &mut After,
) {
    let Some(i) = single_at(st, bpsn, orig.is_none()) else {
        return;
    };
    st.conn.tx.note_response(bpsn, true, mtu_of(st));
    let mut r = st.conn.tx.rec(i);
    if !r.answered {
        st.conn.tx.answer_heard();
        if let Some(orig) = orig {
            if place_local(qp, st, i, 0, &orig.to_ne_bytes()).is_err() {
                r.failed = Some(WcStatus::LocProtErr);
            }
        }
        r.done = r.len;
        r.answered = true;
        st.conn.tx.set_rec(i, r);
    }
    st.conn.retries = st.attr.retry_cnt;
    // What came before it is done, up to the first READ or atomic still waiting (an answer
    // that overtook its own: no going back for it); then it completes in its turn, with the
    // answered ones after it.
    ack_upto(qp, st, bpsn, false, after);
    drain_answered(qp, st, after);
    progress(qp, st);
}

/// Writes `bytes` at offset `at` of the local SGEs of the `i`-th record's WQE.
fn place_local(
    qp: &Qp<Ferroce>,
    st: &QpShared,
    i: usize,
    at: u32,
    bytes: &[u8],
) -> Result<(), Fault> {
    let mut wqe = [0u8; SEND_WQE_MAX];
    let len = (st.sq.wqe_size as usize).min(SEND_WQE_MAX);
    st.sq
        .peek(i as u32, &mut wqe[..len])
        .map_err(|_| Fault::Dest)?;
    let m = parse_message(&st.attr.cap, false, &wqe[..len]).map_err(|_| Fault::Dest)?;
    let mut walk = Walk::new(qp.device(), qp.pd_id(), access::LOCAL_WRITE, m.sges);
    walk.skip(at as usize)?;
    memory::place(&mut walk, &mut Source::Bytes(bytes), bytes.len(), false)
}

/// A READ response packet: its bytes placed at their offset in the READ's local memory, in
/// order or not (a responder answers in order, so a packet past one missing is evidence that
/// one was lost, and at [`super::window::REORDER`] of them the missing bytes are asked for
/// again, [`super::requester::next_step`]).
fn read_response(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>, after: &mut After) {
    let bpsn = p.hdr.bth.psn;
    let mtu = mtu_of(st);
    let n = p.payload.len() as u32;
    let ends = p.layout.last;
    let Some(i) = st.conn.tx.find(st.conn.tx.count(), |r| {
        r.op == wop::RDMA_READ && r.contains(bpsn)
    }) else {
        return;
    };
    let Rec {
        first_psn, failed, ..
    } = st.conn.tx.rec(i);
    if failed.is_some() {
        // Failed already (it completes so in its turn): nothing more is placed.
        return;
    }
    let counters = &qp.device().data().counters;
    let off = match st.conn.tx.classify_read(i, bpsn, n, mtu) {
        ReadPacket::Place { off } => off,
        ReadPacket::Duplicate => return,
        ReadPacket::Beyond => {
            counters.add(Stat::SeqErrors, 1);
            let k = psn::diff(bpsn, first_psn).max(0) as u32;
            st.conn.tx.read_beyond(i, k.saturating_mul(mtu), mtu);
            st.conn.tx.note_response(bpsn, ends, mtu);
            return;
        }
        ReadPacket::BadSize => {
            // A response of the wrong size: the READ fails in its turn.
            fail_read(qp, st, i, WcStatus::RemInvReqErr, after);
            return;
        }
    };
    if i > 0 {
        // The messages before the READ are done, up to the first READ or atomic still waiting
        // (whose answer this one overtook).
        ack_upto(qp, st, psn::add(first_psn, psn::MASK), false, after);
    }
    let Some(i) = st.conn.tx.find(st.conn.tx.count(), |j| {
        j.first_psn == first_psn && j.op == wop::RDMA_READ
    }) else {
        return;
    };
    if place_local(qp, st, i, off, p.payload).is_err() {
        // Local memory gone: the READ fails in its turn.
        fail_read(qp, st, i, WcStatus::LocProtErr, after);
        return;
    }
    if psn::add(first_psn, st.conn.tx.rec(i).done / mtu) != bpsn {
        counters.add(Stat::SeqErrors, 1);
    }
    st.conn.tx.read_placed(i, off, mtu);
    st.conn.tx.note_response(bpsn, ends, mtu);
    let r = st.conn.tx.rec(i);
    if i == 0 && !r.answered {
        st.conn.tx.set_una(psn::add(r.first_psn, r.done / mtu));
    }
    st.conn.retries = st.attr.retry_cnt;
    if r.answered {
        counters.add(Stat::RcvdMsgs, 1);
        counters.add(Stat::RcvdBytes, r.len.into());
        drain_answered(qp, st, after);
    }
    progress(qp, st);
}

/// The READ of record `i` fails with `status` once it is the oldest.
fn fail_read(qp: &Qp<Ferroce>, st: &mut QpShared, i: usize, status: WcStatus, after: &mut After) {
    let mut r = st.conn.tx.rec(i);
    r.failed = Some(status);
    r.answered = true;
    st.conn.tx.set_rec(i, r);
    drain_answered(qp, st, after);
}
