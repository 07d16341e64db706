// SPDX-License-Identifier: GPL-2.0

//! RDMA (InfiniBand/RoCE) device drivers.
//!
//! A driver implements [`driver::Driver`], whose methods map to `struct ib_device_ops`, and
//! registers devices with [`device::Device::register`]. ib_core allocates the device and the
//! per-object structures; the driver's data lives inside those allocations, pin-initialised in
//! place by this layer and dropped when ib_core frees them (or when creation fails after the
//! driver's part succeeded). Each object's module holds its type and its ops callbacks.
//! What only software devices need (their RoCEv2 wire, QP timers and work items, `rdma link
//! add`) is in `sw`, behind `CONFIG_RUST_RDMA_SW`.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h)

pub mod ah;
pub mod attr;
pub mod cq;
pub mod device;
pub mod driver;
pub mod memory;
pub mod mmap;
pub mod mr;
pub mod mw;
pub mod object;
pub mod pd;
pub mod qp;
pub mod registry;
pub mod srq;
pub mod stats;
#[cfg(CONFIG_RUST_RDMA_SW)]
pub mod sw;
pub mod sysfs;
pub mod ucontext;
pub mod udata;
pub mod umem;
pub mod wr;

pub use ah::{AddressVector, Ah, Network};
pub use attr::{
    device_cap, AtomicCap, DeviceAttr, LinkLayer, Mtu, PhysState, PortAttr, PortEvent,
    PortImmutable, PortState,
};
pub use cq::{Cq, CqInitAttr};
pub use device::{Device, DeviceParams, DeviceRef};
pub use driver::Driver;
pub use memory::{KernelMemory, Piece};
pub use mmap::SharedBuffer;
pub use mr::{access, rereg, Mr, MrChange};
pub use mw::{Mw, MwType};
pub use pd::Pd;
pub use qp::{
    mask as qp_mask, modify_is_ok, DeferredWork, Qp, QpAttr, QpCap, QpEvent, QpInitAttr, QpState,
    QpType,
};
pub use registry::Held;
pub use srq::{mask as srq_mask, Srq, SrqAttr, SrqEvent};
pub use stats::Counter;
pub use ucontext::UContext;
pub use udata::Udata;
pub use umem::Umem;
pub use wr::{QpToken, RecvWr, SendOp, SendWr, Sge, UdDest, Wc};
