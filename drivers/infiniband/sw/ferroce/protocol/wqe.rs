// SPDX-License-Identifier: GPL-2.0

//! The message of a send WQE: what it asks for and where its bytes are, checked against what
//! the QP's service and capabilities allow (IBTA 10.8.x; the statuses rxe reports). Every
//! executor reads a WQE through this: the wire's requester, direct placement, datagrams.
//!
//! Pure `core` code, tested on the host (`host-tests/`).

use crate::protocol::{
    abi::{self, send_flags, wr_opcode as op, RingSge, SendWqe, WcStatus, WqeUnion},
    eth::{flush, Feth},
    limits,
};

/// The transport service of a QP, as far as the opcodes it may send go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Service {
    /// RC: every opcode.
    ReliableConnected,
    /// UC: SENDs and RDMA WRITEs.
    UnreliableConnected,
    /// UD and QP1: SENDs.
    Datagram,
}

/// A send WQE's message, checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Message<'a> {
    pub(crate) w: SendWqe,
    /// The SGE list (`struct ferroce_sge`s); empty for inline data and an ATOMIC_WRITE.
    pub(crate) sges: &'a [u8],
    /// Inline data, or an ATOMIC_WRITE's 8 bytes (from the WQE's header).
    pub(crate) inline: Option<&'a [u8]>,
    /// The message's length in bytes.
    pub(crate) len: u32,
}

impl Message<'_> {
    /// It brings data back into the requester's SGEs (a READ, an atomic): they must allow
    /// local writes.
    pub(crate) fn writes_locally(&self) -> bool {
        matches!(
            self.w.opcode,
            op::RDMA_READ | op::ATOMIC_CMP_AND_SWP | op::ATOMIC_FETCH_AND_ADD
        )
    }
}

/// Whether a QP of `service` sends `opcode` (local operations aside).
pub(crate) fn allows(service: Service, opcode: u32) -> bool {
    match service {
        Service::ReliableConnected => matches!(
            opcode,
            op::SEND
                | op::SEND_WITH_IMM
                | op::SEND_WITH_INV
                | op::RDMA_WRITE
                | op::RDMA_WRITE_WITH_IMM
                | op::RDMA_READ
                | op::ATOMIC_CMP_AND_SWP
                | op::ATOMIC_FETCH_AND_ADD
                | op::ATOMIC_WRITE
                | op::FLUSH
        ),
        Service::UnreliableConnected => matches!(
            opcode,
            op::SEND | op::SEND_WITH_IMM | op::RDMA_WRITE | op::RDMA_WRITE_WITH_IMM
        ),
        Service::Datagram => matches!(opcode, op::SEND | op::SEND_WITH_IMM),
    }
}

/// The sum of an SGE list's lengths (`None` past 64 bits or for a torn list).
pub(crate) fn sge_list_len(sges: &[u8]) -> Option<u64> {
    sges.chunks(abi::SGE_SIZE).try_fold(0u64, |sum, b| {
        sum.checked_add(RingSge::from_bytes(b)?.length.into())
    })
}

/// What a FLUSH WQE asks for, checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flush {
    pub(crate) feth: Feth,
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    /// A range's length; a region's means nothing (cut to 32 bits, as rxe sends it).
    pub(crate) len: u32,
}

/// What the FLUSH WQE `w` asks for, if it is something defined (a placement type or both, a
/// range or a region) and a range is no longer than IBTA allows ([`flush::MAX_RANGE`]).
pub(crate) fn flush_of(w: &SendWqe) -> Result<Flush, WcStatus> {
    let WqeUnion::Flush {
        remote_addr,
        length,
        rkey,
        placement,
        level,
    } = w.wr
    else {
        return Err(WcStatus::LocQpOpErr);
    };
    let feth = Feth {
        placement,
        selectivity: level,
    };
    if !feth.is_valid() {
        return Err(WcStatus::LocQpOpErr);
    }
    if level == flush::RANGE && length > u64::from(flush::MAX_RANGE) {
        return Err(WcStatus::LocLenErr);
    }
    Ok(Flush {
        feth,
        va: remote_addr,
        rkey,
        len: length as u32,
    })
}

/// Reads the message of the send WQE `wqe` (as much of it as was read) of a QP of `service`
/// that may send `max_inline` inline bytes and `max_sge` SGEs. `Err` is the completion status
/// of a WQE that fails: an opcode the QP does not send, or inline data with one that carries
/// none (`LOC_QP_OP_ERR`); more SGEs than the QP takes (`LOC_QP_OP_ERR`); more inline bytes,
/// a longer message than any may be, an atomic of other than 8 bytes (`LOC_LEN_ERR`); a FLUSH
/// that asks for no defined placement, or with SGEs (`LOC_QP_OP_ERR`), or a range longer than
/// 2^31 - 1 bytes (`LOC_LEN_ERR`). A FLUSH moves no bytes: its message is empty.
pub(crate) fn message(
    wqe: &[u8],
    service: Service,
    max_inline: u32,
    max_sge: u32,
) -> Result<Message<'_>, WcStatus> {
    let hdr = wqe
        .first_chunk::<{ abi::SEND_WQE_HEADER }>()
        .ok_or(WcStatus::LocQpOpErr)?;
    let w = SendWqe::from_bytes(hdr);
    let body = &wqe[abi::SEND_WQE_HEADER..];
    let inline = w.send_flags & send_flags::INLINE != 0;
    let carries_data = matches!(
        w.opcode,
        op::SEND | op::SEND_WITH_IMM | op::SEND_WITH_INV | op::RDMA_WRITE | op::RDMA_WRITE_WITH_IMM
    );
    if !allows(service, w.opcode) || (inline && !carries_data) {
        return Err(WcStatus::LocQpOpErr);
    }
    let (sges, inline_bytes) = if w.opcode == op::FLUSH {
        if w.num_sge != 0 {
            return Err(WcStatus::LocQpOpErr);
        }
        flush_of(&w)?;
        (&body[..0], None)
    } else if w.opcode == op::ATOMIC_WRITE {
        // Its 8 bytes are in the header (`wr.atomic_write.value`); it has no SGEs.
        if w.num_sge != 0 {
            return Err(WcStatus::LocQpOpErr);
        }
        let v = abi::ATOMIC_WRITE_VALUE;
        (&body[..0], Some(&wqe[v..v + 8]))
    } else if inline {
        let n = w.inline_len as usize;
        if w.inline_len > max_inline || n > body.len() {
            return Err(WcStatus::LocLenErr);
        }
        (&body[..0], Some(&body[..n]))
    } else {
        let n = w.num_sge as usize * abi::SGE_SIZE;
        if w.num_sge > max_sge || n > body.len() {
            return Err(WcStatus::LocQpOpErr);
        }
        (&body[..n], None)
    };
    let len = match inline_bytes {
        Some(b) => b.len() as u64,
        None => sge_list_len(sges).ok_or(WcStatus::LocLenErr)?,
    };
    let atomic = matches!(w.opcode, op::ATOMIC_CMP_AND_SWP | op::ATOMIC_FETCH_AND_ADD);
    if len > u64::from(limits::MAX_MSG_SZ) || (atomic && len != 8) {
        return Err(WcStatus::LocLenErr);
    }
    Ok(Message {
        w,
        sges,
        inline: inline_bytes,
        len: len as u32,
    })
}
