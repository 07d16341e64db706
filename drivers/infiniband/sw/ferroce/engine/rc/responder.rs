// SPDX-License-Identifier: GPL-2.0

//! The responder of a connected QP on the wire (softirq): each request packet is taken under
//! the QP's lock, in PSN order. RC NAKs the first packet of an out-of-sequence run,
//! acknowledges duplicates again (a duplicate READ is served again if it asks for a READ the
//! responder remembers, a duplicate atomic answered from the saved result), and NAKs what it
//! cannot do: RNR when no receive WQE is posted, invalid request, remote access and
//! operational errors (the latter three put it in error). UC drops a message that lost a
//! packet.

use kernel::rdma::{access, Qp, QpState, QpType};

use crate::verbs::memory;
use crate::{
    engine::{
        qp::{After, QpShared},
        reply::{ack, nak, Reply},
        responder::{self, Atomic, Extra, Received, Remote},
    },
    net::wire,
    protocol::{
        abi::{self, wc_opcode, WcStatus},
        eth::{flush, Reth},
        limits,
        opcode::op,
        packet::Parsed,
        psn,
        refusal::{Answer, Refusal},
        transport::Syndrome,
    },
    verbs::{
        device::Ferroce,
        memory::{Fault, Source, Walk},
        stats::{Counters, Stat},
    },
};

use super::mtu_of;

/// Atomic results a responder keeps to answer duplicates: one per atomic a requester may have
/// outstanding (it must not be executed twice, and a duplicate whose result is gone is never
/// answered).
pub(super) const SAVED_ATOMICS: usize = limits::MAX_QP_RD_ATOM as usize;
/// READs a responder remembers, to serve them again: one per READ a requester may have
/// outstanding (a duplicate of one it forgot would be dropped, and the requester would retry
/// until its retries run out).
pub(super) const SAVED_READS: usize = limits::MAX_QP_RD_ATOM as usize;

/// A READ the responder served, remembered so that it serves it again when asked.
#[derive(Clone, Copy, Default)]
pub(super) struct SavedRead {
    /// Its first PSN and how many response packets it took.
    first: u32,
    npkts: u32,
    va: u64,
    rkey: u32,
    len: u32,
    valid: bool,
}

impl SavedRead {
    /// Whether the READ request `reth` at `psn` asks again for this READ, or for a part of it
    /// that starts at one of its response packets (`mtu` bytes each): its position in
    /// packets, and whether it asks for all the rest.
    fn resumes(&self, psn: u32, reth: &Reth, mtu: u32) -> Option<(u32, bool)> {
        let at = psn::diff(psn, self.first);
        if !self.valid || at < 0 || at as u32 >= self.npkts {
            return None;
        }
        let at = at as u32;
        let off = at.checked_mul(mtu)?;
        let rest = self.len.checked_sub(off)?;
        // A part only of what is left: a requester that has the packets after a lost one asks
        // for the gap alone (rxe_resp.c's duplicate_request serves any subset too).
        (reth.rkey == self.rkey
            && reth.va == self.va.wrapping_add(off.into())
            && reth.dma_len <= rest
            && (reth.dma_len > 0 || rest == 0))
            .then_some((at, reth.dma_len == rest))
    }
}

/// The message a responder is in the middle of.
#[derive(Clone, Copy)]
pub(super) enum InMsg {
    None,
    Send {
        placed: u32,
    },
    Write {
        va: u64,
        rkey: u32,
        left: u32,
        total: u32,
    },
}

/// The receive WQE a message in progress fills (taken from the RQ or the SRQ into
/// `Conn::recv_wqe`).
pub(super) struct RecvHeld {
    pub(super) len: usize,
    pub(super) max_sge: u32,
    pub(super) resets: u32,
}

/// The kinds of request a packet belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Send,
    Write,
    Read,
    Atomic,
    AtomicWrite,
    Flush,
    Other,
}

fn kind_of(opc: u8) -> Kind {
    match opc {
        op::SEND_FIRST..=op::SEND_ONLY_WITH_IMMEDIATE
        | op::SEND_LAST_WITH_INVALIDATE
        | op::SEND_ONLY_WITH_INVALIDATE => Kind::Send,
        op::RDMA_WRITE_FIRST..=op::RDMA_WRITE_ONLY_WITH_IMMEDIATE => Kind::Write,
        op::RDMA_READ_REQUEST => Kind::Read,
        op::COMPARE_SWAP | op::FETCH_ADD => Kind::Atomic,
        op::ATOMIC_WRITE => Kind::AtomicWrite,
        op::FLUSH => Kind::Flush,
        _ => Kind::Other,
    }
}

/// Takes the next receive WQE for a message (the one a UC message that lost a packet left, if
/// any).
fn take_recv(qp: &Qp<Ferroce>, st: &mut QpShared) -> Result<(), Refusal> {
    if st.conn.recv.is_some() {
        return Ok(());
    }
    let QpShared {
        rq,
        conn,
        attr,
        resets,
        ..
    } = st;
    let taken = responder::take_receive_wqe(
        qp,
        rq.as_mut(),
        attr.cap.max_recv_sge,
        &mut conn.recv_wqe[..],
    )?;
    conn.recv = Some(RecvHeld {
        len: taken.len,
        max_sge: taken.max_sge,
        resets: *resets,
    });
    Ok(())
}

/// Places `payload` at `at` of the held receive WQE.
fn place_recv(qp: &Qp<Ferroce>, st: &QpShared, at: u32, payload: &[u8]) -> Result<(), Refusal> {
    let h = st.conn.recv.as_ref().ok_or(Refusal::ReceiveUnusable)?;
    let wqe = st
        .conn
        .recv_wqe
        .get(..h.len)
        .ok_or(Refusal::ReceiveUnusable)?;
    let sges = responder::receive_sges(wqe, h.max_sge)?;
    let mut walk = Walk::new(qp.device(), qp.pd_id(), access::LOCAL_WRITE, sges);
    walk.skip(at as usize)
        .and_then(|()| memory::place(&mut walk, &mut Source::Bytes(payload), payload.len(), false))
        .map_err(|f| match f {
            Fault::Length => Refusal::ReceiveTooShort,
            Fault::Source | Fault::Dest => Refusal::ReceiveUnusable,
        })
}

/// Completes the held receive WQE with `status` for the message `msg`.
fn complete_recv(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    status: WcStatus,
    msg: &Received,
    after: &mut After,
) {
    let Some(h) = st.conn.recv.take() else { return };
    // A WQE of the QP's own RQ completes nowhere once the QP was reset.
    if h.resets != st.resets && st.rq.is_some() {
        return;
    }
    let Some(hdr) = st.conn.recv_wqe.first_chunk::<{ abi::RECV_WQE_HEADER }>() else {
        return;
    };
    let cqe = responder::receive_cqe(qp, abi::wqe_wr_id(hdr), status, msg);
    if let Ok(n) = crate::verbs::cq::post(qp.recv_cq(), &cqe) {
        after.notices.recv = after.notices.recv.or(n);
    }
    if status == WcStatus::Success {
        responder::count_received(qp, msg.len);
    }
}

/// A message of `len` bytes the receive WQE held takes, for its completion.
fn received(st: &QpShared, opcode: u32, len: u32, extra: Extra, solicited: bool) -> Received {
    Received {
        opcode,
        len,
        src_qp: st.attr.dest_qp_num,
        extra,
        solicited,
    }
}

/// A responder error: RC NAKs with `code` and enters ERR, after completing the receive WQE
/// in hand with `recv_status`; UC drops the message.
fn refuse(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    bpsn: u32,
    why: Refusal,
    after: &mut After,
) -> Reply {
    let rc = qp.data().qp_type() == QpType::Rc;
    let counters = &qp.device().data().counters;
    if why == Refusal::NoReceiveWqe {
        return no_receive_wqe(st, bpsn, rc, counters);
    }
    counters.add(Stat::Naks, 1);
    if let Some(status) = why.receiver_status() {
        let opcode = match st.conn.msg {
            InMsg::Write { .. } => wc_opcode::RECV_RDMA_WITH_IMM,
            _ => wc_opcode::RECV,
        };
        let msg = received(st, opcode, 0, Extra::None, false);
        complete_recv(qp, st, status, &msg, after);
    }
    st.conn.msg = InMsg::None;
    if !rc {
        return Reply::None;
    }
    let msn = st.conn.msn;
    if why.breaks_responder() {
        st.enter_error(qp, after);
    }
    match why.answer() {
        Answer::Nak(code) => nak(bpsn, code, msn),
        Answer::Rnr | Answer::Silence => Reply::None,
    }
}

/// Whether the responder serves the READ `reth`: the QP allows READs, and the rkey opens the
/// range to them.
fn check_read(qp: &Qp<Ferroce>, st: &QpShared, reth: &Reth) -> Result<(), Refusal> {
    responder::check_qp_allows(
        st.attr.qp_access_flags,
        st.attr.max_dest_rd_atomic,
        Remote::Read,
    )?;
    responder::check_rkey(qp, Remote::Read, reth.va, reth.rkey, reth.dma_len)
}

/// Serves the READ `reth` at `bpsn` (checked): remembers it (to serve it again if asked)
/// and answers it with its response packets, which take the PSNs after it.
fn serve_read(st: &mut QpShared, bpsn: u32, reth: &Reth, mtu: u32) -> Reply {
    let npkts = reth.dma_len.div_ceil(mtu).max(1);
    let c = &mut st.conn;
    c.epsn = psn::add(bpsn, npkts);
    c.msn = psn::add(c.msn, 1);
    if let Some(slot) = c.reads.get_mut(c.read_next % SAVED_READS) {
        *slot = SavedRead {
            first: bpsn,
            npkts,
            va: reth.va,
            rkey: reth.rkey,
            len: reth.dma_len,
            valid: true,
        };
    }
    c.read_next = c.read_next.wrapping_add(1);
    Reply::Read {
        psn: bpsn,
        va: reth.va,
        rkey: reth.rkey,
        len: reth.dma_len,
        msn: c.msn,
        mid: false,
    }
}

/// No receive WQE for a message (a SEND, or the immediate of an RDMA WRITE): RC answers with
/// an RNR NAK (the requester sends it again after the QP's `min_rnr_timer`); UC drops the
/// message.
fn no_receive_wqe(st: &mut QpShared, bpsn: u32, rc: bool, counters: &Counters) -> Reply {
    counters.add(if rc { Stat::RnrWaits } else { Stat::Dropped }, 1);
    if !rc {
        st.conn.msg = InMsg::None;
        st.conn.epsn = psn::add(bpsn, 1);
        return Reply::None;
    }
    Reply::Ack {
        psn: bpsn,
        syndrome: Syndrome::RnrNak {
            timer: st.attr.min_rnr_timer,
        }
        .to_byte(),
        msn: st.conn.msn,
    }
}

/// A request packet for the responder.
pub(super) fn on_request(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    p: &Parsed<'_>,
    after: &mut After,
) -> Reply {
    let counters = &qp.device().data().counters;
    if !matches!(
        st.attr.qp_state,
        QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
    ) {
        counters.add(Stat::Dropped, 1);
        return Reply::None;
    }
    let rc = qp.data().qp_type() == QpType::Rc;
    let bpsn = p.hdr.bth.psn;
    let d = psn::diff(bpsn, st.conn.epsn);
    if rc && d > 0 {
        return out_of_sequence(st, counters);
    }
    if rc && psn::before(bpsn, st.conn.epsn) {
        counters.add(Stat::DupRequests, 1);
        return duplicate(qp, st, p);
    }
    if !rc && d != 0 && !uc_resync(st, p, counters) {
        return Reply::None;
    }
    st.conn.nak_sent = false;
    let kind = kind_of(p.hdr.bth.opcode & 0x1f);
    if let Err(why) = check_opcode_sequence(st, p, kind, rc) {
        if !rc {
            st.conn.epsn = psn::add(bpsn, 1);
        }
        return refuse(qp, st, bpsn, why, after);
    }
    let served = match kind {
        Kind::Send => on_send(qp, st, p, rc, after).map(|()| None),
        Kind::Write => on_write(qp, st, p, after).map(|()| None),
        Kind::Read => on_read(qp, st, p).map(Some),
        Kind::Atomic => on_atomic(qp, st, p).map(Some),
        Kind::AtomicWrite => on_atomic_write(qp, st, p).map(Some),
        Kind::Flush => on_flush(qp, st, p).map(Some),
        Kind::Other => return Reply::None,
    };
    match served {
        Ok(Some(reply)) => reply,
        // A SEND or WRITE packet placed: acknowledged if asked.
        Ok(None) => {
            st.conn.epsn = psn::add(bpsn, 1);
            if rc && p.hdr.bth.ack_req {
                ack(bpsn, st.conn.msn)
            } else {
                Reply::None
            }
        }
        Err(why) => refuse(qp, st, bpsn, why, after),
    }
}

/// RC, a request ahead of the expected PSN: a packet before it was lost. The first one of the
/// run is NAKed (PSN sequence error), the rest dropped until the expected one comes.
fn out_of_sequence(st: &mut QpShared, counters: &Counters) -> Reply {
    counters.add(Stat::SeqErrors, 1);
    if st.conn.nak_sent {
        return Reply::None;
    }
    st.conn.nak_sent = true;
    match Refusal::OutOfSequence.answer() {
        Answer::Nak(code) => nak(st.conn.epsn, code, st.conn.msn),
        Answer::Rnr | Answer::Silence => Reply::None,
    }
}

/// RC, a request behind the expected PSN: a duplicate (IBTA 9.7.5.1.6). It is not executed
/// again; the answer it had is given again where the responder still has it.
fn duplicate(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>) -> Reply {
    let bpsn = p.hdr.bth.psn;
    let msn = st.conn.msn;
    match kind_of(p.hdr.bth.opcode & 0x1f) {
        Kind::Read => read_again(qp, st, p),
        Kind::Atomic => {
            st.conn
                .atomics
                .iter()
                .find(|a| a.2 && a.0 == bpsn)
                .map_or(Reply::None, |a| Reply::Atomic {
                    psn: bpsn,
                    orig: a.1,
                    msn,
                })
        }
        // Done once (a second store could overwrite a later write), acknowledged again; a
        // FLUSH covers only what was placed before it, answered again. Only one the responder
        // executed: any other was never checked (its access, its FETH).
        Kind::AtomicWrite | Kind::Flush => {
            if st.conn.singles.iter().any(|s| s.1 && s.0 == bpsn) {
                Reply::ReadAck { psn: bpsn, msn }
            } else {
                qp.device().data().counters.add(Stat::Dropped, 1);
                Reply::None
            }
        }
        _ if p.hdr.bth.ack_req || p.layout.last => ack(psn::add(st.conn.epsn, psn::MASK), msn),
        _ => Reply::None,
    }
}

/// A READ asked again (its response, or part of it, was lost): served again only if it asks
/// for one the responder served, or for a part of one (IBTA 9.7.5.1.6), and still passes the
/// checks a new one does. Any other READ behind the expected PSN would make one small packet
/// cost up to a burst of responses of whatever the rkey reaches: dropped.
fn read_again(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>) -> Reply {
    let bpsn = p.hdr.bth.psn;
    let mtu = mtu_of(st);
    let resumed = p.hdr.reth.and_then(|reth| {
        let at = st
            .conn
            .reads
            .iter()
            .find_map(|r| r.resumes(bpsn, &reth, mtu))?;
        Some((reth, at))
    });
    match resumed {
        Some((reth, (at, rest))) if check_read(qp, st, &reth).is_ok() => {
            if rest {
                // Asked again from here on (going back): what is queued from here on goes.
                st.conn.out.cut_reads_from(bpsn);
            } else {
                // A part (a gap): what is queued of it goes; it goes in PSN order.
                st.conn.out.cut_reads_in(bpsn, reth.dma_len, mtu);
            }
            Reply::Read {
                psn: bpsn,
                va: reth.va,
                rkey: reth.rkey,
                len: reth.dma_len,
                msn: st.conn.msn,
                mid: at > 0,
            }
        }
        _ => {
            qp.device().data().counters.add(Stat::Dropped, 1);
            Reply::None
        }
    }
}

/// UC, a request at another PSN than expected: packets were lost. The message in progress is
/// dropped (its receive WQE is kept for the next one); only a message's first packet starts
/// again (`true`).
fn uc_resync(st: &mut QpShared, p: &Parsed<'_>, counters: &Counters) -> bool {
    if !matches!(st.conn.msg, InMsg::None) {
        counters.add(Stat::Dropped, 1);
    }
    st.conn.msg = InMsg::None;
    p.layout.first
}

/// IBTA 9.7.5.1.3 (C9-70, C9-71): the packet continues the message in progress or starts one
/// when none is; its payload is a whole MTU but in a message's last packet, at most one MTU;
/// UC carries no READs or atomics.
fn check_opcode_sequence(
    st: &QpShared,
    p: &Parsed<'_>,
    kind: Kind,
    rc: bool,
) -> Result<(), Refusal> {
    let lay = p.layout;
    let mtu = mtu_of(st);
    let n = p.payload.len() as u32;
    let starts = matches!(st.conn.msg, InMsg::None);
    let continues = matches!(
        (st.conn.msg, kind),
        (InMsg::Send { .. }, Kind::Send) | (InMsg::Write { .. }, Kind::Write)
    );
    if (lay.first && !starts)
        || (!lay.first && !continues)
        || kind == Kind::Other
        || n > mtu
        || (!lay.last && n != mtu)
        || (!rc
            && matches!(
                kind,
                Kind::Read | Kind::Atomic | Kind::AtomicWrite | Kind::Flush
            ))
    {
        return Err(Refusal::InvalidRequest);
    }
    Ok(())
}

/// A SEND packet: the first takes a receive WQE, each is placed at its offset, the last
/// completes the WQE (after invalidating the rkey of a SEND_WITH_INV).
fn on_send(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    p: &Parsed<'_>,
    rc: bool,
    after: &mut After,
) -> Result<(), Refusal> {
    if p.layout.first {
        take_recv(qp, st)?;
    }
    let placed = match st.conn.msg {
        InMsg::Send { placed } => placed,
        _ => 0,
    };
    // A message longer than the device takes (and than a completion's 32-bit length counts)
    // is an invalid request, whatever receive buffer it lands in.
    let total = placed
        .checked_add(p.payload.len() as u32)
        .filter(|&t| t <= limits::MAX_MSG_SZ)
        .ok_or(Refusal::ReceiveTooShort)?;
    place_recv(qp, st, placed, p.payload)?;
    st.conn.msg = InMsg::Send { placed: total };
    if !p.layout.last {
        return Ok(());
    }
    if let Some(key) = p.hdr.ieth {
        // SEND_WITH_INV: the rkey of a valid fast-registration MR of this QP's PD (only RC
        // has the opcode), or an invalid request (rxe's status).
        if !rc || !crate::verbs::mr::invalidate(qp, key) {
            return Err(Refusal::BadInvalidate);
        }
    }
    st.conn.msg = InMsg::None;
    let extra = match (p.hdr.imm, p.hdr.ieth) {
        (_, Some(key)) => Extra::Inv(key),
        (Some(imm), None) => Extra::Imm(wire::imm_from_wire(imm)),
        (None, None) => Extra::None,
    };
    let msg = received(st, wc_opcode::RECV, total, extra, p.hdr.bth.se);
    complete_recv(qp, st, WcStatus::Success, &msg, after);
    st.conn.msn = psn::add(st.conn.msn, 1);
    Ok(())
}

/// An RDMA WRITE packet: the first is checked against the QP and the rkey (and, with
/// immediate data and alone, takes its receive WQE before anything is placed: after an RNR
/// NAK it comes again whole); each is placed where the one before ended; the last completes
/// the receive WQE of an immediate.
fn on_write(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    p: &Parsed<'_>,
    after: &mut After,
) -> Result<(), Refusal> {
    let lay = p.layout;
    let imm = p.hdr.imm;
    if lay.first {
        let reth = p.hdr.reth.ok_or(Refusal::InvalidRequest)?;
        responder::check_qp_allows(
            st.attr.qp_access_flags,
            st.attr.max_dest_rd_atomic,
            Remote::Write,
        )?;
        responder::check_rkey(qp, Remote::Write, reth.va, reth.rkey, reth.dma_len)?;
        if lay.last && imm.is_some() {
            take_recv(qp, st)?;
        }
        st.conn.msg = InMsg::Write {
            va: reth.va,
            rkey: reth.rkey,
            left: reth.dma_len,
            total: reth.dma_len,
        };
    }
    let InMsg::Write {
        va,
        rkey,
        left,
        total,
    } = st.conn.msg
    else {
        return Err(Refusal::InvalidRequest);
    };
    let n = p.payload.len() as u32;
    if n > left || (lay.last && n != left) {
        return Err(Refusal::InvalidRequest);
    }
    if lay.last && imm.is_some() {
        take_recv(qp, st)?;
    }
    if n > 0 {
        let remote = memory::one_sge(va, n.into(), rkey);
        let mut to = Walk::remote(qp, access::REMOTE_WRITE, &remote);
        memory::place(&mut to, &mut Source::Bytes(p.payload), n as usize, false)
            .map_err(|_| Refusal::RemoteAccess)?;
    }
    st.conn.msg = InMsg::Write {
        va: va.wrapping_add(n.into()),
        rkey,
        left: left - n,
        total,
    };
    if !lay.last {
        return Ok(());
    }
    st.conn.msg = InMsg::None;
    match imm {
        Some(imm) => {
            let extra = Extra::Imm(wire::imm_from_wire(imm));
            let msg = received(
                st,
                wc_opcode::RECV_RDMA_WITH_IMM,
                total,
                extra,
                p.hdr.bth.se,
            );
            complete_recv(qp, st, WcStatus::Success, &msg, after);
        }
        None => responder::count_received(qp, total),
    }
    st.conn.msn = psn::add(st.conn.msn, 1);
    Ok(())
}

/// An RDMA READ request: checked, remembered, answered by its response packets.
fn on_read(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>) -> Result<Reply, Refusal> {
    let reth = p.hdr.reth.ok_or(Refusal::InvalidRequest)?;
    check_read(qp, st, &reth)?;
    Ok(serve_read(st, p.hdr.bth.psn, &reth, mtu_of(st)))
}

/// An atomic: executed once, its result kept to answer a duplicate.
fn on_atomic(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>) -> Result<Reply, Refusal> {
    let a = p.hdr.atomic_eth.ok_or(Refusal::InvalidRequest)?;
    let bpsn = p.hdr.bth.psn;
    let op = if p.hdr.bth.opcode & 0x1f == op::COMPARE_SWAP {
        Atomic::CompareSwap {
            compare: a.compare,
            swap: a.swap_add,
        }
    } else {
        Atomic::FetchAdd { add: a.swap_add }
    };
    responder::check_qp_allows(
        st.attr.qp_access_flags,
        st.attr.max_dest_rd_atomic,
        Remote::Atomic,
    )?;
    let orig = responder::execute_atomic(qp, a.va, a.rkey, op)?;
    let c = &mut st.conn;
    if let Some(slot) = c.atomics.get_mut(c.atomic_next % SAVED_ATOMICS) {
        *slot = (bpsn, orig, true);
    }
    c.atomic_next = c.atomic_next.wrapping_add(1);
    c.epsn = psn::add(bpsn, 1);
    c.msn = psn::add(c.msn, 1);
    Ok(Reply::Atomic {
        psn: bpsn,
        orig,
        msn: c.msn,
    })
}

/// An ATOMIC_WRITE: exactly 8 bytes (IBTA oA19-28) in the payload and in the RETH, no
/// padding, stored once.
fn on_atomic_write(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>) -> Result<Reply, Refusal> {
    let reth = p.hdr.reth.ok_or(Refusal::InvalidRequest)?;
    let value = <[u8; 8]>::try_from(p.payload).map_err(|_| Refusal::InvalidRequest)?;
    if reth.dma_len != 8 || p.hdr.bth.pad != 0 {
        return Err(Refusal::InvalidRequest);
    }
    responder::check_qp_allows(
        st.attr.qp_access_flags,
        st.attr.max_dest_rd_atomic,
        Remote::AtomicWrite,
    )?;
    responder::execute_atomic_write(qp, reth.va, reth.rkey, value)?;
    Ok(single_done(st, p.hdr.bth.psn))
}

/// An ATOMIC_WRITE or a FLUSH at `bpsn` executed: remembered (a duplicate of it is answered
/// again), and answered by an empty READ response.
fn single_done(st: &mut QpShared, bpsn: u32) -> Reply {
    let c = &mut st.conn;
    if let Some(slot) = c.singles.get_mut(c.single_next % SAVED_ATOMICS) {
        *slot = (bpsn, true);
    }
    c.single_next = c.single_next.wrapping_add(1);
    c.epsn = psn::add(bpsn, 1);
    c.msn = psn::add(c.msn, 1);
    Reply::ReadAck {
        psn: bpsn,
        msn: c.msn,
    }
}

/// A FLUSH (IBTA 1.5 A19.4.2): a placement type or both and a range (of at most 2^31 - 1
/// bytes, A19) or a region the FETH defines, the QP granting each placement type asked for
/// (and READ/atomic resources: stricter than rxe, which uses one but does not refuse a QP
/// that has none; ib_cm grants FLUSH only with responder resources), then the memory; no
/// payload (the layout has none). Answered by an empty READ response, in order behind the
/// replies queued before it.
fn on_flush(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>) -> Result<Reply, Refusal> {
    let feth = p.hdr.feth.ok_or(Refusal::InvalidRequest)?;
    let reth = p.hdr.reth.ok_or(Refusal::InvalidRequest)?;
    if !feth.is_valid() || (feth.selectivity == flush::RANGE && reth.dma_len > flush::MAX_RANGE) {
        return Err(Refusal::InvalidRequest);
    }
    responder::check_qp_allows(
        st.attr.qp_access_flags,
        st.attr.max_dest_rd_atomic,
        Remote::Flush(feth.placement),
    )?;
    responder::execute_flush(qp, feth, reth.va, reth.rkey, reth.dma_len)?;
    Ok(single_done(st, p.hdr.bth.psn))
}
