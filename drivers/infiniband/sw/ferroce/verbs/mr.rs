// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned through ib_umem, kernel users' DMA MRs and
//! fast-registration MRs, each named by an lkey/rkey from the device's key table (`keys.rs`).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    rdma::{access, rereg, Mr, MrChange, Pd, Piece, Qp, Udata, Umem},
    sync::SpinLockIrq,
};

use crate::{
    protocol::{abi::WcStatus, limits},
    verbs::{device::Ferroce, numbers::MemKey},
};

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
    /// A fast-registration MR: the pages `map_mr_sg` listed, valid from a REG_MR work request
    /// to a local or remote invalidation (`MrData::fast`).
    Fast,
}

/// The registration state of a fast-registration MR (IBTA 10.6.3: free until a REG_MR work
/// request makes it valid; LOCAL_INV or SEND_WITH_INV make it free again).
#[derive(Clone, Copy, Default)]
pub(crate) struct FastReg {
    /// Entries of `MrData::mapped` that `map_mr_sg` filled.
    mapped: usize,
    /// Registered by a REG_MR (the rest is what it registered).
    valid: bool,
    /// The MR's key: the one it was allocated with, then the last one a REG_MR gave it.
    key: u32,
    access: u32,
    iova: u64,
    length: u64,
    page_size: u64,
}

/// Per-MR state.
#[pin_data]
pub(crate) struct MrData {
    pub(crate) memory: Memory,
    /// The page list `map_mr_sg` builds for a fast-registration MR (empty for the others). A
    /// kernel user may map the next registration while the MR is still valid (iSER posts the
    /// LOCAL_INV and the REG_MR together), so the data path never reads it.
    mapped: KVec<AtomicU64>,
    /// The page list a REG_MR registered (copied from `mapped`), which the data path reads.
    /// Atomics: a kernel user that changes an MR in use is wrong, but must not make the
    /// kernel's own accesses a data race.
    pages: KVec<AtomicU64>,
    /// The registration of a fast-registration MR; a spinlock, as `map_mr_sg` and the data
    /// path may run where sleeping is not allowed.
    #[pin]
    fast: SpinLockIrq<FastReg>,
    pub(crate) iova: u64,
    /// `IB_ACCESS_*`; a re-registration may change it in place.
    pub(crate) access: AtomicU32,
    /// The MR's key (lkey and rkey), held while the MR exists.
    pub(crate) key: MemKey,
    /// Which MR of the device this is, never reused: a memory window bound to it checks that
    /// the MR its key finds is still this one.
    pub(crate) serial: u64,
}

impl MrData {
    /// An MR over `memory` with the key `key`, as the layer expects it back.
    fn new(
        memory: Memory,
        (mapped, pages): (KVec<AtomicU64>, KVec<AtomicU64>),
        iova: u64,
        access: u32,
        (key, serial): (MemKey, u64),
    ) -> (impl PinInit<Self, Error>, u32, u32) {
        let k = key.get();
        let fast = FastReg {
            key: k,
            ..FastReg::default()
        };
        let data = try_pin_init!(MrData {
            memory,
            mapped,
            pages,
            fast <- new_spinlock_irq!(fast, "ferroce:mr_fast"),
            iova,
            access: AtomicU32::new(access),
            key,
            serial,
        });
        (data, k, k)
    }
}

/// Where a checked range of an MR lives.
#[derive(Clone, Copy)]
pub(crate) enum Place {
    /// At this offset of a user MR's pinned memory.
    User { offset: usize },
    /// At this kernel virtual address (DMA MR).
    Kernel { addr: u64 },
    /// At this offset from the start of the first page of a fast-registration MR's list.
    Fast { offset: usize, page_size: usize },
}

/// Finds where `len` bytes at `addr` of `mr` are, if `key` is the MR's current key, the range is
/// inside what it covers and it allows `need` (`IB_ACCESS_*`).
pub(crate) fn locate(mr: &Mr<Ferroce>, key: u32, addr: u64, len: u64, need: u32) -> Option<Place> {
    let data = mr.data();
    match &data.memory {
        Memory::User { umem, .. } => {
            if data.key.get() != key || data.access.load(Ordering::Relaxed) & need != need {
                return None;
            }
            let offset = addr.checked_sub(data.iova)?;
            if offset.checked_add(len)? > umem.len() as u64 {
                return None;
            }
            Some(Place::User {
                offset: usize::try_from(offset).ok()?,
            })
        }
        Memory::Dma => {
            if data.key.get() != key || data.access.load(Ordering::Relaxed) & need != need {
                return None;
            }
            addr.checked_add(len)?;
            Some(Place::Kernel { addr })
        }
        Memory::Fast => {
            let f = *data.fast.lock();
            if !f.valid || f.key != key || f.access & need != need {
                return None;
            }
            let offset = addr.checked_sub(f.iova)?;
            if offset.checked_add(len)? > f.length {
                return None;
            }
            let page_size = usize::try_from(f.page_size).ok()?;
            let first = usize::try_from(f.iova.checked_rem(f.page_size)?).ok()?;
            Some(Place::Fast {
                offset: usize::try_from(offset).ok()?.checked_add(first)?,
                page_size,
            })
        }
    }
}

/// Where `mr`'s memory starts (its iova; a DMA MR covers every address from 0), for requests
/// that name it whole; `None` for a fast-registration MR not mapped now.
pub(crate) fn start(mr: &Mr<Ferroce>) -> Option<u64> {
    let data = mr.data();
    match &data.memory {
        Memory::User { .. } => Some(data.iova),
        Memory::Dma => Some(0),
        Memory::Fast => {
            let f = *data.fast.lock();
            f.valid.then_some(f.iova)
        }
    }
}

/// The piece of `mr`'s memory `at` bytes into the range `place`: up to `max` bytes, never past a
/// page. `None` if the memory is not there (a kernel user's address outside the direct map,
/// a page list shorter than registered).
pub(crate) fn piece<'a>(
    mr: &'a Mr<Ferroce>,
    place: &Place,
    at: usize,
    max: usize,
) -> Option<Piece<'a>> {
    match (place, &mr.data().memory) {
        (Place::User { offset }, Memory::User { umem, .. }) => {
            umem.piece(offset.checked_add(at)?, max)
        }
        (Place::Kernel { addr }, Memory::Dma) => {
            mr.kernel_memory()?.piece(addr.checked_add(at as u64)?, max)
        }
        (Place::Fast { offset, page_size }, Memory::Fast) => {
            let pos = offset.checked_add(at)?;
            let (page, within) = (pos.checked_div(*page_size)?, pos.checked_rem(*page_size)?);
            let base = mr.data().pages.get(page)?.load(Ordering::Relaxed);
            let max = max.min(page_size - within);
            mr.kernel_memory()?
                .piece(base.checked_add(within as u64)?, max)
        }
        _ => None,
    }
}

/// Executes a REG_MR work request of `qp`: the fast-registration MR whose key was `mr_key` when
/// posted becomes valid under `key` with `access`, over what `map_mr_sg` mapped last. `Err` is
/// the completion status (rxe's: the MR must be free, of the QP's PD, and keep its index).
pub(crate) fn register(
    qp: &Qp<Ferroce>,
    mr_key: u32,
    key: u32,
    access: u32,
) -> Result<(), WcStatus> {
    let mr = qp.device().mr(mr_key).ok_or(WcStatus::LocQpOpErr)?;
    let data = mr.data();
    if !matches!(data.memory, Memory::Fast)
        || mr.pd_id() != qp.pd_id()
        || key >> 8 != mr_key >> 8
        || access & !SUPPORTED != 0
    {
        return Err(WcStatus::LocQpOpErr);
    }
    let (iova, length, page_size) = (mr.iova(), mr.length(), u64::from(mr.page_size()));
    let mut f = data.fast.lock();
    let fits = page_size.is_power_of_two()
        && (iova % page_size)
            .checked_add(length)
            .is_some_and(|end| end.div_ceil(page_size) <= f.mapped as u64);
    if f.valid || !fits || iova.checked_add(length).is_none() {
        return Err(WcStatus::LocQpOpErr);
    }
    for (to, from) in data.pages.iter().zip(data.mapped.iter()).take(f.mapped) {
        to.store(from.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    data.key.set_byte(key);
    *f = FastReg {
        valid: true,
        key,
        access,
        iova,
        length,
        page_size,
        ..*f
    };
    Ok(())
}

/// Invalidates the fast-registration MR or the type 2 memory window named by `key` for `qp`
/// (LOCAL_INV, or a received SEND_WITH_INV); `false` if no fast-registration MR or valid type 2
/// window of the QP's PD has that key. As in rxe, invalidating a free MR under its current key
/// succeeds.
pub(crate) fn invalidate(qp: &Qp<Ferroce>, key: u32) -> bool {
    let Some(mr) = qp.device().mr(key) else {
        return crate::verbs::mw::invalidate(qp, key);
    };
    if !matches!(mr.data().memory, Memory::Fast) || mr.pd_id() != qp.pd_id() {
        return false;
    }
    let mut f = mr.data().fast.lock();
    if f.key != key {
        return false;
    }
    f.valid = false;
    true
}

/// The access flags for which ib_umem pins pages for writing (`ib_access_writable`).
const WRITABLE: u32 =
    access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC | access::MW_BIND;

/// The access flags ferroce honours; optional ones (relaxed ordering) may be asked for and are
/// ignored, as their definition allows.
const SUPPORTED: u32 = access::LOCAL_WRITE
    | access::REMOTE_WRITE
    | access::REMOTE_READ
    | access::REMOTE_ATOMIC
    | access::MW_BIND
    | access::FLUSH_GLOBAL
    | access::OPTIONAL;

/// A new key for an MR of `pd`'s device, and the MR's serial.
fn new_key(pd: &Pd<Ferroce>) -> Result<(MemKey, u64)> {
    let data = pd.device().data();
    Ok((
        MemKey::take(&data.mr_keys)?,
        data.mr_serials.fetch_add(1, Ordering::Relaxed),
    ))
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
        // Zero-based, huge-page and persistent flush access: not supported (ib_core refuses
        // the last before it gets here: the device does not offer it).
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
        (KVec::new(), KVec::new()),
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
        (KVec::new(), KVec::new()),
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
    let list = || -> Result<KVec<AtomicU64>> {
        let mut pages = KVec::with_capacity(max_pages as usize, GFP_KERNEL)?;
        for _ in 0..max_pages {
            pages.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Ok(pages)
    };
    Ok(MrData::new(
        Memory::Fast,
        (list()?, list()?),
        0,
        0,
        new_key(pd)?,
    ))
}

/// `map_mr_sg` starts: the MR's page list is rebuilt (for the next REG_MR; a registration in
/// force keeps its own list).
pub(crate) fn map_begin(mr: &Mr<Ferroce>) -> Result {
    match mr.data().memory {
        Memory::Fast => {
            mr.data().fast.lock().mapped = 0;
            Ok(())
        }
        _ => Err(EINVAL),
    }
}

/// `map_mr_sg` adds a page; `ENOMEM` when the MR's page list is full.
pub(crate) fn map_page(mr: &Mr<Ferroce>, addr: u64) -> Result {
    match mr.data().memory {
        Memory::Fast => {
            let mut f = mr.data().fast.lock();
            let at = f.mapped;
            mr.data()
                .mapped
                .get(at)
                .ok_or(ENOMEM)?
                .store(addr, Ordering::Relaxed);
            f.mapped = at + 1;
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
