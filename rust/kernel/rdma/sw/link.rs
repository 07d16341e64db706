// SPDX-License-Identifier: GPL-2.0

//! RDMA link types: `rdma link add NAME type TYPE netdev DEV` (`struct rdma_link_ops`).
//!
//! C header: [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h)

use crate::{
    bindings,
    error::{from_result, Error, Result},
    init::PinInit,
    net::netdev::NetDevice,
    str::CStr,
    try_pin_init,
    types::Opaque,
};
use core::{marker::PhantomData, pin::Pin};
use macros::{pin_data, pinned_drop};

/// A link type whose devices are created from netlink.
pub trait Link: 'static {
    /// The type name given to `rdma link add`; the module should carry the alias
    /// `rdma-link-<TYPE>` so that the command loads it.
    const TYPE: &'static CStr;

    /// Creates a device called `name` on `netdev`.
    ///
    /// Called without RTNL; `netdev` is held for the duration of the call. Calls are
    /// serialised (for every link type of this layer), so a check for an existing device and
    /// the registration of a new one are atomic with respect to other `rdma link add`s.
    fn newlink(name: &CStr, netdev: &NetDevice) -> Result;
}

/// A registered link type; unregisters on drop.
///
/// # Invariants
///
/// `ops` is registered with `rdma_link_register` for the lifetime of the object.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Link> {
    #[pin]
    ops: Opaque<bindings::rdma_link_ops>,
    _t: PhantomData<T>,
}

// SAFETY: The ops are only read by ib_core, under its own lock.
unsafe impl<T: Link> Send for Registration<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Link> Sync for Registration<T> {}

impl<T: Link> Registration<T> {
    /// Registers the link type `T::TYPE`.
    pub fn register() -> impl PinInit<Self, Error> {
        let ops = bindings::rdma_link_ops {
            // SAFETY: An all-zero `list_head` is valid; `rdma_link_register` links it in.
            list: unsafe { core::mem::zeroed() },
            type_: T::TYPE.as_char_ptr(),
            newlink: Some(Self::newlink_callback),
        };
        try_pin_init!(Self {
            ops <- PinInit::<_, Error>::pin_chain(Opaque::new(ops), |ops| {
                // SAFETY: `ops` is pinned inside `Self` and stays registered until `drop`.
                unsafe { bindings::rdma_link_register(ops.get()) };
                Ok(())
            }),
            _t: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by ib_core's netlink handler with a NUL-terminated name and a held netdev.
    unsafe extern "C" fn newlink_callback(
        name: *const crate::ffi::c_char,
        ndev: *mut bindings::net_device,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a NUL-terminated buffer that outlives the call.
            let name = unsafe { CStr::from_char_ptr(name) };
            // SAFETY: ib_core holds a reference to `ndev` for the call.
            let netdev = unsafe { NetDevice::from_raw(ndev) };
            // ib_core runs newlink callbacks concurrently; one at a time here, so that a
            // driver's check that `netdev` has no device yet and its registration of one are
            // atomic with respect to another `rdma link add` on the same netdev.
            // SAFETY: Plain mutex operations on a static mutex, paired below.
            unsafe { bindings::rdma_newlink_lock() };
            let r = T::newlink(name, netdev);
            // SAFETY: Taken above.
            unsafe { bindings::rdma_newlink_unlock() };
            r?;
            Ok(0)
        })
    }
}

#[pinned_drop]
impl<T: Link> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `ops` is registered.
        unsafe { bindings::rdma_link_unregister(self.ops.get()) };
    }
}
