// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes reported to ib_core (`struct ib_device_attr`,
//! `struct ib_port_attr`, `struct ib_port_immutable`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use crate::{bindings, error::code::EINVAL, error::Result};

/// An InfiniBand path MTU (`enum ib_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum Mtu {
    /// 256 bytes.
    Mtu256 = bindings::ib_mtu_IB_MTU_256,
    /// 512 bytes.
    Mtu512 = bindings::ib_mtu_IB_MTU_512,
    /// 1024 bytes.
    Mtu1024 = bindings::ib_mtu_IB_MTU_1024,
    /// 2048 bytes.
    Mtu2048 = bindings::ib_mtu_IB_MTU_2048,
    /// 4096 bytes.
    Mtu4096 = bindings::ib_mtu_IB_MTU_4096,
}

impl Mtu {
    /// The MTU in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::Mtu;
    /// assert_eq!(Mtu::Mtu1024.bytes(), 1024);
    /// assert_eq!(Mtu::Mtu4096.bytes(), 4096);
    /// ```
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// The MTU an `enum ib_mtu` value names, if it names one.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::Mtu;
    /// assert_eq!(Mtu::from_raw(3), Some(Mtu::Mtu1024));
    /// assert_eq!(Mtu::from_raw(0), None);
    /// assert_eq!(Mtu::from_raw(6), None);
    /// ```
    pub const fn from_raw(v: u32) -> Option<Mtu> {
        match v {
            bindings::ib_mtu_IB_MTU_256 => Some(Mtu::Mtu256),
            bindings::ib_mtu_IB_MTU_512 => Some(Mtu::Mtu512),
            bindings::ib_mtu_IB_MTU_1024 => Some(Mtu::Mtu1024),
            bindings::ib_mtu_IB_MTU_2048 => Some(Mtu::Mtu2048),
            bindings::ib_mtu_IB_MTU_4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }

    /// The largest IB MTU that fits in `bytes`, or `None` below 256.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::Mtu;
    /// assert_eq!(Mtu::fitting(1408), Some(Mtu::Mtu1024));
    /// assert_eq!(Mtu::fitting(4096), Some(Mtu::Mtu4096));
    /// assert_eq!(Mtu::fitting(8908), Some(Mtu::Mtu4096));
    /// assert_eq!(Mtu::fitting(255), None);
    /// ```
    pub const fn fitting(bytes: u32) -> Option<Mtu> {
        if bytes >= 4096 {
            Some(Mtu::Mtu4096)
        } else if bytes >= 2048 {
            Some(Mtu::Mtu2048)
        } else if bytes >= 1024 {
            Some(Mtu::Mtu1024)
        } else if bytes >= 512 {
            Some(Mtu::Mtu512)
        } else if bytes >= 256 {
            Some(Mtu::Mtu256)
        } else {
            None
        }
    }
}

/// The link layer under a port (`enum rdma_link_layer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum LinkLayer {
    /// InfiniBand.
    Infiniband = bindings::rdma_link_layer_IB_LINK_LAYER_INFINIBAND,
    /// Ethernet (RoCE, iWARP).
    Ethernet = bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET,
}

/// The logical state of a port (`enum ib_port_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum PortState {
    /// The link is down.
    Down = bindings::ib_port_state_IB_PORT_DOWN,
    /// The link is up and the port can carry traffic.
    Active = bindings::ib_port_state_IB_PORT_ACTIVE,
}

/// The physical state of a port (`enum ib_port_phys_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PhysState {
    /// Administratively disabled (the netdev is down).
    Disabled = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8,
    /// Up but without a link partner (no carrier).
    Polling = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING as u8,
    /// Link up.
    LinkUp = bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8,
}

/// Atomic operation support (`enum ib_atomic_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum AtomicCap {
    /// No atomic operations.
    None = bindings::ib_atomic_cap_IB_ATOMIC_NONE,
    /// Atomic with respect to this device's own operations.
    Hca = bindings::ib_atomic_cap_IB_ATOMIC_HCA,
    /// Atomic with respect to the CPU as well.
    Glob = bindings::ib_atomic_cap_IB_ATOMIC_GLOB,
}

/// Port events dispatched to ib_core's event handlers (`enum ib_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum PortEvent {
    /// The port became active.
    Active = bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
    /// The port went down.
    Error = bindings::ib_event_type_IB_EVENT_PORT_ERR,
    /// The port's GID table changed.
    GidChange = bindings::ib_event_type_IB_EVENT_GID_CHANGE,
    /// The port's P_Key table changed (ib_core reads it again).
    PkeyChange = bindings::ib_event_type_IB_EVENT_PKEY_CHANGE,
}

fn int(v: u32) -> Result<i32> {
    i32::try_from(v).map_err(|_| EINVAL)
}

/// Device attributes, as `ib_query_device()` reports them.
///
/// Fields not named here are reported as zero (unsupported).
#[derive(Clone, Debug, Default)]
pub struct DeviceAttr {
    /// Firmware version.
    pub fw_ver: u64,
    /// System image GUID, in host byte order.
    pub sys_image_guid: u64,
    /// Largest memory region in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes (bit n set: 2^n bytes).
    pub page_size_cap: u64,
    /// IEEE vendor id.
    pub vendor_id: u32,
    /// Vendor part id.
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Device capability flags (`IB_DEVICE_*`).
    pub device_cap_flags: u64,
    /// Whether `rdma link delete` may remove the device.
    pub allow_user_unregister: bool,
    /// Maximum number of QPs.
    pub max_qp: u32,
    /// Maximum work requests per queue.
    pub max_qp_wr: u32,
    /// Maximum scatter/gather entries per send work request.
    pub max_send_sge: u32,
    /// Maximum scatter/gather entries per receive work request.
    pub max_recv_sge: u32,
    /// Maximum scatter/gather entries per RDMA READ.
    pub max_sge_rd: u32,
    /// Maximum number of CQs.
    pub max_cq: u32,
    /// Maximum entries per CQ.
    pub max_cqe: u32,
    /// Maximum number of MRs.
    pub max_mr: u32,
    /// Maximum number of PDs.
    pub max_pd: u32,
    /// Maximum outstanding RDMA READ/atomic requests a QP accepts as responder.
    pub max_qp_rd_atom: u32,
    /// Maximum outstanding RDMA READ/atomic responder resources of the device.
    pub max_res_rd_atom: u32,
    /// Maximum outstanding RDMA READ/atomic requests a QP initiates.
    pub max_qp_init_rd_atom: u32,
    /// Atomic operation support.
    pub atomic_cap: Option<AtomicCap>,
    /// Maximum number of memory windows.
    pub max_mw: u32,
    /// Maximum number of multicast groups.
    pub max_mcast_grp: u32,
    /// Maximum QPs per multicast group.
    pub max_mcast_qp_attach: u32,
    /// Maximum QPs attached to multicast groups in total.
    pub max_total_mcast_qp_attach: u32,
    /// Maximum number of address handles.
    pub max_ah: u32,
    /// Maximum number of SRQs.
    pub max_srq: u32,
    /// Maximum work requests per SRQ.
    pub max_srq_wr: u32,
    /// Maximum scatter/gather entries per SRQ work request.
    pub max_srq_sge: u32,
    /// Maximum pages in a fast-registration page list.
    pub max_fast_reg_page_list_len: u32,
    /// Number of partition keys.
    pub max_pkeys: u16,
    /// Local CA ACK delay (4.096 us * 2^value).
    pub local_ca_ack_delay: u8,
}

impl DeviceAttr {
    /// Writes the attributes into `out`, failing on values C cannot represent.
    pub(crate) fn write_to(&self, out: &mut bindings::ib_device_attr) -> Result {
        out.fw_ver = self.fw_ver;
        out.sys_image_guid = self.sys_image_guid.to_be();
        out.max_mr_size = self.max_mr_size;
        out.page_size_cap = self.page_size_cap;
        out.vendor_id = self.vendor_id;
        out.vendor_part_id = self.vendor_part_id;
        out.hw_ver = self.hw_ver;
        out.device_cap_flags = self.device_cap_flags;
        out.kernel_cap_flags = if self.allow_user_unregister {
            bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64
        } else {
            0
        };
        out.max_qp = int(self.max_qp)?;
        out.max_qp_wr = int(self.max_qp_wr)?;
        out.max_send_sge = int(self.max_send_sge)?;
        out.max_recv_sge = int(self.max_recv_sge)?;
        out.max_sge_rd = int(self.max_sge_rd)?;
        out.max_cq = int(self.max_cq)?;
        out.max_cqe = int(self.max_cqe)?;
        out.max_mr = int(self.max_mr)?;
        out.max_pd = int(self.max_pd)?;
        out.max_qp_rd_atom = int(self.max_qp_rd_atom)?;
        out.max_res_rd_atom = int(self.max_res_rd_atom)?;
        out.max_qp_init_rd_atom = int(self.max_qp_init_rd_atom)?;
        out.atomic_cap = self
            .atomic_cap
            .map_or(bindings::ib_atomic_cap_IB_ATOMIC_NONE, |c| c as u32);
        out.max_mw = int(self.max_mw)?;
        out.max_mcast_grp = int(self.max_mcast_grp)?;
        out.max_mcast_qp_attach = int(self.max_mcast_qp_attach)?;
        out.max_total_mcast_qp_attach = int(self.max_total_mcast_qp_attach)?;
        out.max_ah = int(self.max_ah)?;
        out.max_srq = int(self.max_srq)?;
        out.max_srq_wr = int(self.max_srq_wr)?;
        out.max_srq_sge = int(self.max_srq_sge)?;
        out.max_fast_reg_page_list_len = self.max_fast_reg_page_list_len;
        out.max_pkeys = self.max_pkeys;
        out.local_ca_ack_delay = self.local_ca_ack_delay;
        Ok(())
    }
}

/// Port attributes, as `ib_query_port()` reports them.
#[derive(Clone, Debug)]
pub struct PortAttr {
    /// Logical state.
    pub state: PortState,
    /// Physical state.
    pub phys_state: PhysState,
    /// Largest path MTU the port supports.
    pub max_mtu: Mtu,
    /// Path MTU the link currently allows.
    pub active_mtu: Mtu,
    /// The link-layer MTU in bytes.
    pub phys_mtu: u32,
    /// GID table length.
    pub gid_tbl_len: u32,
    /// Port capability flags (`IB_PORT_*`).
    pub port_cap_flags: u32,
    /// Largest message in bytes.
    pub max_msg_sz: u32,
    /// P_Key table length.
    pub pkey_tbl_len: u16,
    /// Number of virtual lanes.
    pub max_vl_num: u8,
    /// Active speed (`IB_SPEED_*`).
    pub active_speed: u16,
    /// Active width (`IB_WIDTH_*`).
    pub active_width: u8,
}

impl PortAttr {
    /// Writes the attributes into `out`.
    pub(crate) fn write_to(&self, out: &mut bindings::ib_port_attr) -> Result {
        out.state = self.state as u32;
        out.phys_state = self.phys_state as u8;
        out.max_mtu = self.max_mtu as u32;
        out.active_mtu = self.active_mtu as u32;
        out.phys_mtu = self.phys_mtu;
        out.gid_tbl_len = int(self.gid_tbl_len)?;
        out.port_cap_flags = self.port_cap_flags;
        out.max_msg_sz = self.max_msg_sz;
        out.pkey_tbl_len = self.pkey_tbl_len;
        out.max_vl_num = self.max_vl_num;
        out.active_speed = self.active_speed;
        out.active_width = self.active_width;
        Ok(())
    }
}

/// Port properties that never change while the device is registered.
#[derive(Clone, Copy, Debug)]
pub struct PortImmutable {
    /// P_Key table length.
    pub pkey_tbl_len: u32,
    /// GID table length.
    pub gid_tbl_len: u32,
    /// Core capability flags (`RDMA_CORE_PORT_*`).
    pub core_cap_flags: u32,
    /// Largest MAD in bytes.
    pub max_mad_size: u32,
}

impl PortImmutable {
    /// A RoCEv2 (RoCE over UDP) port: ib_core keeps its GID table from the netdev's addresses.
    pub const fn roce_v2(pkey_tbl_len: u32, gid_tbl_len: u32) -> Self {
        Self {
            pkey_tbl_len,
            gid_tbl_len,
            core_cap_flags: bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP,
            max_mad_size: bindings::IB_MGMT_MAD_SIZE,
        }
    }

    pub(crate) fn write_to(&self, out: &mut bindings::ib_port_immutable) -> Result {
        out.pkey_tbl_len = int(self.pkey_tbl_len)?;
        out.gid_tbl_len = int(self.gid_tbl_len)?;
        out.core_cap_flags = self.core_cap_flags;
        out.max_mad_size = self.max_mad_size;
        Ok(())
    }
}

/// Device capability flags for [`DeviceAttr::device_cap_flags`] (`enum ib_device_cap_flags`).
pub mod device_cap {
    use crate::bindings;

    /// The device dispatches port-active and port-error events.
    pub const PORT_ACTIVE_EVENT: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT as u64;
    /// The device reports a system image GUID.
    pub const SYS_IMAGE_GUID: u64 = bindings::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID as u64;
    /// The device offers memory windows (type 1).
    pub const MEM_WINDOW: u64 = bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW as u64;
    /// The device offers type 2B memory windows (bound to a QP).
    pub const MEM_WINDOW_TYPE_2B: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B as u64;
    /// The device resizes SRQs (`IB_SRQ_MAX_WR` in `modify_srq`).
    pub const SRQ_RESIZE: u64 = bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE as u64;
    /// The device executes `IB_WR_ATOMIC_WRITE` (8 bytes stored in one piece, RC).
    pub const ATOMIC_WRITE: u64 = bindings::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE as u64;
    /// The device executes RDMA FLUSH with the global visibility placement type (RC); ib_core
    /// then lets memory be registered with `IB_ACCESS_FLUSH_GLOBAL`.
    pub const FLUSH_GLOBAL: u64 = bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL as u64;
    /// The device executes RDMA FLUSH with the persistence placement type (RC); ib_core then
    /// lets memory be registered with `IB_ACCESS_FLUSH_PERSISTENT`.
    pub const FLUSH_PERSISTENT: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_PERSISTENT as u64;
    /// The device offers the memory management extensions to kernel users: fast registration
    /// (`alloc_mr`, `map_mr_sg`, `IB_WR_REG_MR`), `IB_WR_LOCAL_INV` and `IB_WR_SEND_WITH_INV`.
    /// ULPs that register memory per I/O (nvme-rdma, iSER, NFS/RDMA) require it.
    pub const MEM_MGT_EXTENSIONS: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
}
