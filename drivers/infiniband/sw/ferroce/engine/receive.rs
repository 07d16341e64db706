// SPDX-License-Identifier: GPL-2.0

//! Packets from the wire to their QP: parsed and checked (`protocol::packet`; the packets of
//! a train that arrived whole one by one, `protocol::train`), then handed to the connected
//! transports (`rc`) or placed in a UD QP's receive WQE (QP1 included).

use kernel::rdma::{Device, Qp, QpType};

use crate::net::wire::imm_from_wire;
use crate::{
    engine::{
        placement::{self, DatagramInfo},
        qp::{self, RECV_WQE_MAX},
    },
    protocol::{
        icrc,
        mcast::{self, MAX_QPS_PER_GROUP, MULTICAST_QPN},
        opcode,
        packet::{self, Parsed, Reject},
        train::Arrival,
    },
    verbs::{device::Ferroce, memory::Source, stats::Stat},
};

/// A packet for this device (softirq), or a train of them that arrived whole (`segment`: the
/// length of its pieces, see `RxPacket::segment`): each checked, then given to its QP. The
/// ICRCs of a train whose bytes the stack vouches for (`vouched`, see
/// `RxPacket::vouched_for`) are taken on trust (`icrc::Check::Trusted`); every other check
/// applies to its packets as to any packet.
pub(crate) fn receive(
    dev: &Device<Ferroce>,
    bytes: &[u8],
    segment: usize,
    vouched: bool,
    vlan_id: Option<u16>,
) {
    let crc = if vouched && segment > 0 {
        icrc::Check::Trusted
    } else {
        icrc::Check::With(kernel::rdma::sw::wire::crc32_le)
    };
    if segment == 0 {
        deliver(dev, packet::parse_with(bytes, crc), vlan_id);
        return;
    }
    let counters = &dev.data().counters;
    let Some(train) = Arrival::new(bytes, segment) else {
        counters.add(Stat::BadPkts, 1);
        return;
    };
    counters.add(Stat::RcvdTrains, 1);
    counters.add(Stat::RcvdTrainPkts, train.count() as u64);
    let mut head = [0u8; packet::MAX_IP_UDP];
    for i in 0..train.count() {
        // In order, as the stack would have handed the pieces over.
        let Some(body) = train.piece(i, &mut head) else {
            counters.add(Stat::BadPkts, 1);
            continue;
        };
        let head = head.get(..train.head_len()).unwrap_or_default();
        deliver(dev, packet::parse_parts_with(head, body, crc), vlan_id);
    }
}

/// A packet as parsed, given to its QP if it checked; it came on the VLAN `vlan_id`.
fn deliver(dev: &Device<Ferroce>, parsed: Result<Parsed<'_>, Reject>, vlan_id: Option<u16>) {
    let counters = &dev.data().counters;
    let Ok(p) = parsed else {
        counters.add(Stat::BadPkts, 1);
        return;
    };
    if p.hdr.bth.dest_qp == MULTICAST_QPN {
        deliver_multicast(dev, &p, vlan_id);
        return;
    }
    let Some(qp) = dev.qp(p.hdr.bth.dest_qp) else {
        // No such QP (any more): a late packet of a destroyed connection.
        counters.add(Stat::NoQpPkts, 1);
        return;
    };
    let Some(pkey_index) = qp::admits_pkey(&qp, p.hdr.bth.pkey) else {
        pkey_violation(dev);
        return;
    };
    counters.add(Stat::RcvdPkts, 1);
    if p.hdr.bth.opcode & 0xe0 == opcode::UD {
        // Only datagrams to one of the port's GIDs (the IP layer delivers to any local
        // address); a connected QP checks against the GID it sends from.
        if !dev.gid_is_local(1, &p.route.dgid) {
            counters.add(Stat::Dropped, 1);
            return;
        }
        receive_datagram(&qp, &p, vlan_id, pkey_index);
    } else {
        crate::engine::rc::receive(&qp, &p);
    }
}

/// A datagram to a multicast group (destination QP `0xffffff`, IBTA 9.6.1.1): given to every
/// QP of the device attached to the group its destination GID names, each as if it were
/// addressed to it (Q_Key, receive WQE). Only UD datagrams to a multicast address.
fn deliver_multicast(dev: &Device<Ferroce>, p: &Parsed<'_>, vlan_id: Option<u16>) {
    let counters = &dev.data().counters;
    if p.hdr.bth.opcode & 0xe0 != opcode::UD || !mcast::is_multicast(&p.route.dgid) {
        counters.add(Stat::BadPkts, 1);
        return;
    }
    let mut qpns = [0u32; MAX_QPS_PER_GROUP];
    let n = dev.data().mcast.lock().qps(&p.route.dgid, &mut qpns);
    // A QP detaches before it can be destroyed; one going away meanwhile is not found.
    let mut found = false;
    let mut admitted = false;
    for qp in qpns[..n].iter().filter_map(|&qpn| dev.qp(qpn)) {
        found = true;
        if let Some(pkey_index) = qp::admits_pkey(&qp, p.hdr.bth.pkey) {
            if !admitted {
                counters.add(Stat::RcvdPkts, 1);
                admitted = true;
            }
            receive_datagram(&qp, p, vlan_id, pkey_index);
        }
    }
    // Each packet counts once: taken, for no QP, or refused by every QP's P_Key.
    if !found {
        counters.add(Stat::NoQpPkts, 1);
    } else if !admitted {
        pkey_violation(dev);
    }
}

/// A packet whose P_Key its QP does not take: dropped, as IBTA has it (nothing answers).
fn pkey_violation(dev: &Device<Ferroce>) {
    let counters = &dev.data().counters;
    counters.add(Stat::BadPkts, 1);
    counters.add(Stat::PkeyViolations, 1);
}

/// A UD datagram for `qp`, which came on the VLAN `vlan_id` with the P_Key at `pkey_index` of
/// the port's table: taken by its next receive WQE if the Q_Key matches, with the packet's IP
/// header as the GRH.
fn receive_datagram(qp: &Qp<Ferroce>, p: &Parsed<'_>, vlan_id: Option<u16>, pkey_index: u16) {
    let counters = &qp.device().data().counters;
    let Some(deth) = p.hdr.deth else {
        // Counted in `rcvd_pkts` already (a UD opcode always has a DETH).
        counters.add(Stat::Dropped, 1);
        return;
    };
    let header = p.grh();
    let len = p.payload.len() as u32;
    let info = DatagramInfo {
        src_qp: deth.src_qp,
        sl: 0,
        solicited: p.hdr.bth.se,
        imm: p.hdr.imm.map(imm_from_wire),
        ipv4: p.route.ipv4,
        vlan_id,
        pkey_index,
    };
    let mut buf = [0u8; RECV_WQE_MAX];
    let place_into = |wqe: &[u8], max_sge: u32| {
        let mut src = Source::Bytes(p.payload);
        placement::place_datagram(qp, wqe, max_sge, &header, &mut src, len, &info).0
    };
    if qp::receive_datagram(
        qp,
        deth.src_qp,
        QpType::Ud,
        deth.qkey,
        len,
        &mut buf,
        place_into,
        false,
    ) {
        counters.add(Stat::RcvdMsgs, 1);
        counters.add(Stat::RcvdBytes, len.into());
    } else {
        counters.add(Stat::Dropped, 1);
    }
}
