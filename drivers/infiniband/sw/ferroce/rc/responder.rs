// SPDX-License-Identifier: GPL-2.0

//! The responder of a connected QP on the wire (softirq): each request packet is taken under
//! the QP's lock, in PSN order. RC NAKs the first packet of an out-of-sequence run,
//! acknowledges duplicates again (a duplicate READ is served again if it asks for a READ the
//! responder remembers, a duplicate atomic answered from the saved result), and NAKs what it
//! cannot do: RNR when no receive WQE is posted, invalid request, remote access and
//! operational errors (the latter three put it in error). UC drops a message that lost a
//! packet.

use core::sync::atomic::Ordering;
use kernel::rdma::{access, Qp, QpState, QpToken, QpType};

use crate::{
    abi::{self, wc_flags, wc_opcode, wc_status, Cqe},
    device::Ferroce,
    eth::Reth,
    limits,
    opcode::op,
    packet::Parsed,
    placement::{self, Fault, Source, Walk},
    psn,
    qp::{After, QpShared, RECV_WQE_MAX},
    reply::{ack, nak, Reply},
    stats::{Counters, Stat},
    transport::{NakCode, Syndrome},
    wire,
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
    /// Whether the READ request `reth` at `psn` asks again for this READ or for the rest of it
    /// from one of its response packets on (`mtu` bytes each): its position in packets.
    fn resumes(&self, psn: u32, reth: &Reth, mtu: u32) -> Option<u32> {
        let at = psn::diff(psn, self.first);
        if !self.valid || at < 0 || at as u32 >= self.npkts {
            return None;
        }
        let at = at as u32;
        let off = at.checked_mul(mtu)?;
        let rest = self.len.checked_sub(off)?;
        (reth.rkey == self.rkey
            && reth.va == self.va.wrapping_add(off.into())
            && reth.dma_len == rest)
            .then_some(at)
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
        _ => Kind::Other,
    }
}

/// Takes the next receive WQE for a message (the one a UC message that lost a packet left, if
/// any); `false` if none is posted.
fn take_recv(qp: &Qp<Ferroce>, st: &mut QpShared) -> bool {
    if st.conn.recv.is_some() {
        return true;
    }
    let mut held = RecvHeld {
        len: 0,
        max_sge: st.attr.cap.max_recv_sge,
        resets: st.resets,
    };
    match st.rq.as_mut() {
        Some(rq) => {
            if rq.pending().unwrap_or(0) == 0 {
                return false;
            }
            let len = (rq.wqe_size as usize).min(RECV_WQE_MAX);
            if rq.peek(0, &mut st.conn.recv_wqe[..len]).is_err() || rq.consume(1).is_err() {
                return false;
            }
            held.len = len;
        }
        None => {
            let Some(srq) = qp.srq() else { return false };
            match crate::srq::take(srq, &mut st.conn.recv_wqe[..]) {
                Ok(Some((len, max_sge))) => {
                    held.len = len;
                    held.max_sge = max_sge;
                }
                _ => return false,
            }
        }
    }
    st.conn.recv = Some(held);
    true
}

/// Places `payload` at `at` of the held receive WQE.
fn place_recv(qp: &Qp<Ferroce>, st: &QpShared, at: u32, payload: &[u8]) -> Result<(), Fault> {
    let h = st.conn.recv.as_ref().ok_or(Fault::Dest)?;
    let wqe = &st.conn.recv_wqe;
    let hdr: &[u8; abi::RECV_WQE_HEADER] = wqe.first_chunk().ok_or(Fault::Dest)?;
    let num = abi::recv_wqe_num_sge(hdr);
    let end = abi::RECV_WQE_HEADER + num as usize * abi::SGE_SIZE;
    if num > h.max_sge || end > h.len {
        return Err(Fault::Dest);
    }
    let mut walk = Walk::new(
        qp.device(),
        qp.pd_id(),
        access::LOCAL_WRITE,
        &wqe[abi::RECV_WQE_HEADER..end],
    );
    walk.skip(at as usize)?;
    placement::place(&mut walk, &mut Source::Bytes(payload), payload.len(), false)
}

/// What a receive completion carries besides the data.
enum Ex {
    None,
    /// Immediate data, as the packet carried it.
    Imm(u32),
    /// The rkey a SEND_WITH_INV invalidated.
    Inv(u32),
}

/// Completes the held receive WQE.
#[expect(clippy::too_many_arguments)]
fn complete_recv(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    status: u32,
    opcode: u32,
    len: u32,
    ex: Ex,
    solicited: bool,
    after: &mut After,
) {
    let Some(h) = st.conn.recv.take() else { return };
    // A WQE of the QP's own RQ completes nowhere once the QP was reset.
    if h.resets != st.resets && st.rq.is_some() {
        return;
    }
    let hdr: &[u8; abi::RECV_WQE_HEADER] = match st.conn.recv_wqe.first_chunk() {
        Some(hdr) => hdr,
        None => return,
    };
    let mut cqe = Cqe {
        wr_id: abi::wqe_wr_id(hdr),
        status,
        opcode,
        byte_len: len,
        qp_num: qp.qp_num(),
        src_qp: st.attr.dest_qp_num,
        port_num: 1,
        kernel_qp: QpToken::of(qp).to_bits(),
        solicited,
        ..Cqe::default()
    };
    match ex {
        Ex::None => {}
        Ex::Imm(imm) => {
            cqe.imm_data = wire::imm_from_wire(imm);
            cqe.wc_flags |= wc_flags::WITH_IMM;
        }
        Ex::Inv(key) => {
            cqe.imm_data = key;
            cqe.wc_flags |= wc_flags::WITH_INV;
        }
    }
    if let Ok(n) = crate::cq::post(qp.recv_cq(), &cqe) {
        after.notices.recv = after.notices.recv.or(n);
    }
    if status == wc_status::SUCCESS {
        let counters = &qp.device().data().counters;
        counters.add(Stat::RcvdMsgs, 1);
        counters.add(Stat::RcvdBytes, len.into());
    }
}

/// A responder error: RC NAKs with `code` and enters ERR, after completing the receive WQE
/// in hand with `recv_status`; UC drops the message.
fn refuse(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    bpsn: u32,
    code: NakCode,
    recv_status: Option<u32>,
    after: &mut After,
) -> Reply {
    let rc = qp.data().qp_type() == QpType::Rc;
    qp.device().data().counters.add(Stat::Naks, 1);
    if let Some(status) = recv_status {
        let opcode = match st.conn.msg {
            InMsg::Write { .. } => wc_opcode::RECV_RDMA_WITH_IMM,
            _ => wc_opcode::RECV,
        };
        complete_recv(qp, st, status, opcode, 0, Ex::None, false, after);
    }
    st.conn.msg = InMsg::None;
    if !rc {
        return Reply::None;
    }
    let msn = st.conn.msn;
    st.enter_error(qp, after);
    nak(bpsn, code, msn)
}

/// Whether the responder serves the READ `reth`: the QP allows READs, and the range is within
/// a memory region of its PD that allows them.
fn read_allowed(qp: &Qp<Ferroce>, st: &QpShared, reth: &Reth) -> bool {
    st.attr.qp_access_flags & access::REMOTE_READ != 0
        && st.attr.max_dest_rd_atomic != 0
        && reth.dma_len <= limits::MAX_MSG_SZ
        && (reth.dma_len == 0
            || placement::find_remote(
                qp,
                reth.rkey,
                reth.va,
                reth.dma_len as usize,
                access::REMOTE_READ,
            )
            .is_some())
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
    if !matches!(
        st.attr.qp_state,
        QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
    ) {
        qp.device().data().counters.add(Stat::Dropped, 1);
        return Reply::None;
    }
    let counters = &qp.device().data().counters;
    let rc = qp.data().qp_type() == QpType::Rc;
    let bth = p.hdr.bth;
    let bpsn = bth.psn;
    let lay = p.layout;
    let opc = bth.opcode & 0x1f;
    let kind = kind_of(opc);
    let mtu = mtu_of(st);
    let d = psn::diff(bpsn, st.conn.epsn);
    if rc {
        if d > 0 {
            counters.add(Stat::SeqErrors, 1);
            if !st.conn.nak_sent {
                st.conn.nak_sent = true;
                return nak(st.conn.epsn, NakCode::PsnSequenceError, st.conn.msn);
            }
            return Reply::None;
        }
        if psn::before(bpsn, st.conn.epsn) {
            counters.add(Stat::DupRequests, 1);
            let msn = st.conn.msn;
            return match kind {
                // A READ asked again (its response, or part of it, was lost): served again
                // only if it asks for one the responder served, or for the rest of one
                // (IBTA 9.7.5.1.6), and still passes the checks a new one does. Any other
                // READ behind the expected PSN would make one small packet cost up to a
                // burst of responses of whatever the rkey reaches: dropped.
                Kind::Read => {
                    let resumed = p.hdr.reth.and_then(|reth| {
                        let at = st
                            .conn
                            .reads
                            .iter()
                            .find_map(|r| r.resumes(bpsn, &reth, mtu))?;
                        Some((reth, at))
                    });
                    match resumed {
                        Some((reth, at)) if read_allowed(qp, st, &reth) => {
                            // Asked again from here: what is queued from here on goes.
                            st.conn.out.cut_reads_from(bpsn);
                            Reply::Read {
                                psn: bpsn,
                                va: reth.va,
                                rkey: reth.rkey,
                                len: reth.dma_len,
                                msn,
                                mid: at > 0,
                            }
                        }
                        _ => {
                            counters.add(Stat::Dropped, 1);
                            Reply::None
                        }
                    }
                }
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
                // Done once (a second store could overwrite a later write): acknowledged again.
                Kind::AtomicWrite => Reply::ReadAck { psn: bpsn, msn },
                _ if bth.ack_req || lay.last => ack(psn::add(st.conn.epsn, psn::MASK), msn),
                _ => Reply::None,
            };
        }
    } else if d != 0 {
        // UC lost packets: the message in progress is dropped; its receive WQE is kept for
        // the next one. Only a message's first packet starts again.
        if !matches!(st.conn.msg, InMsg::None) {
            counters.add(Stat::Dropped, 1);
        }
        st.conn.msg = InMsg::None;
        if !lay.first {
            return Reply::None;
        }
    }
    st.conn.nak_sent = false;
    let starts = matches!(st.conn.msg, InMsg::None);
    let continues = matches!(
        (st.conn.msg, kind),
        (InMsg::Send { .. }, Kind::Send) | (InMsg::Write { .. }, Kind::Write)
    );
    let n = p.payload.len() as u32;
    if (lay.first && !starts)
        || (!lay.first && !continues)
        || kind == Kind::Other
        || n > mtu
        || (!lay.last && n != mtu)
        || (!rc && matches!(kind, Kind::Read | Kind::Atomic | Kind::AtomicWrite))
    {
        if !rc {
            st.conn.epsn = psn::add(bpsn, 1);
        }
        return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
    }
    let imm = p.hdr.imm;
    match kind {
        Kind::Send => {
            if lay.first && !take_recv(qp, st) {
                return no_receive_wqe(st, bpsn, rc, counters);
            }
            let placed = match st.conn.msg {
                InMsg::Send { placed } => placed,
                _ => 0,
            };
            // A message longer than the device takes (and than a completion's 32-bit length
            // counts) is an invalid request, whatever receive buffer it lands in.
            let Some(total) = placed.checked_add(n).filter(|&t| t <= limits::MAX_MSG_SZ) else {
                let status = Some(wc_status::LOC_LEN_ERR);
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, status, after);
            };
            match place_recv(qp, st, placed, p.payload) {
                Ok(()) => {}
                Err(Fault::Length) => {
                    return refuse(
                        qp,
                        st,
                        bpsn,
                        NakCode::InvalidRequest,
                        Some(wc_status::LOC_LEN_ERR),
                        after,
                    )
                }
                Err(_) => {
                    return refuse(
                        qp,
                        st,
                        bpsn,
                        NakCode::RemoteOperationalError,
                        Some(wc_status::LOC_PROT_ERR),
                        after,
                    )
                }
            }
            let placed = total;
            st.conn.msg = InMsg::Send { placed };
            if lay.last {
                if let Some(key) = p.hdr.ieth {
                    // SEND_WITH_INV: the rkey of a valid fast-registration MR of this QP's PD
                    // (only RC has the opcode), or an invalid request (rxe's status).
                    if !rc || !crate::mr::invalidate(qp, key) {
                        let status = Some(wc_status::REM_INV_REQ_ERR);
                        return refuse(qp, st, bpsn, NakCode::InvalidRequest, status, after);
                    }
                }
                st.conn.msg = InMsg::None;
                let ex = match (imm, p.hdr.ieth) {
                    (_, Some(key)) => Ex::Inv(key),
                    (Some(imm), None) => Ex::Imm(imm),
                    (None, None) => Ex::None,
                };
                complete_recv(
                    qp,
                    st,
                    wc_status::SUCCESS,
                    wc_opcode::RECV,
                    placed,
                    ex,
                    bth.se,
                    after,
                );
                st.conn.msn = psn::add(st.conn.msn, 1);
            }
        }
        Kind::Write => {
            if lay.first {
                let Some(reth) = p.hdr.reth else {
                    return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
                };
                if st.attr.qp_access_flags & access::REMOTE_WRITE == 0
                    || reth.dma_len > limits::MAX_MSG_SZ
                {
                    return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
                }
                if reth.dma_len > 0
                    && placement::find_remote(
                        qp,
                        reth.rkey,
                        reth.va,
                        reth.dma_len as usize,
                        access::REMOTE_WRITE,
                    )
                    .is_none()
                {
                    return refuse(qp, st, bpsn, NakCode::RemoteAccessError, None, after);
                }
                // The receive WQE of a one-packet WRITE with immediate, before the message
                // starts: after an RNR NAK the request comes again as a first packet.
                if lay.last && imm.is_some() && !take_recv(qp, st) {
                    return no_receive_wqe(st, bpsn, rc, counters);
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
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            };
            if n > left || (lay.last && n != left) {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            }
            if lay.last && imm.is_some() && !take_recv(qp, st) {
                return no_receive_wqe(st, bpsn, rc, counters);
            }
            if n > 0 {
                let remote = placement::one_sge(va, n.into(), rkey);
                let mut to = Walk::remote(qp, access::REMOTE_WRITE, &remote);
                if placement::place(&mut to, &mut Source::Bytes(p.payload), n as usize, false)
                    .is_err()
                {
                    return refuse(qp, st, bpsn, NakCode::RemoteAccessError, None, after);
                }
            }
            st.conn.msg = InMsg::Write {
                va: va.wrapping_add(n.into()),
                rkey,
                left: left - n,
                total,
            };
            if lay.last {
                st.conn.msg = InMsg::None;
                if imm.is_some() {
                    let ex = imm.map_or(Ex::None, Ex::Imm);
                    complete_recv(
                        qp,
                        st,
                        wc_status::SUCCESS,
                        wc_opcode::RECV_RDMA_WITH_IMM,
                        total,
                        ex,
                        bth.se,
                        after,
                    );
                } else {
                    counters.add(Stat::RcvdMsgs, 1);
                    counters.add(Stat::RcvdBytes, total.into());
                }
                st.conn.msn = psn::add(st.conn.msn, 1);
            }
        }
        Kind::Read => {
            let Some(reth) = p.hdr.reth else {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            };
            if st.attr.qp_access_flags & access::REMOTE_READ == 0 || st.attr.max_dest_rd_atomic == 0
            {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            }
            if !read_allowed(qp, st, &reth) {
                return refuse(qp, st, bpsn, NakCode::RemoteAccessError, None, after);
            }
            let npkts = reth.dma_len.div_ceil(mtu).max(1);
            st.conn.epsn = psn::add(bpsn, npkts);
            st.conn.msn = psn::add(st.conn.msn, 1);
            let c = &mut st.conn;
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
            return Reply::Read {
                psn: bpsn,
                va: reth.va,
                rkey: reth.rkey,
                len: reth.dma_len,
                msn: st.conn.msn,
                mid: false,
            };
        }
        Kind::Atomic => {
            let Some(a) = p.hdr.atomic_eth else {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            };
            if st.attr.qp_access_flags & access::REMOTE_ATOMIC == 0
                || st.attr.max_dest_rd_atomic == 0
                || a.va % 8 != 0
            {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            }
            let Some(range) = placement::find_remote(qp, a.rkey, a.va, 8, access::REMOTE_ATOMIC)
            else {
                return refuse(qp, st, bpsn, NakCode::RemoteAccessError, None, after);
            };
            let Some(word) = range.atomic_word() else {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            };
            let orig = if opc == op::COMPARE_SWAP {
                word.compare_exchange(a.compare, a.swap_add, Ordering::SeqCst, Ordering::SeqCst)
                    .unwrap_or_else(|v| v)
            } else {
                word.fetch_add(a.swap_add, Ordering::SeqCst)
            };
            drop(range);
            let c = &mut st.conn;
            if let Some(slot) = c.atomics.get_mut(c.atomic_next % SAVED_ATOMICS) {
                *slot = (bpsn, orig, true);
            }
            c.atomic_next = c.atomic_next.wrapping_add(1);
            c.epsn = psn::add(bpsn, 1);
            c.msn = psn::add(c.msn, 1);
            counters.add(Stat::RcvdMsgs, 1);
            return Reply::Atomic {
                psn: bpsn,
                orig,
                msn: c.msn,
            };
        }
        Kind::AtomicWrite => {
            let Some(reth) = p.hdr.reth else {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            };
            // Exactly 8 bytes (IBTA oA19-28), to an aligned word the QP and the MR let remote
            // peers write; it takes a READ/atomic resource.
            let Ok(value) = <[u8; 8]>::try_from(p.payload) else {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            };
            if st.attr.qp_access_flags & access::REMOTE_WRITE == 0
                || st.attr.max_dest_rd_atomic == 0
                || reth.dma_len != 8
                || bth.pad != 0
            {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            }
            let Some(range) =
                placement::find_remote(qp, reth.rkey, reth.va, 8, access::REMOTE_WRITE)
            else {
                return refuse(qp, st, bpsn, NakCode::RemoteAccessError, None, after);
            };
            // Aligned in memory (as rxe checks the page offset; the iova may differ mod 8).
            let Some(word) = range.atomic_word() else {
                return refuse(qp, st, bpsn, NakCode::InvalidRequest, None, after);
            };
            word.store(u64::from_ne_bytes(value), Ordering::SeqCst);
            drop(range);
            let c = &mut st.conn;
            c.epsn = psn::add(bpsn, 1);
            c.msn = psn::add(c.msn, 1);
            counters.add(Stat::RcvdMsgs, 1);
            counters.add(Stat::RcvdBytes, 8);
            return Reply::ReadAck {
                psn: bpsn,
                msn: c.msn,
            };
        }
        Kind::Other => return Reply::None,
    }
    st.conn.epsn = psn::add(bpsn, 1);
    if rc && bth.ack_req {
        ack(bpsn, st.conn.msn)
    } else {
        Reply::None
    }
}
