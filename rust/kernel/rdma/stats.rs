// SPDX-License-Identifier: GPL-2.0

//! Port counters (`struct rdma_hw_stats`), as `rdma statistic show` and sysfs's
//! `ports/N/hw_counters/` report them.
//!
//! A driver names its counters in a static table of [`Counter`]s
//! ([`super::Driver::PORT_COUNTERS`]) and reads their values on demand
//! ([`super::Driver::read_port_counters`]); ib_core caches the values for a short lifespan.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::Device,
    driver::{Adapter, Driver},
};
use crate::{bindings, str::CStr};

/// The name of one counter (`struct rdma_stat_desc`).
#[repr(transparent)]
pub struct Counter(bindings::rdma_stat_desc);

// SAFETY: The descriptor holds a pointer to a `'static` C string, read only.
unsafe impl Sync for Counter {}

impl Counter {
    /// A counter called `name`.
    pub const fn new(name: &'static CStr) -> Self {
        Counter(bindings::rdma_stat_desc {
            name: name.as_char_ptr(),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core for a live `Device<T>`.
    pub(crate) unsafe extern "C" fn alloc_hw_port_stats(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let counters = T::PORT_COUNTERS;
        // SAFETY: `counters` is a `'static` table of descriptors (`Counter` is transparent),
        // which ib_core keeps a pointer to for the stats' lifetime.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                counters.as_ptr().cast(),
                counters.len() as i32,
                bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as _,
            )
        }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live `Device<T>` with stats from `alloc_hw_port_stats`.
    pub(crate) unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: crate::ffi::c_int,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core only calls ops of a live device.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        // SAFETY: `stats` came from `alloc_hw_port_stats`: `num_counters` values follow it.
        // Nobody else touches them meanwhile: sysfs and netlink read them under the stats'
        // lock, and ib_core's first call comes before it publishes them.
        let values = unsafe {
            let n = (*stats).num_counters.max(0) as usize;
            let first = core::ptr::addr_of_mut!((*stats).value).cast::<u64>();
            core::slice::from_raw_parts_mut(first, n)
        };
        match T::read_port_counters(dev, port, values) {
            Ok(()) => values.len() as crate::ffi::c_int,
            Err(e) => e.to_errno(),
        }
    }
}
