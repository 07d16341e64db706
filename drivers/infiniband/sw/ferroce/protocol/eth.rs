// SPDX-License-Identifier: GPL-2.0

//! The extended transport headers that follow the BTH (IBTA 9.3), big endian on the wire.
//! Which ones a packet has depends on its opcode (`opcode.rs`).
//!
//! Pure `core` code, tested on the host (`host-tests/`); the data path uses it.

use crate::protocol::opcode::{
    AETH_BYTES, ATOMIC_ACK_ETH_BYTES, ATOMIC_ETH_BYTES, DETH_BYTES, FETH_BYTES, RETH_BYTES,
};

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from(be32(b, at)) << 32 | u64::from(be32(b, at + 4))
}

/// Datagram ETH (UD): the Q_Key and the sender's QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deth {
    pub(crate) qkey: u32,
    pub(crate) src_qp: u32,
}

impl Deth {
    pub(crate) fn parse(b: &[u8]) -> Option<Deth> {
        let b = b.get(..DETH_BYTES)?;
        Some(Deth {
            qkey: be32(b, 0),
            src_qp: be32(b, 4) & 0xff_ffff,
        })
    }

    pub(crate) fn to_bytes(self) -> [u8; DETH_BYTES] {
        let mut b = [0u8; DETH_BYTES];
        b[0..4].copy_from_slice(&self.qkey.to_be_bytes());
        b[4..8].copy_from_slice(&(self.src_qp & 0xff_ffff).to_be_bytes());
        b
    }
}

/// RDMA ETH: where an RDMA WRITE or READ goes, and its whole length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    pub(crate) dma_len: u32,
}

impl Reth {
    pub(crate) fn parse(b: &[u8]) -> Option<Reth> {
        let b = b.get(..RETH_BYTES)?;
        Some(Reth {
            va: be64(b, 0),
            rkey: be32(b, 8),
            dma_len: be32(b, 12),
        })
    }

    pub(crate) fn to_bytes(self) -> [u8; RETH_BYTES] {
        let mut b = [0u8; RETH_BYTES];
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..16].copy_from_slice(&self.dma_len.to_be_bytes());
        b
    }
}

/// FLUSH ETH (IBTA 1.5 A19): which placement a FLUSH asks for and over what. The other 26
/// bits are reserved: sent as 0, ignored when received (IBTA's rule for reserved fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Feth {
    /// Placement type, bits 3-0: [`flush::GLOBAL`] and/or [`flush::PERSISTENT`].
    pub(crate) placement: u8,
    /// Selectivity level, bits 5-4: [`flush::RANGE`] or [`flush::REGION`].
    pub(crate) selectivity: u8,
}

/// The values of a FLUSH's placement type and selectivity level; `ibv_wr_flush` takes the same
/// (`IBV_FLUSH_GLOBAL`, `IBV_FLUSH_PERSISTENT`, `IBV_FLUSH_RANGE`, `IBV_FLUSH_MR`).
pub(crate) mod flush {
    /// The memory written before the FLUSH is visible to every reader of it.
    pub(crate) const GLOBAL: u8 = 1 << 0;
    /// The memory written before the FLUSH is persistent.
    pub(crate) const PERSISTENT: u8 = 1 << 1;
    /// The RETH's range of the region its rkey names.
    pub(crate) const RANGE: u8 = 0;
    /// The whole region the RETH's rkey names (its VA and length are ignored).
    pub(crate) const REGION: u8 = 1;
    /// The longest range a FLUSH names: "RETH:DMALen field shall be between zero and
    /// (2^31 - 1) bytes" (IBTA 1.5 A19).
    pub(crate) const MAX_RANGE: u32 = (1 << 31) - 1;
}

impl Feth {
    pub(crate) fn parse(b: &[u8]) -> Option<Feth> {
        let w = be32(b.get(..FETH_BYTES)?, 0);
        Some(Feth {
            placement: (w & 0xf) as u8,
            selectivity: (w >> 4 & 3) as u8,
        })
    }

    pub(crate) fn to_bytes(self) -> [u8; FETH_BYTES] {
        let w = u32::from(self.placement & 0xf) | u32::from(self.selectivity & 3) << 4;
        w.to_be_bytes()
    }

    /// Whether it asks for something defined: one or both placement types and nothing else,
    /// a range or a region.
    pub(crate) fn is_valid(self) -> bool {
        let types = flush::GLOBAL | flush::PERSISTENT;
        self.placement != 0
            && self.placement & !types == 0
            && matches!(self.selectivity, flush::RANGE | flush::REGION)
    }
}

/// Atomic ETH: the target and operands of a compare-and-swap or fetch-and-add.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AtomicEth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    /// Swap value (compare-and-swap) or addend (fetch-and-add).
    pub(crate) swap_add: u64,
    pub(crate) compare: u64,
}

impl AtomicEth {
    pub(crate) fn parse(b: &[u8]) -> Option<AtomicEth> {
        let b = b.get(..ATOMIC_ETH_BYTES)?;
        Some(AtomicEth {
            va: be64(b, 0),
            rkey: be32(b, 8),
            swap_add: be64(b, 12),
            compare: be64(b, 20),
        })
    }

    pub(crate) fn to_bytes(self) -> [u8; ATOMIC_ETH_BYTES] {
        let mut b = [0u8; ATOMIC_ETH_BYTES];
        b[0..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..20].copy_from_slice(&self.swap_add.to_be_bytes());
        b[20..28].copy_from_slice(&self.compare.to_be_bytes());
        b
    }
}

/// ACK ETH: the syndrome (ACK, RNR NAK with its timer, NAK with its code; credits) and the
/// message sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Aeth {
    pub(crate) syndrome: u8,
    pub(crate) msn: u32,
}

impl Aeth {
    pub(crate) fn parse(b: &[u8]) -> Option<Aeth> {
        let w = be32(b.get(..AETH_BYTES)?, 0);
        Some(Aeth {
            syndrome: (w >> 24) as u8,
            msn: w & 0xff_ffff,
        })
    }

    pub(crate) fn to_bytes(self) -> [u8; AETH_BYTES] {
        (u32::from(self.syndrome) << 24 | self.msn & 0xff_ffff).to_be_bytes()
    }
}

/// Atomic ACK ETH: the value the target held before the atomic.
pub(crate) fn atomic_ack_parse(b: &[u8]) -> Option<u64> {
    Some(be64(b.get(..ATOMIC_ACK_ETH_BYTES)?, 0))
}

/// Immediate data (ImmDt) and the invalidated R_Key (IETH) are one 32-bit word each; ImmDt
/// stays in wire order end to end (`ibv_wc.imm_data` is big endian).
pub(crate) fn word_parse(b: &[u8]) -> Option<u32> {
    Some(be32(b.get(..4)?, 0))
}
