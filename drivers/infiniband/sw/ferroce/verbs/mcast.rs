// SPDX-License-Identifier: GPL-2.0

//! UD multicast groups (`ibv_attach_mcast`, `ibv_detach_mcast`): the device's table of
//! attachments (`protocol/mcast.rs`) and the host's IP membership of each group on the
//! netdev.
//!
//! The first QP of the device to attach to a group makes the host a member of the group's IP
//! multicast address on the netdev (IGMP/MLD, the group's MAC in the netdev's filter), as a
//! socket joining it would, so that the IP stack takes the group's datagrams and hands them to
//! the RoCEv2 port; the last QP to detach ends that membership. rdma_cm joins IPv4 groups
//! itself as well (`cma_igmp_send`); memberships are counted, so the two do not clash. The
//! stack loops a group's datagrams back to their sender's host too (a multicast route of a
//! group the host is a member of), so attached QPs of the sending device get them like any
//! other.

use kernel::{alloc::KVVec, prelude::*, rdma::Qp};

use crate::{
    protocol::mcast::{self, Attachment, Refused, Table},
    verbs::device::Ferroce,
};

/// A device's attachments.
pub(crate) type Attachments = Table<KVVec<Attachment>>;

/// An empty table, as long as the device's `max_total_mcast_qp_attach`.
pub(crate) fn new_table() -> Result<Attachments> {
    Ok(Table::new(KVVec::from_elem(
        Attachment::default(),
        mcast::MAX_ATTACHMENTS,
        GFP_KERNEL,
    )?))
}

/// Attaches the UD QP `qp` to `mgid` (again). `ENOMEM` at a limit the device reports.
pub(crate) fn attach(qp: &Qp<Ferroce>, mgid: &[u8; 16]) -> Result {
    let dev = qp.device();
    let data = dev.data();
    // Attaches and detaches one at a time, so that the IP memberships follow the table in
    // order (a first attach's join never comes after a last detach's leave of the same group).
    let _changes = data.mcast_changes.lock();
    let first = data
        .mcast
        .lock()
        .attach(mgid, qp.qp_num())
        .map_err(|e| match e {
            Refused::NotMulticast => EINVAL,
            Refused::Full => ENOMEM,
        })?;
    if first {
        let joined = data
            .netdev()
            .ok_or(ENODEV)
            .and_then(|nd| nd.join_ip_multicast(mgid));
        if let Err(e) = joined {
            data.mcast.lock().detach(mgid, qp.qp_num());
            return Err(e);
        }
    }
    Ok(())
}

/// Undoes one attach of `qp` to `mgid`; `EINVAL` if there is none.
pub(crate) fn detach(qp: &Qp<Ferroce>, mgid: &[u8; 16]) -> Result {
    let dev = qp.device();
    let data = dev.data();
    let _changes = data.mcast_changes.lock();
    let last = data.mcast.lock().detach(mgid, qp.qp_num()).ok_or(EINVAL)?;
    if last {
        // Without the netdev (it unregistered) the membership went with it.
        if let Some(nd) = data.netdev() {
            let _ = nd.leave_ip_multicast(mgid);
        }
    }
    Ok(())
}
