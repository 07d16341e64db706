// SPDX-License-Identifier: GPL-2.0

//! The responder's checks and executions (IBTA 9.7.5 and 9.4), shared by both carriers of
//! requests: packets from the wire (`rc/responder.rs`, in PSN order under the QP's lock) and
//! direct placement between QPs of one device (`placement.rs`, whole messages in the
//! requester's context). Each check is named after the rule it applies and refuses with a
//! [`Refusal`], whose table (`refusal.rs`) says what each side learns.

use core::sync::atomic::Ordering;
use kernel::{
    rdma::{access, Qp, QpToken},
    sync::barrier::smp_mb,
};

use crate::{
    protocol::{
        abi::{self, wc_flags, Cqe, WcStatus},
        eth::{flush, Feth},
        limits,
        refusal::Refusal,
    },
    verbs::{
        device::Ferroce,
        memory::{find_remote, find_remote_region, Range},
        stats::Stat,
        wq::WorkQueue,
    },
};

/// An operation on the responder's memory that a peer asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Remote {
    Write,
    Read,
    /// Compare-and-swap or fetch-and-add.
    Atomic,
    AtomicWrite,
    /// A FLUSH of the placement types `Feth::placement`.
    Flush(u8),
}

impl Remote {
    /// The access rights the QP and the memory must grant.
    pub(crate) fn access(self) -> u32 {
        match self {
            Remote::Write | Remote::AtomicWrite => access::REMOTE_WRITE,
            Remote::Read => access::REMOTE_READ,
            Remote::Atomic => access::REMOTE_ATOMIC,
            Remote::Flush(placement) => {
                let global = if placement & flush::GLOBAL != 0 {
                    access::FLUSH_GLOBAL
                } else {
                    0
                };
                let persistent = if placement & flush::PERSISTENT != 0 {
                    access::FLUSH_PERSISTENT
                } else {
                    0
                };
                global | persistent
            }
        }
    }

    /// Whether it takes one of the responder's READ/atomic resources (`max_dest_rd_atomic`).
    fn takes_resource(self) -> bool {
        !matches!(self, Remote::Write)
    }
}

/// C9-38/o9-x: the QP enables `op` for remote peers (its access flags), and a READ, an atomic
/// or an ATOMIC_WRITE finds the QP taking such requests at all (`max_dest_rd_atomic`, as rxe
/// NAKs): otherwise an invalid request.
pub(crate) fn check_qp_allows(
    qp_access: u32,
    max_dest_rd_atomic: u8,
    op: Remote,
) -> Result<(), Refusal> {
    let need = op.access();
    if need == 0 || qp_access & need != need || (op.takes_resource() && max_dest_rd_atomic == 0) {
        return Err(Refusal::InvalidRequest);
    }
    Ok(())
}

/// C9-88 and 9.7.4.1.5: the rkey opens `len` bytes at `va` of `qp`'s memory to `op` (an MR of
/// its PD, or a window bound to it), within the longest message (see below).
/// An empty range needs no key.
pub(crate) fn check_rkey(
    qp: &Qp<Ferroce>,
    op: Remote,
    va: u64,
    rkey: u32,
    len: u32,
) -> Result<(), Refusal> {
    if len > limits::MAX_MSG_SZ {
        // A WRITE longer than any message is an invalid request; a READ's length is checked
        // with its range (a remote access error), as rxe's rkey check does.
        return Err(match op {
            Remote::Read => Refusal::RemoteAccess,
            _ => Refusal::InvalidRequest,
        });
    }
    if len > 0 && find_remote(qp, rkey, va, len as usize, op.access()).is_none() {
        return Err(Refusal::RemoteAccess);
    }
    Ok(())
}

/// The 8-byte word an atomic or an ATOMIC_WRITE works on: an atomic's `va` aligned (IBTA
/// 9.4.5: an invalid request otherwise), under an rkey that opens it to `op`, and the word
/// aligned in memory (the MR's iova may differ from its pages' offsets mod 8; rxe checks the
/// memory for both).
fn atomic_target(qp: &Qp<Ferroce>, op: Remote, va: u64, rkey: u32) -> Result<Range<'_>, Refusal> {
    if op == Remote::Atomic && va % 8 != 0 {
        return Err(Refusal::InvalidRequest);
    }
    let range = find_remote(qp, rkey, va, 8, op.access()).ok_or(Refusal::RemoteAccess)?;
    if range.atomic_word().is_none() {
        return Err(Refusal::InvalidRequest);
    }
    Ok(range)
}

/// What an atomic does with the word.
#[derive(Clone, Copy)]
pub(crate) enum Atomic {
    CompareSwap { compare: u64, swap: u64 },
    FetchAdd { add: u64 },
}

/// Executes an atomic (IBTA 9.4.5) on `qp`'s memory; returns the word's original value.
pub(crate) fn execute_atomic(
    qp: &Qp<Ferroce>,
    va: u64,
    rkey: u32,
    op: Atomic,
) -> Result<u64, Refusal> {
    let range = atomic_target(qp, Remote::Atomic, va, rkey)?;
    let word = range.atomic_word().ok_or(Refusal::InvalidRequest)?;
    let orig = match op {
        Atomic::CompareSwap { compare, swap } => word
            .compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst)
            .unwrap_or_else(|v| v),
        Atomic::FetchAdd { add } => word.fetch_add(add, Ordering::SeqCst),
    };
    count_received(qp, 0);
    Ok(orig)
}

/// Executes an ATOMIC_WRITE (IBTA A19.4): the 8 bytes stored in one piece at an aligned word
/// the rkey opens to remote writes.
pub(crate) fn execute_atomic_write(
    qp: &Qp<Ferroce>,
    va: u64,
    rkey: u32,
    value: [u8; 8],
) -> Result<(), Refusal> {
    let range = atomic_target(qp, Remote::AtomicWrite, va, rkey)?;
    let word = range.atomic_word().ok_or(Refusal::InvalidRequest)?;
    word.store(u64::from_ne_bytes(value), Ordering::SeqCst);
    count_received(qp, 8);
    Ok(())
}

/// Executes a FLUSH (IBTA 1.5 A19.4.2) of `qp`'s memory: `len` bytes at `va` under `rkey`, or
/// the whole region `rkey` names, which must grant the placement types `feth` asks for (a
/// remote access error otherwise; an empty range needs the rkey too, and a VA within what it
/// names, as rxe checks). `feth` is valid: both carriers check it first (`on_flush`,
/// `wqe::flush_of`). The request is taken in PSN order, after every WRITE before it was
/// placed; a full barrier then orders those stores before whatever the responder does next
/// (the response, to begin with), so every reader of the memory sees them: global visibility.
/// Persistence cannot be granted (no memory registers with `FLUSH_PERSISTENT`: the device does
/// not offer it), so it never gets here.
pub(crate) fn execute_flush(
    qp: &Qp<Ferroce>,
    feth: Feth,
    va: u64,
    rkey: u32,
    len: u32,
) -> Result<(), Refusal> {
    let need = Remote::Flush(feth.placement).access();
    let found = if feth.selectivity == flush::REGION {
        find_remote_region(qp, rkey, need)
    } else {
        find_remote(qp, rkey, va, len as usize, need).is_some()
    };
    if !found {
        return Err(Refusal::RemoteAccess);
    }
    smp_mb();
    count_received(qp, 0);
    Ok(())
}

/// The SGEs of the receive WQE `wqe` (as much of it as was read, `len` bytes), within the
/// `max_sge` the QP or SRQ was created with: a malformed one is the responder's own failure.
pub(crate) fn receive_sges(wqe: &[u8], max_sge: u32) -> Result<&[u8], Refusal> {
    let hdr = wqe
        .first_chunk::<{ abi::RECV_WQE_HEADER }>()
        .ok_or(Refusal::ReceiveUnusable)?;
    let num = abi::recv_wqe_num_sge(hdr);
    if num > max_sge {
        return Err(Refusal::ReceiveUnusable);
    }
    let end = abi::RECV_WQE_HEADER + num as usize * abi::SGE_SIZE;
    wqe.get(abi::RECV_WQE_HEADER..end)
        .ok_or(Refusal::ReceiveUnusable)
}

/// A receive WQE taken for a message: its first `len` bytes are in the caller's buffer, and it
/// may hold `max_sge` SGEs (its QP's or its SRQ's limit).
pub(crate) struct TakenWqe {
    pub(crate) len: usize,
    pub(crate) max_sge: u32,
}

/// Takes the next receive WQE of `dest` into `buf`: from `rq`, its own receive queue (under
/// its lock; `max_sge` its limit), or from its SRQ. None posted: an RNR wait; a ring the
/// responder cannot read, or an SRQ that failed: its own failure.
pub(crate) fn take_receive_wqe(
    dest: &Qp<Ferroce>,
    rq: Option<&mut WorkQueue>,
    max_sge: u32,
    buf: &mut [u8],
) -> Result<TakenWqe, Refusal> {
    let Some(rq) = rq else {
        // Taken under the QP's lock (QP, then SRQ, as everywhere), so that a move to ERR sees
        // the receive in flight.
        let srq = dest.srq().ok_or(Refusal::RemoteOperational)?;
        return match crate::verbs::srq::take(srq, buf) {
            Ok(Some((len, max_sge))) => Ok(TakenWqe { len, max_sge }),
            Ok(None) => Err(Refusal::NoReceiveWqe),
            Err(_) => Err(Refusal::RemoteOperational),
        };
    };
    if rq.pending().map_err(|_| Refusal::RemoteOperational)? == 0 {
        return Err(Refusal::NoReceiveWqe);
    }
    let len = (rq.wqe_size as usize).min(buf.len());
    rq.peek(0, &mut buf[..len])
        .and_then(|()| rq.consume(1))
        .map_err(|_| Refusal::RemoteOperational)?;
    Ok(TakenWqe { len, max_sge })
}

/// What a receive completion carries besides the data.
#[derive(Clone, Copy)]
pub(crate) enum Extra {
    None,
    /// Immediate data (as the CQE holds it).
    Imm(u32),
    /// The rkey a SEND_WITH_INV invalidated.
    Inv(u32),
}

/// A message a receive WQE took, as its completion reports it.
pub(crate) struct Received {
    pub(crate) opcode: u32,
    pub(crate) len: u32,
    /// The sender's QP number.
    pub(crate) src_qp: u32,
    pub(crate) extra: Extra,
    pub(crate) solicited: bool,
}

/// The completion of the receive WQE `wr_id` of `dest` for the message `msg`.
pub(crate) fn receive_cqe(dest: &Qp<Ferroce>, wr_id: u64, status: WcStatus, msg: &Received) -> Cqe {
    let mut cqe = Cqe {
        wr_id,
        status,
        opcode: msg.opcode,
        byte_len: msg.len,
        qp_num: dest.qp_num(),
        src_qp: msg.src_qp,
        port_num: 1,
        kernel_qp: QpToken::of(dest).to_bits(),
        solicited: msg.solicited,
        ..Cqe::default()
    };
    match msg.extra {
        Extra::None => {}
        Extra::Imm(imm) => {
            cqe.imm_data = imm;
            cqe.wc_flags |= wc_flags::WITH_IMM;
        }
        Extra::Inv(key) => {
            cqe.imm_data = key;
            cqe.wc_flags |= wc_flags::WITH_INV;
        }
    }
    cqe
}

/// Counts a message of `len` bytes the responder took.
pub(crate) fn count_received(qp: &Qp<Ferroce>, len: u32) {
    let counters = &qp.device().data().counters;
    counters.add(Stat::RcvdMsgs, 1);
    counters.add(Stat::RcvdBytes, len.into());
}
