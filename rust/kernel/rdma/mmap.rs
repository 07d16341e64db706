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
/// # Invariants
///
/// `entry` was inserted into a context with `rdma_user_mmap_entry_insert` and not yet removed;
/// the handle holds the insertion's reference, so the entry and its memory are alive.
pub struct SharedBuffer {
    entry: NonNull<Entry>,
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
        let entry = match entry {
            Ok(e) => KBox::into_raw(e),
            Err(_) => {
                // SAFETY: `addr` came from `vmalloc_user` and is not shared yet.
                unsafe { bindings::vfree(addr.cast()) };
                return Err(ENOMEM);
            }
        };
        // SAFETY: `entry` is a fresh allocation; the context is alive.
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert(uctx.as_raw(), (*entry).rdma.get(), len)
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: Insertion failed, so nobody else knows the entry or the memory.
            unsafe {
                bindings::vfree(addr.cast());
                drop(KBox::from_raw(entry));
            }
            return Err(e);
        }
        // INVARIANT: Inserted above; this handle owns the insertion reference.
        // SAFETY: `entry` came from `KBox::into_raw`, so it is non-null.
        Ok(Self {
            entry: unsafe { NonNull::new_unchecked(entry) },
        })
    }

    fn e(&self) -> &Entry {
        // SAFETY: Alive by the type invariant; only immutable fields are read.
        unsafe { self.entry.as_ref() }
    }

    /// The offset to pass to `mmap` on the uverbs file.
    pub fn mmap_offset(&self) -> u64 {
        // SAFETY: `start_pgoff` is set at insertion and never changes.
        let pgoff = unsafe { (*self.e().rdma.get()).start_pgoff };
        (pgoff as u64) << bindings::PAGE_SHIFT
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
        // SAFETY: By the type invariant the entry is inserted and we own that reference.
        unsafe { bindings::rdma_user_mmap_entry_remove(self.e().rdma.get()) };
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
