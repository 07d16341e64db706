// SPDX-License-Identifier: GPL-2.0

//! Partitions (IBTA 10.9): a port's P_Key table and the rule by which a packet's P_Key
//! matches.
//!
//! A P_Key's low 15 bits name a partition; bit 15 says full (1) or limited (0) membership.
//! Two P_Keys match when they name the same partition and at least one of them is a full
//! member's: two limited members of a partition cannot talk to each other, only to full
//! members. A P_Key whose low 15 bits are zero is invalid and matches nothing; an empty table
//! entry holds 0. A QP sends with the P_Key at its `pkey_index` and takes only packets whose
//! P_Key matches that one; the general services QP (QP1) takes packets that match any entry
//! (it serves every partition of the port) and reports the entry's index with each.
//!
//! Entries change while packets come and go (an administrator sets them, `ports/N/pkey_table`),
//! so each is an atomic: a packet meets either the old P_Key or the new one.
//!
//! Pure `core` code: also built and tested on the host (`host-tests/`).

use core::sync::atomic::{AtomicU16, Ordering};

/// Entries of the table (`pkey_tbl_len`, `max_pkeys`).
pub(crate) const TABLE_LEN: usize = 16;

/// The default P_Key, full membership of the default partition: entry 0 of a new table, what
/// RoCE peers (rdma_cm, rxe) send with.
pub(crate) const DEFAULT: u16 = 0xffff;

/// Bit 15: full membership.
const FULL: u16 = 0x8000;

/// Whether `pkey` names a partition (its low 15 bits are not zero).
pub(crate) fn is_valid(pkey: u16) -> bool {
    pkey & !FULL != 0
}

/// Whether a packet's P_Key `packet` matches the receiver's `own` (IBTA 10.9.3): same
/// partition, valid, not both limited.
pub(crate) fn matches(packet: u16, own: u16) -> bool {
    is_valid(own) && (packet ^ own) & !FULL == 0 && (packet | own) & FULL != 0
}

/// A port's P_Key table.
pub(crate) struct Table {
    entries: [AtomicU16; TABLE_LEN],
}

/// An index beyond the table.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadIndex;

impl Table {
    /// The default table: entry 0 holds [`DEFAULT`], the rest are empty.
    pub(crate) fn new() -> Self {
        let entries: [AtomicU16; TABLE_LEN] = core::array::from_fn(|_| AtomicU16::new(0));
        entries[0].store(DEFAULT, Ordering::Relaxed);
        Table { entries }
    }

    /// Entry `index`, 0 (none) beyond the table.
    pub(crate) fn get(&self, index: u16) -> u16 {
        self.entries
            .get(usize::from(index))
            .map_or(0, |e| e.load(Ordering::Relaxed))
    }

    /// Sets entry `index`; returns whether it changed.
    pub(crate) fn set(&self, index: u16, pkey: u16) -> Result<bool, BadIndex> {
        let e = self.entries.get(usize::from(index)).ok_or(BadIndex)?;
        Ok(e.swap(pkey, Ordering::Relaxed) != pkey)
    }

    /// The index of the first entry a packet's P_Key `packet` matches (for QP1).
    pub(crate) fn find(&self, packet: u16) -> Option<u16> {
        (0..TABLE_LEN as u16).find(|&i| matches(packet, self.get(i)))
    }
}
