// SPDX-License-Identifier: GPL-2.0

//! The ferroce RDMA device: one RoCEv2 port bound to an Ethernet net device.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{
    alloc::KVVec,
    net::netdev::NetDevice,
    prelude::*,
    rdma::{sw::wire::Tunnel, Device, Mtu, PortEvent},
    sync::{Arc, Mutex, SpinLockIrq},
    types::ARef,
};

use crate::{
    protocol::{count::ObjectCount, keys::KeyTable, limits, pkey},
    verbs::{ah, mcast, stats},
};

/// The driver id libibverbs binds ferroce's provider by (`RDMA_DRIVER_FERROCE`).
pub(crate) const DRIVER_ID: u32 = 64;
/// The uverbs ABI version (`FERROCE_UVERBS_ABI_VERSION`).
pub(crate) const ABI_VERSION: u32 = 1;
/// The only port.
pub(crate) const PORT: u32 = 1;

/// The ferroce driver.
pub(crate) struct Ferroce;

/// Per-device state.
#[pin_data]
pub(crate) struct DeviceData {
    /// The port state last reported to ib_core (events are sent on changes only).
    pub(crate) port_active: AtomicBool,
    // What objects take from the device, shared with the values that give it back when the
    // objects are dropped (numbers.rs).
    /// Protection domains in existence.
    pub(crate) pds: Arc<ObjectCount>,
    /// Completion queues in existence.
    pub(crate) cqs: Arc<ObjectCount>,
    /// Shared receive queues in existence.
    pub(crate) srqs: Arc<ObjectCount>,
    /// Memory windows in existence.
    pub(crate) mws: Arc<ObjectCount>,
    /// The memory keys of the device's MRs and memory windows (their number is bounded by
    /// the table).
    pub(crate) mr_keys: Arc<Mutex<KeyTable<KVVec<u16>>>>,
    /// The serial of the next MR (`MrData::serial`).
    pub(crate) mr_serials: AtomicU64,
    /// The serial of the next QP (`QpData::serial`).
    pub(crate) qp_serials: AtomicU64,
    /// Whether QP1 (ib_core's general services QP) exists.
    pub(crate) gsi_qp: Arc<AtomicBool>,
    /// The numbers of the device's QPs (bounded by the table: max_qp).
    pub(crate) qpns: Arc<Mutex<KeyTable<KVVec<u16>>>>,
    /// The numbers of the device's AHs (bounded by the table as well).
    pub(crate) ah_nums: Arc<SpinLockIrq<KeyTable<KVVec<u16>>>>,
    /// Where each AH's UD sends go, by AH number.
    pub(crate) ah_dests: Arc<ah::DestTable>,
    /// The port's counters.
    pub(crate) counters: stats::Counters,
    /// The port's P_Key table, which the administrator sets (`ports/1/pkey_table`).
    pub(crate) pkeys: pkey::Table,
    /// Which QPs are attached to which multicast groups (read by the receive path).
    #[pin]
    pub(crate) mcast: SpinLockIrq<mcast::Attachments>,
    /// Held while a QP attaches or detaches (`mcast.rs`).
    #[pin]
    pub(crate) mcast_changes: Mutex<()>,
    /// The device's place at its namespace's RoCEv2 port, which receives its packets; left
    /// when the netdev unregisters (before its namespace may go) or with the device.
    #[pin]
    pub(crate) tunnel: Mutex<Option<Tunnel>>,
    /// The netdev, held from `rdma link add` until it unregisters (or the device goes): the
    /// data path takes it from here in any context (ib_core's `ib_device_get_netdev` takes a
    /// lock that is not softirq-safe). Holding it also keeps the netdev's namespace alive
    /// until the tunnel above is closed (fields drop in order).
    #[pin]
    pub(crate) netdev: SpinLockIrq<Option<ARef<NetDevice>>>,
}

impl DeviceData {
    /// The netdev the device sends through, unless it went away. Any context.
    pub(crate) fn netdev(&self) -> Option<ARef<NetDevice>> {
        self.netdev.lock().clone()
    }

    /// The netdev is unregistering: its sockets close and it is let go now, while its
    /// namespace surely exists (the device itself goes later, from a work item).
    pub(crate) fn unbind(&self) {
        drop(self.tunnel.lock().take());
        let netdev = self.netdev.lock().take();
        drop(netdev);
    }

    /// Reports a port state change (`IB_EVENT_PORT_ACTIVE`/`_ERR`) if the netdev's state differs
    /// from the last one reported.
    pub(crate) fn sync_port_state(&self, dev: &Device<Ferroce>, netdev: &NetDevice) {
        let active = port_is_active(netdev);
        if self.port_active.swap(active, Ordering::AcqRel) != active {
            let event = if active {
                PortEvent::Active
            } else {
                PortEvent::Error
            };
            dev.dispatch_port_event(PORT, event);
        }
    }
}

/// The largest path MTU a RoCEv2 packet on `netdev` can carry now.
pub(crate) fn active_mtu(netdev: &NetDevice) -> Mtu {
    limits::path_mtu_bytes(netdev.mtu())
        .and_then(Mtu::fitting)
        .unwrap_or(Mtu::Mtu256)
}

pub(crate) fn port_is_active(netdev: &NetDevice) -> bool {
    netdev.is_running() && netdev.has_carrier()
}
