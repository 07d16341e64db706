// SPDX-License-Identifier: GPL-2.0

//! Memory shared with a user process through `mmap` of its uverbs file
//! (`struct rdma_user_mmap_entry`).
//!
//! The kernel side must treat shared memory as hostile: user space can change any byte at any
//! time. [`SharedBuffer`] therefore hands out no references into the memory, only bounds-checked
//! atomic loads/stores and copies.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{device::Driver, ucontext::UContext};
use crate::{
    alloc::{flags::GFP_KERNEL, KBox},
    bindings,
    error::{code::*, from_result, to_result, Result},
    types::Opaque,
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};

/// An mmap entry and the `vmalloc_user` memory it maps.
///
/// # Invariants
///
/// `rdma` is first; `addr` is a `vmalloc_user` buffer of `len` bytes (page multiple) that lives
/// until ib_core calls `mmap_free` for this entry.
#[repr(C)]
struct Entry {
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    addr: *mut u8,
    len: usize,
}

/// A zeroed buffer that a user context can map; the kernel's handle to it.
///
/// Dropping the handle removes the mmap entry (no new mappings); the memory is freed when the last
/// user mapping is gone, so user space never sees freed memory and the kernel never writes to
/// memory user space still maps after the handle is gone.
///
/// A buffer for a kernel user's queue ([`SharedBuffer::new_kernel`]) has the same accessors and
/// no mapping.
///
/// # Invariants
///
/// If `mapped`, `entry` was inserted into a context with `rdma_user_mmap_entry_insert` and not
/// yet removed; the handle holds the insertion's reference, so the entry and its memory are
/// alive. Otherwise `entry` came from `KBox::into_raw`, was never inserted, and the handle owns
/// it and its memory.
pub struct SharedBuffer {
    entry: NonNull<Entry>,
    mapped: bool,
}

// SAFETY: The handle only performs atomic accesses and copies on memory that is alive for its
// lifetime; ib_core's entry functions may be called from any thread.
unsafe impl Send for SharedBuffer {}
// SAFETY: See `Send`.
unsafe impl Sync for SharedBuffer {}

impl SharedBuffer {
    /// Allocates `len` bytes (rounded up to pages) that `uctx`'s process can map at
    /// [`SharedBuffer::mmap_offset`].
    pub fn new<T: Driver>(uctx: &UContext<T>, len: usize) -> Result<Self> {
        let entry = Self::alloc(len)?;
        // SAFETY: `entry` is a fresh allocation; the context is alive.
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert(uctx.as_raw(), (*entry).rdma.get(), (*entry).len)
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: Insertion failed, so nobody else knows the entry or the memory.
            unsafe { Self::free(entry) };
            return Err(e);
        }
        // INVARIANT: Inserted above; this handle owns the insertion reference.
        // SAFETY: `entry` came from `KBox::into_raw`, so it is non-null.
        Ok(Self {
            entry: unsafe { NonNull::new_unchecked(entry) },
            mapped: true,
        })
    }

    /// Allocates `len` bytes (rounded up to pages) for a kernel user's queue: nothing can map
    /// it ([`SharedBuffer::mmap_offset`] is 0).
    pub fn new_kernel(len: usize) -> Result<Self> {
        let entry = Self::alloc(len)?;
        // INVARIANT: Not inserted; the handle owns the entry.
        // SAFETY: `entry` came from `KBox::into_raw`, so it is non-null.
        Ok(Self {
            entry: unsafe { NonNull::new_unchecked(entry) },
            mapped: false,
        })
    }

    /// A zeroed `vmalloc_user` buffer of `len` bytes rounded up to pages, in a new entry.
    fn alloc(len: usize) -> Result<*mut Entry> {
        let len = len
            .checked_next_multiple_of(bindings::PAGE_SIZE)
            .ok_or(EINVAL)?;
        if len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: Plain allocation; a zeroed, user-mappable buffer or null.
        let addr = unsafe { bindings::vmalloc_user_noprof(len as _) }.cast::<u8>();
        if addr.is_null() {
            return Err(ENOMEM);
        }
        let entry = KBox::new(
            Entry {
                // SAFETY: All-zero is the state `rdma_user_mmap_entry_insert` expects.
                rdma: Opaque::new(unsafe { core::mem::zeroed() }),
                addr,
                len,
            },
            GFP_KERNEL,
        );
        match entry {
            Ok(e) => Ok(KBox::into_raw(e)),
            Err(_) => {
                // SAFETY: `addr` came from `vmalloc_user` and is not shared yet.
                unsafe { bindings::vfree(addr.cast()) };
                Err(ENOMEM)
            }
        }
    }

    /// # Safety
    ///
    /// `entry` must come from [`SharedBuffer::alloc`] and be known to nobody else.
    unsafe fn free(entry: *mut Entry) {
        // SAFETY: The caller's promise.
        unsafe {
            bindings::vfree((*entry).addr.cast());
            drop(KBox::from_raw(entry));
        }
    }

    fn e(&self) -> &Entry {
        // SAFETY: Alive by the type invariant; only immutable fields are read.
        unsafe { self.entry.as_ref() }
    }

    /// The offset to pass to `mmap` on the uverbs file (0 for a kernel buffer).
    pub fn mmap_offset(&self) -> u64 {
        if !self.mapped {
            return 0;
        }
        // SAFETY: `start_pgoff` is set at insertion and never changes.
        let pgoff = unsafe { (*self.e().rdma.get()).start_pgoff };
        (pgoff as u64) << bindings::PAGE_SHIFT
    }

    /// Whether user space can map the buffer (it belongs to a user object).
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }

    /// The size of the buffer in bytes (a page multiple).
    pub fn len(&self) -> usize {
        self.e().len
    }

    /// Whether the buffer is empty (never: buffers have at least one page).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn word(&self, offset: usize) -> Result<&AtomicU32> {
        if offset % 4 != 0 || offset.checked_add(4).map_or(true, |end| end > self.len()) {
            return Err(EINVAL);
        }
        // SAFETY: In bounds and aligned (vmalloc memory is page aligned); the memory is alive for
        // `&self` and every access to it, ours and user space's, is a plain load or store.
        Ok(unsafe { AtomicU32::from_ptr(self.e().addr.add(offset).cast()) })
    }

    /// Loads the u32 at `offset` with acquire ordering.
    pub fn load_acquire(&self, offset: usize) -> Result<u32> {
        Ok(self.word(offset)?.load(Ordering::Acquire))
    }

    /// Stores `v` at `offset` with release ordering.
    pub fn store_release(&self, offset: usize, v: u32) -> Result {
        self.word(offset)?.store(v, Ordering::Release);
        Ok(())
    }

    /// Atomically replaces the u32 at `offset` with `v`, returning the old value.
    pub fn swap(&self, offset: usize, v: u32) -> Result<u32> {
        Ok(self.word(offset)?.swap(v, Ordering::AcqRel))
    }

    /// Copies `src` into the buffer at `offset`.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        let end = offset.checked_add(src.len()).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        // SAFETY: In bounds; the buffer is alive; bytes have no invalid values.
        unsafe {
            core::ptr::copy_nonoverlapping(src.as_ptr(), self.e().addr.add(offset), src.len())
        };
        Ok(())
    }

    /// Copies from the buffer at `offset` into `dst`. The bytes are whatever user space left
    /// there: callers validate them.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        let end = offset.checked_add(dst.len()).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        // SAFETY: In bounds; the buffer is alive; bytes have no invalid values.
        unsafe {
            core::ptr::copy_nonoverlapping(self.e().addr.add(offset), dst.as_mut_ptr(), dst.len())
        };
        Ok(())
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: By the type invariant the entry is inserted and we own that reference.
            unsafe { bindings::rdma_user_mmap_entry_remove(self.e().rdma.get()) };
        } else {
            // SAFETY: By the type invariant the handle owns the entry, which nobody else knows.
            unsafe { Self::free(self.entry.as_ptr()) };
        }
    }
}

/// The `mmap` op: maps the entry `vma`'s offset names, if it belongs to `uctx`.
///
/// # Safety
///
/// Called by ib_core with a live context and VMA.
pub(crate) unsafe fn mmap(
    uctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> i32 {
    from_result(|| {
        // SAFETY: ib_core passes a live context and VMA; a non-null result is a held reference.
        let rdma = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
        if rdma.is_null() {
            return Err(EINVAL);
        }
        let entry = rdma.cast::<Entry>();
        // SAFETY: All entries of our contexts are `Entry`s; the reference keeps it alive.
        // `remap_vmalloc_range` refuses VMAs larger than the buffer.
        let ret = unsafe { bindings::remap_vmalloc_range(vma, (*entry).addr.cast(), 0) };
        // SAFETY: Drops the reference `rdma_user_mmap_entry_get` took.
        unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
        to_result(ret)?;
        Ok(0)
    })
}

/// The `mmap_free` op: the entry is removed and unmapped everywhere; free it.
///
/// # Safety
///
/// Called by ib_core once per entry, when its last reference is gone.
pub(crate) unsafe fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
    let entry = rdma.cast::<Entry>();
    // SAFETY: Nobody references the entry or maps the memory any more.
    unsafe {
        bindings::vfree((*entry).addr.cast());
        drop(KBox::from_raw(entry));
    }
}
