// SPDX-License-Identifier: GPL-2.0

//! The memory a software RDMA device reads and writes: pieces of pinned user pages
//! ([`Umem`](super::Umem)) and of the kernel memory kernel users hand the device.
//!
//! A [`Piece`] is at most one page of either kind; the data path copies between pieces of any
//! kinds, and runs 8-byte atomics on them, without knowing where they came from.
//!
//! Kernel users of a virtual-DMA device (one without a `dma_device`, as ib_core's
//! `ib_uses_virt_dma` says) address memory by kernel virtual address: `ib_dma_map_*` returns
//! the address itself, a DMA MR (`get_dma_mr`) covers all of memory, and a fast-registration
//! MR lists the pages `ib_map_mr_sg` mapped. The kernel user promises that what it names stays
//! valid while it is registered and its work is outstanding; the device cannot check that. It
//! does refuse addresses outside the kernel's direct map of RAM (`PAGE_OFFSET` to
//! `high_memory`, with a `struct page`), and copies kernel memory with the `*_kernel_nofault`
//! copies, so that a wild address (from a peer holding an `IB_PD_UNSAFE_GLOBAL_RKEY`, or a
//! kernel user's bug) fails a copy instead of faulting. An atomic has no such guard: it runs on
//! a direct-map word of RAM, which is mapped unless the kernel unmapped it on purpose
//! (`DEBUG_PAGEALLOC`, secret memory); the global rkey's name says what it exposes.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/linux/mm.h`](srctree/include/linux/mm.h)

use super::{driver::Driver, mr::Mr};
use crate::{
    bindings,
    error::{code::*, Result},
};
use core::{marker::PhantomData, sync::atomic::AtomicU64};

const PAGE_SIZE: usize = bindings::PAGE_SIZE;

/// Up to one page of memory the device may read and write for `'a`.
///
/// Its owner (a user process, or a kernel user) may read and write it at the same time:
/// the device only copies to and from it, and runs atomics on it, never forms references to
/// its bytes.
///
/// # Invariants
///
/// `ptr` points to `len` bytes inside one page, mapped in the kernel for `'a` unless `kernel`
/// (a kernel user's memory, accessed only with the `*_kernel_nofault` copies, which check).
pub struct Piece<'a> {
    ptr: *mut u8,
    len: usize,
    kernel: bool,
    _memory: PhantomData<&'a ()>,
}

/// Bytes one step of a kernel-to-kernel copy moves through the stack.
const BOUNCE: usize = 256;

impl<'a> Piece<'a> {
    /// # Safety
    ///
    /// `ptr` must point to `len` bytes inside one page that stay mapped for `'a`.
    pub(crate) unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        Piece {
            ptr,
            len,
            kernel: false,
            _memory: PhantomData,
        }
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the piece is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The byte at `at` and the `n` after it, as a pointer, if they are in the piece.
    fn at(&self, at: usize, n: usize) -> Result<*mut u8> {
        match at.checked_add(n) {
            // SAFETY: `at` <= len: inside (or one past) the piece.
            Some(end) if end <= self.len => Ok(unsafe { self.ptr.add(at) }),
            _ => Err(EINVAL),
        }
    }

    /// Copies `n` bytes from `from` to `to`, either of them kernel users' memory
    /// (`from_kernel`, `to_kernel`) that may turn out unmapped: `EFAULT` then.
    ///
    /// # Safety
    ///
    /// `from` and `to` must each point to `n` bytes of a piece (or of a buffer of this
    /// kernel's): mapped, or kernel users' memory in the direct map.
    unsafe fn copy(
        to: *mut u8,
        to_kernel: bool,
        from: *const u8,
        from_kernel: bool,
        n: usize,
    ) -> Result {
        let fault = |r: crate::ffi::c_long| if r == 0 { Ok(()) } else { Err(EFAULT) };
        match (to_kernel, from_kernel) {
            (false, false) => {
                // SAFETY: Both mapped (the caller's promise); `copy` allows overlap (one MR may
                // be registered twice, or a message may land on its own source).
                unsafe { core::ptr::copy(from, to, n) };
                Ok(())
            }
            (false, true) => {
                // SAFETY: `to` is mapped; the read of `from` is checked.
                fault(unsafe { bindings::copy_from_kernel_nofault(to.cast(), from.cast(), n) })
            }
            (true, false) => {
                // SAFETY: `from` is mapped; the write to `to` is checked.
                fault(unsafe { bindings::copy_to_kernel_nofault(to.cast(), from.cast(), n) })
            }
            (true, true) => {
                let mut bounce = [0u8; BOUNCE];
                let mut done = 0;
                while done < n {
                    let step = (n - done).min(BOUNCE);
                    let b = bounce.as_mut_ptr();
                    // SAFETY: `done + step` <= n, within both ranges; `bounce` is this
                    // stack's, `step` bytes long; each kernel access is checked.
                    unsafe {
                        fault(bindings::copy_from_kernel_nofault(
                            b.cast(),
                            from.add(done).cast(),
                            step,
                        ))?;
                        fault(bindings::copy_to_kernel_nofault(
                            to.add(done).cast(),
                            b.cast(),
                            step,
                        ))?;
                    }
                    done += step;
                }
                Ok(())
            }
        }
    }

    /// Copies `dst.len()` bytes at `at` of the piece into `dst`.
    pub fn read(&self, at: usize, dst: &mut [u8]) -> Result {
        let from = self.at(at, dst.len())?;
        // SAFETY: `from` points to `dst.len()` bytes of the piece (bounds checked), `dst` is a
        // buffer of this kernel's (a piece's bytes are never borrowed).
        unsafe { Self::copy(dst.as_mut_ptr(), false, from, self.kernel, dst.len()) }
    }

    /// Copies `src` to `at` of the piece.
    pub fn write(&self, at: usize, src: &[u8]) -> Result {
        let to = self.at(at, src.len())?;
        // SAFETY: As for `read`.
        unsafe { Self::copy(to, self.kernel, src.as_ptr(), false, src.len()) }
    }

    /// Copies `n` bytes at `src_at` of `src` to `at` of this piece (the two may overlap: one
    /// MR may be registered twice, or a message may land on its own source).
    pub fn copy_from(&self, at: usize, src: &Piece<'_>, src_at: usize, n: usize) -> Result {
        let to = self.at(at, n)?;
        let from = src.at(src_at, n)?;
        // SAFETY: Both point to `n` bytes of their pieces (bounds checked).
        unsafe { Self::copy(to, self.kernel, from, src.kernel, n) }
    }

    /// The naturally aligned 8-byte word at `at`, for RDMA atomics. `EINVAL` if it is out of
    /// the piece or its address is not a multiple of 8.
    pub fn atomic_u64(&self, at: usize) -> Result<&'a AtomicU64> {
        let p = self.at(at, 8)?;
        if p as usize % 8 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: `p` is 8-aligned and points to 8 bytes of a pinned user page, or of a page of
        // RAM in the kernel's direct map that a kernel user named (see the module
        // documentation for what that trusts), for `'a`. The owner may access the word too (it
        // is its memory); this side only ever does so atomically.
        Ok(unsafe { AtomicU64::from_ptr(p.cast::<u64>()) })
    }
}

/// Kernel memory as the kernel users of a device name it: by kernel virtual address.
///
/// Only the MRs of kernel PDs give one ([`Mr::kernel_memory`]): user processes never name
/// kernel addresses.
pub struct KernelMemory<'a> {
    _mr: PhantomData<&'a ()>,
}

impl<'a> KernelMemory<'a> {
    /// The piece of kernel memory at `addr`, up to `max` bytes and never past the end of its
    /// page; `None` if the address is not in the kernel's direct map of RAM.
    pub fn piece(&self, addr: u64, max: usize) -> Option<Piece<'a>> {
        let addr = usize::try_from(addr).ok()?;
        // SAFETY: Only computes whether the address is in the direct map.
        if !unsafe { bindings::rdma_kernel_addr_ok(addr) } {
            return None;
        }
        let len = (PAGE_SIZE - addr % PAGE_SIZE).min(max);
        // Type invariant: the `len` bytes are in one page of RAM in the direct map, marked as
        // kernel users' memory (copied only with the checking copies). The kernel user that
        // registered the MR this came from named it, and keeps it valid while its work is
        // outstanding (ib_core's contract for virtual-DMA devices; see the module
        // documentation), which spans the data path's use of the MR (`'a`).
        Some(Piece {
            ptr: addr as *mut u8,
            len,
            kernel: true,
            _memory: PhantomData,
        })
    }
}

impl<T: Driver> Mr<T> {
    /// Whether the MR belongs to a user process (a PD of a user context).
    pub fn is_user(&self) -> bool {
        // SAFETY: An MR's PD outlives it; `uobject` of a PD never changes once the driver
        // sees it. The `pd` field changes only in a re-registration, which needs the MR's
        // owner (a user process) and keeps it a user PD. No PD (never seen) counts as a
        // user's: kernel memory is only handed out on proof.
        unsafe {
            let pd = (*self.as_raw()).pd;
            pd.is_null() || !(*pd).uobject.is_null()
        }
    }

    /// The kernel memory that a kernel user's MR (DMA or fast registration) names, `None` for a
    /// user process's MR.
    pub fn kernel_memory(&self) -> Option<KernelMemory<'_>> {
        (!self.is_user()).then_some(KernelMemory { _mr: PhantomData })
    }
}
