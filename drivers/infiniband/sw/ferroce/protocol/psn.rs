// SPDX-License-Identifier: GPL-2.0

//! Packet sequence numbers: 24-bit counters that wrap, compared within half the circle
//! (IBTA 9.7.1): a PSN up to 2^23 - 1 ahead of another is after it.
//!
//! Pure `core` code, tested on the host (`host-tests/`); the data path uses it.

/// The bits of a PSN.
pub(crate) const MASK: u32 = 0xff_ffff;

/// `psn + n`, wrapped to 24 bits.
pub(crate) fn add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & MASK
}

/// How far `a` is after `b` (negative: before), in (-2^23, 2^23].
pub(crate) fn diff(a: u32, b: u32) -> i32 {
    // The 24-bit difference moved to the top of an i32 and back keeps its sign.
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

/// Whether `a` comes before `b`.
pub(crate) fn before(a: u32, b: u32) -> bool {
    diff(a, b) < 0
}
