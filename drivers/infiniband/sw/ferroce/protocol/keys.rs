// SPDX-License-Identifier: GPL-2.0

//! Memory keys: an lkey/rkey is a 24-bit index into the device's MR table and an 8-bit key
//! that changes (to a random byte) each time the index is reused, so a stale key never reaches
//! a new MR and a peer cannot guess the next one.
//!
//! Pure `core` code: also built and tested on the host (`host-tests/`).

use core::ops::DerefMut;

/// Index 0 is never handed out: key 0 stays invalid.
const FIRST_INDEX: u32 = 1;
const IN_USE: u16 = 1 << 15;

/// The slots of a device's key space.
pub(crate) struct KeyTable<S: DerefMut<Target = [u16]>> {
    /// Per index: `IN_USE` and the last key byte handed out.
    slots: S,
    /// Where the next search for a free index starts.
    next: u32,
}

/// The table is full.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TableFull;

/// Splits a key into (index, key byte).
pub(crate) fn split(key: u32) -> (u32, u8) {
    (key >> 8, key as u8)
}

impl<S: DerefMut<Target = [u16]>> KeyTable<S> {
    /// A table over `slots` (all zero); it holds `slots.len() - 1` keys.
    pub(crate) fn new(slots: S) -> Self {
        KeyTable {
            slots,
            next: FIRST_INDEX,
        }
    }

    /// Hands out a fresh key whose key byte is `random` (a random byte: no peer can guess a
    /// key from the one an index had before, as rxe draws its MR keys), or the byte after it
    /// if the index had `random` last, so that a stale key never reaches the new object.
    pub(crate) fn alloc(&mut self, random: u8) -> Result<u32, TableFull> {
        let n = self.slots.len() as u32;
        if n <= FIRST_INDEX {
            return Err(TableFull);
        }
        for i in 0..n - FIRST_INDEX {
            let index = FIRST_INDEX + (self.next - FIRST_INDEX + i) % (n - FIRST_INDEX);
            let slot = &mut self.slots[index as usize];
            if *slot & IN_USE == 0 {
                let last = *slot as u8;
                let key = if random == last {
                    random.wrapping_add(1)
                } else {
                    random
                };
                *slot = IN_USE | key as u16;
                self.next = if index + 1 < n {
                    index + 1
                } else {
                    FIRST_INDEX
                };
                return Ok(index << 8 | key as u32);
            }
        }
        Err(TableFull)
    }

    /// Whether `key` is the live key of its index.
    pub(crate) fn is_live(&self, key: u32) -> bool {
        let (index, byte) = split(key);
        self.slots
            .as_ref()
            .get(index as usize)
            .is_some_and(|&s| index >= FIRST_INDEX && s == IN_USE | byte as u16)
    }

    /// Returns the index of `key`, an index in use, to the pool, remembering `key`'s byte as
    /// the last one handed out: the object that held it may have changed its key byte since it
    /// was allocated (REG_MR, memory-window binds), and the next key of the index must not be
    /// one it had last. An index not in use is ignored.
    pub(crate) fn release(&mut self, key: u32) {
        let (index, byte) = split(key);
        if index >= FIRST_INDEX {
            if let Some(slot) = self.slots.get_mut(index as usize) {
                if *slot & IN_USE != 0 {
                    *slot = byte as u16;
                }
            }
        }
    }

    /// Returns `key`'s index to the pool; a key that is not live is ignored.
    pub(crate) fn free(&mut self, key: u32) {
        if self.is_live(key) {
            let (index, byte) = split(key);
            self.slots[index as usize] = byte as u16;
        }
    }
}
