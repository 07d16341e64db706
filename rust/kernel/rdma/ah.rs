// SPDX-License-Identifier: GPL-2.0

//! Address handles (`struct ib_ah`) and the address vectors they hold (`struct rdma_ah_attr`).
//!
//! For RoCE ports ib_core resolves the destination MAC (from the GID, through the neighbour
//! table) before the driver sees a user AH, so an [`AddressVector`] is complete.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    driver::{Adapter, Driver},
    object::{AhKind, Object},
    pd::Pd,
    udata::Udata,
};
use crate::{
    bindings,
    error::{code::*, from_result, Result},
};

/// An address handle with the driver's data (`T::AhData`) in ib_core's allocation.
pub type Ah<T> = Object<T, AhKind>;

/// The network header a RoCEv2 path uses, from the type of its source GID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// IPv4 (the GIDs are IPv4-mapped IPv6 addresses).
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// A RoCE address vector: where packets of a UD work request or an RC/UC QP go.
#[derive(Clone, Copy, Debug)]
pub struct AddressVector {
    /// The local port.
    pub port_num: u32,
    /// Service level (the Ethernet priority for RoCE).
    pub sl: u8,
    /// Static rate (`IB_RATE_*`), 0 for the port's rate.
    pub static_rate: u8,
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Source GID.
    pub sgid: [u8; 16],
    /// Index of the source GID in the port's table.
    pub sgid_index: u8,
    /// IPv6 flow label (RoCEv2 uses it for the UDP source port).
    pub flow_label: u32,
    /// IP hop limit / TTL.
    pub hop_limit: u8,
    /// IP traffic class / TOS.
    pub traffic_class: u8,
    /// Destination MAC, resolved by ib_core.
    pub dmac: [u8; 6],
    /// IPv4 or IPv6.
    pub network: Network,
    /// The 802.1Q VLAN of the source GID: ib_core makes a GID for each address of a VLAN
    /// device (on the device's netdev, or the netdev itself), and packets from it go tagged
    /// through that VLAN device. `None`: untagged.
    pub vlan_id: Option<u16>,
}

impl AddressVector {
    /// Reads a RoCE address vector; a vector without a GRH or a source GID is refused
    /// (`EINVAL`): RoCE routes by IP; one whose source GID is being deleted (its netdev gone
    /// from the entry) with `ENODEV`.
    ///
    /// # Safety
    ///
    /// `attr` must be a valid `rdma_ah_attr` for the duration of the call.
    pub(crate) unsafe fn from_raw(attr: *const bindings::rdma_ah_attr) -> Result<Self> {
        // SAFETY: Valid for the call (the caller's promise).
        let a = unsafe { &*attr };
        if a.type_ != bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
            || u32::from(a.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH == 0
            || a.grh.sgid_attr.is_null()
        {
            return Err(EINVAL);
        }
        // SAFETY: `sgid_attr` is a held GID table entry for the life of the attribute.
        let sgid = unsafe { (*a.grh.sgid_attr).gid.raw };
        // SAFETY: As above.
        let vlan_id = unsafe { bindings::rdma_gid_attr_vlan_id(a.grh.sgid_attr) };
        // A GID being deleted: packets from it would go untagged, wherever its VLAN was.
        let vlan_id = u16::try_from(vlan_id).map_err(|_| ENODEV)?;
        let v4_mapped = sgid[..10].iter().all(|&b| b == 0) && sgid[10] == 0xff && sgid[11] == 0xff;
        Ok(AddressVector {
            port_num: a.port_num,
            sl: a.sl,
            static_rate: a.static_rate,
            // SAFETY: Every member of the GID union is plain bytes.
            dgid: unsafe { a.grh.dgid.raw },
            sgid,
            sgid_index: a.grh.sgid_index,
            flow_label: a.grh.flow_label,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
            // SAFETY: A RoCE attribute's union holds the `roce` member.
            dmac: unsafe { a.__bindgen_anon_1.roce.dmac },
            network: if v4_mapped {
                Network::Ipv4
            } else {
                Network::Ipv6
            },
            vlan_id: (vlan_id < 0x1000).then_some(vlan_id),
        })
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core with a zeroed AH of `size_ib_ah` bytes whose `device` and `pd` are set.
    pub(crate) unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The AH's PD is live for the call; `init` and its attribute are valid.
            let (pd, av, sleepable) = unsafe {
                (
                    Pd::<T>::from_raw((*ah).pd),
                    AddressVector::from_raw((*init).ah_attr)?,
                    (*init).flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0,
                )
            };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let data = T::create_ah(pd, &av, sleepable, &mut udata)?;
            // SAFETY: ib_core's AH allocation, never moved, its data slots uninitialised.
            unsafe { Ah::<T>::init_in_place(ah, (), data) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for an AH whose create op succeeded.
    pub(crate) unsafe extern "C" fn destroy_ah(
        ah: *mut bindings::ib_ah,
        _flags: u32,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys each AH once, after its create op succeeded.
        unsafe { Ah::<T>::destroy(ah, T::destroy_ah) };
        0
    }
}
