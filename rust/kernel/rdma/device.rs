// SPDX-License-Identifier: GPL-2.0

//! RDMA devices (`struct ib_device`): registration, lookup and the device-wide ops.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    attr::PortEvent,
    driver::{kzalloc_size, Adapter, Driver},
    object::{MrKind, MwKind, QpKind},
    registry::{Held, Registry},
    udata::Udata,
};
use crate::{
    bindings,
    error::{code::*, from_result, to_result, Error, Result},
    init::PinInit,
    net::netdev::NetDevice,
    pin_init,
    str::CStr,
    types::{ARef, Opaque},
    ThisModule,
};
use core::{marker::PhantomData, ops::Deref, ptr::NonNull};
use macros::pin_data;

/// Parameters of a new device.
pub struct DeviceParams<'a> {
    /// The device name (`rdma link add NAME`).
    pub name: &'a CStr,
    /// The net device the single port is bound to.
    pub netdev: &'a NetDevice,
    /// Node GUID, host byte order.
    pub node_guid: u64,
    /// Node description (truncated to 63 bytes).
    pub node_desc: &'a [u8],
    /// Number of completion vectors.
    pub num_comp_vectors: u32,
}

/// An RDMA device with the driver's data in the same allocation.
///
/// Devices are allocated by ib_core (`_ib_alloc_device`) and, once registered, owned by it: ib_core
/// frees them after unregistration, calling back into this layer (`dealloc_driver`) to drop
/// `data`. Drivers see devices only as `&Device<T>` inside ops and as [`DeviceRef`]s.
///
/// # Invariants
///
/// `ib` is the first field (ib_core requires `struct ib_device` at offset 0). `registries` and
/// `data` are initialised whenever `ib.ops.dealloc_driver` is set, which happens only here.
#[repr(C)]
pub struct Device<T: Driver> {
    ib: Opaque<bindings::ib_device>,
    registries: Registries<T>,
    data: T::Data,
}

/// The device's QPs and MRs, published for the data path (see [`super::registry`]).
#[pin_data]
pub(crate) struct Registries<T: Driver> {
    #[pin]
    pub(crate) qps: Registry<T, QpKind>,
    #[pin]
    pub(crate) mrs: Registry<T, MrKind>,
    #[pin]
    pub(crate) mws: Registry<T, MwKind>,
}

// SAFETY: ib_core calls device ops from any thread; `T::Data` is `Send + Sync`.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> Device<T> {
    /// # Safety
    ///
    /// `raw` must point to the `ib_device` of a live `Device<T>` that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `ib` is the first field of a `repr(C)` struct.
        unsafe { &*raw.cast() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// The driver's data.
    pub fn data(&self) -> &T::Data {
        &self.data
    }

    pub(crate) fn registries(&self) -> &Registries<T> {
        &self.registries
    }

    /// The QP numbered `qpn`, held (its destroy op waits) until the result is dropped. Any
    /// context.
    pub fn qp(&self, qpn: u32) -> Option<Held<'_, T, QpKind>> {
        self.registries.qps.get(qpn)
    }

    /// The MR whose keys have the index of `key` (its upper 24 bits: the lower 8 are the key
    /// byte a fast registration changes, which the caller checks), held until the result is
    /// dropped. Any context.
    pub fn mr(&self, key: u32) -> Option<Held<'_, T, MrKind>> {
        self.registries.mrs.get(key >> 8)
    }

    /// The memory window whose rkey has the index of `key` (the caller checks the key byte),
    /// held until the result is dropped. Any context.
    pub fn mw(&self, key: u32) -> Option<Held<'_, T, MwKind>> {
        self.registries.mws.get(key >> 8)
    }

    /// Whether `gid` is in `port`'s GID table as a RoCEv2 GID: a destination on this device.
    pub fn gid_is_local(&self, port: u32, gid: &[u8; 16]) -> bool {
        let g = bindings::ib_gid { raw: *gid };
        // SAFETY: The device is alive; `g` is valid for the call. A NULL netdev matches any.
        let attr = unsafe {
            bindings::rdma_find_gid_by_port(
                self.as_raw(),
                &g,
                bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
                port,
                core::ptr::null_mut(),
            )
        };
        match crate::error::from_err_ptr(attr.cast_mut()) {
            Ok(attr) if !attr.is_null() => {
                // SAFETY: A GID attribute the lookup took a reference on.
                unsafe { bindings::rdma_put_gid_attr(attr) };
                true
            }
            _ => false,
        }
    }

    /// The device name.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array set at registration.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// The net device bound to `port`, if it is still bound.
    pub fn netdev(&self, port: u32) -> Option<ARef<NetDevice>> {
        // SAFETY: The device is alive; the returned netdev (if any) is held for us.
        let nd = unsafe { bindings::ib_device_get_netdev(self.as_raw(), port) };
        // SAFETY: `ib_device_get_netdev` returned a reference that we now own.
        NonNull::new(nd).map(|nd| unsafe { ARef::from_raw(nd.cast()) })
    }

    /// The speed and width of the Ethernet link under `port` (`ib_get_eth_speed`).
    ///
    /// Takes RTNL: must not be called from a netdev notifier.
    pub fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let (mut speed, mut width) = (0u16, 0u8);
        // SAFETY: The device is alive; the out-pointers are valid.
        to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// Tells ib_core's event handlers (and user space's async event queues) about `port`.
    pub fn dispatch_port_event(&self, port: u32, event: PortEvent) {
        let ev = bindings::ib_event {
            device: self.as_raw(),
            element: bindings::ib_event__bindgen_ty_1 { port_num: port },
            event: event as u32,
        };
        // SAFETY: `ev` is valid for the call; the device is registered or being registered.
        unsafe { bindings::ib_dispatch_event(&ev) };
    }

    /// Starts unregistering the device; ib_core finishes (and frees it) from a work item.
    ///
    /// Safe from a netdev notifier, under RTNL.
    pub fn unregister_queued(&self) {
        // SAFETY: The device is alive.
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
    }

    /// Unregisters and frees every device of this driver; returns when they are gone.
    pub fn unregister_all() {
        // SAFETY: Safe to call at any time; it waits for concurrent unregistrations.
        unsafe { bindings::ib_unregister_driver(T::DRIVER_ID) };
    }

    /// Finds the registered device bound to `netdev`.
    pub fn get_by_netdev(netdev: &NetDevice) -> Option<DeviceRef<T>> {
        // SAFETY: `netdev` is valid; a non-null result is a held registration reference.
        let raw = unsafe { bindings::ib_device_get_by_netdev(netdev.as_raw(), T::DRIVER_ID) };
        DeviceRef::new(raw)
    }

    /// Finds the registered device called `name`, of this driver only.
    pub fn get_by_name(name: &CStr) -> Option<DeviceRef<T>> {
        // SAFETY: `name` is NUL-terminated; a non-null result is a held registration reference.
        let raw = unsafe { bindings::ib_device_get_by_name(name.as_char_ptr(), T::DRIVER_ID) };
        DeviceRef::new(raw)
    }

    /// Allocates, initialises and registers a device.
    ///
    /// On success ib_core owns the device until it is unregistered (by `rdma link delete`,
    /// [`Device::unregister_queued`] or [`Device::unregister_all`]).
    pub fn register(
        module: &'static ThisModule,
        params: &DeviceParams<'_>,
        data: impl PinInit<T::Data, Error>,
    ) -> Result {
        // SAFETY: Allocates a zeroed, initialised `ib_device` followed by room for `data`.
        let raw = unsafe { bindings::_ib_alloc_device(const { kzalloc_size::<Self>() }) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        let this = raw.cast::<Self>();
        let registries = pin_init!(Registries::<T> {
            qps <- Registry::new(),
            mrs <- Registry::new(),
            mws <- Registry::new(),
        });
        // SAFETY: `registries` is uninitialised memory inside the allocation, never moved
        // (ib_core allocations do not move); its initialiser cannot fail.
        let Ok(()) =
            unsafe { registries.__pinned_init(core::ptr::addr_of_mut!((*this).registries)) };
        // SAFETY: As above, for `data`.
        if let Err(e) = unsafe { data.__pinned_init(core::ptr::addr_of_mut!((*this).data)) } {
            // SAFETY: `dealloc_driver` is not set yet, so nothing reads `registries`, which
            // (empty) is dropped here once.
            unsafe {
                core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).registries));
                bindings::ib_dealloc_device(raw)
            };
            return Err(e);
        }
        // SAFETY: `raw` is valid and not yet visible to anybody else. From here on `data` is
        // initialised and `dealloc_driver` drops it, on every path that frees the device.
        unsafe {
            bindings::ib_set_device_ops(raw, &Adapter::<T>::OPS);
            (*raw).ops.owner = module.as_ptr();
            (*raw).node_type = bindings::RDMA_NODE_IB_CA as u8;
            (*raw).phys_port_cnt = 1;
            (*raw).num_comp_vectors = params.num_comp_vectors.max(1) as i32;
            (*raw).node_guid = params.node_guid.to_be();
            if T::HAS_RING_SQ_DOORBELL {
                // The provider's doorbell is a POST_SEND write() with no work requests.
                (*raw).uverbs_cmd_mask |=
                    1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
            }
            if T::HAS_RING_RQ_DOORBELL {
                // And the receive doorbell a POST_RECV write() with none.
                (*raw).uverbs_cmd_mask |=
                    1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_RECV;
            }
            let desc = &mut (*raw).node_desc;
            let n = params.node_desc.len().min(desc.len() - 1);
            for (d, s) in desc.iter_mut().zip(&params.node_desc[..n]) {
                *d = *s as _;
            }
            // The netdev's parent (e.g. a virtio NIC) makes the device's sysfs `device/net/`
            // name the netdev, as for hardware RoCE devices.
            (*raw).__bindgen_anon_1.dev.parent = params.netdev.parent_raw();
        }
        // SAFETY: `raw` is a valid, unregistered device; the netdev is valid.
        let ret = unsafe { bindings::ib_device_set_netdev(raw, params.netdev.as_raw(), 1) };
        let ret = to_result(ret).and_then(|()| {
            // SAFETY: The name is NUL-terminated. A NULL DMA device selects ib_core's virtual
            // DMA.
            to_result(unsafe {
                bindings::ib_register_device(raw, params.name.as_char_ptr(), core::ptr::null_mut())
            })
        });
        if let Err(e) = ret {
            // SAFETY: Registration failed, so the device is still ours to free; this calls
            // `dealloc_driver`, which drops `data`.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }
        Ok(())
    }
}

/// A held reference to a registered device: it cannot finish unregistering until dropped.
///
/// # Invariants
///
/// `ptr` is a `Device<T>` on which `ib_device_try_get` succeeded (by a lookup function).
pub struct DeviceRef<T: Driver> {
    ptr: NonNull<Device<T>>,
    _t: PhantomData<T>,
}

impl<T: Driver> DeviceRef<T> {
    fn new(raw: *mut bindings::ib_device) -> Option<Self> {
        let ptr = NonNull::new(raw)?;
        // Only devices registered through `Device::<T>::register` carry this callback; refuse
        // anything else that might share the driver id. The address is unique here: the
        // callback is instantiated once, in the crate that implements `T` (the kernel builds
        // each crate as a single codegen unit).
        // SAFETY: The device is held, so its ops are stable.
        let theirs = unsafe { (*raw).ops.dealloc_driver }.map(|f| f as usize);
        let ours = theirs == Some(Adapter::<T>::dealloc_driver as *const () as usize);
        if !ours {
            // SAFETY: Drops the reference the lookup took.
            unsafe { bindings::ib_device_put(raw) };
            return None;
        }
        // INVARIANT: A lookup function took the reference.
        Some(Self {
            ptr: ptr.cast(),
            _t: PhantomData,
        })
    }
}

impl<T: Driver> Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: The held reference keeps the device from being freed.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Driver> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold a reference.
        unsafe { bindings::ib_device_put(self.ptr.as_ptr().cast()) };
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with valid `attr` and `udata` (or null udata).
    pub(crate) unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let a = T::query_device(dev, &mut udata)?;
            // SAFETY: `attr` is valid for writes for the call.
            a.write_to(unsafe { &mut *attr })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with a valid, zeroed `attr`.
    pub(crate) unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let a = T::query_port(dev, port)?;
            // SAFETY: `attr` is valid for writes for the call.
            a.write_to(unsafe { &mut *attr })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with a valid `imm`.
    pub(crate) unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let i = T::get_port_immutable(dev, port)?;
            // SAFETY: `imm` is valid for writes for the call.
            i.write_to(unsafe { &mut *imm })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>`.
    pub(crate) unsafe extern "C" fn get_link_layer(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> bindings::rdma_link_layer {
        // SAFETY: ib_core only calls ops of a live device.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        T::get_link_layer(dev, port) as u32
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with a valid `pkey`.
    pub(crate) unsafe extern "C" fn query_pkey(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let v = T::query_pkey(dev, port, index)?;
            // SAFETY: `pkey` is valid for writes for the call.
            unsafe { *pkey = v };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once, as the device is freed; `data` is initialised (type invariant).
    pub(crate) unsafe extern "C" fn dealloc_driver(ib: *mut bindings::ib_device) {
        let this = ib.cast::<Device<T>>();
        // SAFETY: The invariant of `Device` says both are initialised; this is their only
        // drop. Every QP and MR is gone by now, so the registries are empty.
        unsafe {
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).data));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).registries));
        };
    }
}
