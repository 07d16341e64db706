// SPDX-License-Identifier: GPL-2.0

//! The requester of a connected QP on the wire: the send queue's executor turns WQEs into
//! packets, within the send window ([`super::window`]). A WQE is read and checked once when it
//! is taken (nothing goes out for a WQE that fails the requester's own checks), then sent in
//! turns of at most [`BURST`] packets; RC asks for an acknowledgement at the end of each
//! message and every [`ACK_EVERY`] packets. A WQE stays in the ring until it completes
//! ([`super::completer`]).

use kernel::{
    prelude::*,
    rdma::{access, Qp, QpState, QpType},
};

use crate::{
    engine::{
        placement::{self},
        qp::{After, QpShared, SEND_WQE_MAX},
    },
    net::wire::{self, TxError},
    protocol::{
        abi::{self, send_flags, wc_status, wr_opcode as wop, SendWqe, WqeUnion},
        bth::Bth,
        eth::{AtomicEth, Reth},
        opcode::{self, op},
        packet::{Headers, Route},
        psn,
        wqe::{self, Message, Service},
    },
    verbs::{
        device::Ferroce,
        memory::{Fault, Walk},
    },
};

use super::{
    arm_ack_timer,
    completer::{complete_front, drain_answered},
    mtu_of,
    window::{is_single, plan_turn, read_chunk_end, Rec, ACK_EVERY, BURST, WINDOW},
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
) -> Result<Message<'a>, u32> {
    let m = parse_message(cap, uc, wqe)?;
    let need_local = if m.writes_locally() {
        access::LOCAL_WRITE
    } else {
        0
    };
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
pub(super) fn parse_message<'a>(
    cap: &kernel::rdma::QpCap,
    uc: bool,
    wqe: &'a [u8],
) -> Result<Message<'a>, u32> {
    let service = if uc {
        Service::UnreliableConnected
    } else {
        Service::ReliableConnected
    };
    wqe::message(wqe, service, cap.max_inline_data, cap.max_send_sge)
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
            || st.conn.tx.outstanding() >= WINDOW;
        if stop {
            st.sending = false;
            return;
        }
        let len = (st.sq.wqe_size as usize).min(SEND_WQE_MAX);
        if st.conn.tx.next() == st.conn.tx.count() {
            // Take the next WQE, if there is one and it may start now.
            let pending = st.sq.pending().unwrap_or(0) as usize;
            if state == QpState::Sqd
                || pending <= st.conn.tx.count()
                || st
                    .sq
                    .peek(st.conn.tx.count() as u32, &mut wqe[..len])
                    .is_err()
            {
                st.sending = false;
                return;
            }
            let head = wqe
                .first_chunk::<{ abi::SEND_WQE_HEADER }>()
                .map(SendWqe::from_bytes);
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
                    rec.npkts = if is_single(m.w.opcode) {
                        1
                    } else {
                        m.len.div_ceil(mtu).max(1)
                    };
                    let waiting = st.conn.tx.waiting_responses();
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
            if !st.conn.tx.push(rec) {
                st.sending = false;
                return;
            }
        }
        let i = st.conn.tx.next();
        let rec = st.conn.tx.rec(i);
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
            st.conn.tx.pass_one();
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
        let rec = st.conn.tx.start(i);
        let mtu = mtu_of(st);
        if rec.op == wop::RDMA_READ && st.conn.tx.off() > rec.done {
            // The next request of a long READ waits until the one before is answered (each
            // counts against the responder's READ credits).
            st.sending = false;
            return;
        }
        let room = if rec.op == wop::RDMA_READ {
            st.conn.tx.read_room()
        } else {
            st.conn.tx.room()
        };
        if room == 0 {
            // Resumed by the acknowledgement that opens the window.
            st.sending = false;
            return;
        }
        let plan = plan_turn(&rec, st.conn.tx.off(), mtu, BURST.min(room));
        let turn = Turn {
            route: wire::route(&av, wire::src_port(qp.qp_num(), st.attr.dest_qp_num)),
            dest_qpn: st.attr.dest_qp_num,
            mtu,
            psn: st.conn.tx.psn(),
            off: st.conn.tx.off(),
            gen: st.conn.tx.gen(),
            resets: st.resets,
            rc: !uc,
            budget: plan.pkts,
            cap: st.attr.cap,
        };
        st.conn.tx.take_turn(&plan);
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
        if st.conn.tx.gen() == turn.gen && st.resets == turn.resets {
            if let Err(status) = sent {
                // The sender's memory went away under the copy: the WQE fails when it is the
                // oldest (what the peer got of it is moot).
                let at = st.conn.tx.find(st.conn.tx.count(), |r| {
                    r.started && !r.local && r.first_psn == rec.first_psn && r.wr_id == rec.wr_id
                });
                if let Some(j) = at {
                    let mut r = st.conn.tx.rec(j);
                    r.failed = status;
                    st.conn.tx.set_rec(j, r);
                    if j == 0 {
                        complete_front(qp, st, status, &mut after);
                    }
                }
            }
        }
        if uc {
            // UC completes a message once it is sent; nothing is acknowledged.
            let sent_to = st.conn.tx.psn();
            st.conn.tx.set_una(sent_to);
            while st.conn.tx.count() > 0 && st.conn.tx.next() > 0 && st.conn.tx.rec(0).failed == 0 {
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
        rec.failed = status;
        rec.signaled = true;
    }
    if !st.conn.tx.push(rec) {
        return false;
    }
    if rec.failed == 0 {
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
            let (
                WqeUnion::AtomicWrite {
                    remote_addr, rkey, ..
                },
                Some(value),
            ) = (m.w.wr, m.inline)
            else {
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
                walk.skip(t.off as usize)
                    .map_err(|_| wc_status::LOC_PROT_ERR)?;
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
