// SPDX-License-Identifier: GPL-2.0

//! Driver-specific command and response buffers of a uverbs call (`struct ib_udata`).
//!
//! The buffers are user memory: every access is a checked copy.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use crate::{
    bindings,
    error::{code::*, to_result, Result},
};
use core::marker::PhantomData;

/// The driver part of a uverbs command: input from and output to user space.
///
/// # Invariants
///
/// `raw` is null (a kernel caller, no user buffers) or points to an `ib_udata` that is valid for
/// `'a`.
pub struct Udata<'a> {
    raw: *mut bindings::ib_udata,
    _p: PhantomData<&'a mut bindings::ib_udata>,
}

impl<'a> Udata<'a> {
    /// Wraps a pointer ib_core passed to a driver op.
    ///
    /// # Safety
    ///
    /// `raw` must be null or valid for `'a`.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Self {
        // INVARIANT: Guaranteed by the caller.
        Self {
            raw,
            _p: PhantomData,
        }
    }

    /// Whether the call came from user space (kernel callers have no udata).
    pub fn is_user(&self) -> bool {
        !self.raw.is_null()
    }

    /// Length of the driver command from user space.
    pub fn in_len(&self) -> usize {
        if self.raw.is_null() {
            0
        } else {
            // SAFETY: Valid by the type invariant when non-null.
            unsafe { (*self.raw).inlen }
        }
    }

    /// Length of the driver response buffer in user space.
    pub fn out_len(&self) -> usize {
        if self.raw.is_null() {
            0
        } else {
            // SAFETY: Valid by the type invariant when non-null.
            unsafe { (*self.raw).outlen }
        }
    }

    /// Fails with `EINVAL` unless any driver command bytes are all zero.
    ///
    /// Drivers whose command carries no data call this so that a future extension is not
    /// silently ignored.
    pub fn require_no_input(&self) -> Result {
        let len = self.in_len();
        // SAFETY: `raw` is valid (non-zero length implies non-null).
        if len != 0 && !unsafe { bindings::ib_is_udata_cleared(self.raw, 0, len) } {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Reads the driver command into `dst`: user space must provide at least `dst.len()` bytes,
    /// and any bytes beyond must be zero.
    pub fn read(&self, dst: &mut [u8]) -> Result {
        let len = self.in_len();
        if len < dst.len() {
            return Err(EINVAL);
        }
        // SAFETY: `raw` is valid; `dst` is writable for its length.
        to_result(unsafe {
            bindings::ib_copy_from_udata(dst.as_mut_ptr().cast(), self.raw, dst.len())
        })?;
        if len > dst.len() {
            let rest = len - dst.len();
            // SAFETY: `raw` is valid and holds `len` bytes of input.
            let cleared = unsafe { bindings::ib_is_udata_cleared(self.raw, dst.len(), rest) };
            if !cleared {
                return Err(EOPNOTSUPP);
            }
        }
        Ok(())
    }

    /// Writes a driver response: as much of `src` as the user buffer holds (older providers
    /// have shorter responses).
    pub fn write(&mut self, src: &[u8]) -> Result {
        let len = src.len().min(self.out_len());
        if len == 0 {
            return Ok(());
        }
        // SAFETY: `raw` is valid; `src` is readable for `len` bytes. The C helper takes a
        // mutable pointer but only reads from it.
        to_result(unsafe {
            bindings::ib_copy_to_udata(self.raw, src.as_ptr().cast_mut().cast(), len)
        })
    }
}
