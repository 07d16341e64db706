// SPDX-License-Identifier: GPL-2.0

//! The part of the RDMA abstractions that only software RDMA devices use, behind
//! `CONFIG_RUST_RDMA_SW`.
//!
//! A device with hardware behind it gets its packets, timers and doorbells from that hardware;
//! a software device (soft-RoCE, such as ferroce or rdma_rxe) does all of it on the CPU, and
//! needs from the kernel what a NIC's firmware would provide:
//!
//! - [`wire`]: the UDP tunnel its RoCEv2 packets arrive on (the namespace's shared port) and the
//!   transmission of the IP packets it builds;
//! - [`deferred`]: a timer and a work item in every QP, for retransmission, RNR back-off and
//!   work that cannot be done where it was asked for;
//! - [`link`]: device creation by `rdma link add` on a netdev;
//! - [`context`]: what work done in a system call on behalf of a doorbell may do between steps;
//! - [`random`]: the random numbers in keys and QP numbers that a peer must not guess.
//!
//! A software driver implements [`SoftDriver`] beside [`Driver`] (whose methods stay one to one
//! with `struct ib_device_ops`) and keeps [`deferred::Deferred`] in its QPs.
//!
//! C headers: [`include/rdma/roce_udp.h`](srctree/include/rdma/roce_udp.h),
//! [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h)

pub mod context;
pub mod deferred;
pub mod link;
pub mod random;
pub mod wire;

use super::{device::Device, driver::Driver, qp::Qp};

/// The entry points of a software RDMA device that no `ib_device_ops` member carries: the
/// expiry of a QP's timer, the run of a QP's work item and a packet from the wire.
pub trait SoftDriver: Driver<QpDeferred = deferred::Deferred> {
    /// The QP's timer ([`Qp::arm_timer`]) expired. Softirq context.
    fn qp_timer(qp: &Qp<Self>);

    /// The QP's work item ([`Qp::queue_work`]) runs. Process context; may sleep.
    fn qp_work(qp: &Qp<Self>);

    /// Whether [`SoftDriver::receive`] takes trains whole ([`wire::RxPacket::segment`]): UDP
    /// GSO datagrams of several packets, which otherwise come cut, one packet at a time.
    const WHOLE_TRAINS: bool = false;

    /// Whether trains taken whole ([`SoftDriver::WHOLE_TRAINS`]) are handed to
    /// [`SoftDriver::receive`] on another CPU than the one that received them (by a work item
    /// of the port, in order with the packets that follow them): what the receiver does with a
    /// train's payload then runs beside the sender, which on a veth shares the receiving CPU.
    const TRAINS_ON_ANOTHER_CPU: bool = false;

    /// A packet arrived for `dev` on a [`wire::Tunnel`] the driver opened, or a train of them
    /// if the driver takes them ([`SoftDriver::WHOLE_TRAINS`]). Softirq context, or with
    /// [`SoftDriver::TRAINS_ON_ANOTHER_CPU`] maybe a work item with bottom halves disabled
    /// (either way atomic, and no other packet of the device is handed over on this CPU
    /// meanwhile); the packet is freed when this returns.
    fn receive(dev: &Device<Self>, packet: &wire::RxPacket<'_>);
}
