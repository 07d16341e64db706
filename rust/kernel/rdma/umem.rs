// SPDX-License-Identifier: GPL-2.0

//! User memory pinned for RDMA (`struct ib_umem`), with a page table for O(1) access.
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h)

use super::{device::Device, driver::Driver, memory::Piece};
use crate::{
    alloc::{flags::GFP_KERNEL, KVVec},
    bindings,
    error::{code::*, from_err_ptr, Result},
};
use core::ptr::NonNull;

/// A range of user memory, pinned (and charged to `RLIMIT_MEMLOCK` unless the process has
/// `CAP_IPC_LOCK`) until dropped.
///
/// Byte `i` of the range lives at `pages[(first_offset + i) / PAGE_SIZE]`; the kernel reads and
/// writes it only through [`Piece`]s, because the owner may change it at any time.
///
/// # Invariants
///
/// `raw` is a umem from `ib_umem_get` that is released only on drop; `pages` holds the kernel
/// address of each of its pages, in order.
pub struct Umem {
    raw: NonNull<bindings::ib_umem>,
    pages: KVVec<usize>,
    first_offset: usize,
    len: usize,
}

// SAFETY: The pinned pages and the umem may be used and released from any thread.
unsafe impl Send for Umem {}
// SAFETY: Only copies go through `&Umem`.
unsafe impl Sync for Umem {}

const PAGE_SIZE: usize = bindings::PAGE_SIZE;

impl Umem {
    /// Pins `len` bytes of the calling process's memory at `addr` for `access`
    /// (`IB_ACCESS_*`; write access fails on memory the process cannot write).
    pub fn get<T: Driver>(dev: &Device<T>, addr: u64, len: u64, access: u32) -> Result<Self> {
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        if len == 0 {
            return Err(EINVAL);
        }
        let addr = usize::try_from(addr).map_err(|_| EFAULT)?;
        // SAFETY: ib_umem_get validates the user range itself.
        let raw = from_err_ptr(unsafe {
            bindings::ib_umem_get(dev.as_raw(), addr as _, len, access as i32)
        })?;
        // SAFETY: `raw` is non-null on success.
        let raw = unsafe { NonNull::new_unchecked(raw) };
        let mut umem = Umem {
            raw,
            pages: KVVec::new(),
            first_offset: addr % PAGE_SIZE,
            len,
        };
        let npages = (umem.first_offset + len).div_ceil(PAGE_SIZE);
        umem.pages.reserve(npages, GFP_KERNEL)?;
        // SAFETY: Iterating the umem's own scatter table, which lives as long as the umem.
        unsafe {
            let sgt = &mut (*raw.as_ptr()).sgt_append.sgt;
            let mut iter: bindings::sg_page_iter = core::mem::zeroed();
            bindings::__sg_page_iter_start(&mut iter, sgt.sgl, sgt.orig_nents, 0);
            while bindings::__sg_page_iter_next(&mut iter) {
                let page = bindings::sg_page_iter_page(&mut iter);
                let va = bindings::page_address(page) as usize;
                umem.pages.push(va, GFP_KERNEL)?;
            }
        }
        if umem.pages.len() != npages {
            return Err(EFAULT);
        }
        Ok(umem)
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty (never: `get` refuses empty ranges).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The piece of the range at `offset`: up to `max` bytes, never past the end of its page or
    /// of the range; `None` at or past the end.
    pub fn piece(&self, offset: usize, max: usize) -> Option<Piece<'_>> {
        if offset >= self.len {
            return None;
        }
        let pos = self.first_offset + offset;
        let len = (PAGE_SIZE - pos % PAGE_SIZE)
            .min(self.len - offset)
            .min(max);
        // `pos / PAGE_SIZE` is in bounds: `pos` < first_offset + len, which `pages` covers.
        let va = self.pages[pos / PAGE_SIZE] + pos % PAGE_SIZE;
        // SAFETY: `len` bytes at `va` are inside one page pinned for as long as `self` lives.
        Some(unsafe { Piece::new(va as *mut u8, len) })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the umem is ours to release, once.
        unsafe { bindings::ib_umem_release(self.raw.as_ptr()) };
    }
}
