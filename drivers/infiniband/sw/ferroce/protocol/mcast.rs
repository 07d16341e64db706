// SPDX-License-Identifier: GPL-2.0

//! UD multicast: which of a device's QPs are attached to which groups (`ibv_attach_mcast`).
//!
//! A group is named by its MGID, a multicast IPv6 address or an IPv4-mapped one
//! (`::ffff:224.x.y.z`): RoCEv2 sends a group's datagrams to that IP address, with the
//! destination QP `0xffffff`, and every QP of the host attached to the group takes them. The
//! table is a fixed array of attachments, as long as the device's `max_total_mcast_qp_attach`;
//! it also enforces `max_mcast_grp` and `max_mcast_qp_attach`, so the device reports exactly
//! what it holds. An attachment is counted: ib_core counts each successful attach in the QP's
//! use count (a QP cannot be destroyed while attached), so attaching twice takes two detaches.
//!
//! Pure `core` code: also built and tested on the host (`host-tests/`).

use core::ops::DerefMut;

/// The destination QP of a multicast datagram (IBTA 9.6.1.1).
pub(crate) const MULTICAST_QPN: u32 = 0xff_ffff;

/// Groups a device's QPs may be attached to at once (`max_mcast_grp`).
pub(crate) const MAX_GROUPS: usize = 128;
/// QPs one group may have attached (`max_mcast_qp_attach`).
pub(crate) const MAX_QPS_PER_GROUP: usize = 32;
/// Attachments of all groups (`max_total_mcast_qp_attach`): the table's length.
pub(crate) const MAX_ATTACHMENTS: usize = 512;

/// One QP attached to one group; `count` 0: a free slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Attachment {
    mgid: [u8; 16],
    qpn: u32,
    /// How many times the QP attached (and has not detached).
    count: u32,
}

/// Why an attach was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a multicast GID.
    NotMulticast,
    /// The table, the group or the number of groups is at its limit.
    Full,
}

/// Whether `gid` names a multicast group: a multicast IPv6 address (`ff00::/8`) or an
/// IPv4-mapped multicast address (`::ffff:224.0.0.0/4`).
pub(crate) fn is_multicast(gid: &[u8; 16]) -> bool {
    let v4_mapped = gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff;
    if v4_mapped {
        gid[12] & 0xf0 == 0xe0
    } else {
        gid[0] == 0xff
    }
}

/// A device's attachments, over `slots` (all free when the table is made).
pub(crate) struct Table<S: DerefMut<Target = [Attachment]>> {
    slots: S,
    /// How many groups have a QP attached.
    groups: usize,
}

impl<S: DerefMut<Target = [Attachment]>> Table<S> {
    /// A table over `slots`, all `Attachment::default()`.
    pub(crate) fn new(slots: S) -> Self {
        Table { slots, groups: 0 }
    }

    fn find(&self, mgid: &[u8; 16], qpn: u32) -> Option<usize> {
        self.slots
            .iter()
            .position(|a| a.count != 0 && a.qpn == qpn && a.mgid == *mgid)
    }

    /// How many QPs `mgid` has attached.
    pub(crate) fn members(&self, mgid: &[u8; 16]) -> usize {
        self.slots
            .iter()
            .filter(|a| a.count != 0 && a.mgid == *mgid)
            .count()
    }

    /// Attaches QP `qpn` to `mgid` once more. `Ok(true)`: the group had no QP of this device
    /// before (the host's IP membership is to be taken).
    pub(crate) fn attach(&mut self, mgid: &[u8; 16], qpn: u32) -> Result<bool, Refused> {
        if !is_multicast(mgid) {
            return Err(Refused::NotMulticast);
        }
        if let Some(i) = self.find(mgid, qpn) {
            let a = &mut self.slots[i];
            a.count = a.count.checked_add(1).ok_or(Refused::Full)?;
            return Ok(false);
        }
        let members = self.members(mgid);
        if members >= MAX_QPS_PER_GROUP || (members == 0 && self.groups >= MAX_GROUPS) {
            return Err(Refused::Full);
        }
        let free = self
            .slots
            .iter()
            .position(|a| a.count == 0)
            .ok_or(Refused::Full)?;
        self.slots[free] = Attachment {
            mgid: *mgid,
            qpn,
            count: 1,
        };
        if members == 0 {
            self.groups += 1;
        }
        Ok(members == 0)
    }

    /// Undoes one attach of QP `qpn` to `mgid`. `Some(true)`: the group has no QP of this
    /// device left (the host's IP membership is to be given up); `None`: it was not attached.
    pub(crate) fn detach(&mut self, mgid: &[u8; 16], qpn: u32) -> Option<bool> {
        let i = self.find(mgid, qpn)?;
        self.slots[i].count -= 1;
        if self.slots[i].count == 0 {
            self.slots[i] = Attachment::default();
            let last = self.members(mgid) == 0;
            if last {
                self.groups -= 1;
            }
            return Some(last);
        }
        Some(false)
    }

    /// The QPs attached to `mgid`, into `out` (at most `MAX_QPS_PER_GROUP` of them); returns
    /// how many.
    pub(crate) fn qps(&self, mgid: &[u8; 16], out: &mut [u32; MAX_QPS_PER_GROUP]) -> usize {
        let mut n = 0;
        for a in self
            .slots
            .iter()
            .filter(|a| a.count != 0 && a.mgid == *mgid)
        {
            if let Some(slot) = out.get_mut(n) {
                *slot = a.qpn;
                n += 1;
            }
        }
        n
    }
}
