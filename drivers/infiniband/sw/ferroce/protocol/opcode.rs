// SPDX-License-Identifier: GPL-2.0

//! BTH opcodes (IBTA 9.2.1, `include/rdma/ib_pack.h`): the transport in the top three bits,
//! the operation in the low five, and for each the extended headers that follow the BTH.
//!
//! Pure `core` code, tested on the host (`host-tests/`); the data path uses it.

/// Transports (the opcode's top three bits).
pub(crate) const RC: u8 = 0x00;
pub(crate) const UC: u8 = 0x20;
pub(crate) const UD: u8 = 0x60;

/// Operations (the opcode's low five bits).
pub(crate) mod op {
    pub(crate) const SEND_FIRST: u8 = 0x00;
    pub(crate) const SEND_MIDDLE: u8 = 0x01;
    pub(crate) const SEND_LAST: u8 = 0x02;
    pub(crate) const SEND_LAST_WITH_IMMEDIATE: u8 = 0x03;
    pub(crate) const SEND_ONLY: u8 = 0x04;
    pub(crate) const SEND_ONLY_WITH_IMMEDIATE: u8 = 0x05;
    pub(crate) const RDMA_WRITE_FIRST: u8 = 0x06;
    pub(crate) const RDMA_WRITE_MIDDLE: u8 = 0x07;
    pub(crate) const RDMA_WRITE_LAST: u8 = 0x08;
    pub(crate) const RDMA_WRITE_LAST_WITH_IMMEDIATE: u8 = 0x09;
    pub(crate) const RDMA_WRITE_ONLY: u8 = 0x0a;
    pub(crate) const RDMA_WRITE_ONLY_WITH_IMMEDIATE: u8 = 0x0b;
    pub(crate) const RDMA_READ_REQUEST: u8 = 0x0c;
    pub(crate) const RDMA_READ_RESPONSE_FIRST: u8 = 0x0d;
    pub(crate) const RDMA_READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub(crate) const RDMA_READ_RESPONSE_LAST: u8 = 0x0f;
    pub(crate) const RDMA_READ_RESPONSE_ONLY: u8 = 0x10;
    pub(crate) const ACKNOWLEDGE: u8 = 0x11;
    pub(crate) const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub(crate) const COMPARE_SWAP: u8 = 0x13;
    pub(crate) const FETCH_ADD: u8 = 0x14;
    pub(crate) const SEND_LAST_WITH_INVALIDATE: u8 = 0x16;
    pub(crate) const SEND_ONLY_WITH_INVALIDATE: u8 = 0x17;
    /// RC only (IBTA 1.5 A19): makes the responder's memory written before it globally
    /// visible (or persistent); no payload, answered by an RDMA READ response ONLY without
    /// payload.
    pub(crate) const FLUSH: u8 = 0x1c;
    /// RC only (IBTA 1.5 A19): an 8-byte payload stored in one piece; answered by an
    /// RDMA READ response ONLY without payload.
    pub(crate) const ATOMIC_WRITE: u8 = 0x1d;
}

/// Extended headers after the BTH, in wire order (bits of [`Layout::headers`]).
pub(crate) mod hdr {
    pub(crate) const DETH: u16 = 1 << 0;
    pub(crate) const RETH: u16 = 1 << 1;
    pub(crate) const ATOMIC_ETH: u16 = 1 << 2;
    pub(crate) const AETH: u16 = 1 << 3;
    pub(crate) const ATOMIC_ACK_ETH: u16 = 1 << 4;
    pub(crate) const IMMDT: u16 = 1 << 5;
    pub(crate) const IETH: u16 = 1 << 6;
    /// FLUSH extended transport header (IBTA 1.5 A19): before the RETH on the wire.
    pub(crate) const FETH: u16 = 1 << 7;
}

/// What an opcode's packets carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// [`hdr`] bits.
    pub(crate) headers: u16,
    /// Whether a payload may follow the headers.
    pub(crate) payload: bool,
    /// Whether the packet starts a message (first or only).
    pub(crate) first: bool,
    /// Whether the packet ends a message (last or only).
    pub(crate) last: bool,
}

/// Header sizes in bytes.
pub(crate) const BTH_BYTES: usize = 12;
pub(crate) const DETH_BYTES: usize = 8;
pub(crate) const RETH_BYTES: usize = 16;
pub(crate) const ATOMIC_ETH_BYTES: usize = 28;
pub(crate) const AETH_BYTES: usize = 4;
pub(crate) const ATOMIC_ACK_ETH_BYTES: usize = 8;
pub(crate) const IMMDT_BYTES: usize = 4;
pub(crate) const IETH_BYTES: usize = 4;
pub(crate) const FETH_BYTES: usize = 4;
/// The invariant CRC closing every packet.
pub(crate) const ICRC_BYTES: usize = 4;

impl Layout {
    /// Bytes of the BTH and the extended headers.
    pub(crate) fn header_bytes(&self) -> usize {
        let h = self.headers;
        let has = |bit: u16, n: usize| if h & bit != 0 { n } else { 0 };
        BTH_BYTES
            + has(hdr::DETH, DETH_BYTES)
            + has(hdr::RETH, RETH_BYTES)
            + has(hdr::ATOMIC_ETH, ATOMIC_ETH_BYTES)
            + has(hdr::AETH, AETH_BYTES)
            + has(hdr::ATOMIC_ACK_ETH, ATOMIC_ACK_ETH_BYTES)
            + has(hdr::IMMDT, IMMDT_BYTES)
            + has(hdr::IETH, IETH_BYTES)
            + has(hdr::FETH, FETH_BYTES)
    }
}

/// The layout of `opcode`, or `None` for an opcode ferroce does not speak (RD, CNP, reserved,
/// manufacturer-specific, and operations a transport does not have).
pub(crate) fn layout(opcode: u8) -> Option<Layout> {
    use hdr::*;
    use op::*;
    let (transport, operation) = (opcode & 0xe0, opcode & 0x1f);
    let l = |headers, payload, first, last| {
        Some(Layout {
            headers,
            payload,
            first,
            last,
        })
    };
    let common = match operation {
        SEND_FIRST => l(0, true, true, false),
        SEND_MIDDLE => l(0, true, false, false),
        SEND_LAST => l(0, true, false, true),
        SEND_LAST_WITH_IMMEDIATE => l(IMMDT, true, false, true),
        SEND_ONLY => l(0, true, true, true),
        SEND_ONLY_WITH_IMMEDIATE => l(IMMDT, true, true, true),
        RDMA_WRITE_FIRST => l(RETH, true, true, false),
        RDMA_WRITE_MIDDLE => l(0, true, false, false),
        RDMA_WRITE_LAST => l(0, true, false, true),
        RDMA_WRITE_LAST_WITH_IMMEDIATE => l(IMMDT, true, false, true),
        RDMA_WRITE_ONLY => l(RETH, true, true, true),
        RDMA_WRITE_ONLY_WITH_IMMEDIATE => l(RETH | IMMDT, true, true, true),
        _ => None,
    };
    match transport {
        RC => match operation {
            RDMA_READ_REQUEST => l(RETH, false, true, true),
            RDMA_READ_RESPONSE_FIRST => l(AETH, true, true, false),
            RDMA_READ_RESPONSE_MIDDLE => l(0, true, false, false),
            RDMA_READ_RESPONSE_LAST => l(AETH, true, false, true),
            RDMA_READ_RESPONSE_ONLY => l(AETH, true, true, true),
            ACKNOWLEDGE => l(AETH, false, true, true),
            ATOMIC_ACKNOWLEDGE => l(AETH | ATOMIC_ACK_ETH, false, true, true),
            COMPARE_SWAP | FETCH_ADD => l(ATOMIC_ETH, false, true, true),
            SEND_LAST_WITH_INVALIDATE => l(IETH, true, false, true),
            SEND_ONLY_WITH_INVALIDATE => l(IETH, true, true, true),
            ATOMIC_WRITE => l(RETH, true, true, true),
            FLUSH => l(FETH | RETH, false, true, true),
            _ => common,
        },
        UC => common,
        UD => match operation {
            SEND_ONLY => l(DETH, true, true, true),
            SEND_ONLY_WITH_IMMEDIATE => l(DETH | IMMDT, true, true, true),
            _ => None,
        },
        _ => None,
    }
}

/// The opcode (without the transport's bits) of a packet of a SEND (`write`: an RDMA WRITE)
/// that is its message's `first` and/or `last`, the last one carrying immediate data (`imm`)
/// or, for a SEND, an rkey to invalidate (`inv`).
pub(crate) fn data_opcode(write: bool, first: bool, last: bool, imm: bool, inv: bool) -> u8 {
    match (write, first, last) {
        (false, true, true) if imm => op::SEND_ONLY_WITH_IMMEDIATE,
        (false, true, true) if inv => op::SEND_ONLY_WITH_INVALIDATE,
        (false, true, true) => op::SEND_ONLY,
        (false, true, false) => op::SEND_FIRST,
        (false, false, false) => op::SEND_MIDDLE,
        (false, false, true) if imm => op::SEND_LAST_WITH_IMMEDIATE,
        (false, false, true) if inv => op::SEND_LAST_WITH_INVALIDATE,
        (false, false, true) => op::SEND_LAST,
        (true, true, true) if imm => op::RDMA_WRITE_ONLY_WITH_IMMEDIATE,
        (true, true, true) => op::RDMA_WRITE_ONLY,
        (true, true, false) => op::RDMA_WRITE_FIRST,
        (true, false, false) => op::RDMA_WRITE_MIDDLE,
        (true, false, true) if imm => op::RDMA_WRITE_LAST_WITH_IMMEDIATE,
        (true, false, true) => op::RDMA_WRITE_LAST,
    }
}
