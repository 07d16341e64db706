// SPDX-License-Identifier: GPL-2.0

//! What an object takes from its device for its lifetime (a place in a count, an MR key, a QP
//! or AH number) as values that give it back when dropped. Objects hold them in their data, so
//! every path that ends an object (its destroy verb, or a failure after the driver's part of
//! the creation succeeded) gives them back, with nothing to remember in destroy hooks.

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    alloc::KVVec,
    prelude::*,
    sync::{Arc, Mutex, SpinLockIrq},
};

use crate::protocol::{count::ObjectCount, keys::KeyTable};

/// A table of object numbers (MR keys, QP numbers, AH numbers) behind a lock.
pub(crate) trait NumberTable: Send + Sync {
    /// A fresh number; `ENOMEM` when the table is full.
    fn alloc(&self) -> Result<u32>;
    /// Gives `num` back.
    fn free(&self, num: u32);
}

/// A random key byte for a number.
fn random_byte() -> u8 {
    let mut b = [0u8];
    kernel::rdma::sw::random::fill(&mut b);
    b[0]
}

/// MR keys and QP numbers: allocated where sleeping is allowed.
impl NumberTable for Mutex<KeyTable<KVVec<u16>>> {
    fn alloc(&self) -> Result<u32> {
        let random = random_byte();
        self.lock().alloc(random).map_err(|_| ENOMEM)
    }

    fn free(&self, num: u32) {
        self.lock().free(num)
    }
}

/// AH numbers: kernel users create and destroy AHs in atomic context too, and the data path
/// will look them up from softirq.
impl NumberTable for SpinLockIrq<KeyTable<KVVec<u16>>> {
    fn alloc(&self) -> Result<u32> {
        let random = random_byte();
        self.lock().alloc(random).map_err(|_| ENOMEM)
    }

    fn free(&self, num: u32) {
        self.lock().free(num)
    }
}

/// A number taken from a [`NumberTable`], given back when dropped.
pub(crate) struct Number<L: NumberTable> {
    table: Arc<L>,
    num: u32,
}

impl<L: NumberTable> Number<L> {
    pub(crate) fn take(table: &Arc<L>) -> Result<Self> {
        Ok(Number {
            num: table.alloc()?,
            table: table.clone(),
        })
    }

    pub(crate) fn get(&self) -> u32 {
        self.num
    }
}

impl<L: NumberTable> Drop for Number<L> {
    fn drop(&mut self) {
        self.table.free(self.num);
    }
}

/// A memory key (of an MR or a memory window) from the device's key table, whose key byte may
/// change while it is held (REG_MR, BIND_MW). Given back when dropped with the byte it had
/// last ([`KeyTable::release`]), so that a peer holding its last rkey never reaches the next
/// object of the index.
pub(crate) struct MemKey {
    table: Arc<Mutex<KeyTable<KVVec<u16>>>>,
    key: AtomicU32,
}

impl MemKey {
    pub(crate) fn take(table: &Arc<Mutex<KeyTable<KVVec<u16>>>>) -> Result<Self> {
        Ok(MemKey {
            key: AtomicU32::new(table.alloc()?),
            table: table.clone(),
        })
    }

    /// The key now.
    pub(crate) fn get(&self) -> u32 {
        self.key.load(Ordering::Relaxed)
    }

    /// The key takes the key byte of `key` (its index stays).
    pub(crate) fn set_byte(&self, key: u32) {
        let now = self.get();
        self.key
            .store((now & !0xff) | (key & 0xff), Ordering::Relaxed);
    }
}

impl Drop for MemKey {
    fn drop(&mut self) {
        self.table.lock().release(self.get());
    }
}

/// One object counted against a device limit, uncounted when dropped.
pub(crate) struct Counted(Arc<ObjectCount>);

impl Counted {
    /// Counts one more object, unless `max` exist (`ENOMEM`).
    pub(crate) fn take(count: &Arc<ObjectCount>, max: u32) -> Result<Self> {
        count.take(max).map_err(|_| ENOMEM)?;
        Ok(Counted(count.clone()))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.put();
    }
}

/// The device's one general services QP (QP1), taken while it exists.
pub(crate) struct GsiSlot(Arc<AtomicBool>);

impl GsiSlot {
    /// Takes the slot; `EBUSY` if QP1 exists.
    pub(crate) fn take(slot: &Arc<AtomicBool>) -> Result<Self> {
        if slot.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        Ok(GsiSlot(slot.clone()))
    }
}

impl Drop for GsiSlot {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
