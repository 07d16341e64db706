// SPDX-License-Identifier: GPL-2.0

//! The connected transports on the wire (RC and UC, IBTA chapter 9): requester, completer and
//! responder of a QP whose peer is on another host (or another ferroce device).
//!
//! Requester: the send queue's executor (`run`, in the doorbell system call, or in softirq when
//! an acknowledgement opens the window) turns WQEs into packets, up to [`WINDOW`] packets in
//! flight (fewer for a while after a timeout, [`MIN_WINDOW`]), with PSNs from the QP's `sq_psn`
//! on. A WQE stays in the ring until it completes; a
//! record per started WQE (`Rec`) keeps what the completer needs. RC asks for an
//! acknowledgement at the end of each message and every [`ACK_EVERY`] packets.
//!
//! Completer (RC): ACKs complete the messages they cover in order; READ responses and atomic
//! acknowledgements carry data back; a NAK for a PSN sequence error or a timeout goes back to
//! the first unacknowledged PSN and sends again from there (go-back-N, `retry_cnt` timeouts at
//! most); an RNR NAK waits the time it names and sends again (`rnr_retry` times, 7 = for ever);
//! other NAKs fail the WQE and put the QP in error. An ACK that covers a READ or an atomic
//! whose response has not come means the response was lost: the request is sent again.
//!
//! Responder (softirq): each packet is taken under the QP's lock, in PSN order. RC NAKs the
//! first packet of an out-of-sequence run, acknowledges duplicates again (a duplicate READ is
//! served again, a duplicate atomic answered from the saved result), and NAKs what it cannot
//! do: RNR when no receive WQE is posted, invalid request, remote access and operational
//! errors (the latter three put it in error). UC drops a message that lost a packet.
//!
//! Timers: one per QP (`kernel::rdma::timer`), for the acknowledgement timeout or the RNR
//! wait; progress is seen by the oldest unacknowledged PSN moving on.

use core::sync::atomic::Ordering;
use kernel::{
    alloc::KVec,
    prelude::*,
    rdma::{access, Qp, QpState, QpToken, QpType},
};

use crate::{
    abi::{self, send_flags, wc_flags, wc_opcode, wc_status, wr_opcode as wop, Cqe, SendWqe, WqeUnion},
    bth::Bth,
    device::Ferroce,
    eth::{AtomicEth, Reth},
    limits,
    opcode::{self, op},
    packet::{Headers, Parsed, Route},
    placement::{self, Fault, Source, Walk},
    psn,
    qp::{After, QpShared, RECV_WQE_MAX, SEND_WQE_MAX},
    reply::{self, ack, nak, Offer, Reply, ReplyQueue, READ_BURST},
    stats::{Counters, Stat},
    transport::{self, NakCode, Syndrome},
    wire::{self, TxError},
};

/// Packets a requester has in flight at most.
const WINDOW: u32 = 256;
/// The least a requester's window shrinks to: after an acknowledgement timeout it is a quarter
/// of what it was, at least this; each PSN acknowledged then opens it by one again, up to
/// [`WINDOW`]. A slow responder (rxe on a loaded host) that fell behind a full window is not
/// flooded again with all of it at each timeout, which kept it behind for good.
const MIN_WINDOW: u32 = 8;
/// Consecutive acknowledgement timeouts double the timer up to this many times: a responder
/// slower than the QP's `timeout` gets up to four times as long (the most IBTA lets the
/// transport timer run) before its retries run out.
const MAX_BACKOFF: u32 = 2;
/// Packets one turn of the executor sends before it looks at the QP again.
const BURST: u32 = 32;
/// An RC requester asks for an acknowledgement at least every this many packets.
const ACK_EVERY: u32 = 32;
/// Atomic results a responder keeps to answer duplicates: one per atomic a requester may have
/// outstanding (it must not be executed twice, and a duplicate whose result is gone is never
/// answered).
const SAVED_ATOMICS: usize = limits::MAX_QP_RD_ATOM as usize;
/// READs a responder remembers, to serve them again: one per READ a requester may have
/// outstanding (a duplicate of one it forgot would be dropped, and the requester would retry
/// until its retries run out).
const SAVED_READS: usize = limits::MAX_QP_RD_ATOM as usize;
/// `IBV_SEND_FENCE`: wait for the READs and atomics before.
const FENCE: u32 = 1 << 0;

/// Where the READ request that covers offset `off` of a READ of `len` bytes ends: READs are
/// asked for in chunks of [`READ_BURST`] packets, at fixed offsets.
fn read_chunk_end(off: u32, len: u32, mtu: u32) -> u32 {
    let chunk = READ_BURST.saturating_mul(mtu);
    (off / chunk).saturating_add(1).saturating_mul(chunk).min(len)
}

/// A READ the responder served, remembered so that it serves it again when asked.
#[derive(Clone, Copy, Default)]
struct SavedRead {
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
        (reth.rkey == self.rkey && reth.va == self.va.wrapping_add(off.into()) && reth.dma_len == rest)
            .then_some(at)
    }
}

/// A WQE the requester has taken from its send queue (the `i`-th pending one).
#[derive(Clone, Copy, Default)]
struct Rec {
    wr_id: u64,
    op: u32,
    signaled: bool,
    len: u32,
    /// PSN of its first packet (valid once started).
    first_psn: u32,
    /// PSNs it takes: its packets, a READ's response packets, one for an atomic.
    npkts: u32,
    /// Bytes of a READ's response placed.
    done: u32,
    started: bool,
    /// A READ's or an atomic's answer is all in (it completes once it is the oldest).
    answered: bool,
    /// A local error found when it was taken: it completes with this status once it is the
    /// oldest.
    failed: u32,
    /// A local operation (REG_MR, LOCAL_INV, BIND_MW), executed when taken: no packets, it
    /// completes once it is the oldest.
    local: bool,
}

impl Rec {
    fn last_psn(&self) -> u32 {
        psn::add(self.first_psn, self.npkts.max(1) - 1)
    }

    fn waits_response(&self) -> bool {
        matches!(
            self.op,
            wop::RDMA_READ | wop::ATOMIC_CMP_AND_SWP | wop::ATOMIC_FETCH_AND_ADD | wop::ATOMIC_WRITE
        )
    }

    /// One packet, answered by one packet (an atomic, an ATOMIC_WRITE).
    fn is_single(&self) -> bool {
        is_single(self.op)
    }

    fn contains(&self, p: u32) -> bool {
        self.started
            && !self.local
            && psn::diff(p, self.first_psn) >= 0
            && psn::diff(p, self.last_psn()) <= 0
    }
}

/// Whether a WQE of opcode `op` is one packet answered by one (an atomic, an ATOMIC_WRITE): it
/// is sent again whole.
fn is_single(op: u32) -> bool {
    matches!(op, wop::ATOMIC_CMP_AND_SWP | wop::ATOMIC_FETCH_AND_ADD | wop::ATOMIC_WRITE)
}

/// What the QP's timer is set for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TimerUse {
    Idle,
    /// The acknowledgement timeout (RC).
    Ack,
    /// The wait an RNR NAK asked for.
    Rnr,
}

/// The message a responder is in the middle of.
#[derive(Clone, Copy)]
enum InMsg {
    None,
    Send { placed: u32 },
    Write { va: u64, rkey: u32, left: u32, total: u32 },
}

/// The receive WQE a message in progress fills (taken from the RQ or the SRQ into
/// `Conn::recv_wqe`).
struct RecvHeld {
    len: usize,
    max_sge: u32,
    resets: u32,
}

/// The wire state of a connected QP (under the QP's lock).
pub(crate) struct Conn {
    // Requester: the records of started WQEs, a ring over `recs` from `head`.
    recs: KVec<Rec>,
    head: usize,
    count: usize,
    /// The record being sent (records before it are sent whole).
    next: usize,
    /// Bytes of record `next` sent.
    off: u32,
    /// The PSN of the next packet.
    psn: u32,
    /// The oldest PSN not acknowledged.
    una: u32,
    /// One past the highest PSN sent (`psn` is lower after going back).
    max_psn: u32,
    /// Where the requester last went back to, while that round of sending is under way: a NAK
    /// for a PSN it has sent again since is stale (caused by packets of the round before).
    resent_from: Option<u32>,
    /// Changes when the requester goes back (a turn of the executor started before sent
    /// packets that no longer count).
    gen: u32,
    retries: u8,
    rnr_retries: u8,
    timer: TimerUse,
    una_at_arm: u32,
    /// Packets the requester may have in flight now (see [`MIN_WINDOW`]).
    cwnd: u32,
    /// `una` when the window last grew.
    una_seen: u32,
    /// Acknowledgement timeouts in a row (see [`MAX_BACKOFF`]).
    backoff: u32,
    /// Waiting out an RNR NAK.
    rnr_hold: bool,
    // Responder.
    epsn: u32,
    msn: u32,
    nak_sent: bool,
    msg: InMsg,
    recv: Option<RecvHeld>,
    /// The bytes of the held receive WQE (on the heap, as `atomics`).
    recv_wqe: KBox<[u8; RECV_WQE_MAX]>,
    // On the heap: QP creation runs deep in ib_core (QP1 at device registration) and moves
    // this state by value a few times; kernel stacks are small.
    atomics: KVec<(u32, u64, bool)>,
    atomic_next: usize,
    /// Recent READs served: only a request again for one of them (or for the rest of one,
    /// which continues its response with MIDDLE/LAST packets) is served again.
    reads: KVec<SavedRead>,
    read_next: usize,
    /// Replies waiting to be sent, in order (READ responses are paced).
    pub(crate) out: ReplyQueue,
}

impl Conn {
    /// The state of a QP whose send queue has `sq_entries` entries; only an RC QP (`rc`)
    /// keeps READ and atomic responder resources and a reply queue (a UD QP costs little).
    pub(crate) fn new(sq_entries: u32, rc: bool) -> Result<Self> {
        let resources = if rc { SAVED_READS } else { 0 };
        let mut recs = KVec::with_capacity(sq_entries as usize, GFP_KERNEL)?;
        for _ in 0..sq_entries {
            recs.push(Rec::default(), GFP_KERNEL)?;
        }
        Ok(Conn {
            recs,
            head: 0,
            count: 0,
            next: 0,
            off: 0,
            psn: 0,
            una: 0,
            max_psn: 0,
            resent_from: None,
            gen: 0,
            retries: 0,
            rnr_retries: 0,
            timer: TimerUse::Idle,
            una_at_arm: 0,
            cwnd: WINDOW,
            una_seen: 0,
            backoff: 0,
            rnr_hold: false,
            epsn: 0,
            msn: 0,
            nak_sent: false,
            msg: InMsg::None,
            recv: None,
            recv_wqe: KBox::new([0u8; RECV_WQE_MAX], GFP_KERNEL)?,
            atomics: KVec::from_elem((0, 0, false), if rc { SAVED_ATOMICS } else { 0 }, GFP_KERNEL)?,
            atomic_next: 0,
            reads: KVec::from_elem(SavedRead::default(), resources, GFP_KERNEL)?,
            read_next: 0,
            out: ReplyQueue::new(rc)?,
        })
    }

    fn rec(&self, i: usize) -> Rec {
        let n = self.recs.len().max(1);
        self.recs.get((self.head + i) % n).copied().unwrap_or_default()
    }

    fn set_rec(&mut self, i: usize, r: Rec) {
        let n = self.recs.len().max(1);
        if let Some(slot) = self.recs.get_mut((self.head + i) % n) {
            *slot = r;
        }
    }

    fn push(&mut self, r: Rec) -> bool {
        if self.count >= self.recs.len() {
            return false;
        }
        self.count += 1;
        self.set_rec(self.count - 1, r);
        true
    }

    fn pop(&mut self) -> Rec {
        let r = self.rec(0);
        if self.count > 0 {
            self.head = (self.head + 1) % self.recs.len().max(1);
            self.count -= 1;
            self.next = self.next.saturating_sub(1);
            if self.next == 0 && self.count == 0 {
                self.off = 0;
            }
        }
        r
    }

    /// Forgets the requester's records (the send queue was flushed or emptied).
    pub(crate) fn clear_requester(&mut self) {
        self.head = 0;
        self.count = 0;
        self.next = 0;
        self.off = 0;
        self.una = self.psn;
        self.una_seen = self.psn;
        self.max_psn = self.psn;
        self.resent_from = None;
        self.gen = self.gen.wrapping_add(1);
        self.rnr_hold = false;
        self.timer = TimerUse::Idle;
        self.backoff = 0;
    }

    /// Back to RESET: everything goes.
    pub(crate) fn reset(&mut self) {
        self.clear_requester();
        self.msg = InMsg::None;
        self.recv = None;
        self.nak_sent = false;
        self.msn = 0;
        self.atomics.iter_mut().for_each(|a| *a = (0, 0, false));
        self.reads.iter_mut().for_each(|r| *r = SavedRead::default());
        self.out.clear();
    }

    /// The PSNs a modify set: the responder's expected one, the requester's next one.
    pub(crate) fn set_rq_psn(&mut self, p: u32) {
        self.epsn = p & psn::MASK;
    }

    pub(crate) fn set_sq_psn(&mut self, p: u32) {
        self.psn = p & psn::MASK;
        self.una = self.psn;
        self.una_seen = self.psn;
        self.max_psn = self.psn;
    }

    pub(crate) fn set_retries(&mut self, retry_cnt: u8, rnr_retry: u8) {
        self.retries = retry_cnt;
        self.rnr_retries = rnr_retry;
    }

    pub(crate) fn sq_psn(&self) -> u32 {
        self.psn
    }

    pub(crate) fn rq_psn(&self) -> u32 {
        self.epsn
    }

    /// The receive WQE of a message in progress, which a move to ERR completes flushed first.
    pub(crate) fn take_held_recv(&mut self, resets: u32) -> Option<u64> {
        self.msg = InMsg::None;
        let h = self.recv.take()?;
        let hdr: &[u8; abi::RECV_WQE_HEADER] = self.recv_wqe.first_chunk()?;
        (h.resets == resets).then(|| abi::wqe_wr_id(hdr))
    }

    fn outstanding(&self) -> u32 {
        psn::diff(self.psn, self.una).max(0) as u32
    }

    /// Packets the requester may send now: its window, opened by what was acknowledged since
    /// it last looked, less what is in flight.
    fn room(&mut self) -> u32 {
        let acked = psn::diff(self.una, self.una_seen);
        if acked > 0 {
            self.cwnd = self.cwnd.saturating_add(acked as u32).min(WINDOW);
        }
        self.una_seen = self.una;
        self.cwnd.saturating_sub(self.outstanding())
    }

    /// An acknowledgement timeout: the window shrinks (see [`MIN_WINDOW`]).
    fn shrink(&mut self) {
        self.cwnd = (self.cwnd / 4).max(MIN_WINDOW);
        self.una_seen = self.una;
    }
}

/// The QP's path MTU in bytes.
pub(crate) fn mtu_of(st: &QpShared) -> u32 {
    256u32 << st.attr.path_mtu.clamp(1, 5).saturating_sub(1)
}

/// A WQE read for the wire, checked against the QP's limits and the local memory.
struct Msg<'a> {
    w: SendWqe,
    sges: &'a [u8],
    inline: Option<&'a [u8]>,
    len: u32,
}

/// Reads and checks a send WQE (the requester's own checks: nothing goes out for a WQE that
/// fails them, its local SGEs included); `Err` is the completion status. Done once, when the
/// executor takes the WQE.
fn message<'a>(qp: &Qp<Ferroce>, st_cap: &kernel::rdma::QpCap, uc: bool, wqe: &'a [u8]) -> Result<Msg<'a>, u32> {
    let m = parse_message(st_cap, uc, wqe)?;
    let is_read_or_atomic = !matches!(
        m.w.opcode,
        wop::SEND | wop::SEND_WITH_IMM | wop::SEND_WITH_INV | wop::RDMA_WRITE | wop::RDMA_WRITE_WITH_IMM
    );
    let need_local = if is_read_or_atomic { access::LOCAL_WRITE } else { 0 };
    if Walk::new(qp.device(), qp.pd_id(), need_local, m.sges)
        .check_all()
        .is_err()
    {
        return Err(wc_status::LOC_PROT_ERR);
    }
    Ok(m)
}

/// Reads a send WQE checked by [`message`] before (the ring may have changed since, so its
/// limits are checked again; the SGEs are checked by the walks that use them): for each turn
/// and each answer placed, without finding every SGE's memory region again.
fn parse_message<'a>(st_cap: &kernel::rdma::QpCap, uc: bool, wqe: &'a [u8]) -> Result<Msg<'a>, u32> {
    let hdr = wqe
        .first_chunk::<{ abi::SEND_WQE_HEADER }>()
        .ok_or(wc_status::LOC_QP_OP_ERR)?;
    let w = SendWqe::from_bytes(hdr);
    let body = &wqe[abi::SEND_WQE_HEADER..];
    let is_send = matches!(w.opcode, wop::SEND | wop::SEND_WITH_IMM)
        || (w.opcode == wop::SEND_WITH_INV && !uc);
    let is_write = matches!(w.opcode, wop::RDMA_WRITE | wop::RDMA_WRITE_WITH_IMM);
    let is_atomic = matches!(w.opcode, wop::ATOMIC_CMP_AND_SWP | wop::ATOMIC_FETCH_AND_ADD);
    let allowed = if uc {
        is_send || is_write
    } else {
        is_send || is_write || is_atomic || matches!(w.opcode, wop::RDMA_READ | wop::ATOMIC_WRITE)
    };
    let inline = w.send_flags & send_flags::INLINE != 0;
    if !allowed || (inline && !(is_send || is_write)) {
        return Err(wc_status::LOC_QP_OP_ERR);
    }
    let (sges, inline_bytes) = if w.opcode == wop::ATOMIC_WRITE {
        // Its 8 bytes are in the header (`wr.atomic_write.value`); it has no SGEs.
        if w.num_sge != 0 {
            return Err(wc_status::LOC_QP_OP_ERR);
        }
        let v = abi::ATOMIC_WRITE_VALUE;
        (&body[..0], Some(&wqe[v..v + 8]))
    } else if inline {
        let n = w.inline_len as usize;
        if w.inline_len > st_cap.max_inline_data || n > body.len() {
            return Err(wc_status::LOC_LEN_ERR);
        }
        (&body[..0], Some(&body[..n]))
    } else {
        let n = w.num_sge as usize * abi::SGE_SIZE;
        if w.num_sge > st_cap.max_send_sge || n > body.len() {
            return Err(wc_status::LOC_QP_OP_ERR);
        }
        (&body[..n], None)
    };
    let len = match inline_bytes {
        Some(b) => b.len() as u64,
        None => placement::total_len(sges).ok_or(wc_status::LOC_LEN_ERR)?,
    };
    if len > u64::from(limits::MAX_MSG_SZ) || (is_atomic && len != 8) {
        return Err(wc_status::LOC_LEN_ERR);
    }
    Ok(Msg {
        w,
        sges,
        inline: inline_bytes,
        len: len as u32,
    })
}

/// What one turn of the executor needs, read under the lock.
struct Turn {
    route: Route,
    dest_qpn: u32,
    mtu: u32,
    psn: u32,
    off: u32,
    gen: u32,
    resets: u32,
    rc: bool,
    budget: u32,
    cap: kernel::rdma::QpCap,
}

/// What a turn of the executor sends of a WQE.
struct Plan {
    /// Packets to send.
    pkts: u32,
    /// PSNs they take (a READ request takes its responses').
    advance: u32,
    /// Bytes of the message sent after the turn.
    off: u32,
    /// The message is sent whole after the turn.
    whole: bool,
}

/// The turn for the WQE `rec`, `off` bytes of it sent, at most `budget` packets.
fn plan_turn(rec: &Rec, off: u32, mtu: u32, budget: u32) -> Plan {
    let off = off.min(rec.len);
    match rec.op {
        wop::RDMA_READ => {
            let end = read_chunk_end(off, rec.len, mtu);
            Plan {
                pkts: 1,
                advance: (end - off).div_ceil(mtu).max(1),
                off: end,
                whole: end == rec.len,
            }
        }
        o if is_single(o) => Plan {
            pkts: 1,
            advance: 1,
            off: rec.len,
            whole: true,
        },
        _ => {
            let remaining = (rec.len - off).div_ceil(mtu).max(1);
            let n = remaining.min(budget.max(1));
            Plan {
                pkts: n,
                advance: n,
                off: off.saturating_add(n.saturating_mul(mtu)).min(rec.len),
                whole: n == remaining,
            }
        }
    }
}

/// Executes the send queue of a connected QP on the wire until it is empty, waits (window,
/// RNR, fence, READ credits), or leaves RTS. The caller set `sending`; this clears it.
pub(crate) fn run(qp: &Qp<Ferroce>, may_sleep: bool) {
    let data = qp.data();
    let uc = data.qp_type() == QpType::Uc;
    let mut wqe = [0u8; SEND_WQE_MAX];
    loop {
        let mut after = After::default();
        let mut guard = data.state.lock();
        let st = &mut *guard;
        let state = st.attr.qp_state;
        if matches!(state, QpState::Err | QpState::Sqe) {
            let _ = st.flush_sq(qp, &mut after.notices);
            st.sending = false;
            drop(guard);
            after.run(qp, may_sleep);
            return;
        }
        let stop = !matches!(state, QpState::Rts | QpState::Sqd)
            || st.conn.rnr_hold
            || st.conn.outstanding() >= WINDOW;
        if stop {
            st.sending = false;
            return;
        }
        let len = (st.sq.wqe_size as usize).min(SEND_WQE_MAX);
        if st.conn.next == st.conn.count {
            // Take the next WQE, if there is one and it may start now.
            let pending = st.sq.pending().unwrap_or(0) as usize;
            if state == QpState::Sqd
                || pending <= st.conn.count
                || st.sq.peek(st.conn.count as u32, &mut wqe[..len]).is_err()
            {
                st.sending = false;
                return;
            }
            let head = wqe.first_chunk::<{ abi::SEND_WQE_HEADER }>().map(SendWqe::from_bytes);
            if let Some(w) =
                head.filter(|w| matches!(w.opcode, wop::REG_MR | wop::LOCAL_INV | wop::BIND_MW))
            {
                if !take_local(qp, st, &w, &mut after) {
                    st.sending = false;
                    return;
                }
                drop(guard);
                after.run(qp, may_sleep);
                continue;
            }
            let mut rec = Rec::default();
            match message(qp, &st.attr.cap, uc, &wqe[..len]) {
                Ok(m) => {
                    rec.wr_id = m.w.wr_id;
                    rec.op = m.w.opcode;
                    rec.signaled =
                        data.init.sq_sig_all || m.w.send_flags & send_flags::SIGNALED != 0;
                    rec.len = m.len;
                    let mtu = mtu_of(st);
                    rec.npkts = if is_single(m.w.opcode) { 1 } else { m.len.div_ceil(mtu).max(1) };
                    let waiting = (0..st.conn.count)
                        .filter(|&i| st.conn.rec(i).waits_response())
                        .count() as u32;
                    if waiting > 0
                        && (m.w.send_flags & FENCE != 0
                            || (rec.waits_response()
                                && waiting >= u32::from(st.attr.max_rd_atomic.max(1))))
                    {
                        // Fenced, or out of READ/atomic credits: resumed by their completion.
                        st.sending = false;
                        return;
                    }
                }
                Err(status) => {
                    let hdr = wqe.first_chunk::<{ abi::SEND_WQE_HEADER }>();
                    if let Some(h) = hdr {
                        let w = SendWqe::from_bytes(h);
                        rec.wr_id = w.wr_id;
                        rec.op = w.opcode;
                    }
                    rec.signaled = true;
                    rec.failed = status;
                }
            }
            if !st.conn.push(rec) {
                st.sending = false;
                return;
            }
        }
        let i = st.conn.next;
        let mut rec = st.conn.rec(i);
        if rec.local && rec.failed == 0 {
            if i == 0 {
                // The oldest (what came before it completed while this was sent again):
                // it completes now.
                complete_front(qp, st, wc_status::SUCCESS, &mut after);
                drop(guard);
                after.run(qp, may_sleep);
                continue;
            }
            // Executed when it was taken; sending again from before it passes it by.
            st.conn.next += 1;
            st.conn.off = 0;
            continue;
        }
        if rec.failed != 0 {
            if i == 0 {
                complete_front(qp, st, rec.failed, &mut after);
                drop(guard);
                after.run(qp, may_sleep);
                continue;
            }
            // It fails once what was sent before it has completed.
            st.sending = false;
            return;
        }
        if st.sq.peek(i as u32, &mut wqe[..len]).is_err() {
            st.sending = false;
            return;
        }
        let Some(av) = st.attr.av else {
            st.sending = false;
            return;
        };
        if !rec.started {
            rec.started = true;
            rec.first_psn = st.conn.psn;
            st.conn.set_rec(i, rec);
        }
        let mtu = mtu_of(st);
        if rec.op == wop::RDMA_READ && st.conn.off > rec.done {
            // The next request of a long READ waits until the one before is answered (each
            // counts against the responder's READ credits).
            st.sending = false;
            return;
        }
        // The window after a timeout holds back what the requester sends itself: WRITE and
        // SEND data, atomics. A READ's responses are the responder's to pace (and its
        // credits, `max_rd_atomic`, bound them).
        let room = if rec.op == wop::RDMA_READ {
            WINDOW.saturating_sub(st.conn.outstanding())
        } else {
            st.conn.room()
        };
        if room == 0 {
            // Resumed by the acknowledgement that opens the window.
            st.sending = false;
            return;
        }
        let plan = plan_turn(&rec, st.conn.off, mtu, BURST.min(room));
        let turn = Turn {
            route: wire::route(&av, wire::src_port(qp.qp_num(), st.attr.dest_qp_num)),
            dest_qpn: st.attr.dest_qp_num,
            mtu,
            psn: st.conn.psn,
            off: st.conn.off,
            gen: st.conn.gen,
            resets: st.resets,
            rc: !uc,
            budget: plan.pkts,
            cap: st.attr.cap,
        };
        // The PSNs are the turn's before a packet goes: the peer's answer may come (in softirq
        // on this CPU) before the transmission returns.
        st.conn.psn = psn::add(st.conn.psn, plan.advance);
        if psn::diff(st.conn.psn, st.conn.max_psn) > 0 {
            st.conn.max_psn = st.conn.psn;
        }
        st.conn.off = plan.off;
        if plan.whole {
            st.conn.next += 1;
            st.conn.off = 0;
        }
        if !uc && st.conn.timer == TimerUse::Idle {
            arm_ack_timer(qp, st);
        }
        drop(guard);
        let sent = send_turn(qp, &turn, &wqe[..len], uc);
        if sent.is_ok() && !uc {
            if may_sleep {
                kernel::rdma::context::cond_resched();
            }
            continue;
        }
        let mut guard = data.state.lock();
        let st = &mut *guard;
        if st.conn.gen == turn.gen && st.resets == turn.resets {
            if let Err(status) = sent {
                // The sender's memory went away under the copy: the WQE fails when it is the
                // oldest (what the peer got of it is moot).
                let at = (0..st.conn.count).find(|&j| {
                    let r = st.conn.rec(j);
                    r.started && !r.local && r.first_psn == rec.first_psn && r.wr_id == rec.wr_id
                });
                if let Some(j) = at {
                    let mut r = st.conn.rec(j);
                    r.failed = status;
                    st.conn.set_rec(j, r);
                    if j == 0 {
                        complete_front(qp, st, status, &mut after);
                    }
                }
            }
        }
        if uc {
            // UC completes a message once it is sent; nothing is acknowledged.
            st.conn.una = st.conn.psn;
            while st.conn.count > 0 && st.conn.next > 0 && st.conn.rec(0).failed == 0 {
                complete_front(qp, st, wc_status::SUCCESS, &mut after);
            }
        }
        drop(guard);
        after.run(qp, may_sleep);
        if may_sleep {
            kernel::rdma::context::cond_resched();
        }
    }
}

/// Takes the local operation `w` (REG_MR, LOCAL_INV, BIND_MW) from the send queue: executes it (the
/// WQEs before it are sent whole), and records it to complete in order; `false` if it must wait
/// (no room for its record, or it is fenced behind READs or atomics).
fn take_local(qp: &Qp<Ferroce>, st: &mut QpShared, w: &SendWqe, after: &mut After) -> bool {
    let waiting = (0..st.conn.count).any(|i| st.conn.rec(i).waits_response());
    if st.conn.count >= st.conn.recs.len() || (waiting && w.send_flags & FENCE != 0) {
        return false;
    }
    let mut rec = Rec {
        wr_id: w.wr_id,
        op: w.opcode,
        signaled: qp.data().init.sq_sig_all || w.send_flags & send_flags::SIGNALED != 0,
        first_psn: st.conn.psn,
        started: true,
        local: true,
        ..Rec::default()
    };
    if let Some(Err(status)) = placement::local_op(qp, w) {
        rec.failed = status;
        rec.signaled = true;
    }
    if !st.conn.push(rec) {
        return false;
    }
    if rec.failed == 0 {
        st.conn.next = st.conn.count;
        st.conn.off = 0;
    }
    // A failed one stays the record to send: nothing after it goes out, and it fails (the QP
    // with it) once what was sent before it has completed, as a WQE that fails its checks.
    // Complete at once if it is the oldest.
    drain_answered(qp, st, after);
    true
}

fn arm_ack_timer(qp: &Qp<Ferroce>, st: &mut QpShared) {
    if let Some(ns) = transport::ack_timeout_ns(st.attr.timeout) {
        st.conn.timer = TimerUse::Ack;
        st.conn.una_at_arm = st.conn.una;
        let ns = ns << st.conn.backoff.min(MAX_BACKOFF);
        qp.arm_timer((ns / 1000).min(u64::from(u32::MAX)) as u32);
    }
}

/// Sends the turn's `t.budget` packets of the WQE `wqe` from `t.off` on; `Err` is a local
/// error (the sender's memory went away).
fn send_turn(qp: &Qp<Ferroce>, t: &Turn, wqe: &[u8], uc: bool) -> Result<(), u32> {
    let dev = qp.device();
    let m = parse_message(&t.cap, uc, wqe)?;
    let transport = if uc { opcode::UC } else { opcode::RC };
    let Some(netdev) = dev.data().netdev() else {
        // No netdev (it is going away): as if the packets were lost.
        return Ok(());
    };
    let bth = |opcode: u8, p: u32, ack_req: bool, se: bool| Bth {
        opcode: transport | opcode,
        se,
        pkey: wire::DEFAULT_PKEY,
        dest_qp: t.dest_qpn,
        ack_req: ack_req && t.rc,
        psn: p,
        ..Bth::default()
    };
    let solicited = m.w.send_flags & send_flags::SOLICITED != 0;
    match m.w.opcode {
        wop::RDMA_READ => {
            let WqeUnion::Rdma { remote_addr, rkey } = m.w.wr else {
                return Err(wc_status::LOC_QP_OP_ERR);
            };
            let off = t.off.min(m.len);
            let h = Headers {
                bth: bth(op::RDMA_READ_REQUEST, t.psn, true, false),
                reth: Some(Reth {
                    va: remote_addr.wrapping_add(off.into()),
                    rkey,
                    dma_len: read_chunk_end(off, m.len, t.mtu) - off,
                }),
                ..Headers::default()
            };
            let _ = wire::transmit::<()>(dev, &netdev, &t.route, &h, 0, |_| Ok(()));
            Ok(())
        }
        wop::ATOMIC_CMP_AND_SWP | wop::ATOMIC_FETCH_AND_ADD => {
            let WqeUnion::Atomic {
                remote_addr,
                compare_add,
                swap,
                rkey,
            } = m.w.wr
            else {
                return Err(wc_status::LOC_QP_OP_ERR);
            };
            let (opc, swap_add, compare) = if m.w.opcode == wop::ATOMIC_CMP_AND_SWP {
                (op::COMPARE_SWAP, swap, compare_add)
            } else {
                (op::FETCH_ADD, compare_add, 0)
            };
            let h = Headers {
                bth: bth(opc, t.psn, true, false),
                atomic_eth: Some(AtomicEth {
                    va: remote_addr,
                    rkey,
                    swap_add,
                    compare,
                }),
                ..Headers::default()
            };
            let _ = wire::transmit::<()>(dev, &netdev, &t.route, &h, 0, |_| Ok(()));
            Ok(())
        }
        wop::ATOMIC_WRITE => {
            let (WqeUnion::AtomicWrite { remote_addr, rkey, .. }, Some(value)) = (m.w.wr, m.inline) else {
                return Err(wc_status::LOC_QP_OP_ERR);
            };
            let h = Headers {
                bth: bth(op::ATOMIC_WRITE, t.psn, true, false),
                reth: Some(Reth {
                    va: remote_addr,
                    rkey,
                    dma_len: 8,
                }),
                ..Headers::default()
            };
            let fill = |out: &mut [u8]| -> Result<(), Fault> {
                out.copy_from_slice(value.get(..out.len()).ok_or(Fault::Source)?);
                Ok(())
            };
            let _ = wire::transmit(dev, &netdev, &t.route, &h, value.len(), fill);
            Ok(())
        }
        _ => {
            let write = matches!(m.w.opcode, wop::RDMA_WRITE | wop::RDMA_WRITE_WITH_IMM);
            let with_imm = matches!(m.w.opcode, wop::SEND_WITH_IMM | wop::RDMA_WRITE_WITH_IMM);
            let with_inv = m.w.opcode == wop::SEND_WITH_INV;
            let (remote_addr, rkey) = match m.w.wr {
                WqeUnion::Rdma { remote_addr, rkey } => (remote_addr, rkey),
                _ if write => return Err(wc_status::LOC_QP_OP_ERR),
                _ => (0, 0),
            };
            let mut walk = Walk::new(dev, qp.pd_id(), 0, m.sges);
            if m.inline.is_none() {
                walk.skip(t.off as usize).map_err(|_| wc_status::LOC_PROT_ERR)?;
            }
            let (mut off, mut p, mut n) = (t.off.min(m.len), t.psn, 0u32);
            loop {
                let chunk = t.mtu.min(m.len - off);
                let first = off == 0;
                let last = off + chunk == m.len;
                n += 1;
                let opc = match (write, first, last) {
                    (false, true, true) if with_imm => op::SEND_ONLY_WITH_IMMEDIATE,
                    (false, true, true) if with_inv => op::SEND_ONLY_WITH_INVALIDATE,
                    (false, true, true) => op::SEND_ONLY,
                    (false, true, false) => op::SEND_FIRST,
                    (false, false, false) => op::SEND_MIDDLE,
                    (false, false, true) if with_imm => op::SEND_LAST_WITH_IMMEDIATE,
                    (false, false, true) if with_inv => op::SEND_LAST_WITH_INVALIDATE,
                    (false, false, true) => op::SEND_LAST,
                    (true, true, true) if with_imm => op::RDMA_WRITE_ONLY_WITH_IMMEDIATE,
                    (true, true, true) => op::RDMA_WRITE_ONLY,
                    (true, true, false) => op::RDMA_WRITE_FIRST,
                    (true, false, false) => op::RDMA_WRITE_MIDDLE,
                    (true, false, true) if with_imm => op::RDMA_WRITE_LAST_WITH_IMMEDIATE,
                    (true, false, true) => op::RDMA_WRITE_LAST,
                };
                let ack_req = last || n == t.budget || p % ACK_EVERY == 0;
                let se = last && solicited && (!write || with_imm);
                let h = Headers {
                    bth: bth(opc, p, ack_req, se),
                    reth: (write && first).then_some(Reth {
                        va: remote_addr,
                        rkey,
                        dma_len: m.len,
                    }),
                    imm: (last && with_imm).then_some(wire::imm_to_wire(m.w.imm_data)),
                    ieth: (last && with_inv).then_some(m.w.imm_data),
                    ..Headers::default()
                };
                let fill = |out: &mut [u8]| match m.inline {
                    Some(b) => {
                        let at = off as usize;
                        out.copy_from_slice(b.get(at..at + out.len()).ok_or(Fault::Source)?);
                        Ok(())
                    }
                    None => walk.gather(out),
                };
                match wire::transmit(dev, &netdev, &t.route, &h, chunk as usize, fill) {
                    Ok(()) | Err(TxError::Lost) => {}
                    Err(TxError::Fill(_)) => return Err(wc_status::LOC_PROT_ERR),
                }
                off += chunk;
                p = psn::add(p, 1);
                if last || n >= t.budget {
                    return Ok(());
                }
            }
        }
    }
}

/// Completes the oldest record with `status` (its WQE leaves the ring); an error puts an RC QP
/// in error, a UC QP's send queue in SQE.
fn complete_front(qp: &Qp<Ferroce>, st: &mut QpShared, status: u32, after: &mut After) {
    if st.conn.count == 0 {
        return;
    }
    let r = st.conn.pop();
    let _ = st.sq.consume(1);
    let counters = &qp.device().data().counters;
    if status == wc_status::SUCCESS {
        counters.add(Stat::SentMsgs, 1);
        counters.add(Stat::SentBytes, r.len.into());
    }
    if r.signaled || status != wc_status::SUCCESS {
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
        if let Ok(n) = crate::cq::post(qp.send_cq(), &cqe) {
            after.notices.send = after.notices.send.or(n);
        }
    }
    if status != wc_status::SUCCESS {
        if qp.data().qp_type() == QpType::Rc {
            st.enter_error(qp, after);
        } else if matches!(st.attr.qp_state, QpState::Rts | QpState::Sqd) {
            st.attr.qp_state = QpState::Sqe;
            st.attr.cur_qp_state = QpState::Sqe;
        }
    }
    if st.conn.count == 0 && st.conn.timer == TimerUse::Ack {
        st.conn.timer = TimerUse::Idle;
        qp.cancel_timer();
    }
}

/// Sends again from PSN `p` (go-back-N): the record holding it becomes the one being sent.
fn go_back(qp: &Qp<Ferroce>, st: &mut QpShared, p: u32) {
    let mtu = mtu_of(st);
    let c = &mut st.conn;
    let Some(i) = (0..c.count).find(|&i| c.rec(i).contains(p)) else {
        return;
    };
    let r = c.rec(i);
    let k = psn::diff(p, r.first_psn).max(0) as u32;
    let off = if r.is_single() {
        0
    } else {
        k.saturating_mul(mtu).min(r.len)
    };
    let resent = psn::diff(c.max_psn, p).max(0) as u64;
    // A READ is asked for again from the first byte not yet placed.
    let (p, off) = if r.op == wop::RDMA_READ {
        let done = r.done - r.done % mtu;
        (psn::add(r.first_psn, done / mtu), done)
    } else {
        (p, off)
    };
    c.next = i;
    c.off = off;
    c.psn = p;
    c.resent_from = Some(p);
    c.gen = c.gen.wrapping_add(1);
    qp.device().data().counters.add(Stat::Retransmits, resent);
}

/// Whether a request to go back to `p` is stale: this round of sending again started at or
/// before `p` and has sent `p` already.
fn stale_go_back(c: &Conn, p: u32) -> bool {
    c.resent_from
        .is_some_and(|from| psn::diff(p, from) >= 0 && psn::diff(p, c.psn) < 0)
}

/// Moves the send cursor on to `p` (acknowledged while the requester was sending again what it
/// had sent before): what the responder has is not sent a third time.
fn skip_to(st: &mut QpShared, p: u32) {
    let mtu = mtu_of(st);
    let c = &mut st.conn;
    if psn::diff(p, c.psn) <= 0 {
        return;
    }
    match (0..c.count).find(|&i| c.rec(i).contains(p)) {
        Some(i) => {
            let r = c.rec(i);
            if r.waits_response() {
                // A READ or an atomic restarts whole (from what was placed): go no further.
                return;
            }
            c.next = i;
            c.off = (psn::diff(p, r.first_psn).max(0) as u32).saturating_mul(mtu).min(r.len);
        }
        None => {
            // Past every started record: at the first one not started.
            c.next = (0..c.count).find(|&i| !c.rec(i).started).unwrap_or(c.count);
            c.off = 0;
        }
    }
    c.psn = p;
    c.gen = c.gen.wrapping_add(1);
}

/// Every PSN up to `p` is acknowledged: completes the messages it covers, in order. A READ or
/// an atomic it covers whose answer has not come was lost if `implicit_nak` (an ACK came past
/// it): it goes again; otherwise (an answer to a later request overtook its own) the
/// completions stop there.
fn ack_upto(qp: &Qp<Ferroce>, st: &mut QpShared, p: u32, implicit_nak: bool, after: &mut After) {
    if psn::diff(p, st.conn.una) < 0 || psn::diff(p, st.conn.max_psn) >= 0 {
        // Old, or for PSNs never sent.
        return;
    }
    // Past the send cursor (it went back, and the responder had more than it knew of).
    skip_to(st, psn::add(p, 1));
    while st.conn.count > 0 {
        let r = st.conn.rec(0);
        if r.local {
            // Executed when taken: it completes once it is the oldest, even while the
            // requester sends again from before it.
            complete_front(qp, st, r.failed, after);
            continue;
        }
        if st.conn.next == 0 || !r.started || psn::diff(r.last_psn(), p) > 0 {
            break;
        }
        if r.waits_response() && !r.answered {
            st.conn.una = r.first_psn;
            // Acknowledged past a READ or an atomic whose response did not come: it was lost
            // (unless it is already being asked for again).
            let resume_at = psn::add(r.first_psn, r.done / mtu_of(st));
            if implicit_nak && !stale_go_back(&st.conn, resume_at) {
                go_back(qp, st, resume_at);
            }
            return;
        }
        complete_front(qp, st, r.failed, after);
    }
    st.conn.una = psn::add(p, 1);
    st.conn.retries = st.attr.retry_cnt;
    // Answers that came before this acknowledgement complete after it.
    drain_answered(qp, st, after);
    if st.conn.resent_from.is_some_and(|from| psn::diff(st.conn.una, from) > 0)
        && psn::diff(st.conn.una, st.conn.psn) >= 0
    {
        // Everything sent again is acknowledged: that round is over.
        st.conn.resent_from = None;
    }
    progress(qp, st);
}

/// The oldest unacknowledged PSN moved: the timer stops if nothing is in flight (otherwise,
/// when it expires, it sees the progress against `una_at_arm` and starts again).
fn progress(qp: &Qp<Ferroce>, st: &mut QpShared) {
    if st.conn.timer == TimerUse::Ack && st.conn.outstanding() == 0 && st.conn.count == 0 {
        st.conn.timer = TimerUse::Idle;
        qp.cancel_timer();
    }
}

/// Completes, in order, the oldest records whose answers are all in (READs and atomics whose
/// answers overtook those of the requests before them complete once those do).
fn drain_answered(qp: &Qp<Ferroce>, st: &mut QpShared, after: &mut After) {
    while st.conn.count > 0 {
        let r = st.conn.rec(0);
        if r.local {
            complete_front(qp, st, r.failed, after);
            continue;
        }
        if st.conn.next == 0 || !(r.started && r.waits_response() && r.answered) {
            break;
        }
        let end = psn::add(r.last_psn(), 1);
        if psn::diff(end, st.conn.una) > 0 {
            st.conn.una = end;
        }
        complete_front(qp, st, r.failed, after);
    }
}

/// Fails the oldest WQE with `status` (a NAK or exhausted retries).
fn fail_front(qp: &Qp<Ferroce>, st: &mut QpShared, status: u32, after: &mut After) {
    complete_front(qp, st, status, after);
}

/// A response (ACK, NAK, READ response, atomic acknowledgement) for the requester.
fn on_response(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>, after: &mut After) {
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
                psn::diff(bpsn, st.conn.una) >= 0 && psn::diff(bpsn, st.conn.max_psn) < 0;
            match Syndrome::from_byte(aeth.syndrome) {
                Some(Syndrome::Ack { .. }) => ack_upto(qp, st, bpsn, true, after),
                Some(Syndrome::RnrNak { timer }) if in_flight => {
                    counters.add(Stat::NaksRcvd, 1);
                    ack_upto(qp, st, psn::add(bpsn, psn::MASK), true, after);
                    if st.conn.rnr_retries == 0 {
                        fail_front(qp, st, wc_status::RNR_RETRY_EXC_ERR, after);
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
                    let status = match code {
                        NakCode::PsnSequenceError => {
                            if !stale_go_back(&st.conn, bpsn) {
                                go_back(qp, st, bpsn);
                            }
                            return;
                        }
                        NakCode::InvalidRequest | NakCode::InvalidRdRequest => {
                            wc_status::REM_INV_REQ_ERR
                        }
                        NakCode::RemoteAccessError => wc_status::REM_ACCESS_ERR,
                        NakCode::RemoteOperationalError => wc_status::REM_OP_ERR,
                    };
                    fail_front(qp, st, status, after);
                }
                _ => {}
            }
        }
        // An ATOMIC_WRITE is answered by an empty READ response (IBTA A19.4.3).
        op::RDMA_READ_RESPONSE_ONLY if single_at(st, bpsn, true).is_some() => {
            let acked = p
                .hdr
                .aeth
                .is_some_and(|a| matches!(Syndrome::from_byte(a.syndrome), Some(Syndrome::Ack { .. })));
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

/// The sent record whose one request has PSN `bpsn`: an ATOMIC_WRITE if `atomic_write`, an
/// atomic otherwise (each kind has its own response).
fn single_at(st: &QpShared, bpsn: u32, atomic_write: bool) -> Option<usize> {
    (0..st.conn.next).find(|&i| {
        let r = st.conn.rec(i);
        r.started && r.first_psn == bpsn && r.is_single() && (r.op == wop::ATOMIC_WRITE) == atomic_write
    })
}

/// The answer to the single-packet request `bpsn`: an atomic's original value (placed in its
/// local buffer), or `None` for an ATOMIC_WRITE's acknowledgement.
fn answer_single(qp: &Qp<Ferroce>, st: &mut QpShared, bpsn: u32, orig: Option<u64>, after: &mut After) {
    let Some(i) = single_at(st, bpsn, orig.is_none()) else { return };
    let mut r = st.conn.rec(i);
    if !r.answered {
        if let Some(orig) = orig {
            if place_local(qp, st, i, 0, &orig.to_ne_bytes()).is_err() {
                r.failed = wc_status::LOC_PROT_ERR;
            }
        }
        r.done = r.len;
        r.answered = true;
        st.conn.set_rec(i, r);
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
fn place_local(qp: &Qp<Ferroce>, st: &QpShared, i: usize, at: u32, bytes: &[u8]) -> Result<(), Fault> {
    let mut wqe = [0u8; SEND_WQE_MAX];
    let len = (st.sq.wqe_size as usize).min(SEND_WQE_MAX);
    st.sq.peek(i as u32, &mut wqe[..len]).map_err(|_| Fault::Dest)?;
    let m = parse_message(&st.attr.cap, false, &wqe[..len]).map_err(|_| Fault::Dest)?;
    let mut walk = Walk::new(qp.device(), qp.pd_id(), access::LOCAL_WRITE, m.sges);
    walk.skip(at as usize)?;
    placement::place(&mut walk, &mut Source::Bytes(bytes), bytes.len(), false)
}

/// A READ response packet: placed in order into the oldest READ's local memory.
fn read_response(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>, after: &mut After) {
    let bpsn = p.hdr.bth.psn;
    let mtu = mtu_of(st);
    // Records up to the one being sent: a long READ is that one until its last request.
    let Some(i) = (0..st.conn.count).find(|&i| {
        let r = st.conn.rec(i);
        r.op == wop::RDMA_READ && r.contains(bpsn)
    }) else {
        return;
    };
    let r = st.conn.rec(i);
    let expected = psn::add(r.first_psn, r.done / mtu);
    if bpsn != expected {
        // Out of order: a response before it was lost (ask again from the first byte missing,
        // once per round), or this one is a duplicate (dropped).
        if psn::diff(bpsn, expected) > 0 && !stale_go_back(&st.conn, expected) {
            qp.device().data().counters.add(Stat::SeqErrors, 1);
            go_back(qp, st, expected);
        }
        return;
    }
    if i > 0 {
        // The messages before the READ are done, up to the first READ or atomic still waiting
        // (whose answer this one overtook).
        ack_upto(qp, st, psn::add(r.first_psn, psn::MASK), false, after);
    }
    let Some(i) = (0..st.conn.count)
        .find(|&j| st.conn.rec(j).first_psn == r.first_psn && st.conn.rec(j).op == wop::RDMA_READ)
    else {
        return;
    };
    let lay = p.layout;
    let n = p.payload.len() as u32;
    // Each request of the READ ends at its chunk's end (see `read_chunk_end`).
    let room = read_chunk_end(r.done, r.len, mtu) - r.done;
    let sized = if lay.last { n == room } else { n == mtu && n < room };
    let mut r = st.conn.rec(i);
    if !sized || place_local(qp, st, i, r.done, p.payload).is_err() {
        // A response of the wrong size, or local memory gone: the READ fails in its turn.
        r.failed = if sized {
            wc_status::LOC_PROT_ERR
        } else {
            wc_status::REM_INV_REQ_ERR
        };
        r.answered = true;
        st.conn.set_rec(i, r);
        drain_answered(qp, st, after);
        return;
    }
    r.done += n;
    r.answered = r.done >= r.len;
    st.conn.set_rec(i, r);
    if i == 0 {
        st.conn.una = psn::add(bpsn, 1);
    }
    st.conn.retries = st.attr.retry_cnt;
    let counters = &qp.device().data().counters;
    if r.answered {
        counters.add(Stat::RcvdMsgs, 1);
        counters.add(Stat::RcvdBytes, r.len.into());
        drain_answered(qp, st, after);
    }
    progress(qp, st);
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
    let mut walk = Walk::new(qp.device(), qp.pd_id(), access::LOCAL_WRITE, &wqe[abi::RECV_WQE_HEADER..end]);
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
            || placement::find_remote(qp, reth.rkey, reth.va, reth.dma_len as usize, access::REMOTE_READ)
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
fn on_request(qp: &Qp<Ferroce>, st: &mut QpShared, p: &Parsed<'_>, after: &mut After) -> Reply {
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
                        let at = st.conn.reads.iter().find_map(|r| r.resumes(bpsn, &reth, mtu))?;
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
                Kind::Atomic => st
                    .conn
                    .atomics
                    .iter()
                    .find(|a| a.2 && a.0 == bpsn)
                    .map_or(Reply::None, |a| Reply::Atomic {
                        psn: bpsn,
                        orig: a.1,
                        msn,
                    }),
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
    let continues = match (st.conn.msg, kind) {
        (InMsg::Send { .. }, Kind::Send) | (InMsg::Write { .. }, Kind::Write) => true,
        _ => false,
    };
    let n = p.payload.len() as u32;
    if (lay.first && !starts) || (!lay.first && !continues) || kind == Kind::Other
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
                    return refuse(qp, st, bpsn, NakCode::InvalidRequest, Some(wc_status::LOC_LEN_ERR), after)
                }
                Err(_) => {
                    return refuse(qp, st, bpsn, NakCode::RemoteOperationalError, Some(wc_status::LOC_PROT_ERR), after)
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
                complete_recv(qp, st, wc_status::SUCCESS, wc_opcode::RECV, placed, ex, bth.se, after);
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
                    && placement::find_remote(qp, reth.rkey, reth.va, reth.dma_len as usize, access::REMOTE_WRITE)
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
            let InMsg::Write { va, rkey, left, total } = st.conn.msg else {
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
                if placement::place(&mut to, &mut Source::Bytes(p.payload), n as usize, false).is_err() {
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
                    complete_recv(qp, st, wc_status::SUCCESS, wc_opcode::RECV_RDMA_WITH_IMM, total, ex, bth.se, after);
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
            if st.attr.qp_access_flags & access::REMOTE_READ == 0 || st.attr.max_dest_rd_atomic == 0 {
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
            let Some(range) = placement::find_remote(qp, a.rkey, a.va, 8, access::REMOTE_ATOMIC) else {
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
            let Some(range) = placement::find_remote(qp, reth.rkey, reth.va, 8, access::REMOTE_WRITE) else {
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
            return Reply::ReadAck { psn: bpsn, msn: c.msn };
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

/// A packet of a connected transport for `qp` (softirq).
pub(crate) fn receive(qp: &Qp<Ferroce>, p: &Parsed<'_>) {
    let data = qp.data();
    let qp_type = data.qp_type();
    let transport = p.hdr.bth.opcode & 0xe0;
    let matches_type = match qp_type {
        QpType::Rc => transport == opcode::RC,
        QpType::Uc => transport == opcode::UC,
        _ => false,
    };
    let counters = &qp.device().data().counters;
    if !matches_type {
        counters.add(Stat::Dropped, 1);
        return;
    }
    let opc = p.hdr.bth.opcode & 0x1f;
    let is_response = transport == opcode::RC
        && matches!(
            opc,
            op::RDMA_READ_RESPONSE_FIRST
                ..=op::ATOMIC_ACKNOWLEDGE
        );
    let mut after = After::default();
    let mut guard = data.state.lock();
    let st = &mut *guard;
    // Only from the connected peer.
    // Only from the connected peer, to the GID the QP sends from (which also makes it one of
    // the port's).
    let from_peer = st
        .attr
        .av
        .is_some_and(|av| av.dgid == p.route.sgid && av.sgid == p.route.dgid);
    if !from_peer || st.peer_local {
        counters.add(Stat::Dropped, 1);
        return;
    }
    let mut reply = Reply::None;
    let mut resume = false;
    if is_response {
        on_response(qp, st, p, &mut after);
        resume = !st.sending
            && st.attr.qp_state == QpState::Rts
            && !st.conn.rnr_hold
            && st.conn.outstanding() < WINDOW
            && (st.conn.next < st.conn.count
                || st.sq.pending().unwrap_or(0) as usize > st.conn.count);
        if resume {
            st.sending = true;
        }
    } else {
        reply = on_request(qp, st, p, &mut after);
    }
    let mtu = mtu_of(st);
    let offer = st.conn.out.offer(reply, mtu);
    if matches!(offer, Offer::Dropped) {
        counters.add(Stat::Dropped, 1);
        // Not sent: the next packet out of sequence may NAK again.
        st.conn.nak_sent = false;
    }
    let back = reply::Back::of(st, mtu);
    drop(guard);
    after.run(qp, false);
    match offer {
        Offer::Now(reply) => {
            if let Some(back) = back {
                reply::send(qp, &back, reply);
            }
        }
        Offer::Send => reply::send_queued(qp, false),
        Offer::Nothing | Offer::Queued | Offer::Dropped => {}
    }
    if resume {
        run(qp, false);
    }
}

/// The QP's timer (softirq): an acknowledgement timeout, or the end of an RNR wait.
pub(crate) fn timer(qp: &Qp<Ferroce>) {
    let data = qp.data();
    let mut after = After::default();
    let mut guard = data.state.lock();
    let st = &mut *guard;
    if qp.timer_pending() {
        // Armed again while this expiry waited for the lock: it is stale.
        return;
    }
    let mut resume = false;
    match st.conn.timer {
        TimerUse::Idle => {}
        TimerUse::Rnr => {
            st.conn.timer = TimerUse::Idle;
            st.conn.rnr_hold = false;
            resume = true;
            if st.conn.outstanding() > 0 || st.conn.count > 0 {
                arm_ack_timer(qp, st);
            }
        }
        TimerUse::Ack => {
            if st.conn.outstanding() == 0 && st.conn.count == 0 {
                st.conn.timer = TimerUse::Idle;
            } else if st.conn.una != st.conn.una_at_arm {
                st.conn.backoff = 0;
                arm_ack_timer(qp, st);
            } else if st.attr.qp_state == QpState::Rts || st.attr.qp_state == QpState::Sqd {
                qp.device().data().counters.add(Stat::Timeouts, 1);
                if st.conn.retries == 0 {
                    st.conn.timer = TimerUse::Idle;
                    fail_front(qp, st, wc_status::RETRY_EXC_ERR, &mut after);
                } else {
                    st.conn.retries -= 1;
                    st.conn.backoff = (st.conn.backoff + 1).min(MAX_BACKOFF);
                    st.conn.shrink();
                    let una = st.conn.una;
                    go_back(qp, st, una);
                    arm_ack_timer(qp, st);
                    resume = true;
                }
            } else {
                st.conn.timer = TimerUse::Idle;
            }
        }
    }
    resume = resume && !st.sending && st.attr.qp_state == QpState::Rts;
    if resume {
        st.sending = true;
    }
    drop(guard);
    after.run(qp, false);
    if resume {
        run(qp, false);
    }
}
