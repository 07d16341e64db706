// SPDX-License-Identifier: GPL-2.0

//! Random bytes, for the numbers of a device that a peer must not guess (the first key byte of
//! each memory-key and QP-number index).
//!
//! C header: [`include/linux/random.h`](srctree/include/linux/random.h)

use crate::bindings;

/// Fills `buf` with random bytes from the kernel's generator (`get_random_bytes`). Any context.
pub fn fill(buf: &mut [u8]) {
    // SAFETY: `buf` is valid for writes of its length.
    unsafe { bindings::get_random_bytes(buf.as_mut_ptr().cast(), buf.len()) }
}
