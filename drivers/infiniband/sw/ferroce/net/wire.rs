// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 wire: packets to and from other hosts (and other ferroce devices of this host).
//!
//! Transmission builds each packet whole in an skb (`packet.rs` writes the headers and the
//! ICRC; the payload is copied straight from the sender's memory into it) and hands it to the
//! IP layer, from whatever context the data path runs in, with no lock held. Packets of one
//! connection that follow each other go as trains where they can (`train.rs`): one datagram
//! that crosses the IP stack once and is cut into standard RoCEv2 packets by it. Reception runs in
//! the UDP socket's softirq: a packet is parsed and checked (lengths, ICRC, opcode, P_Key),
//! its QP found by number, and passed to the datagram receiver here or to the connected
//! engine (`rc.rs`).

use kernel::{
    net::netdev::NetDevice,
    rdma::{
        sw::wire::{Egress, RouteCache, TxPacket},
        AddressVector, Device, Network, Qp,
    },
};

use crate::{
    protocol::{
        abi::WcStatus,
        bth::Bth,
        eth::Deth,
        opcode::{self, op},
        packet::{self, Headers, Route},
        train::{self, Train},
    },
    verbs::{
        device::Ferroce,
        memory::{Fault, Source},
        stats::Stat,
    },
};

/// The UDP source port of a QP's packets: fixed per connection (so that a flow keeps its
/// order through ECMP and RSS), in the dynamic range.
pub(crate) fn src_port(qpn: u32, dest_qpn: u32) -> u16 {
    let h = qpn ^ dest_qpn.rotate_left(7) ^ (qpn >> 14);
    0xc000 | (h & 0x3fff) as u16
}

/// Where the packets of an address vector go.
pub(crate) fn route(av: &AddressVector, src_port: u16) -> Route {
    Route {
        ipv4: av.network == Network::Ipv4,
        sgid: av.sgid,
        dgid: av.dgid,
        traffic_class: av.traffic_class,
        flow_label: av.flow_label,
        hop_limit: av.hop_limit,
        src_port,
        ip_id: 0,
        vlan_id: av.vlan_id,
    }
}

/// How the packets of `route` leave the host beside their IP header.
fn egress(route: &Route) -> Egress {
    Egress {
        ipv6: !route.ipv4,
        vlan_id: route.vlan_id,
        traffic_class: route.traffic_class,
    }
}

/// Why a packet was not sent.
pub(crate) enum TxError<E> {
    /// The payload could not be read (`fill` failed).
    Fill(E),
    /// The packet could not be built (no memory): as good as lost on the wire. A caller that
    /// reads its payloads in order from one cursor must not send on with it (`fill` did not
    /// run for a single packet, and may have run for some of a train's): the next packet would
    /// carry the wrong bytes under its PSN.
    Lost,
}

/// Builds a packet with the headers `h` and `payload_len` bytes that `fill` writes, and sends
/// it through `netdev` to `route`, on the way `routes` keeps (a connected QP's).
pub(crate) fn transmit<E>(
    dev: &Device<Ferroce>,
    netdev: &NetDevice,
    routes: Option<&RouteCache>,
    route: &Route,
    h: &Headers,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
) -> Result<(), TxError<E>> {
    let len = packet::packet_len(route, h.bth.opcode, payload_len).ok_or(TxError::Lost)?;
    let Ok(mut skb) = TxPacket::new(netdev, len) else {
        dev.data().counters.add(Stat::TxLost, 1);
        return Err(TxError::Lost);
    };
    let buf = skb.bytes_mut();
    let at = packet::write_headers(buf, route, h, payload_len).ok_or(TxError::Lost)?;
    let payload = buf.get_mut(at..at + payload_len).ok_or(TxError::Lost)?;
    fill(payload).map_err(TxError::Fill)?;
    packet::finish_with(buf, kernel::rdma::sw::wire::crc32_le).ok_or(TxError::Lost)?;
    dev.data().counters.add(Stat::SentPkts, 1);
    // A packet the network drops is recovered as a lost one.
    let _ = skb.send(netdev, &egress(route), routes);
    Ok(())
}

/// Bytes of a train's datagram at most: its skb (the datagram, the netdev's headroom of up to
/// 32 bytes and the skb's shared info) then fits an order-3 allocation (32 KiB), which atomic
/// context gets far more often than the order-4 a full 64 KiB datagram would need: 31 packets
/// of a 1024 byte path MTU, 7 of 4096. (A netdev with more headroom, a tunnel's, takes
/// order-4.)
pub(crate) const TRAIN_BYTES: usize = 32 * 1024 - 384;

/// How many of the packets `packet` describes (headers and payload length of the `i`-th, for
/// `i` from `from` to `to - 1`) go in the next train on `route` ([`train::cars`]): 1 if the
/// next goes alone.
pub(crate) fn cars(
    route: &Route,
    from: usize,
    to: usize,
    packet: impl Fn(usize) -> (Headers, usize),
) -> usize {
    let body = |i| {
        let (h, len) = packet(i);
        // A packet with no layout goes alone (and is refused by `transmit`).
        packet::body_len(h.bth.opcode, len).unwrap_or(0)
    };
    train::cars(route, (from..to).map(body), TRAIN_BYTES)
}

/// Sends the `count` packets `packet` describes (headers and payload length of the `i`-th) as
/// one train through `netdev` to `route` (see [`transmit`]), the payload of the `i`-th written
/// by `fill(i, ..)`, in order; `count` as [`cars`] planned it. Without memory for the train
/// (or with fewer than two packets) they go one by one. `Err((sent, e))`: the first `sent`
/// packets went out, the rest did not (`Lost`: one could not be built; `Fill`: `fill` failed
/// for packet `sent`), and `fill` may have run for some of the rest.
pub(crate) fn transmit_train<E>(
    dev: &Device<Ferroce>,
    netdev: &NetDevice,
    routes: Option<&RouteCache>,
    route: &Route,
    count: usize,
    packet: impl Fn(usize) -> (Headers, usize),
    mut fill: impl FnMut(usize, &mut [u8]) -> Result<(), E>,
) -> Result<(), (usize, TxError<E>)> {
    let body = |i| {
        let (h, len) = packet(i);
        packet::body_len(h.bth.opcode, len)
    };
    let train = match (body(0), count.checked_sub(1).map(body)) {
        (Some(seg), Some(Some(last))) => Train::new(route, seg, count, last),
        _ => None,
    };
    let skb = train.map(|t| (t, TxPacket::new_optional(netdev, t.len())));
    let Some((train, Ok(mut skb))) = skb else {
        for i in 0..count {
            let (h, len) = packet(i);
            transmit(dev, netdev, routes, route, &h, len, |out| fill(i, out))
                .map_err(|e| (i, e))?;
        }
        return Ok(());
    };
    let lost = || (0, TxError::Lost);
    let buf = skb.bytes_mut();
    train.write_head(buf).ok_or_else(lost)?;
    for i in 0..count {
        let (h, len) = packet(i);
        let car = train.body_mut(buf, i).ok_or_else(lost)?;
        let at = packet::write_transport(car, &h, len).ok_or_else(lost)?;
        let payload = car.get_mut(at..at + len).ok_or_else(lost)?;
        fill(i, payload).map_err(|e| (0, TxError::Fill(e)))?;
        train
            .seal(buf, i, kernel::rdma::sw::wire::crc32_le)
            .ok_or_else(lost)?;
    }
    let counters = &dev.data().counters;
    counters.add(Stat::SentPkts, train.count() as u64);
    counters.add(Stat::SentTrains, 1);
    // A train the network drops is recovered as lost packets are.
    let _ = skb.send_train(netdev, &egress(route), routes, train.segment());
    Ok(())
}

/// Immediate data as a work request holds it (`__be32`: its bytes in wire order) to the value
/// `packet.rs` writes (the big-endian word), and back.
pub(crate) fn imm_to_wire(imm: u32) -> u32 {
    u32::from_be_bytes(imm.to_ne_bytes())
}

/// See [`imm_to_wire`].
pub(crate) fn imm_from_wire(imm: u32) -> u32 {
    u32::from_ne_bytes(imm.to_be_bytes())
}

/// A UD send to another host: one packet to the QP `remote_qpn` behind `av`, with the Q_Key
/// `qkey` and the P_Key `pkey` (the QP's). The payload comes from `src`. Completes (from the
/// sender's view) once sent.
#[expect(clippy::too_many_arguments)]
pub(crate) fn send_datagram(
    qp: &Qp<Ferroce>,
    pkey: u16,
    av: &AddressVector,
    remote_qpn: u32,
    qkey: u32,
    imm: Option<u32>,
    solicited: bool,
    mut src: Source<'_, '_>,
    len: u32,
) -> Result<(), WcStatus> {
    let dev = qp.device();
    let Some(netdev) = dev.data().netdev() else {
        // The netdev is going away: the datagram is lost.
        return Ok(());
    };
    let opcode = opcode::UD
        | if imm.is_some() {
            op::SEND_ONLY_WITH_IMMEDIATE
        } else {
            op::SEND_ONLY
        };
    let h = Headers {
        bth: Bth {
            opcode,
            se: solicited,
            pkey,
            dest_qp: remote_qpn,
            psn: qp.data().next_ud_psn(),
            ..Bth::default()
        },
        deth: Some(Deth {
            qkey,
            src_qp: qp.qp_num(),
        }),
        imm: imm.map(imm_to_wire),
        ..Headers::default()
    };
    let r = route(av, src_port(qp.qp_num(), remote_qpn));
    let fill = |out: &mut [u8]| match &mut src {
        Source::Bytes(b) => {
            out.copy_from_slice(b.get(..out.len()).ok_or(Fault::Source)?);
            Ok(())
        }
        Source::Walk(w) => w.gather(out),
    };
    match transmit(dev, &netdev, None, &r, &h, len as usize, fill) {
        Ok(()) | Err(TxError::Lost) => Ok(()),
        // The sender's memory went away under the copy.
        Err(TxError::Fill(_)) => Err(WcStatus::LocProtErr),
    }
}
