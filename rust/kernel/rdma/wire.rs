// SPDX-License-Identifier: GPL-2.0

//! The wire under a software RoCE device: UDP tunnel sockets that receive its packets, and
//! transmission of the IP packets it builds.
//!
//! A software RoCEv2 device receives UDP datagrams to port 4791 on its netdev. [`Tunnel`]
//! opens UDP tunnel sockets (IPv4 and, where the kernel has it, IPv6) bound to that netdev in
//! the netdev's own network namespace, so devices work in any namespace and several devices on
//! different netdevs coexist. Their `encap_rcv` callback runs in softirq context: it finds the
//! registered device of the netdev and hands the packet, from its IP header to its end, to the
//! driver's [`Driver::receive`]; the packet is freed when that returns.
//!
//! To send, the driver asks for a [`TxPacket`] of the packet's full length (IP header
//! included), writes every byte of it, and calls [`TxPacket::send`], which routes by the
//! addresses in the IP header through the netdev and passes the packet to `ip_local_out`
//! (`ip6_local_out`). Process or softirq context, not with interrupts disabled (the IP layer
//! enables bottom halves again; such a call fails with `EINVAL` and a warning); no lock of
//! this layer is held.
//!
//! The sockets must be closed before the netdev's namespace can go away (kernel sockets do not
//! hold it): the driver closes them when its netdev unregisters, or drops the tunnel with the
//! device. Closing waits for callbacks in flight.
//!
//! C headers: [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h),
//! [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

use super::{device::Device, driver::Driver};
use crate::{
    bindings,
    error::{code::*, from_err_ptr, to_result, Result},
    net::netdev::NetDevice,
};
use core::ptr::NonNull;

/// The UDP port of RoCEv2.
pub const ROCE_V2_PORT: u16 = 4791;

/// UDP tunnel sockets bound to one netdev, delivering to `T::receive`; closed on drop.
///
/// # Invariants
///
/// `v4` (and `v6` if not null) are open UDP tunnel sockets whose `encap_rcv` is
/// `encap_rcv::<T>` for the `T` this was opened for.
pub struct Tunnel {
    v4: NonNull<bindings::socket>,
    v6: *mut bindings::socket,
}

// SAFETY: The sockets are kernel objects used only through thread-safe kernel calls.
unsafe impl Send for Tunnel {}
// SAFETY: `Tunnel` has no `&self` methods that touch the sockets.
unsafe impl Sync for Tunnel {}

impl Tunnel {
    /// Opens the sockets on UDP `port` of `netdev`, in its namespace, for the devices of `T`.
    /// IPv6 is left out if the kernel has none (`EAFNOSUPPORT`); any other failure of either
    /// fails the whole (`EADDRINUSE`: another socket has the port). Sleeps.
    pub fn open<T: Driver>(netdev: &NetDevice, port: u16) -> Result<Self> {
        let open = |ipv6: bool| {
            // SAFETY: `netdev` is valid; the callback matches the socket's `encap_rcv`.
            from_err_ptr(unsafe {
                bindings::rdma_wire_open(
                    netdev.as_raw(),
                    ipv6,
                    port.to_be(),
                    Some(encap_rcv::<T>),
                )
            })
        };
        let v4 = NonNull::new(open(false)?).ok_or(ENOMEM)?;
        let v6 = match open(true) {
            Ok(v6) => v6,
            Err(e) if e.to_errno() == -(bindings::EAFNOSUPPORT as i32) => core::ptr::null_mut(),
            Err(e) => {
                // SAFETY: Opened above, closed once.
                unsafe { bindings::rdma_wire_close(v4.as_ptr(), core::ptr::null_mut()) };
                return Err(e);
            }
        };
        // INVARIANT: Both were opened above with `encap_rcv::<T>`.
        Ok(Tunnel { v4, v6 })
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        // SAFETY: Open sockets (type invariant), closed once here. Closing waits for the
        // callbacks in flight, so the driver's code outlives them.
        unsafe { bindings::rdma_wire_close(self.v4.as_ptr(), self.v6) };
    }
}

/// Continues the CRC-32 `crc` (reflected polynomial 0xedb88320, no inversions) over `data`:
/// the kernel's `crc32_le`, the ICRC's arithmetic.
pub fn crc32_le(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is valid for its length.
    unsafe { bindings::rdma_crc32_le(crc, data.as_ptr(), data.len()) }
}

/// A received RoCEv2 packet, from its IP header to its end (the ICRC), lent to
/// [`Driver::receive`].
///
/// # Invariants
///
/// `data` points to `len` readable bytes that stay unchanged while `self` lives.
pub struct RxPacket<'a> {
    data: *const u8,
    len: usize,
    _skb: core::marker::PhantomData<&'a bindings::sk_buff>,
}

impl RxPacket<'_> {
    /// The packet's bytes: IP header, UDP header, IB transport headers, payload, ICRC.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: By the type invariant.
        unsafe { core::slice::from_raw_parts(self.data, self.len) }
    }
}

/// The sockets' `encap_rcv`: softirq context. Always consumes the packet.
///
/// # Safety
///
/// Called by the UDP stack with a valid socket and packet it hands over.
unsafe extern "C" fn encap_rcv<T: Driver>(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> crate::ffi::c_int {
    let mut ndev = core::ptr::null_mut();
    let mut data = core::ptr::null();
    let mut len = 0u32;
    // SAFETY: `skb` is ours; the out-pointers are valid. On success `data` and `len` describe
    // the linear packet from its network header on, and `ndev` is its (held) device.
    let ok = unsafe { bindings::rdma_wire_rx(skb, &mut ndev, &mut data, &mut len) } == 0;
    let mut consumed = false;
    if ok && !ndev.is_null() {
        // SAFETY: The receive path runs under RCU, which keeps the packet's device from being
        // freed until it returns.
        let netdev = unsafe { NetDevice::from_raw(ndev) };
        if let Some(dev) = Device::<T>::get_by_netdev(netdev) {
            // INVARIANT: The bytes live in `skb`, which is freed only below.
            let packet = RxPacket {
                data,
                len: len as usize,
                _skb: core::marker::PhantomData,
            };
            T::receive(&*dev, &packet);
            consumed = true;
        }
    }
    // SAFETY: The packet is ours and nothing refers to it any more.
    unsafe { bindings::rdma_wire_free(skb, consumed) };
    0
}

/// A packet being built for transmission: `len` bytes, zeroed, for the driver to fill from the
/// IP header on.
///
/// # Invariants
///
/// `skb` is an skb this owns whose linear data at `data` holds `len` writable bytes.
pub struct TxPacket {
    skb: NonNull<bindings::sk_buff>,
    data: NonNull<u8>,
    len: usize,
}

// SAFETY: An skb being built may be sent from any context.
unsafe impl Send for TxPacket {}

impl TxPacket {
    /// An IP packet of `len` bytes to be sent through `netdev` (room for its link-layer
    /// header is reserved in front). Any context (atomic allocation).
    pub fn new(netdev: &NetDevice, len: usize) -> Result<Self> {
        // No IP packet is longer (and the headroom is added to it in 32 bits).
        if len > 0xffff {
            return Err(EINVAL);
        }
        let len32 = len as u32;
        let mut data = core::ptr::null_mut();
        // SAFETY: `netdev` is valid; the out-pointer is valid.
        let skb = unsafe { bindings::rdma_wire_alloc(netdev.as_raw(), len32, &mut data) };
        let skb = NonNull::new(skb).ok_or(ENOMEM)?;
        let Some(data) = NonNull::new(data) else {
            // SAFETY: Ours, unused.
            unsafe { bindings::rdma_wire_free(skb.as_ptr(), false) };
            return Err(ENOMEM);
        };
        // INVARIANT: `rdma_wire_alloc` put `len` zeroed bytes at `data`.
        Ok(TxPacket { skb, data, len })
    }

    /// The packet's bytes, to be written.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: By the type invariant; `&mut self` makes this the only view.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Routes the packet by the source and destination in its IP header (IPv6 if `ipv6`)
    /// through `netdev` and sends it. The packet is gone either way.
    pub fn send(mut self, netdev: &NetDevice, ipv6: bool) -> Result {
        let (need, version) = if ipv6 { (40, 6) } else { (20, 4) };
        if self.len < need || self.bytes_mut()[0] >> 4 != version {
            return Err(EINVAL);
        }
        let skb = self.skb.as_ptr();
        core::mem::forget(self);
        // SAFETY: `skb` is ours and starts with an IP header of the family named, whole (the
        // header's fields are the driver's business); the call consumes it.
        to_result(unsafe { bindings::rdma_wire_xmit(netdev.as_raw(), skb, ipv6) })
    }
}

impl Drop for TxPacket {
    fn drop(&mut self) {
        // SAFETY: Owned and unsent (`send` forgets `self`).
        unsafe { bindings::rdma_wire_free(self.skb.as_ptr(), false) };
    }
}
