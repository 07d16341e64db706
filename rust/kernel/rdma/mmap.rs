// SPDX-License-Identifier: GPL-2.0

//! Memory shared with a user process through `mmap` of its uverbs file
//! (`struct rdma_user_mmap_entry`).
//!
//! The kernel side must treat shared memory as hostile: user space can change any byte at any
//! time. [`SharedBuffer`] therefore hands out no references into the memory, only bounds-checked
//! atomic accesses and volatile copies. Under the Rust memory model a plain copy from memory that
//! another thread writes concurrently is a data race (the compiler may assume the bytes do not
//! change under it and, say, read a length twice); every access to shared memory goes through
//! the few functions at the end of this file, which use atomic or volatile accesses only.
//!
//! Lifetimes: the vmalloc area is freed when its last holder is gone (the kernel's
//! [`SharedBuffer`] and ib_core's mmap entry), so the kernel never touches freed memory; a user
//! mapping holds references to the pages themselves (`remap_vmalloc_range` inserts them), so
//! user space never sees them freed either. The mmap entry is removed from its user context when
//! the buffer is dropped or, if a buffer outlives its context, when the context is destroyed:
//! ib_core requires every entry gone by then ([`MmapContext`]). That works because nothing else
//! holds an entry at that point: mappings take no entry reference (the mmap op drops the one it
//! looks the entry up with), and ib_core destroys a context only once its file is closed, or after
//! disassociating it (which this layer does not support). Mappings are not inherited by `fork()`
//! by default (`VM_DONTCOPY`): a child process cannot write to its parent's queues.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{driver::Adapter, driver::Driver, ucontext::UContext};
use crate::{
    alloc::{flags::GFP_KERNEL, KBox},
    bindings,
    error::{code::*, from_result, to_result, Result},
    init::InPlaceInit,
    sync::{Arc, Mutex},
    types::Opaque,
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use macros::pin_data;

/// A zeroed `vmalloc_user` buffer, freed when dropped.
///
/// # Invariants
///
/// `addr` is a `vmalloc_user` allocation of `len` bytes (a non-zero page multiple), page
/// aligned, owned by this object.
struct Mem {
    addr: NonNull<u8>,
    len: usize,
}

// SAFETY: The buffer is plain memory; all accesses through it are atomic or volatile.
unsafe impl Send for Mem {}
// SAFETY: See `Send`.
unsafe impl Sync for Mem {}

impl Mem {
    fn new(len: usize) -> Result<Self> {
        let len = len
            .checked_next_multiple_of(bindings::PAGE_SIZE)
            .ok_or(EINVAL)?;
        if len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: Plain allocation; a zeroed, user-mappable buffer or null.
        let addr = unsafe { bindings::vmalloc_user_noprof(len as _) }.cast::<u8>();
        // INVARIANT: `vmalloc_user` returns page-aligned memory of `len` bytes.
        Ok(Mem {
            addr: NonNull::new(addr).ok_or(ENOMEM)?,
            len,
        })
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        // SAFETY: The buffer is ours (type invariant) and nobody maps or uses it any more: the
        // kernel's handle and the mmap entry, the only holders, are gone.
        unsafe { bindings::vfree(self.addr.as_ptr().cast()) };
    }
}

/// An mmap entry of ours: ib_core's entry first, then the memory it maps.
#[repr(C)]
struct Entry {
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    mem: Arc<Mem>,
}

/// What this layer keeps per user context about its mmap entries: whether the context still
/// exists, under a lock that buffers hold while they remove their entry.
#[pin_data]
pub struct MmapContext {
    #[pin]
    open: Mutex<bool>,
}

impl MmapContext {
    /// The state of a new context.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            crate::pin_init!(MmapContext {
                open <- crate::new_mutex!(true, "rdma:mmap_context"),
            }),
            GFP_KERNEL,
        )
    }

    /// The context is being destroyed: removes the entries of buffers that outlive it (a driver
    /// may keep one alive past its object's destruction, e.g. while work in flight finishes), so
    /// that ib_core finds none left; those buffers skip the removal when they are dropped.
    ///
    /// # Safety
    ///
    /// `uctx` must be the live context this state belongs to, in its `dealloc_ucontext` op.
    pub(crate) unsafe fn close(&self, uctx: *mut bindings::ib_ucontext) {
        let mut open = self.open.lock();
        *open = false;
        // SAFETY: The context is alive for the call (the caller's promise).
        let xa = unsafe { core::ptr::addr_of_mut!((*uctx).mmap_xa) };
        let mut index: crate::ffi::c_ulong = 0;
        loop {
            // SAFETY: `xa` is the context's mmap XArray; `xa_find` takes its own locks.
            let found =
                unsafe { bindings::xa_find(xa, &mut index, crate::ffi::c_ulong::MAX, XA_PRESENT) };
            let Some(rdma) = NonNull::new(found.cast::<bindings::rdma_user_mmap_entry>()) else {
                break;
            };
            // SAFETY: Every entry of a context of ours is an `Entry` whose insertion reference
            // its buffer holds until it calls `rdma_user_mmap_entry_remove`, which only buffers
            // and this function do, all under `open`'s lock: an entry not yet removed is alive
            // and its `driver_removed` is not written concurrently. Removing an entry nobody
            // else references erases all its pages from the XArray, so it is found once.
            unsafe {
                if !(*rdma.as_ptr()).driver_removed {
                    bindings::rdma_user_mmap_entry_remove(rdma.as_ptr());
                }
            }
            match index.checked_add(1) {
                Some(next) => index = next,
                None => break,
            }
        }
    }
}

/// `XA_PRESENT` (`<linux/xarray.h>`): any entry present, marked or not.
const XA_PRESENT: bindings::xa_mark_t = 8;

/// A buffer's entry in its user context.
///
/// # Invariants
///
/// `entry` was inserted into the context `ctx` tracks and holds the insertion reference,
/// unless that context has been closed (then `MmapContext::close` removed it).
struct Mapping {
    entry: NonNull<Entry>,
    offset: u64,
    ctx: Arc<MmapContext>,
}

/// A zeroed buffer that a user context can map; the kernel's handle to it.
///
/// Dropping the handle removes the mmap entry (no new mappings); the memory is freed when the
/// last user mapping is gone, so user space never sees freed memory and the kernel never touches
/// memory it no longer owns. Dropping a buffer of a user context may sleep.
///
/// A buffer for a kernel user's queue ([`SharedBuffer::new_kernel`]) has the same accessors and
/// no mapping.
pub struct SharedBuffer {
    mem: Arc<Mem>,
    mapping: Option<Mapping>,
}

// SAFETY: The handle only performs atomic accesses and volatile copies on memory that is alive
// for its lifetime; ib_core's entry functions may be called from any thread.
unsafe impl Send for SharedBuffer {}
// SAFETY: See `Send`.
unsafe impl Sync for SharedBuffer {}

impl SharedBuffer {
    /// Allocates `len` bytes (rounded up to pages) that `uctx`'s process can map at
    /// [`SharedBuffer::mmap_offset`].
    pub fn new<T: Driver>(uctx: &UContext<T>, len: usize) -> Result<Self> {
        let mem = Arc::new(Mem::new(len)?, GFP_KERNEL)?;
        let entry = KBox::new(
            Entry {
                // SAFETY: All-zero is the state `rdma_user_mmap_entry_insert` expects.
                rdma: Opaque::new(unsafe { core::mem::zeroed() }),
                mem: mem.clone(),
            },
            GFP_KERNEL,
        )?;
        let entry = KBox::into_raw(entry);
        let ctx = uctx.core().clone();
        let open = ctx.open.lock();
        let ret = if *open {
            // SAFETY: `entry` is a fresh allocation; the context is alive for `&uctx`.
            to_result(unsafe {
                bindings::rdma_user_mmap_entry_insert(uctx.as_raw(), (*entry).rdma.get(), mem.len)
            })
        } else {
            Err(EINVAL)
        };
        drop(open);
        if let Err(e) = ret {
            // SAFETY: Not inserted, so nobody else knows the entry.
            drop(unsafe { KBox::from_raw(entry) });
            return Err(e);
        }
        // SAFETY: `start_pgoff` is set by the insertion and never changes.
        let pgoff = unsafe { (*(*entry).rdma.get()).start_pgoff };
        Ok(Self {
            mem,
            // INVARIANT: Inserted above into the context `ctx` tracks.
            mapping: Some(Mapping {
                // SAFETY: `KBox::into_raw` never returns null.
                entry: unsafe { NonNull::new_unchecked(entry) },
                offset: (pgoff as u64) << bindings::PAGE_SHIFT,
                ctx,
            }),
        })
    }

    /// Allocates `len` bytes (rounded up to pages) for a kernel user's queue: nothing can map
    /// it ([`SharedBuffer::mmap_offset`] is 0).
    pub fn new_kernel(len: usize) -> Result<Self> {
        Ok(Self {
            mem: Arc::new(Mem::new(len)?, GFP_KERNEL)?,
            mapping: None,
        })
    }

    /// The offset to pass to `mmap` on the uverbs file (0 for a kernel buffer).
    pub fn mmap_offset(&self) -> u64 {
        self.mapping.as_ref().map_or(0, |m| m.offset)
    }

    /// Whether user space can map the buffer (it belongs to a user object).
    pub fn is_mapped(&self) -> bool {
        self.mapping.is_some()
    }

    /// The size of the buffer in bytes (a page multiple).
    pub fn len(&self) -> usize {
        self.mem.len
    }

    /// Whether the buffer is empty (never: buffers have at least one page).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The u32 at `offset`, which user space may access concurrently.
    fn word(&self, offset: usize) -> Result<&AtomicU32> {
        if offset % 4 != 0 || offset.checked_add(4).map_or(true, |end| end > self.len()) {
            return Err(EINVAL);
        }
        // SAFETY: In bounds and aligned (the buffer is page aligned); the memory is alive for
        // `&self`. User space's accesses are outside Rust's model; ours are all atomic.
        Ok(unsafe { AtomicU32::from_ptr(self.mem.addr.as_ptr().add(offset).cast()) })
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

    /// Atomically sets `bits` in the u32 at `offset` (leaving its other bits as they are);
    /// returns the old value.
    pub fn fetch_or(&self, offset: usize, bits: u32) -> Result<u32> {
        Ok(self.word(offset)?.fetch_or(bits, Ordering::AcqRel))
    }

    /// Atomically clears `bits` in the u32 at `offset`; returns the old value.
    pub fn fetch_clear(&self, offset: usize, bits: u32) -> Result<u32> {
        Ok(self.word(offset)?.fetch_and(!bits, Ordering::AcqRel))
    }

    /// The part of the buffer from `offset` on, `len` bytes long, if it is inside.
    fn range(&self, offset: usize, len: usize) -> Result<*mut u8> {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        // SAFETY: In bounds of the live buffer.
        Ok(unsafe { self.mem.addr.as_ptr().add(offset) })
    }

    /// Copies `src` into the buffer at `offset`.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result {
        let dst = self.range(offset, src.len())?;
        // SAFETY: `dst` has room for `src` (checked) in the live buffer.
        unsafe { copy_to_shared(dst, src) };
        Ok(())
    }

    /// Copies from the buffer at `offset` into `dst`. The bytes are whatever user space left
    /// there, read once each: callers validate them.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        let src = self.range(offset, dst.len())?;
        // SAFETY: `src` holds `dst.len()` bytes (checked) of the live buffer.
        unsafe { copy_from_shared(src, dst) };
        Ok(())
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if let Some(m) = &self.mapping {
            let open = m.ctx.open.lock();
            if *open {
                // SAFETY: By the invariant of `Mapping`, the entry is inserted and we hold the
                // insertion reference while the context is open; this gives it up. Its memory
                // stays alive through `self.mem` until the end of this function.
                unsafe { bindings::rdma_user_mmap_entry_remove((*m.entry.as_ptr()).rdma.get()) };
            }
        }
    }
}

// The copies between kernel memory and shared memory. Shared memory is read and written with
// volatile accesses only, 8 bytes at a time where it is aligned for that, so the compiler never
// assumes its contents stable (it reads each byte exactly once) and never tears an aligned word.

/// # Safety
///
/// `dst` must be valid for writes of `src.len()` bytes of shared memory.
unsafe fn copy_to_shared(dst: *mut u8, src: &[u8]) {
    let mut i = 0;
    if dst as usize % 8 == 0 {
        while i + 8 <= src.len() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&src[i..i + 8]);
            // SAFETY: Aligned (`dst` and `i` are multiples of 8) and in bounds.
            unsafe {
                dst.add(i)
                    .cast::<u64>()
                    .write_volatile(u64::from_ne_bytes(w))
            };
            i += 8;
        }
    }
    while i < src.len() {
        // SAFETY: In bounds.
        unsafe { dst.add(i).write_volatile(src[i]) };
        i += 1;
    }
}

/// # Safety
///
/// `src` must be valid for reads of `dst.len()` bytes of shared memory.
unsafe fn copy_from_shared(src: *const u8, dst: &mut [u8]) {
    let mut i = 0;
    if src as usize % 8 == 0 {
        while i + 8 <= dst.len() {
            // SAFETY: Aligned (`src` and `i` are multiples of 8) and in bounds.
            let w = unsafe { src.add(i).cast::<u64>().read_volatile() };
            dst[i..i + 8].copy_from_slice(&w.to_ne_bytes());
            i += 8;
        }
    }
    while i < dst.len() {
        // SAFETY: In bounds.
        dst[i] = unsafe { src.add(i).read_volatile() };
        i += 1;
    }
}

impl<T: Driver> Adapter<T> {
    /// The `mmap` op: maps the entry `vma`'s offset names, if it belongs to `uctx`.
    ///
    /// # Safety
    ///
    /// Called by ib_core with a live context of this driver and a VMA of its uverbs file, with
    /// the mmap lock held.
    pub(crate) unsafe extern "C" fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live context and VMA; a non-null result is a held
            // reference.
            let rdma = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
            if rdma.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: All entries of our contexts are `Entry`s; the reference keeps it and its
            // memory alive while we use it.
            let entry = unsafe { &*rdma.cast::<Entry>() };
            // SAFETY: `remap_vmalloc_range` refuses VMAs larger than the buffer. The mmap lock
            // is held, as `vm_flags_set` requires.
            let ret = unsafe {
                bindings::vm_flags_set(vma, bindings::VM_DONTCOPY as _);
                bindings::remap_vmalloc_range(vma, entry.mem.addr.as_ptr().cast(), 0)
            };
            // SAFETY: Drops the reference `rdma_user_mmap_entry_get` took.
            unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
            to_result(ret)?;
            Ok(0)
        })
    }

    /// The `mmap_free` op: the entry is removed and unmapped everywhere; free it (and its
    /// memory, unless the kernel's handle still has it).
    ///
    /// # Safety
    ///
    /// Called by ib_core once per entry, when its last reference is gone.
    pub(crate) unsafe extern "C" fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: The entry came from `KBox::into_raw` in `SharedBuffer::new`; nobody
        // references it any more.
        drop(unsafe { KBox::from_raw(rdma.cast::<Entry>()) });
    }
}
