// SPDX-License-Identifier: GPL-2.0

//! The wire under a software RoCE device: UDP tunnel sockets that receive its packets, and
//! transmission of the IP packets it builds.
//!
//! A software RoCEv2 device receives UDP datagrams to port 4791 on its netdev. Only one socket
//! of a namespace can hold that port, so devices do not open their own: [`Tunnel`] registers the
//! netdev with the namespace's RoCEv2 port that every software RoCE driver shares
//! (`ib_roce_udp`, also used by rdma_rxe), which opens the namespace's sockets with its first
//! device and closes them with its last. Several devices, of this driver or another, coexist on
//! different netdevs of one namespace. The port's receive callback runs in softirq context: it
//! finds the registered device of the netdev and hands the packet, from its IP header to its end,
//! to the driver's [`SoftDriver::receive`]; the packet is freed when that returns. A train (a
//! UDP GSO datagram of several packets) that a veth passed whole to another namespace comes
//! whole to a driver that takes them ([`SoftDriver::WHOLE_TRAINS`]): one [`RxPacket`] whose
//! [`RxPacket::segment`] says where its packets are; other drivers get its packets one by one
//! (`roce_udp.c` says when the port cuts a train even for a driver that takes them). A driver
//! that asks ([`SoftDriver::TRAINS_ON_ANOTHER_CPU`]) gets those trains from the port's work item
//! on another CPU, bottom halves disabled, in order with the packets that follow. Packets that
//! arrive on the loopback device (which any local process may send) go to no device.
//!
//! To send, the driver asks for a [`TxPacket`] of the packet's full length (IP header
//! included), writes every byte of it, and calls [`TxPacket::send`], which routes by the
//! addresses in the IP header through the netdev and passes the packet to `ip_local_out`
//! (`ip6_local_out`). [`TxPacket::send_train`] sends a UDP datagram of several packets that
//! the stack cuts apart (UDP segmentation offload), crossing it once for all of them. Process or softirq context, not with interrupts disabled (the IP layer
//! enables bottom halves again; such a call fails with `EINVAL` and a warning); no lock of
//! this layer is held. A connection's packets all go the same way: its [`RouteCache`] keeps
//! the route between them (IPv4), so that the routing tables are not searched for each
//! packet.
//!
//! The port leaves the netdev when the netdev unregisters (the namespace may go after that); the
//! driver drops the tunnel then, or with the device. Dropping waits for callbacks in flight.
//!
//! C headers: [`include/rdma/roce_udp.h`](srctree/include/rdma/roce_udp.h),
//! [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

use super::SoftDriver;
use crate::rdma::device::Device;
use crate::{
    bindings,
    error::{code::*, from_err_ptr, to_result, Result},
    net::netdev::NetDevice,
    str::CStr,
    types::Opaque,
};
use core::ptr::NonNull;

/// A netdev's place at its namespace's RoCEv2 port, delivering its packets to `T::receive`;
/// left on drop.
///
/// # Invariants
///
/// `ep` is an endpoint added by `rdma_wire_open` whose callback is `receive::<T>` for the `T`
/// this was opened for, owned by this, holding a reference on its netdev.
pub struct Tunnel {
    ep: NonNull<bindings::roce_udp_endpoint>,
}

// SAFETY: The endpoint is used only through thread-safe kernel calls.
unsafe impl Send for Tunnel {}
// SAFETY: `Tunnel` has no `&self` methods that touch the endpoint.
unsafe impl Sync for Tunnel {}

impl Tunnel {
    /// Receives the RoCEv2 packets of `netdev` for the device `name` of `T` (named in messages),
    /// opening the port of the netdev's namespace if no device there has yet. `EBUSY`: a device
    /// (of any driver) serves `netdev` already; `EADDRINUSE`: a socket that is no RoCE device's
    /// holds the port; `ENODEV`: `netdev` is unregistering. Sleeps.
    pub fn open<T: SoftDriver>(netdev: &NetDevice, name: &CStr) -> Result<Self> {
        // SAFETY: `netdev` is valid, `name` a C string; the callback matches the endpoint's.
        let ep = from_err_ptr(unsafe {
            bindings::rdma_wire_open(
                netdev.as_raw(),
                name.as_char_ptr(),
                Some(receive::<T>),
                T::WHOLE_TRAINS,
                T::TRAINS_ON_ANOTHER_CPU,
            )
        })?;
        let ep = NonNull::new(ep).ok_or(ENOMEM)?;
        // INVARIANT: Added above with `receive::<T>`.
        Ok(Tunnel { ep })
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        // SAFETY: Ours (type invariant), removed and freed once here. Removal waits for the
        // callbacks in flight, so the driver's code outlives them.
        unsafe { bindings::rdma_wire_close(self.ep.as_ptr()) };
    }
}

/// Continues the CRC-32 `crc` (reflected polynomial 0xedb88320, no inversions) over `data`:
/// the kernel's `crc32_le`, the ICRC's arithmetic.
pub fn crc32_le(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is valid for its length.
    unsafe { bindings::rdma_crc32_le(crc, data.as_ptr(), data.len()) }
}

/// A received RoCEv2 packet, from its IP header to its end (the ICRC), lent to
/// [`SoftDriver::receive`]; or a train of them, as one UDP datagram that the sender's stack
/// has not cut (see [`RxPacket::segment`]).
///
/// # Invariants
///
/// `data` points to `len` readable bytes that stay unchanged while `self` lives.
pub struct RxPacket<'a> {
    data: *const u8,
    len: usize,
    segment: usize,
    vouched_for: bool,
    vlan_id: Option<u16>,
    _skb: core::marker::PhantomData<&'a bindings::sk_buff>,
}

impl RxPacket<'_> {
    /// The packet's bytes: IP header, UDP header, IB transport headers, payload, ICRC. For a
    /// train, the datagram's IP and UDP headers (with its lengths), then the pieces.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: By the type invariant.
        unsafe { core::slice::from_raw_parts(self.data, self.len) }
    }

    /// 0 for a single packet (always, unless the driver takes trains,
    /// [`SoftDriver::WHOLE_TRAINS`]). Otherwise the packet is a train, a UDP GSO datagram
    /// (`SKB_GSO_UDP_L4`, as [`TxPacket::send_train`] sends them): the bytes after its UDP
    /// header are pieces of `segment` bytes, the last one as long or shorter, each the UDP
    /// payload of a packet that would carry a copy of the datagram's IP and UDP headers with
    /// its own lengths and, over IPv4, the identification of the datagram plus the piece's
    /// index (as the stack numbers the pieces it cuts). Nothing of it is checked: the
    /// datagram's lengths, `segment` and the pieces are the sender's.
    pub fn segment(&self) -> usize {
        self.segment
    }

    /// Whether the stack vouches for the bytes of this train: its checksum is still to be
    /// filled in (`CHECKSUM_PARTIAL`) because this host's UDP stack built it (a sender in
    /// another namespace, through a veth: [`TxPacket::send_train`] or a `UDP_SEGMENT` socket)
    /// and it has only been in memory since, or because the host's GRO merged it from packets
    /// whose UDP checksums it checked; and it does not come from a source the stack does not
    /// vouch for (tun, packet sockets, virtio: `SKB_GSO_DODGY`). The stack trusts the UDP and
    /// TCP checksums of such packets without computing them. It says nothing of what the
    /// sender meant (a local sender may write any bytes). Always false for a single packet.
    pub fn vouched_for(&self) -> bool {
        self.vouched_for
    }

    /// The 802.1Q VLAN the packet came on: the id of the VLAN device that received it (the
    /// device's netdev itself, or a VLAN device on it), `None` if it came untagged.
    pub fn vlan_id(&self) -> Option<u16> {
        self.vlan_id
    }
}

/// The endpoint's receive callback: softirq context (or the port's work item, bottom halves
/// disabled, for a driver that takes trains on another CPU), under RCU. Always consumes the
/// packet.
///
/// # Safety
///
/// Called by the namespace's RoCEv2 port with an endpoint added by [`Tunnel::open`] and a
/// packet it hands over.
unsafe extern "C" fn receive<T: SoftDriver>(
    ep: *mut bindings::roce_udp_endpoint,
    skb: *mut bindings::sk_buff,
) {
    let mut data = core::ptr::null();
    let mut len = 0u32;
    let mut segment = 0u32;
    let mut vouched_for = false;
    let mut vlan_id = NO_VLAN;
    // SAFETY: `skb` is ours; the out-pointers are valid. On success `data` and `len` describe
    // the linear packet from its network header on.
    let ok = unsafe {
        bindings::rdma_wire_rx(
            skb,
            &mut data,
            &mut len,
            &mut segment,
            &mut vouched_for,
            &mut vlan_id,
        )
    } == 0;
    let mut consumed = false;
    if ok {
        // SAFETY: `ep` is valid while callbacks may run (the tunnel removes it, waiting for
        // them, before freeing it), and `rdma_wire_open` holds a reference on its netdev
        // until then.
        let netdev = unsafe { NetDevice::from_raw((*ep).ndev) };
        if let Some(dev) = Device::<T>::get_by_netdev(netdev) {
            // INVARIANT: The bytes live in `skb`, which is freed only below.
            let packet = RxPacket {
                data,
                len: len as usize,
                segment: segment as usize,
                vouched_for,
                vlan_id: (vlan_id != NO_VLAN).then_some(vlan_id),
                _skb: core::marker::PhantomData,
            };
            T::receive(&*dev, &packet);
            consumed = true;
        }
    }
    // SAFETY: The packet is ours and nothing refers to it any more.
    unsafe { bindings::rdma_wire_free(skb, consumed) };
}

/// The helpers' "no VLAN" (ib_core's too: `rdma_read_gid_l2_fields`).
const NO_VLAN: u16 = 0xffff;

/// How a packet leaves, beside the addresses in its IP header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Egress {
    /// The packet is IPv6 (else IPv4).
    pub ipv6: bool,
    /// The 802.1Q VLAN to send it on: the VLAN device of that id on the device's netdev (or
    /// that netdev itself, if it is that VLAN), as a GID made for a VLAN device's address asks
    /// ([`crate::rdma::AddressVector::vlan_id`]). If there is no such VLAN device (any more)
    /// the packet is not sent (`ENETUNREACH`).
    pub vlan_id: Option<u16>,
    /// The IP header's TOS (traffic class): the packet's priority is the one the kernel gives
    /// IP packets of that TOS (`rt_tos2priority`), which a VLAN device maps to the frame's
    /// PCP (its `egress-qos-map`), as rdma_cm maps a TOS to the service level it reports.
    pub traffic_class: u8,
}

/// The route of one connection's IPv4 packets, kept between them (`struct dst_cache`, per
/// CPU): a packet sent with it takes the route found for an earlier one from the same source
/// address, while the kernel has not made that route obsolete.
///
/// A cache serves one destination through one netdev: a connection whose destination changes
/// takes a new cache (a route is not checked against the destination, whose next hop it may
/// not be). IPv6 packets are routed each on their own: an IPv6 route refers to its namespace's
/// tables, which a cache that outlived the namespace would free into. Any context but hard
/// interrupts.
///
/// # Invariants
///
/// `cache` is initialised (`dst_cache_init`) and destroyed only on drop.
pub struct RouteCache {
    cache: Opaque<bindings::dst_cache>,
}

// SAFETY: `dst_cache` is used only through its API, which keeps one entry per CPU and is safe
// from any thread (the helpers disable bottom halves around it).
unsafe impl Send for RouteCache {}
// SAFETY: As above.
unsafe impl Sync for RouteCache {}

impl RouteCache {
    /// An empty cache, charged to the caller's memory cgroup. Sleeps (per-CPU allocation).
    pub fn new() -> Result<Self> {
        let cache = Opaque::uninit();
        // SAFETY: The slot is valid for writes. On failure nothing is left to free (and
        // `Opaque` drops nothing); a `dst_cache` has no pointer to itself, so it may move.
        to_result(unsafe { bindings::rdma_route_cache_init(cache.get()) })?;
        // INVARIANT: Initialised above.
        Ok(RouteCache { cache })
    }
}

impl Drop for RouteCache {
    fn drop(&mut self) {
        // SAFETY: Initialised (type invariant), destroyed once; `&mut self` means no packet is
        // being sent with it.
        unsafe { bindings::dst_cache_destroy(self.cache.get()) };
    }
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
        Self::alloc(netdev, len, false)
    }

    /// [`TxPacket::new`] for a packet the caller can do without (a train, whose packets can
    /// also go one by one): the allocation dips into no emergency reserves and fails quietly,
    /// so that many large ones do not drain what atomic allocations of others need.
    pub fn new_optional(netdev: &NetDevice, len: usize) -> Result<Self> {
        Self::alloc(netdev, len, true)
    }

    fn alloc(netdev: &NetDevice, len: usize, optional: bool) -> Result<Self> {
        // No IP packet is longer (and the headroom is added to it in 32 bits).
        if len > 0xffff {
            return Err(EINVAL);
        }
        let len32 = len as u32;
        let mut data = core::ptr::null_mut();
        // SAFETY: `netdev` is valid; the out-pointer is valid.
        let skb = unsafe { bindings::rdma_wire_alloc(netdev.as_raw(), len32, optional, &mut data) };
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

    /// Routes the packet by the source and destination in its IP header (IPv6 if
    /// `egress.ipv6`) through `netdev` (or its VLAN device `egress` names), taking the route
    /// of an IPv4 packet from `routes` if it holds one for this source (and keeping it there),
    /// and sends it. The packet is gone either way.
    pub fn send(self, netdev: &NetDevice, egress: &Egress, routes: Option<&RouteCache>) -> Result {
        self.transmit(netdev, egress, routes, 0)
    }

    /// Sends the packet as [`TxPacket::send`] does, as a train: a UDP datagram that the IP
    /// stack cuts into one IP packet per `segment` bytes after the UDP header (the last piece
    /// shorter or as long), as it cuts a UDP socket's `UDP_SEGMENT` sends. Each piece carries
    /// a copy of the IP and UDP headers with its own lengths and UDP checksum and, over IPv4,
    /// the identification of the datagram plus the piece's index. The stack is crossed once
    /// for all the pieces (if the netdev cuts in hardware, or a veth passes the datagram whole,
    /// the receiving stack cuts it before its UDP socket).
    ///
    /// The driver writes the IP header (without options) and the UDP header with the lengths
    /// of the whole datagram; the UDP checksum is the layer's. `EINVAL` (the packet is gone):
    /// not UDP, lengths that disagree, fewer than two pieces or more than the kernel cuts.
    pub fn send_train(
        self,
        netdev: &NetDevice,
        egress: &Egress,
        routes: Option<&RouteCache>,
        segment: usize,
    ) -> Result {
        let segment = u32::try_from(segment)
            .ok()
            .filter(|&s| s != 0)
            .ok_or(EINVAL)?;
        self.transmit(netdev, egress, routes, segment)
    }

    /// Sends the packet, as a train of pieces of `segment` bytes unless that is 0.
    fn transmit(
        mut self,
        netdev: &NetDevice,
        egress: &Egress,
        routes: Option<&RouteCache>,
        segment: u32,
    ) -> Result {
        let ipv6 = egress.ipv6;
        // 0xffff is no VLAN id (they are 12 bits): refused rather than taken for none.
        let vlan_id = match egress.vlan_id {
            None => NO_VLAN,
            Some(id) if id < 0x1000 => id,
            Some(_) => return Err(EINVAL),
        };
        let (need, version) = if ipv6 { (40, 6) } else { (20, 4) };
        if self.len < need || self.bytes_mut()[0] >> 4 != version {
            return Err(EINVAL);
        }
        let skb = self.skb.as_ptr();
        core::mem::forget(self);
        let routes = routes.map_or(core::ptr::null_mut(), |r| r.cache.get());
        // SAFETY: `skb` is ours, linear, and starts with an IP header of the family named,
        // whole (the header's fields are the driver's business, but for what the helper checks
        // before cutting a train); the call consumes it. `routes` is null or an initialised
        // cache that outlives the call.
        to_result(unsafe {
            bindings::rdma_wire_xmit(
                netdev.as_raw(),
                skb,
                ipv6,
                routes,
                segment,
                vlan_id,
                egress.traffic_class,
            )
        })
    }
}

impl Drop for TxPacket {
    fn drop(&mut self) {
        // SAFETY: Owned and unsent (`send` forgets `self`).
        unsafe { bindings::rdma_wire_free(self.skb.as_ptr(), false) };
    }
}
