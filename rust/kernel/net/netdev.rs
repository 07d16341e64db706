// SPDX-License-Identifier: GPL-2.0

//! Network devices and their notifier chain.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

use crate::{
    bindings,
    error::{to_result, Error},
    init::PinInit,
    str::CStr,
    try_pin_init,
    types::{ARef, AlwaysRefCounted, Opaque},
};
use core::{marker::PhantomData, ptr::NonNull};
use macros::{pin_data, pinned_drop};

/// A network device (`struct net_device`).
///
/// # Invariants
///
/// A `&NetDevice` points to a `struct net_device` whose reference count the holder of the
/// reference keeps above zero (for instance the notifier chain calling us, or an [`ARef`]).
#[repr(transparent)]
pub struct NetDevice(Opaque<bindings::net_device>);

// SAFETY: `net_device` is reference counted with `dev_hold`/`dev_put`, which may be called from
// any thread; the accessors below only read fields that are safe to read concurrently.
unsafe impl Send for NetDevice {}
// SAFETY: See `Send`.
unsafe impl Sync for NetDevice {}

// SAFETY: `dev_hold` and `dev_put` keep the device allocated while the count is non-zero.
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: By the type invariant the count is non-zero.
        unsafe { bindings::dev_hold(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference taken by `inc_ref`.
        unsafe { bindings::dev_put(obj.cast().as_ptr()) };
    }
}

impl NetDevice {
    /// Creates a reference to an existing `struct net_device`.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a valid `net_device` whose reference count stays above zero for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `NetDevice` is a transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// Returns the raw `struct net_device` pointer.
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The interface name, e.g. `eth0`.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside a valid `net_device`; renames happen
        // under RTNL and always leave a terminated string.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: The device is valid by the type invariant.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// The current MTU in bytes.
    pub fn mtu(&self) -> u32 {
        // SAFETY: The device is valid; `mtu` is read with READ_ONCE semantics in C too.
        unsafe { core::ptr::read_volatile(&(*self.as_raw()).mtu) }
    }

    /// The hardware type (`ARPHRD_*`).
    pub fn hw_type(&self) -> u16 {
        // SAFETY: The device is valid by the type invariant.
        unsafe { (*self.as_raw()).type_ }
    }

    /// Whether this is an Ethernet device (`ARPHRD_ETHER`), an 802.1Q VLAN device on one
    /// included.
    pub fn is_ethernet(&self) -> bool {
        self.hw_type() == bindings::ARPHRD_ETHER as u16
    }

    /// The 6-byte MAC address of an Ethernet device, `None` for other address lengths.
    pub fn mac_address(&self) -> Option<[u8; 6]> {
        let dev = self.as_raw();
        // SAFETY: The device is valid; `dev_addr` points to `addr_len` bytes.
        unsafe {
            if (*dev).addr_len != 6 || (*dev).dev_addr.is_null() {
                return None;
            }
            let mut mac = [0u8; 6];
            core::ptr::copy_nonoverlapping((*dev).dev_addr, mac.as_mut_ptr(), 6);
            Some(mac)
        }
    }

    /// Whether the interface is administratively up.
    pub fn is_running(&self) -> bool {
        // SAFETY: The device is valid by the type invariant.
        unsafe { bindings::netif_running(self.as_raw()) }
    }

    /// Whether the interface has carrier.
    pub fn has_carrier(&self) -> bool {
        // SAFETY: The device is valid by the type invariant.
        unsafe { bindings::netif_carrier_ok(self.as_raw()) }
    }

    /// The parent of the net device in the driver model (e.g. a virtio device), if any.
    pub fn parent_raw(&self) -> *mut bindings::device {
        // SAFETY: The device is valid by the type invariant.
        unsafe { (*self.as_raw()).dev.parent }
    }

    /// Takes a counted reference to the device.
    pub fn to_owned(&self) -> ARef<NetDevice> {
        ARef::from(self)
    }

    /// Makes the host a member of the IP multicast group `group` on this device, as a socket
    /// joining it does (IGMP or MLD reports, the group's MAC in the device's filter), so that
    /// the stack takes the group's packets arriving on it. `group` is an IPv6 address or an
    /// IPv4-mapped one (`::ffff:a.b.c.d`). Memberships are counted: each join needs one
    /// [`NetDevice::leave_ip_multicast`]. `EINVAL`: not a multicast address; `ENODEV`: the
    /// device has no IP configuration (any more). Sleeps.
    pub fn join_ip_multicast(&self, group: &[u8; 16]) -> Result<(), Error> {
        // SAFETY: The device is valid by the type invariant; `group` holds 16 bytes.
        to_result(unsafe { bindings::netdev_ip_multicast(self.as_raw(), group.as_ptr(), true) })
    }

    /// Ends one membership [`NetDevice::join_ip_multicast`] took. Sleeps.
    pub fn leave_ip_multicast(&self, group: &[u8; 16]) -> Result<(), Error> {
        // SAFETY: As above.
        to_result(unsafe { bindings::netdev_ip_multicast(self.as_raw(), group.as_ptr(), false) })
    }
}

/// A net device event delivered through the netdevice notifier chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The device was brought up.
    Up,
    /// The device was brought down.
    Down,
    /// The device changed state (carrier).
    Change,
    /// The MTU changed.
    ChangeMtu,
    /// The hardware address changed.
    ChangeAddr,
    /// The device is being unregistered.
    Unregister,
    /// An event this abstraction does not name.
    Other(u32),
}

impl Event {
    fn from_raw(event: u32) -> Self {
        match event {
            bindings::netdev_cmd_NETDEV_UP => Event::Up,
            bindings::netdev_cmd_NETDEV_DOWN => Event::Down,
            bindings::netdev_cmd_NETDEV_CHANGE => Event::Change,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => Event::ChangeMtu,
            bindings::netdev_cmd_NETDEV_CHANGEADDR => Event::ChangeAddr,
            bindings::netdev_cmd_NETDEV_UNREGISTER => Event::Unregister,
            other => Event::Other(other),
        }
    }
}

/// A handler of netdevice notifier events.
pub trait NotifierHandler: 'static {
    /// Called under RTNL for every event of every net device in every namespace.
    fn event(event: Event, dev: &NetDevice);
}

/// A registration on the netdevice notifier chain; unregisters on drop.
///
/// # Invariants
///
/// `nb` is registered with `register_netdevice_notifier` for the lifetime of the object.
#[pin_data(PinnedDrop)]
pub struct Notifier<T: NotifierHandler> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    _t: PhantomData<T>,
}

// SAFETY: The notifier block is only touched by the notifier chain, under its own lock.
unsafe impl<T: NotifierHandler> Send for Notifier<T> {}
// SAFETY: See `Send`.
unsafe impl<T: NotifierHandler> Sync for Notifier<T> {}

impl<T: NotifierHandler> Notifier<T> {
    /// Registers `T` on the netdevice notifier chain.
    ///
    /// Registration replays `Up` events for devices that are already up, as C does.
    pub fn register() -> impl PinInit<Self, Error> {
        let nb = bindings::notifier_block {
            notifier_call: Some(Self::notifier_call),
            next: core::ptr::null_mut(),
            priority: 0,
        };
        try_pin_init!(Self {
            nb <- PinInit::<_, Error>::pin_chain(Opaque::new(nb), |nb| {
                // SAFETY: `nb` is pinned inside `Self` and stays registered until `drop`.
                to_result(unsafe { bindings::register_netdevice_notifier(nb.get()) })
            }),
            _t: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by the netdevice notifier chain with a `netdev_notifier_info` as `ptr`.
    unsafe extern "C" fn notifier_call(
        _nb: *mut bindings::notifier_block,
        event: crate::ffi::c_ulong,
        ptr: *mut crate::ffi::c_void,
    ) -> crate::ffi::c_int {
        // SAFETY: The chain passes a `netdev_notifier_info` whose device is alive for the call.
        let dev = unsafe { NetDevice::from_raw(bindings::netdev_notifier_info_to_dev(ptr.cast())) };
        T::event(Event::from_raw(event as u32), dev);
        bindings::NOTIFY_DONE as crate::ffi::c_int
    }
}

#[pinned_drop]
impl<T: NotifierHandler> PinnedDrop for Notifier<T> {
    fn drop(self: core::pin::Pin<&mut Self>) {
        // SAFETY: By the type invariant `nb` is registered.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }
}
