// SPDX-License-Identifier: GPL-2.0

//! Direct placement: a send WQE executed against a QP of the same device in the caller's
//! context (the doorbell system call, or a kernel user's post), its data copied from memory
//! region to memory region, with no packets.
//!
//! It keeps what the wire would give: RC order (one executor per send queue, one message at a
//! time, completions in order), the responder's checks (state, connection, access, keys,
//! bounds, lengths) with the completion statuses IBTA gives their failures on both sides, the
//! requester's own checks first (a bad local SGE sends nothing), RNR waits for a receive WQE,
//! and the error state on both QPs where RC puts it. What the wire has and this has not:
//! timeouts and retries are moot (nothing is lost), so a message to a QP that would drop it
//! fails with `RETRY_EXC_ERR` at once rather than after `retry_cnt` timeouts.

use kernel::{
    prelude::*,
    rdma::{access, Network, Qp, QpCap, QpToken, QpType},
};

use crate::verbs::memory::{self, one_sge, place, Fault, Source, Walk};
use crate::{
    engine::{
        qp::{self, RECV_WQE_MAX},
        responder::{self, Atomic, Extra, Received, Remote},
    },
    protocol::{
        abi::{
            self, send_flags, wc_flags, wc_opcode, wr_opcode as op, Cqe, SendWqe, WcStatus,
            WqeUnion,
        },
        grh,
        refusal::Refusal,
        wqe::{self, Message, Service},
    },
    verbs::{
        ah,
        device::{active_mtu, Ferroce},
        mr,
        stats::Stat,
    },
};

/// What the executor knows of the requester, read under its QP's lock.
pub(crate) struct Requester {
    pub(crate) qpn: u32,
    /// The requester's serial (`QpData::serial`).
    pub(crate) serial: u64,
    /// Its destination's serial, if a local QP had the destination number when it was set
    /// (`QpShared::peer_serial`): a QP that got the number since is not the destination.
    pub(crate) peer_serial: Option<u64>,
    pub(crate) qp_type: QpType,
    pub(crate) dest_qpn: u32,
    pub(crate) peer_local: bool,
    /// A connected QP's (source, destination) GIDs: a local destination takes its messages
    /// only if it is connected back to exactly these, as a packet from the wire must be.
    pub(crate) gids: Option<([u8; 16], [u8; 16])>,
    pub(crate) cap: QpCap,
    pub(crate) sig_all: bool,
    pub(crate) rnr_retry: u8,
    pub(crate) qkey: u32,
    /// The executor runs where sleeping is allowed: long copies yield the CPU.
    pub(crate) may_sleep: bool,
}

/// What became of a WQE.
pub(crate) enum Outcome {
    /// The destination has no receive WQE: retry when it posts one.
    Rnr,
    /// Completed (successfully or not); `signaled` if the owner asked for the completion.
    Done { cqe: Cqe, signaled: bool },
}

/// Why a WQE stopped short of success.
enum Stop {
    Rnr,
    Status(WcStatus),
}

/// Executes the send WQE `wqe` (as much of it as the executor read) of `qp`.
pub(crate) fn execute(qp: &Qp<Ferroce>, req: &Requester, wqe: &[u8]) -> Outcome {
    let Some(hdr) = wqe.first_chunk::<{ abi::SEND_WQE_HEADER }>() else {
        return Outcome::Done {
            cqe: Cqe {
                status: WcStatus::LocQpOpErr,
                qp_num: req.qpn,
                port_num: 1,
                ..Cqe::default()
            },
            signaled: true,
        };
    };
    let w = SendWqe::from_bytes(hdr);
    let mut cqe = Cqe {
        wr_id: w.wr_id,
        opcode: abi::wc_opcode_of(w.opcode).unwrap_or(wc_opcode::SEND),
        qp_num: req.qpn,
        port_num: 1,
        ..Cqe::default()
    };
    let ud = matches!(req.qp_type, QpType::Ud | QpType::Gsi).then(|| SendWqe::ud_of(hdr));
    cqe.status = match run(qp, req, &w, ud, wqe, &mut cqe.byte_len) {
        Ok(()) => {
            let counters = &qp.device().data().counters;
            counters.add(Stat::SentMsgs, 1);
            counters.add(Stat::SentBytes, cqe.byte_len.into());
            WcStatus::Success
        }
        Err(Stop::Rnr) => return Outcome::Rnr,
        Err(Stop::Status(s)) => s,
    };
    Outcome::Done {
        cqe,
        signaled: req.sig_all || w.send_flags & send_flags::SIGNALED != 0,
    }
}

/// The outcome for the requester of a message the responder refuses (the table of
/// [`Refusal`]): RC fails the WQE with the status a requester on the wire would get, and the
/// responder goes to the error state where an RC responder does (it would NAK); a message it
/// drops fails as if the retries ran out; no receive WQE is an RNR wait (sent again when one
/// is posted). UC and UD drop the message and go on.
fn refuse(req: &Requester, dest: &Qp<Ferroce>, why: Refusal) -> Result<(), Stop> {
    let counters = &dest.device().data().counters;
    let rc = req.qp_type == QpType::Rc;
    counters.add(
        match why {
            Refusal::Dropped => Stat::Dropped,
            Refusal::NoReceiveWqe if rc => Stat::RnrWaits,
            Refusal::NoReceiveWqe => Stat::Dropped,
            _ => Stat::Naks,
        },
        1,
    );
    if !rc {
        return Ok(());
    }
    if why == Refusal::NoReceiveWqe {
        return Err(match req.rnr_retry {
            0 => Stop::Status(WcStatus::RnrRetryExcErr),
            _ => Stop::Rnr,
        });
    }
    if why.breaks_responder() {
        qp::fail(dest, req.may_sleep);
    }
    Err(Stop::Status(
        why.requester_status().unwrap_or(WcStatus::RemOpErr),
    ))
}

fn run(
    qp: &Qp<Ferroce>,
    req: &Requester,
    w: &SendWqe,
    ud: Option<WqeUnion>,
    wqe: &[u8],
    byte_len: &mut u32,
) -> Result<(), Stop> {
    if req.qp_type != QpType::Gsi {
        if let Some(r) = local_op(qp, w) {
            return r.map_err(Stop::Status);
        }
    }
    let service = match req.qp_type {
        QpType::Rc => Service::ReliableConnected,
        QpType::Uc => Service::UnreliableConnected,
        QpType::Ud | QpType::Gsi => Service::Datagram,
    };
    // An opcode this QP does not execute (or ferroce does not yet: BIND_MW), a source beyond
    // what the QP was granted: the requester's own checks.
    let m = wqe::message(wqe, service, req.cap.max_inline_data, req.cap.max_send_sge)
        .map_err(Stop::Status)?;
    memory::check_local_sges(qp, &m).map_err(Stop::Status)?;
    if let Some(ud) = ud {
        *byte_len = m.len;
        return datagram(qp, req, w, ud, source(qp, &m), m.len);
    }
    if !req.peer_local {
        // Another host: connected QPs go through the wire engine (rc), never here.
        return Err(Stop::Status(WcStatus::GeneralErr));
    }
    let Some(dest) = qp
        .device()
        .qp(req.dest_qpn)
        .filter(|d| Some(d.data().serial) == req.peer_serial)
    else {
        return refuse(req, qp, Refusal::Dropped);
    };
    // The P_Key its packets would carry, checked as the responder checks a packet's: a
    // mismatch is dropped, so the requester's retries run out.
    if qp::admits_pkey(&dest, qp::own_pkey(qp)).is_none() {
        qp.device().data().counters.add(Stat::PkeyViolations, 1);
        return refuse(req, qp, Refusal::Dropped);
    }
    *byte_len = m.len;
    match w.opcode {
        op::SEND | op::SEND_WITH_IMM | op::SEND_WITH_INV => send_to(qp, req, &dest, &m),
        op::RDMA_WRITE | op::RDMA_WRITE_WITH_IMM => write_to(qp, req, &dest, &m),
        op::RDMA_READ => read(qp, req, &dest, w, m.sges, u64::from(m.len)),
        op::ATOMIC_WRITE => atomic_write(req, &dest, w),
        op::FLUSH => flush(req, &dest, w),
        _ => atomic(qp, req, &dest, w, m.sges),
    }
}

/// Where a message's bytes come from: its inline bytes, or a walk along its SGEs.
fn source<'a>(qp: &'a Qp<Ferroce>, m: &Message<'a>) -> Source<'a, 'a> {
    match m.inline {
        Some(b) => Source::Bytes(b),
        None => Source::Walk(Walk::new(qp.device(), qp.pd_id(), 0, m.sges)),
    }
}

/// A SEND into the destination's next receive WQE.
fn send_to(
    qp: &Qp<Ferroce>,
    req: &Requester,
    dest: &Qp<Ferroce>,
    m: &Message<'_>,
) -> Result<(), Stop> {
    let w = &m.w;
    let imm = (w.opcode == op::SEND_WITH_IMM).then_some(w.imm_data);
    let inv = (w.opcode == op::SEND_WITH_INV).then_some(w.imm_data);
    deliver(req, dest, w, 0, imm, inv, m.len, |dst| {
        let dst = dst.ok_or(Fault::Length)?;
        place(dst, &mut source(qp, m), m.len as usize, req.may_sleep)
    })
}

/// An RDMA WRITE into the range its rkey opens (and, with immediate data, the destination's
/// next receive WQE).
fn write_to(
    qp: &Qp<Ferroce>,
    req: &Requester,
    dest: &Qp<Ferroce>,
    m: &Message<'_>,
) -> Result<(), Stop> {
    let w = &m.w;
    let imm = (w.opcode == op::RDMA_WRITE_WITH_IMM).then_some(w.imm_data);
    let WqeUnion::Rdma { remote_addr, rkey } = w.wr else {
        return Err(Stop::Status(WcStatus::LocQpOpErr));
    };
    if imm.is_some() {
        // The rkey is checked before a receive WQE is taken for the immediate: a write the
        // responder refuses consumes none.
        admit_remote(req, dest, access::REMOTE_WRITE, false)?;
        if let Err(why) = responder::check_rkey(dest, Remote::Write, remote_addr, rkey, m.len) {
            return refuse(req, dest, why);
        }
    }
    let remote = one_sge(remote_addr, m.len.into(), rkey);
    deliver(req, dest, w, access::REMOTE_WRITE, imm, None, m.len, |_| {
        let mut to = Walk::remote(dest, access::REMOTE_WRITE, &remote);
        place(&mut to, &mut source(qp, m), m.len as usize, req.may_sleep).map_err(|f| match f {
            // Out of the remote range, not short of receive buffers.
            Fault::Length => Fault::Dest,
            f => f,
        })
    })
}

/// A local operation (REG_MR, LOCAL_INV) of `qp`'s send queue, executed where the queue
/// reaches it; `None` for the other opcodes. `Err` is the completion status.
pub(crate) fn local_op(qp: &Qp<Ferroce>, w: &SendWqe) -> Option<Result<(), WcStatus>> {
    match (w.opcode, w.wr) {
        (
            op::REG_MR,
            WqeUnion::Reg {
                mr_key,
                key,
                access,
            },
        ) => Some(mr::register(qp, mr_key, key, access)),
        (op::REG_MR, _) => Some(Err(WcStatus::LocQpOpErr)),
        (op::LOCAL_INV, _) => Some(if mr::invalidate(qp, w.imm_data) {
            Ok(())
        } else {
            Err(WcStatus::LocQpOpErr)
        }),
        (op::BIND_MW, _) if matches!(qp.data().qp_type(), QpType::Rc | QpType::Uc) => {
            Some(crate::verbs::mw::bind(qp, &w.wr))
        }
        (op::BIND_MW, _) => Some(Err(WcStatus::LocQpOpErr)),
        _ => None,
    }
}

/// The responder's side of a SEND or an RDMA WRITE: admits the message into `dest` (taking a
/// receive WQE if it consumes one: a send, or an immediate), places it with `copy` (given the
/// receive WQE's SGEs for a send), invalidates the rkey `inv` of a SEND_WITH_INV, completes the
/// receive WQE, and fails the request and the responder as IBTA says when it cannot.
#[expect(clippy::too_many_arguments)]
fn deliver(
    req: &Requester,
    dest: &Qp<Ferroce>,
    w: &SendWqe,
    remote_access: u32,
    imm: Option<u32>,
    inv: Option<u32>,
    len: u32,
    copy: impl FnOnce(Option<&mut Walk<'_, '_>>) -> Result<(), Fault>,
) -> Result<(), Stop> {
    let is_send = remote_access == 0;
    let takes_wqe = is_send || imm.is_some();
    let mut buf = [0u8; RECV_WQE_MAX];
    let resp = match qp::admit(
        dest,
        req.qpn,
        req.serial,
        req.qp_type,
        req.gids,
        remote_access,
        takes_wqe.then_some(&mut buf),
    ) {
        Ok(r) => r,
        Err(why) => return refuse(req, dest, why),
    };
    let (wr_id, placed) = place_delivery(dest, &resp, &buf, is_send, copy);
    // A SEND_WITH_INV that names no valid fast-registration MR of the responder's PD: an
    // invalid request (rxe's status for the receive too).
    let bad_inv = placed.is_ok() && inv.is_some_and(|key| !mr::invalidate(dest, key));
    if placed.is_ok() && !bad_inv {
        responder::count_received(dest, len);
    }
    let refused = refusal_of(placed, bad_inv, is_send);
    let rc = req.qp_type == QpType::Rc;
    // RC puts the responder in error where it would NAK; UC drops the message and goes on.
    let fail_dest = rc && refused.is_some_and(Refusal::breaks_responder);
    // A receive WQE taken for a message refused completes as the table says, or flushed.
    let recv_status = refused.map_or(WcStatus::Success, |why| {
        why.receiver_status().unwrap_or(WcStatus::WrFlushErr)
    });
    if resp.wqe_len.is_some() {
        let invalidated = inv.filter(|_| !bad_inv);
        let msg = received_message(req, w, is_send, imm, invalidated, len);
        let cqe = responder::receive_cqe(dest, wr_id, recv_status, &msg);
        qp::complete_recv(dest, &cqe, resp.resets, fail_dest, req.may_sleep);
    } else if fail_dest {
        qp::fail_since(dest, Some(resp.resets), req.may_sleep);
    }
    requester_outcome(refused, rc)
}

/// Places a message `dest` admitted with `copy`: given the SGEs of the receive WQE it took into
/// `buf` for a send (`resp.wqe_len`: it took one). Returns that WQE's `wr_id` (0 if none) and
/// the copy's result.
fn place_delivery(
    dest: &Qp<Ferroce>,
    resp: &qp::Responder,
    buf: &[u8; RECV_WQE_MAX],
    is_send: bool,
    copy: impl FnOnce(Option<&mut Walk<'_, '_>>) -> Result<(), Fault>,
) -> (u64, Result<(), Fault>) {
    let Some(wqe_len) = resp.wqe_len else {
        return (0, copy(None));
    };
    let wqe = &buf[..wqe_len.min(RECV_WQE_MAX)];
    let placed = match responder::receive_sges(wqe, resp.max_sge) {
        // A malformed receive WQE: the responder's own error.
        Err(_) => Err(Fault::Dest),
        Ok(sges) if is_send => {
            let mut to = Walk::new(dest.device(), dest.pd_id(), access::LOCAL_WRITE, sges);
            copy(Some(&mut to))
        }
        Ok(_) => copy(None),
    };
    let hdr = wqe.first_chunk::<{ abi::RECV_WQE_HEADER }>();
    (hdr.map_or(0, abi::wqe_wr_id), placed)
}

/// The message a delivery's receive WQE completes for: a send (`is_send`) or an RDMA WRITE
/// with immediate data, of `len` bytes, with the immediate `imm` or the rkey `invalidated`.
fn received_message(
    req: &Requester,
    w: &SendWqe,
    is_send: bool,
    imm: Option<u32>,
    invalidated: Option<u32>,
    len: u32,
) -> Received {
    let extra = match (imm, invalidated) {
        (_, Some(key)) => Extra::Inv(key),
        (Some(imm), _) => Extra::Imm(imm),
        _ => Extra::None,
    };
    Received {
        opcode: if is_send {
            wc_opcode::RECV
        } else {
            wc_opcode::RECV_RDMA_WITH_IMM
        },
        len,
        src_qp: req.qpn,
        extra,
        solicited: w.send_flags & send_flags::SOLICITED != 0,
    }
}

/// Why a delivery was refused, if it was (`placed`: the copy's result; `bad_inv`: a
/// SEND_WITH_INV that named no MR the responder may invalidate): what each side learns is the
/// table of refusals (IBTA 9.9, as rxe reports it).
fn refusal_of(placed: Result<(), Fault>, bad_inv: bool, is_send: bool) -> Option<Refusal> {
    match placed {
        Ok(()) if bad_inv => Some(Refusal::BadInvalidate),
        Ok(()) => None,
        Err(Fault::Length) => Some(Refusal::ReceiveTooShort),
        Err(Fault::Dest) if is_send => Some(Refusal::ReceiveUnusable),
        // A remote range the rkey does not open to this access.
        Err(Fault::Dest) => Some(Refusal::RemoteAccess),
        Err(Fault::Source) => Some(Refusal::SourceGone),
    }
}

/// What the requester's WQE completes with after a delivery: RC learns a refusal, UC and UD
/// do not; the requester's own memory going away fails it whatever the transport.
fn requester_outcome(refused: Option<Refusal>, rc: bool) -> Result<(), Stop> {
    match refused {
        None => Ok(()),
        Some(Refusal::SourceGone) => Err(Stop::Status(WcStatus::LocProtErr)),
        Some(why) if rc => Err(Stop::Status(
            why.requester_status().unwrap_or(WcStatus::RemOpErr),
        )),
        Some(_) => Ok(()),
    }
}

/// Admits a READ, an atomic or (`rd_atomic`: one that takes a READ/atomic resource) a write
/// into `dest`: no receive WQE, only the state and the access.
fn admit_remote(
    req: &Requester,
    dest: &Qp<Ferroce>,
    need: u32,
    rd_atomic: bool,
) -> Result<(), Stop> {
    match qp::admit(dest, req.qpn, req.serial, req.qp_type, req.gids, need, None) {
        // A responder that takes no READs or atomics at a time takes none (as rxe NAKs).
        Ok(r) if rd_atomic && r.max_dest_rd_atomic == 0 => {
            refuse(req, dest, Refusal::InvalidRequest)
        }
        Ok(_) => Ok(()),
        Err(why) => refuse(req, dest, why),
    }
}

/// An RDMA READ: the responder's memory into the requester's SGEs.
fn read(
    qp: &Qp<Ferroce>,
    req: &Requester,
    dest: &Qp<Ferroce>,
    w: &SendWqe,
    sges: &[u8],
    len: u64,
) -> Result<(), Stop> {
    let WqeUnion::Rdma { remote_addr, rkey } = w.wr else {
        return Err(Stop::Status(WcStatus::LocQpOpErr));
    };
    admit_remote(req, dest, access::REMOTE_READ, true)?;
    let dev = dest.device();
    let remote = one_sge(remote_addr, len, rkey);
    let from = Walk::remote(dest, access::REMOTE_READ, &remote);
    let mut to = Walk::new(dev, qp.pd_id(), access::LOCAL_WRITE, sges);
    match place(
        &mut to,
        &mut Source::Walk(from),
        len as usize,
        req.may_sleep,
    ) {
        Ok(()) => {
            let counters = &dev.data().counters;
            counters.add(Stat::RcvdMsgs, 1);
            counters.add(Stat::RcvdBytes, len);
            Ok(())
        }
        Err(Fault::Source) => refuse(req, dest, Refusal::RemoteAccess),
        // Checked before; only an MR deregistered meanwhile gets here.
        Err(_) => Err(Stop::Status(WcStatus::LocProtErr)),
    }
}

/// An atomic: compare-and-swap or fetch-and-add on an aligned 8-byte word of the responder's
/// memory; the original value goes to the requester's SGEs (8 bytes).
fn atomic(
    qp: &Qp<Ferroce>,
    req: &Requester,
    dest: &Qp<Ferroce>,
    w: &SendWqe,
    sges: &[u8],
) -> Result<(), Stop> {
    let WqeUnion::Atomic {
        remote_addr,
        compare_add,
        swap,
        rkey,
    } = w.wr
    else {
        return Err(Stop::Status(WcStatus::LocQpOpErr));
    };
    admit_remote(req, dest, access::REMOTE_ATOMIC, true)?;
    let op = if w.opcode == op::ATOMIC_CMP_AND_SWP {
        Atomic::CompareSwap {
            compare: compare_add,
            swap,
        }
    } else {
        Atomic::FetchAdd { add: compare_add }
    };
    let orig = match responder::execute_atomic(dest, remote_addr, rkey, op) {
        Ok(orig) => orig,
        Err(why) => return refuse(req, dest, why),
    };
    let bytes = orig.to_ne_bytes();
    let mut to = Walk::new(qp.device(), qp.pd_id(), access::LOCAL_WRITE, sges);
    place(&mut to, &mut Source::Bytes(&bytes), 8, false)
        .map_err(|_| Stop::Status(WcStatus::LocProtErr))
}

/// An ATOMIC_WRITE: the WQE's 8 bytes stored in one piece at an aligned word of the
/// responder's memory, which must allow remote writes (IBTA A19.4); it takes a READ/atomic
/// resource of the responder, as rxe's does.
fn atomic_write(req: &Requester, dest: &Qp<Ferroce>, w: &SendWqe) -> Result<(), Stop> {
    let WqeUnion::AtomicWrite {
        remote_addr,
        rkey,
        value,
    } = w.wr
    else {
        return Err(Stop::Status(WcStatus::LocQpOpErr));
    };
    admit_remote(req, dest, access::REMOTE_WRITE, true)?;
    responder::execute_atomic_write(dest, remote_addr, rkey, value)
        .or_else(|why| refuse(req, dest, why))
}

/// A FLUSH (IBTA 1.5 A19.4.2): the responder's QP and memory grant the placement types it asks
/// for; it needs READ/atomic resources of the responder, as on the wire. Everything this QP
/// sent before it was placed already (one message at a time, in order).
fn flush(req: &Requester, dest: &Qp<Ferroce>, w: &SendWqe) -> Result<(), Stop> {
    let f = wqe::flush_of(w).map_err(Stop::Status)?;
    admit_remote(req, dest, Remote::Flush(f.feth.placement).access(), true)?;
    responder::execute_flush(dest, f.feth, f.va, f.rkey, f.len)
        .or_else(|why| refuse(req, dest, why))
}

/// A UD send (or a datagram from QP1): one packet to the QP `remote_qpn` of the AH's
/// destination, taken by a receive WQE there if the Q_Key matches and one is posted, dropped
/// otherwise (nothing tells the requester). The receiver gets the datagram's GRH (its IP
/// header) in the first 40 bytes, then the payload; a receive WQE too short, or unusable,
/// completes in error, and the receiver goes on (UD has no connection to break).
fn datagram(
    qp: &Qp<Ferroce>,
    req: &Requester,
    w: &SendWqe,
    ud: WqeUnion,
    src: Source<'_, '_>,
    len: u32,
) -> Result<(), Stop> {
    let to = datagram_dest(qp, req, ud, len).map_err(Stop::Status)?;
    let imm = (w.opcode == op::SEND_WITH_IMM).then_some(w.imm_data);
    let solicited = w.send_flags & send_flags::SOLICITED != 0;
    if !to.ah.local {
        // Another host: one packet on the wire.
        return crate::net::wire::send_datagram(
            qp,
            to.pkey,
            &to.ah.av,
            to.remote_qpn,
            to.qkey,
            imm,
            solicited,
            src,
            len,
        )
        .map_err(Stop::Status);
    }
    let info = DatagramInfo {
        src_qp: req.qpn,
        sl: to.ah.av.sl,
        solicited,
        imm,
        ipv4: to.ah.av.network == Network::Ipv4,
        vlan_id: to.ah.av.vlan_id,
        // The receiver's (datagram_to_local_qp).
        pkey_index: 0,
    };
    datagram_to_local_qp(qp, req, &to, &info, src, len)
}

/// Where a datagram goes, checked.
struct DatagramDest {
    /// The AH's destination.
    ah: ah::Dest,
    remote_qpn: u32,
    /// The Q_Key it carries.
    qkey: u32,
    /// The P_Key it carries.
    pkey: u16,
}

/// The destination of a datagram of `len` bytes in the UD union `ud` of `qp`'s send WQE: an AH
/// of the QP's PD, a length within one packet. `Err` is the completion status.
fn datagram_dest(
    qp: &Qp<Ferroce>,
    req: &Requester,
    ud: WqeUnion,
    len: u32,
) -> Result<DatagramDest, WcStatus> {
    let WqeUnion::Ud {
        ah_num,
        remote_qpn,
        remote_qkey,
        pkey_index,
    } = ud
    else {
        return Err(WcStatus::LocQpOpErr);
    };
    let dev = qp.device();
    // QP1 serves every partition: ib_mad names the P_Key of each MAD (the one a request came
    // with, for its answer); other QPs send with their own.
    let pkey = if req.qp_type == QpType::Gsi {
        if pkey_index >= crate::protocol::limits::PKEY_TBL_LEN {
            return Err(WcStatus::LocQpOpErr);
        }
        dev.data().pkeys.get(pkey_index)
    } else {
        qp::own_pkey(qp)
    };
    let Some(ah) = ah::dest(&dev.data().ah_dests, ah_num).filter(|d| d.pd == qp.pd_id()) else {
        // Not an AH of this QP's PD (the provider names AHs by number).
        return Err(WcStatus::LocQpOpErr);
    };
    // A datagram is one packet.
    let mtu = dev
        .data()
        .netdev()
        .map_or(256, |nd| active_mtu(&nd).bytes());
    if len > mtu {
        return Err(WcStatus::LocLenErr);
    }
    // A Q_Key with the high bit set means the sender's own (IBTA 10.2.5).
    let qkey = if remote_qkey & 0x8000_0000 != 0 {
        req.qkey
    } else {
        remote_qkey
    };
    Ok(DatagramDest {
        ah,
        remote_qpn,
        qkey,
        pkey,
    })
}

/// A datagram to a QP of this device (`to`, whose AH is local): placed in its next receive WQE,
/// or dropped.
fn datagram_to_local_qp(
    qp: &Qp<Ferroce>,
    req: &Requester,
    to: &DatagramDest,
    info: &DatagramInfo,
    mut src: Source<'_, '_>,
    len: u32,
) -> Result<(), Stop> {
    let dev = qp.device();
    let counters = &dev.data().counters;
    let Some(dest) = dev.qp(to.remote_qpn) else {
        counters.add(Stat::Dropped, 1);
        return Ok(());
    };
    // The P_Key the datagram would carry, checked as the receiver checks a packet's.
    let Some(pkey_index) = qp::admits_pkey(&dest, to.pkey) else {
        counters.add(Stat::PkeyViolations, 1);
        counters.add(Stat::Dropped, 1);
        return Ok(());
    };
    let info = &DatagramInfo {
        pkey_index,
        ..*info
    };
    let header = grh::ud_grh(
        &crate::net::wire::route(&to.ah.av, 0),
        len,
        info.imm.is_some(),
    );
    let mut aborted = false;
    let mut buf = [0u8; RECV_WQE_MAX];
    // Placed under the receiver's lock (a datagram is at most 4 KiB), so that datagrams from
    // many senders complete in the order of the receive WQEs.
    let place_into = |wqe: &[u8], max_sge: u32| {
        let (cqe, src_failed) = place_datagram(&dest, wqe, max_sge, &header, &mut src, len, info);
        aborted = src_failed;
        cqe
    };
    let placed = qp::receive_datagram(
        &dest,
        req.qpn,
        req.qp_type,
        to.qkey,
        len,
        &mut buf,
        place_into,
        req.may_sleep,
    );
    if placed {
        counters.add(Stat::RcvdMsgs, 1);
        counters.add(Stat::RcvdBytes, len.into());
    } else {
        counters.add(Stat::Dropped, 1);
    }
    if aborted {
        // The sender's memory went away under the copy.
        return Err(Stop::Status(WcStatus::LocProtErr));
    }
    Ok(())
}

/// What the receiver of a datagram learns of its sender.
#[derive(Clone, Copy)]
pub(crate) struct DatagramInfo {
    pub(crate) src_qp: u32,
    pub(crate) sl: u8,
    pub(crate) solicited: bool,
    /// Immediate data, in wire order.
    pub(crate) imm: Option<u32>,
    /// The GRH is an IPv4 header (RoCEv2 over IPv4), not an IPv6 one.
    pub(crate) ipv4: bool,
    /// The 802.1Q VLAN it came on (a local one: the VLAN its sender's AH sends on).
    pub(crate) vlan_id: Option<u16>,
    /// The index of its P_Key in the port's table (the receiving QP's own, or for QP1 the
    /// entry it matched), for the completion.
    pub(crate) pkey_index: u16,
}

/// Places a datagram, its GRH (`header`) and then `len` bytes from `src`, into the receive WQE
/// `wqe` (as much of it as was read) of `dest`. Returns its completion, and whether the source
/// failed (the sender's memory went away). A receive WQE too short or unusable completes in
/// error.
pub(crate) fn place_datagram(
    dest: &Qp<Ferroce>,
    wqe: &[u8],
    max_sge: u32,
    header: &[u8; grh::GRH_LEN],
    src: &mut Source<'_, '_>,
    len: u32,
    info: &DatagramInfo,
) -> (Cqe, bool) {
    let dev = dest.device();
    let hdr = wqe.first_chunk::<{ abi::RECV_WQE_HEADER }>();
    let num = hdr.map_or(0, abi::recv_wqe_num_sge);
    let end = abi::RECV_WQE_HEADER + num as usize * abi::SGE_SIZE;
    let placed = match wqe.get(abi::RECV_WQE_HEADER..end) {
        Some(sges) if hdr.is_some() && num <= max_sge => {
            let mut walk = Walk::new(dev, dest.pd_id(), access::LOCAL_WRITE, sges);
            place(&mut walk, &mut Source::Bytes(header), grh::GRH_LEN, false)
                .and_then(|()| place(&mut walk, src, len as usize, false))
        }
        // A malformed receive WQE.
        _ => Err(Fault::Dest),
    };
    let status = match placed {
        Ok(()) => WcStatus::Success,
        Err(Fault::Length) => WcStatus::LocLenErr,
        Err(Fault::Dest) => WcStatus::LocProtErr,
        Err(Fault::Source) => WcStatus::RemAbortErr,
    };
    let mut cqe = Cqe {
        wr_id: hdr.map_or(0, abi::wqe_wr_id),
        status,
        opcode: wc_opcode::RECV,
        byte_len: len + grh::GRH_LEN as u32,
        qp_num: dest.qp_num(),
        src_qp: info.src_qp,
        wc_flags: wc_flags::GRH,
        pkey_index: info.pkey_index,
        sl: info.sl,
        port_num: 1,
        kernel_qp: QpToken::of(dest).to_bits(),
        solicited: info.solicited,
        ..Cqe::default()
    };
    if let Some(imm) = info.imm {
        cqe.imm_data = imm;
        cqe.wc_flags |= wc_flags::WITH_IMM;
    }
    if !dest.is_user() {
        // Kernel users (ib_mad, rdma_cm) read the GRH by its network type, and find the GID
        // it went to by the VLAN.
        cqe.network = Some(info.ipv4);
        cqe.vlan_id = info.vlan_id;
    }
    (cqe, matches!(placed, Err(Fault::Source)))
}
