// SPDX-License-Identifier: GPL-2.0

//! Per-device object counts, which enforce the advertised `max_*` limits.
//!
//! Pure `core` code: also built and tested on the host (`host-tests/`).

use core::sync::atomic::{AtomicU32, Ordering};

/// How many objects of one kind exist, never more than a limit.
pub(crate) struct ObjectCount(AtomicU32);

/// The limit was reached.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LimitReached;

impl ObjectCount {
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// Counts one more object, unless `max` exist already.
    pub(crate) fn take(&self, max: u32) -> Result<(), LimitReached> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then(|| n + 1)
            })
            .map(|_| ())
            .map_err(|_| LimitReached)
    }

    /// Counts one object less; pairs with a successful [`ObjectCount::take`].
    pub(crate) fn put(&self) {
        let old = self.0.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(old > 0);
    }
}
