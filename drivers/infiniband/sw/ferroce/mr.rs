// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned through ib_umem, kernel users' DMA MRs and
//! fast-registration MRs, each named by an lkey/rkey from the device's key table (`keys.rs`).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    alloc::KVVec,
    new_spinlock_irq,
    prelude::*,
    rdma::{access, rereg, Mr, MrChange, Pd, Udata, Umem},
    sync::{Mutex, SpinLockIrq},
};

use crate::{device::Ferroce, keys::KeyTable, limits, numbers::Number};

/// What an MR's addresses refer to.
pub(crate) enum Memory {
    /// User memory, pinned.
    User {
        /// The pinned pages (read and written by the data path).
        umem: Umem,
        /// The user address and length registered (what a re-registration keeps).
        start: u64,
        length: u64,
        /// Whether the pages were pinned for writing (`ib_access_writable`).
        writable: bool,
    },
    /// All of kernel memory, by kernel virtual address (`get_dma_mr`).
    Dma,
    /// A fast-registration MR: the pages `map_mr_sg` listed (`MrData::pages`).
    Fast,
}

/// The pages of a fast-registration MR: `len` of `addrs` are in use (the list is allocated
/// whole, as `map_mr_sg` may not sleep).
pub(crate) struct PageList {
    addrs: KVec<u64>,
    len: usize,
}

/// Per-MR state.
#[pin_data]
pub(crate) struct MrData {
    pub(crate) memory: Memory,
    /// The page list of a fast-registration MR (empty for the others); a spinlock, as
    /// `map_mr_sg` may run where sleeping is not allowed.
    #[pin]
    pages: SpinLockIrq<PageList>,
    pub(crate) iova: u64,
    /// `IB_ACCESS_*`; a re-registration may change it in place.
    pub(crate) access: AtomicU32,
    /// The MR's key (lkey and rkey), held while the MR exists.
    pub(crate) key: Number<Mutex<KeyTable<KVVec<u16>>>>,
}

impl MrData {
    /// An MR over `memory` with the key `key`, as the layer expects it back.
    fn new(
        memory: Memory,
        pages: PageList,
        iova: u64,
        access: u32,
        key: Number<Mutex<KeyTable<KVVec<u16>>>>,
    ) -> (impl PinInit<Self, Error>, u32, u32) {
        let k = key.get();
        let data = try_pin_init!(MrData {
            memory,
            pages <- new_spinlock_irq!(pages, "ferroce:mr_pages"),
            iova,
            access: AtomicU32::new(access),
            key,
        });
        (data, k, k)
    }
}

impl MrData {
    /// The pinned user memory of a user MR.
    pub(crate) fn umem(&self) -> Option<&Umem> {
        match &self.memory {
            Memory::User { umem, .. } => Some(umem),
            _ => None,
        }
    }

    /// Where `len` bytes at `addr` of this MR live: its pinned user memory and the offset in
    /// it, if the MR is user memory, covers the range and allows `need` (`IB_ACCESS_*`).
    /// Kernel users' MRs are not placed into yet.
    pub(crate) fn user_range(&self, addr: u64, len: u64, need: u32) -> Option<(&Umem, usize)> {
        let Memory::User { umem, .. } = &self.memory else {
            return None;
        };
        if self.access.load(Ordering::Relaxed) & need != need {
            return None;
        }
        let offset = addr.checked_sub(self.iova)?;
        if offset.checked_add(len)? > umem.len() as u64 {
            return None;
        }
        Some((umem, usize::try_from(offset).ok()?))
    }
}

/// The access flags for which ib_umem pins pages for writing (`ib_access_writable`).
const WRITABLE: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC;

/// The access flags ferroce honours; optional ones (relaxed ordering) may be asked for and are
/// ignored, as their definition allows.
const SUPPORTED: u32 = access::LOCAL_WRITE
    | access::REMOTE_WRITE
    | access::REMOTE_READ
    | access::REMOTE_ATOMIC
    | access::OPTIONAL;

/// A new key for an MR of `pd`'s device.
fn new_key(pd: &Pd<Ferroce>) -> Result<Number<Mutex<KeyTable<KVVec<u16>>>>> {
    Number::take(&pd.device().data().mr_keys)
}

impl PageList {
    /// The list of an MR that has none.
    fn none() -> Self {
        PageList {
            addrs: KVec::new(),
            len: 0,
        }
    }
}

pub(crate) fn reg_user(
    pd: &Pd<Ferroce>,
    start: u64,
    length: u64,
    iova: u64,
    access: u32,
    udata: &mut Udata<'_>,
) -> Result<(impl PinInit<MrData, Error>, u32, u32)> {
    udata.require_no_input()?;
    if access & !SUPPORTED != 0 {
        // Memory windows, zero-based, huge-page and flush access: not supported.
        return Err(EOPNOTSUPP);
    }
    if length == 0 || length > limits::MAX_MR_SIZE || iova.checked_add(length).is_none() {
        return Err(EINVAL);
    }
    let umem = Umem::get(pd.device(), start, length, access)?;
    let memory = Memory::User {
        umem,
        start,
        length,
        writable: access & WRITABLE != 0,
    };
    Ok(MrData::new(
        memory,
        PageList::none(),
        iova,
        access,
        new_key(pd)?,
    ))
}

/// Re-registration. A new PD or new access flags the pinned pages already allow are changed
/// in place (`None`), keeping the keys, as rxe and NICs do; new memory, or write access to
/// pages pinned read-only, needs a new MR with the old one's memory, access or PD replaced as
/// `change` says, and new keys, so that a peer holding the old rkey cannot reach it. The old
/// MR stays intact until ib_core destroys it after this succeeds, so a failed
/// re-registration changes nothing.
pub(crate) fn rereg_user(
    mr: &Mr<Ferroce>,
    change: &MrChange,
    pd: &Pd<Ferroce>,
    udata: &mut Udata<'_>,
) -> Result<Option<(impl PinInit<MrData, Error>, u32, u32)>> {
    let old = mr.data();
    let Memory::User {
        start,
        length,
        writable,
        ..
    } = old.memory
    else {
        return Err(EINVAL);
    };
    let access = if change.flags & rereg::ACCESS != 0 {
        change.access
    } else {
        old.access.load(Ordering::Relaxed)
    };
    if access & !SUPPORTED != 0 {
        return Err(EOPNOTSUPP);
    }
    if change.flags & rereg::TRANS == 0 && (writable || access & WRITABLE == 0) {
        udata.require_no_input()?;
        // The data path reads the flags atomically, per message: one sees the old flags or
        // the new, as a NIC's would.
        old.access.store(access, Ordering::Relaxed);
        return Ok(None);
    }
    let (start, length, iova) = if change.flags & rereg::TRANS != 0 {
        (change.start, change.length, change.iova)
    } else {
        (start, length, old.iova)
    };
    reg_user(pd, start, length, iova, access, udata).map(Some)
}

/// The MR `ib_alloc_pd` makes for a kernel PD: kernel virtual addresses, as ib_core's virtual
/// DMA maps them.
pub(crate) fn get_dma(
    pd: &Pd<Ferroce>,
    access: u32,
) -> Result<(impl PinInit<MrData, Error>, u32, u32)> {
    if access & !SUPPORTED != 0 {
        return Err(EOPNOTSUPP);
    }
    Ok(MrData::new(
        Memory::Dma,
        PageList::none(),
        0,
        access,
        new_key(pd)?,
    ))
}

/// A fast-registration MR of up to `max_pages` pages; unusable until a REG_MR work request
/// registers what `map_mr_sg` mapped.
pub(crate) fn alloc_fast(
    pd: &Pd<Ferroce>,
    max_pages: u32,
) -> Result<(impl PinInit<MrData, Error>, u32, u32)> {
    if max_pages == 0 || max_pages > limits::MAX_FAST_REG_PAGES {
        return Err(EINVAL);
    }
    let list = PageList {
        addrs: KVec::from_elem(0u64, max_pages as usize, GFP_KERNEL)?,
        len: 0,
    };
    Ok(MrData::new(Memory::Fast, list, 0, 0, new_key(pd)?))
}

/// `map_mr_sg` starts: the MR's page list is rebuilt.
pub(crate) fn map_begin(mr: &Mr<Ferroce>) -> Result {
    match mr.data().memory {
        Memory::Fast => {
            mr.data().pages.lock().len = 0;
            Ok(())
        }
        _ => Err(EINVAL),
    }
}

/// `map_mr_sg` adds a page; `ENOMEM` when the MR's page list is full.
pub(crate) fn map_page(mr: &Mr<Ferroce>, addr: u64) -> Result {
    match mr.data().memory {
        Memory::Fast => {
            let mut list = mr.data().pages.lock();
            let at = list.len;
            *list.addrs.get_mut(at).ok_or(ENOMEM)? = addr;
            list.len = at + 1;
            Ok(())
        }
        _ => Err(EINVAL),
    }
}

/// The current key of a fast-registration MR, `None` for other MRs.
pub(crate) fn fast_reg_key(mr: &Mr<Ferroce>) -> Option<u32> {
    match mr.data().memory {
        Memory::Fast => Some(mr.data().key.get()),
        _ => None,
    }
}
