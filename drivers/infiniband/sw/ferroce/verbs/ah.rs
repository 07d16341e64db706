// SPDX-License-Identifier: GPL-2.0

//! Address handles: a RoCEv2 address vector (resolved by ib_core) and the number UD work
//! requests will name it by.

use kernel::{
    alloc::{flags::GFP_ATOMIC, KVVec},
    prelude::*,
    rbtree::{RBTree, RBTreeNode},
    rdma::{AddressVector, Pd, Udata},
    sync::{Arc, SpinLockIrq},
};

use crate::{
    protocol::{abi, keys::KeyTable, limits},
    verbs::{device::Ferroce, numbers::Number},
};

/// Per-AH state.
pub(crate) struct AhData {
    /// The AH's entry in the device's table of destinations, for the data path. Dropped before
    /// the number, so a number is never reused while its old entry is in the table.
    _dest: DestEntry,
    /// The AH number, from the device's AH table.
    pub(crate) num: Number<SpinLockIrq<KeyTable<KVVec<u16>>>>,
}

/// Where a UD send goes, as the data path needs it: a copy of the AH's vector, and whether
/// its GID is on this device. Copies, so that the data path holds nothing of the AH, which
/// kernel users may destroy in any context.
#[derive(Clone, Copy)]
pub(crate) struct Dest {
    pub(crate) av: AddressVector,
    pub(crate) local: bool,
    /// The AH's PD (`Pd::id`): only QPs of the same PD send through it.
    pub(crate) pd: usize,
}

/// The device's destinations by AH number.
pub(crate) type DestTable = SpinLockIrq<RBTree<u32, Dest>>;

/// An AH's entry in its device's [`DestTable`], removed when dropped.
struct DestEntry {
    table: Arc<DestTable>,
    num: u32,
}

impl DestEntry {
    fn insert(table: &Arc<DestTable>, num: u32, dest: Dest) -> Result<Self> {
        // Atomic: kernel users may create AHs where sleeping is not allowed.
        let node = RBTreeNode::new(num, dest, GFP_ATOMIC)?;
        table.lock().insert(node);
        Ok(DestEntry {
            table: table.clone(),
            num,
        })
    }
}

impl Drop for DestEntry {
    fn drop(&mut self) {
        let node = self.table.lock().remove_node(&self.num);
        // Freed outside the lock.
        drop(node);
    }
}

/// The destination of the AH numbered `num`, if it exists.
pub(crate) fn dest(table: &DestTable, num: u32) -> Option<Dest> {
    table.lock().get(&num).copied()
}

pub(crate) fn create(
    pd: &Pd<Ferroce>,
    av: &AddressVector,
    _sleepable: bool,
    udata: &mut Udata<'_>,
) -> Result<AhData> {
    udata.require_no_input()?;
    if av.port_num != 1 || u32::from(av.sgid_index) >= limits::GID_TBL_LEN || av.sl > 7 {
        return Err(EINVAL);
    }
    // A spinlock table: kernel users may create AHs in atomic context.
    let dev = pd.device();
    let num = Number::take(&dev.data().ah_nums)?;
    if udata.is_user() {
        udata.write(&abi::create_ah_resp(num.get()))?;
    }
    let dest = Dest {
        av: *av,
        local: dev.gid_is_local(1, &av.dgid),
        pd: pd.id(),
    };
    let entry = DestEntry::insert(&dev.data().ah_dests, num.get(), dest)?;
    Ok(AhData { _dest: entry, num })
}
