// SPDX-License-Identifier: GPL-2.0

//! The requester of a connected QP on the wire: the send queue's executor turns WQEs into
//! packets, within the send window ([`super::window`]). A WQE is read and checked once when it
//! is taken (nothing goes out for a WQE that fails the requester's own checks), then sent in
//! turns of at most [`BURST`] packets; RC asks for an acknowledgement at the end of each
//! message and every [`ACK_EVERY`] packets. A WQE stays in the ring until it completes
//! ([`super::completer`]).

use kernel::{
    net::netdev::NetDevice,
    prelude::*,
    rdma::{sw::wire::RouteCache, Device, Qp, QpState},
    sync::Arc,
};

use crate::{
    engine::{
        placement::{self},
        qp::{After, QpShared, SEND_WQE_MAX},
    },
    net::wire::{self, TxError},
    protocol::{
        abi::{self, send_flags, wr_opcode as wop, SendWqe, WcStatus, WqeUnion},
        bth::Bth,
        eth::{AtomicEth, Reth},
        opcode::{self, op},
        packet::{Headers, Route},
        psn,
        wqe::{self, Message, Service},
    },
    verbs::{
        device::Ferroce,
        memory::{self, Fault, Walk},
        stats::Stat,
    },
};

use crate::engine::executor::Step;

use super::{
    arm_ack_timer,
    completer::{complete_front, drain_answered},
    mtu_of,
    window::{is_single, plan_turn, Rec, ACK_EVERY, BURST, WINDOW},
    TimerUse,
};

/// `IBV_SEND_FENCE`: wait for the READs and atomics before.
const FENCE: u32 = 1 << 0;

/// Reads and checks a send WQE (the requester's own checks: nothing goes out for a WQE that
/// fails them, its local SGEs included); `Err` is the completion status. Done once, when the
/// executor takes the WQE.
fn message<'a>(
    qp: &Qp<Ferroce>,
    cap: &kernel::rdma::QpCap,
    uc: bool,
    wqe: &'a [u8],
) -> Result<Message<'a>, WcStatus> {
    let m = parse_message(cap, uc, wqe)?;
    memory::check_local_sges(qp, &m)?;
    Ok(m)
}

/// Reads a send WQE checked by [`message`] before (the ring may have changed since, so its
/// limits are checked again; the SGEs are checked by the walks that use them): for each turn
/// and each answer placed, without finding every SGE's memory region again.
pub(super) fn parse_message<'a>(
    cap: &kernel::rdma::QpCap,
    uc: bool,
    wqe: &'a [u8],
) -> Result<Message<'a>, WcStatus> {
    let service = if uc {
        Service::UnreliableConnected
    } else {
        Service::ReliableConnected
    };
    wqe::message(wqe, service, cap.max_inline_data, cap.max_send_sge)
}

/// What one turn of the executor needs, read under the lock.
pub(crate) struct Turn {
    route: Route,
    /// Where the QP keeps `route`'s way through the IP layer (`QpShared::routes`).
    routes: Option<Arc<RouteCache>>,
    dest_qpn: u32,
    mtu: u32,
    psn: u32,
    off: u32,
    /// Where a READ request of the turn ends (its chunk's end, or a repair's).
    read_end: u32,
    gen: u32,
    resets: u32,
    rc: bool,
    budget: u32,
    cap: kernel::rdma::QpCap,
    /// Bytes of the WQE the executor read.
    wqe_len: usize,
}

impl Turn {
    /// A turn to the QP's peer `av`, from the QP's state now; where it starts, how far a READ
    /// asks and how many packets are the caller's (here: none, at PSN 0).
    fn of(
        qp: &Qp<Ferroce>,
        st: &QpShared,
        av: &kernel::rdma::AddressVector,
        uc: bool,
        mtu: u32,
        wqe_len: usize,
    ) -> Turn {
        Turn {
            route: wire::route(av, wire::src_port(qp.qp_num(), st.attr.dest_qp_num)),
            routes: st.routes.clone(),
            dest_qpn: st.attr.dest_qp_num,
            mtu,
            psn: 0,
            off: 0,
            read_end: 0,
            gen: st.conn.tx.gen(),
            resets: st.resets,
            rc: !uc,
            budget: 0,
            cap: st.attr.cap,
            wqe_len,
        }
    }
}

/// Sends the turn `turn` of the record `rec` (the executor read its WQE into `wqe`).
pub(crate) fn send(
    qp: &Qp<Ferroce>,
    turn: &Turn,
    rec: &Rec,
    wqe: &[u8; SEND_WQE_MAX],
    uc: bool,
    after: &mut After,
) {
    let sent = send_turn(qp, turn, &wqe[..turn.wqe_len], uc);
    if matches!(sent, Ok(Sent::Lost)) && !uc {
        // (UC: a message with a packet lost is lost, as on the wire.)
        let mut st = qp.data().state.lock();
        if matches!(st.attr.qp_state, QpState::Rts | QpState::Sqd) {
            st.conn.hold_after_lost(qp);
        }
    }
    if sent.is_err() || uc {
        turn_sent(qp, turn, rec, sent.map(|_| ()), uc, after);
    }
}

/// How much of a turn went out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sent {
    /// Every packet of it.
    Whole,
    /// A packet could not be made (no memory): neither it nor the rest of the turn was sent.
    Lost,
}

/// Decides, under the lock, what the executor does next for a QP on the wire (not in ERR or
/// SQE): takes the next WQE into a record if every record is sent, then plans the turn of the
/// record at the send cursor.
pub(crate) fn next_step(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    uc: bool,
    wqe: &mut [u8; SEND_WQE_MAX],
    after: &mut After,
) -> Step {
    if !matches!(st.attr.qp_state, QpState::Rts | QpState::Sqd) || st.conn.holds() {
        return Step::Stop;
    }
    let wqe = &mut wqe[..(st.sq.wqe_size as usize).min(SEND_WQE_MAX)];
    if let Some(step) = repair(qp, st, uc, wqe) {
        return step;
    }
    if st.conn.tx.outstanding() >= WINDOW {
        return Step::Stop;
    }
    if st.conn.tx.next() == st.conn.tx.count() {
        if let Some(next) = take_wqe(qp, st, uc, wqe, after) {
            return next;
        }
    }
    plan_next_turn(qp, st, uc, wqe, after)
}

/// Asks again for the bytes a READ misses, if that is due (beside the send cursor, which goes
/// on where it was; see [`super::window::Window::take_repair`]).
fn repair(qp: &Qp<Ferroce>, st: &mut QpShared, uc: bool, wqe: &mut [u8]) -> Option<Step> {
    let mtu = mtu_of(st);
    let ask = st.conn.tx.take_repair(mtu)?;
    let av = st.attr.av?;
    st.sq.peek(ask.index as u32, wqe).ok()?;
    qp.device().data().counters.add(Stat::Retransmits, 1);
    let turn = Turn {
        psn: ask.psn,
        off: ask.off,
        read_end: ask.end,
        budget: 1,
        ..Turn::of(qp, st, &av, uc, mtu, wqe.len())
    };
    if st.conn.timer == TimerUse::Idle {
        arm_ack_timer(qp, st);
    }
    Some(Step::Send(turn, ask.rec))
}

/// Takes the next WQE of the send queue, if there is one and it may start now: a local
/// operation executes at once; any other becomes a record to send (or, if it fails the
/// requester's checks, one that fails in its turn). `None`: a record to send was added.
fn take_wqe(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    uc: bool,
    wqe: &mut [u8],
    after: &mut After,
) -> Option<Step> {
    let pending = st.sq.pending().unwrap_or(0) as usize;
    let count = st.conn.tx.count();
    if st.attr.qp_state == QpState::Sqd
        || pending <= count
        || st.sq.peek(count as u32, wqe).is_err()
    {
        return Some(Step::Stop);
    }
    let head = wqe
        .first_chunk::<{ abi::SEND_WQE_HEADER }>()
        .map(SendWqe::from_bytes);
    if let Some(w) =
        head.filter(|w| matches!(w.opcode, wop::REG_MR | wop::LOCAL_INV | wop::BIND_MW))
    {
        return Some(if take_local(qp, st, &w, after) {
            Step::Again
        } else {
            Step::Stop
        });
    }
    let mut rec = Rec::default();
    match message(qp, &st.attr.cap, uc, wqe) {
        Ok(m) => {
            rec.wr_id = m.w.wr_id;
            rec.op = m.w.opcode;
            rec.signaled = qp.data().init.sq_sig_all || m.w.send_flags & send_flags::SIGNALED != 0;
            rec.len = m.len;
            rec.npkts = if is_single(m.w.opcode) {
                1
            } else {
                m.len.div_ceil(mtu_of(st)).max(1)
            };
            let waiting = st.conn.tx.waiting_responses();
            if waiting > 0
                && (m.w.send_flags & FENCE != 0
                    || (rec.waits_response() && waiting >= u32::from(st.attr.max_rd_atomic.max(1))))
            {
                // Fenced, or out of READ/atomic credits: resumed by their completion.
                return Some(Step::Stop);
            }
        }
        Err(status) => {
            if let Some(h) = wqe.first_chunk::<{ abi::SEND_WQE_HEADER }>() {
                let w = SendWqe::from_bytes(h);
                rec.wr_id = w.wr_id;
                rec.op = w.opcode;
            }
            rec.signaled = true;
            rec.failed = Some(status);
        }
    }
    if !st.conn.tx.push(rec) {
        return Some(Step::Stop);
    }
    None
}

/// Plans the turn of the record at the send cursor: how much of it goes now (window, burst,
/// READ chunks), its PSNs taken before a packet goes (the peer's answer may come, in softirq on
/// this CPU, before the transmission returns), the acknowledgement timer armed.
fn plan_next_turn(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    uc: bool,
    wqe: &mut [u8],
    after: &mut After,
) -> Step {
    let i = st.conn.tx.next();
    let rec = st.conn.tx.rec(i);
    if rec.local && rec.failed.is_none() {
        if i == 0 {
            // The oldest (what came before it completed while this was sent again): it
            // completes now.
            complete_front(qp, st, WcStatus::Success, after);
        } else {
            // Executed when it was taken; sending again from before it passes it by.
            st.conn.tx.pass_one();
        }
        return Step::Again;
    }
    if let Some(status) = rec.failed {
        if i == 0 {
            complete_front(qp, st, status, after);
            return Step::Again;
        }
        // It fails once what was sent before it has completed.
        return Step::Stop;
    }
    let Some(av) = st.attr.av else {
        return Step::Stop;
    };
    if st.sq.peek(i as u32, wqe).is_err() {
        return Step::Stop;
    }
    if st.conn.tx.pass_answered() {
        // Going back passes a READ or an atomic answered already: not asked again (it
        // completes in its turn).
        drain_answered(qp, st, after);
        return Step::Again;
    }
    let rec = st.conn.tx.start(i);
    let mtu = mtu_of(st);
    st.conn.tx.resume_read(mtu);
    if rec.op == wop::RDMA_READ && st.conn.tx.off() > rec.done {
        // The next request of a long READ waits until the one before is answered (each
        // counts against the responder's READ credits).
        return Step::Stop;
    }
    let room = if rec.op == wop::RDMA_READ {
        st.conn.tx.read_room()
    } else {
        st.conn.tx.room()
    };
    if room == 0 {
        // Resumed by the acknowledgement that opens the window.
        return Step::Stop;
    }
    let plan = plan_turn(&rec, st.conn.tx.off(), mtu, BURST.min(room));
    let mut turn = Turn {
        psn: st.conn.tx.psn(),
        off: st.conn.tx.off(),
        budget: plan.pkts,
        ..Turn::of(qp, st, &av, uc, mtu, wqe.len())
    };
    turn.read_end = st.conn.tx.take_turn(&plan, mtu);
    if !uc && st.conn.timer == TimerUse::Idle {
        arm_ack_timer(qp, st);
    }
    Step::Send(turn, rec)
}

/// After a turn that failed (the sender's memory went away under the copy: the WQE fails
/// when it is the oldest; what the peer got of it is moot), or any turn of UC, which completes
/// a message once it is sent (nothing is acknowledged).
fn turn_sent(
    qp: &Qp<Ferroce>,
    turn: &Turn,
    rec: &Rec,
    sent: Result<(), WcStatus>,
    uc: bool,
    after: &mut After,
) {
    let mut guard = qp.data().state.lock();
    let st = &mut *guard;
    if let Err(status) = sent {
        if st.conn.tx.gen() == turn.gen && st.resets == turn.resets {
            let at = st.conn.tx.find(st.conn.tx.count(), |r| {
                r.started && !r.local && r.first_psn == rec.first_psn && r.wr_id == rec.wr_id
            });
            if let Some(j) = at {
                let mut r = st.conn.tx.rec(j);
                r.failed = Some(status);
                st.conn.tx.set_rec(j, r);
                if j == 0 {
                    complete_front(qp, st, status, after);
                }
            }
        }
    }
    if uc {
        let sent_to = st.conn.tx.psn();
        st.conn.tx.set_una(sent_to);
        while st.conn.tx.count() > 0 && st.conn.tx.next() > 0 && st.conn.tx.rec(0).failed.is_none()
        {
            complete_front(qp, st, WcStatus::Success, after);
        }
    }
}

/// Takes the local operation `w` (REG_MR, LOCAL_INV, BIND_MW) from the send queue: executes it (the
/// WQEs before it are sent whole), and records it to complete in order; `false` if it must wait
/// (no room for its record, or it is fenced behind READs or atomics).
fn take_local(qp: &Qp<Ferroce>, st: &mut QpShared, w: &SendWqe, after: &mut After) -> bool {
    let waiting = st.conn.tx.waiting_responses() > 0;
    if st.conn.tx.is_full() || (waiting && w.send_flags & FENCE != 0) {
        return false;
    }
    let mut rec = Rec {
        wr_id: w.wr_id,
        op: w.opcode,
        signaled: qp.data().init.sq_sig_all || w.send_flags & send_flags::SIGNALED != 0,
        first_psn: st.conn.tx.psn(),
        started: true,
        local: true,
        ..Rec::default()
    };
    if let Some(Err(status)) = placement::local_op(qp, w) {
        rec.failed = Some(status);
        rec.signaled = true;
    }
    if !st.conn.tx.push(rec) {
        return false;
    }
    if rec.failed.is_none() {
        st.conn.tx.pass_all();
    }
    // A failed one stays the record to send: nothing after it goes out, and it fails (the QP
    // with it) once what was sent before it has completed, as a WQE that fails its checks.
    // Complete at once if it is the oldest.
    drain_answered(qp, st, after);
    true
}

/// Sends the turn's `t.budget` packets of the WQE `wqe` from `t.off` on; `Err` is a local
/// error (the sender's memory went away).
fn send_turn(qp: &Qp<Ferroce>, t: &Turn, wqe: &[u8], uc: bool) -> Result<Sent, WcStatus> {
    let m = parse_message(&t.cap, uc, wqe)?;
    let dev = qp.device();
    let Some(netdev) = dev.data().netdev() else {
        // No netdev (it is going away): as if the packets were lost on the wire.
        return Ok(Sent::Whole);
    };
    let tx = Tx {
        dev,
        netdev: &netdev,
        routes: t.routes.as_deref(),
        t,
        transport: if uc { opcode::UC } else { opcode::RC },
        pkey: crate::engine::qp::own_pkey(qp),
    };
    match m.w.opcode {
        wop::RDMA_READ
        | wop::ATOMIC_CMP_AND_SWP
        | wop::ATOMIC_FETCH_AND_ADD
        | wop::ATOMIC_WRITE
        | wop::FLUSH => send_request(&tx, &m),
        _ => send_data(qp, &tx, &m),
    }
}

/// Where a turn's packets go.
struct Tx<'a> {
    dev: &'a Device<Ferroce>,
    netdev: &'a NetDevice,
    routes: Option<&'a RouteCache>,
    t: &'a Turn,
    /// The transport's opcode bits (RC or UC).
    transport: u8,
    /// The QP's P_Key.
    pkey: u16,
}

impl Tx<'_> {
    /// Sends a packet of the turn: the headers `h` and `len` payload bytes that `fill` writes.
    fn transmit<E>(
        &self,
        h: &Headers,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), TxError<E>> {
        wire::transmit(
            self.dev,
            self.netdev,
            self.routes,
            &self.t.route,
            h,
            len,
            fill,
        )
    }

    /// Sends `count` packets of the turn as one train: the headers and payload length of the
    /// `i`-th from `packet(i)`, its payload written by `fill(i, ..)` (see
    /// [`wire::transmit_train`]).
    fn transmit_train<E>(
        &self,
        count: usize,
        packet: impl Fn(usize) -> (Headers, usize),
        fill: impl FnMut(usize, &mut [u8]) -> Result<(), E>,
    ) -> Result<(), (usize, TxError<E>)> {
        wire::transmit_train(
            self.dev,
            self.netdev,
            self.routes,
            &self.t.route,
            count,
            packet,
            fill,
        )
    }

    fn bth(&self, opcode: u8, psn: u32, ack_req: bool, se: bool) -> Bth {
        Bth {
            opcode: self.transport | opcode,
            se,
            pkey: self.pkey,
            dest_qp: self.t.dest_qpn,
            ack_req: ack_req && self.t.rc,
            psn,
            ..Bth::default()
        }
    }
}

/// A request a response answers, in one packet: a READ request (for the READ's bytes
/// `t.off..t.read_end`), an atomic, an ATOMIC_WRITE (its 8 bytes the payload), a FLUSH.
fn send_request(tx: &Tx<'_>, m: &Message<'_>) -> Result<Sent, WcStatus> {
    let (h, payload): (Headers, &[u8]) = match (m.w.opcode, m.w.wr) {
        (wop::RDMA_READ, WqeUnion::Rdma { remote_addr, rkey }) => {
            (read_request(tx, m.len, remote_addr, rkey), &[])
        }
        (
            wop::ATOMIC_CMP_AND_SWP | wop::ATOMIC_FETCH_AND_ADD,
            WqeUnion::Atomic {
                remote_addr,
                compare_add,
                swap,
                rkey,
            },
        ) => {
            let compare_swap = m.w.opcode == wop::ATOMIC_CMP_AND_SWP;
            let h = atomic_request(tx, compare_swap, remote_addr, rkey, compare_add, swap);
            (h, &[])
        }
        (
            wop::ATOMIC_WRITE,
            WqeUnion::AtomicWrite {
                remote_addr, rkey, ..
            },
        ) => {
            let value = m.inline.ok_or(WcStatus::LocQpOpErr)?;
            (atomic_write_request(tx, remote_addr, rkey), value)
        }
        (wop::FLUSH, _) => (flush_request(tx, &wqe::flush_of(&m.w)?), &[]),
        _ => return Err(WcStatus::LocQpOpErr),
    };
    let fill = |out: &mut [u8]| -> Result<(), Fault> {
        out.copy_from_slice(payload.get(..out.len()).ok_or(Fault::Source)?);
        Ok(())
    };
    match tx.transmit(&h, payload.len(), fill) {
        Ok(()) => Ok(Sent::Whole),
        Err(TxError::Lost) => Ok(Sent::Lost),
        Err(TxError::Fill(_)) => Err(WcStatus::LocProtErr),
    }
}

/// The headers of a READ request for the bytes `t.off..t.read_end` of a READ of `len` bytes
/// from `remote_addr` under `rkey`.
fn read_request(tx: &Tx<'_>, len: u32, remote_addr: u64, rkey: u32) -> Headers {
    let t = tx.t;
    let off = t.off.min(len);
    let reth = Reth {
        va: remote_addr.wrapping_add(off.into()),
        rkey,
        dma_len: t.read_end.min(len).saturating_sub(off),
    };
    Headers {
        bth: tx.bth(op::RDMA_READ_REQUEST, t.psn, true, false),
        reth: Some(reth),
        ..Headers::default()
    }
}

/// The headers of a compare-and-swap (`compare_swap`) or a fetch-and-add on the word at
/// `remote_addr` under `rkey`, with the operands of the WQE's atomic union.
fn atomic_request(
    tx: &Tx<'_>,
    compare_swap: bool,
    remote_addr: u64,
    rkey: u32,
    compare_add: u64,
    swap: u64,
) -> Headers {
    let (opc, swap_add, compare) = if compare_swap {
        (op::COMPARE_SWAP, swap, compare_add)
    } else {
        (op::FETCH_ADD, compare_add, 0)
    };
    let eth = AtomicEth {
        va: remote_addr,
        rkey,
        swap_add,
        compare,
    };
    Headers {
        bth: tx.bth(opc, tx.t.psn, true, false),
        atomic_eth: Some(eth),
        ..Headers::default()
    }
}

/// The headers of an ATOMIC_WRITE to the word at `remote_addr` under `rkey` (its 8 bytes are
/// the payload).
fn atomic_write_request(tx: &Tx<'_>, remote_addr: u64, rkey: u32) -> Headers {
    let reth = Reth {
        va: remote_addr,
        rkey,
        dma_len: 8,
    };
    Headers {
        bth: tx.bth(op::ATOMIC_WRITE, tx.t.psn, true, false),
        reth: Some(reth),
        ..Headers::default()
    }
}

/// The headers of the FLUSH `f`. A region's VA and length mean nothing to the responder and go
/// as the WQE has them (the length cut to 32 bits), as rxe sends them.
fn flush_request(tx: &Tx<'_>, f: &wqe::Flush) -> Headers {
    Headers {
        bth: tx.bth(op::FLUSH, tx.t.psn, true, false),
        feth: Some(f.feth),
        reth: Some(Reth {
            va: f.va,
            rkey: f.rkey,
            dma_len: f.len,
        }),
        ..Headers::default()
    }
}

/// The turn's packets of a SEND or an RDMA WRITE: `t.budget` at most, from `t.off` on, an
/// acknowledgement asked for at the message's end, at the turn's and every [`ACK_EVERY`]
/// PSNs; in trains where packets of one length follow each other.
fn send_data(qp: &Qp<Ferroce>, tx: &Tx<'_>, m: &Message<'_>) -> Result<Sent, WcStatus> {
    let t = tx.t;
    let write = matches!(m.w.opcode, wop::RDMA_WRITE | wop::RDMA_WRITE_WITH_IMM);
    let with_imm = matches!(m.w.opcode, wop::SEND_WITH_IMM | wop::RDMA_WRITE_WITH_IMM);
    let with_inv = m.w.opcode == wop::SEND_WITH_INV;
    let solicited = m.w.send_flags & send_flags::SOLICITED != 0;
    let (remote_addr, rkey) = match m.w.wr {
        WqeUnion::Rdma { remote_addr, rkey } => (remote_addr, rkey),
        _ if write => return Err(WcStatus::LocQpOpErr),
        _ => (0, 0),
    };
    let mut walk = Walk::new(tx.dev, qp.pd_id(), 0, m.sges);
    if m.inline.is_none() {
        walk.skip(t.off as usize)
            .map_err(|_| WcStatus::LocProtErr)?;
    }
    let start = t.off.min(m.len);
    // Packets of the turn: its budget, within what is left of the message (a message of no
    // bytes is one packet).
    let left = (m.len - start).div_ceil(t.mtu).max(1);
    let count = t.budget.max(1).min(left) as usize;
    // The `n`-th packet of the turn: its headers and payload length.
    let packet = |n: usize| -> (Headers, usize) {
        let n = n as u32;
        let off = start + n * t.mtu;
        let chunk = t.mtu.min(m.len - off);
        let (first, last) = (off == 0, off + chunk == m.len);
        let p = psn::add(t.psn, n);
        let opc = opcode::data_opcode(write, first, last, with_imm, with_inv);
        let ack_req = last || n + 1 == t.budget || p % ACK_EVERY == 0;
        let se = last && solicited && (!write || with_imm);
        let h = Headers {
            bth: tx.bth(opc, p, ack_req, se),
            reth: (write && first).then_some(Reth {
                va: remote_addr,
                rkey,
                dma_len: m.len,
            }),
            imm: (last && with_imm).then_some(wire::imm_to_wire(m.w.imm_data)),
            ieth: (last && with_inv).then_some(m.w.imm_data),
            ..Headers::default()
        };
        (h, chunk as usize)
    };
    let mut fill = |n: usize, out: &mut [u8]| match m.inline {
        Some(b) => {
            let at = (start + n as u32 * t.mtu) as usize;
            out.copy_from_slice(b.get(at..at + out.len()).ok_or(Fault::Source)?);
            Ok(())
        }
        None => walk.gather(out),
    };
    let mut n = 0;
    while n < count {
        let cars = wire::cars(&t.route, n, count, packet).max(1);
        let sent = if cars > 1 {
            tx.transmit_train(cars, |i| packet(n + i), |i, out| fill(n + i, out))
                .map_err(|(_, e)| e)
        } else {
            let (h, len) = packet(n);
            tx.transmit(&h, len, |out| fill(n, out))
        };
        match sent {
            Ok(()) => {}
            // The turn ends here: the rest was not sent, and the walk may be anywhere in its
            // bytes (a later packet sent from it would carry bytes a responder that has them
            // in part, as in a retransmission, would place under the wrong PSN); the
            // requester waits and sends again ([`Sent::Lost`]).
            Err(TxError::Lost) => return Ok(Sent::Lost),
            Err(TxError::Fill(_)) => return Err(WcStatus::LocProtErr),
        }
        n += cars;
    }
    Ok(Sent::Whole)
}
