// SPDX-License-Identifier: GPL-2.0

//! The Base Transport Header (IBTA 9.2), big endian on the wire:
//!
//! ```text
//!  0: opcode | SE M PadCnt(2) TVer(4) | P_Key(16)
//!  4: FECN BECN resv6 | DestQP(24)
//!  8: AckReq resv7    | PSN(24)
//! ```
//!
//! Pure `core` code, tested on the host (`host-tests/`); the data path uses it.

use crate::protocol::{opcode::BTH_BYTES, psn};

/// A decoded BTH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bth {
    pub(crate) opcode: u8,
    /// Solicited event.
    pub(crate) se: bool,
    /// Migration state.
    pub(crate) mig: bool,
    /// Pad bytes (0-3) that round the payload to 4 bytes.
    pub(crate) pad: u8,
    /// Transport header version (0).
    pub(crate) tver: u8,
    pub(crate) pkey: u16,
    /// Congestion notifications (forward, backward).
    pub(crate) fecn: bool,
    pub(crate) becn: bool,
    pub(crate) dest_qp: u32,
    /// Acknowledge request.
    pub(crate) ack_req: bool,
    pub(crate) psn: u32,
}

impl Bth {
    /// Reads the BTH at the start of `b`.
    pub(crate) fn parse(b: &[u8]) -> Option<Bth> {
        let b: &[u8; BTH_BYTES] = b.get(..BTH_BYTES)?.try_into().ok()?;
        let word = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (w1, w2) = (word(4), word(8));
        Some(Bth {
            opcode: b[0],
            se: b[1] & 0x80 != 0,
            mig: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 3,
            tver: b[1] & 0xf,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            fecn: w1 & 0x8000_0000 != 0,
            becn: w1 & 0x4000_0000 != 0,
            dest_qp: w1 & 0xff_ffff,
            ack_req: w2 & 0x8000_0000 != 0,
            psn: w2 & psn::MASK,
        })
    }

    /// The wire form; reserved bits are zero, 24-bit fields are masked.
    pub(crate) fn to_bytes(self) -> [u8; BTH_BYTES] {
        let mut b = [0u8; BTH_BYTES];
        b[0] = self.opcode;
        b[1] = u8::from(self.se) << 7
            | u8::from(self.mig) << 6
            | (self.pad & 3) << 4
            | (self.tver & 0xf);
        b[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        let w1 = u32::from(self.fecn) << 31 | u32::from(self.becn) << 30 | self.dest_qp & 0xff_ffff;
        let w2 = u32::from(self.ack_req) << 31 | self.psn & psn::MASK;
        b[4..8].copy_from_slice(&w1.to_be_bytes());
        b[8..12].copy_from_slice(&w2.to_be_bytes());
        b
    }
}
