// SPDX-License-Identifier: GPL-2.0

//! Trains: several RoCEv2 packets of one connection that cross the IP stack as one UDP
//! datagram, which the stack cuts into standard RoCEv2 packets (UDP segmentation offload,
//! `SKB_GSO_UDP_L4`, as a UDP socket with `UDP_SEGMENT` sends). The stack is crossed once per
//! train instead of once per packet, and every packet on the wire is still one any RoCEv2
//! receiver accepts.
//!
//! How the kernel cuts such a datagram (`__udp_gso_segment` in net/ipv4/udp_offload.c,
//! `inet_gso_segment` in net/ipv4/af_inet.c, `ipv6_gso_segment`), in software or on a veth's
//! far side: what follows the UDP header in pieces of `gso_size` bytes, the last one shorter
//! or as long; each piece gets a copy of the IP and UDP headers with the lengths of its own
//! (IPv4 total length or IPv6 payload length, UDP length), a UDP checksum of its own, and over
//! IPv4 the datagram's identification plus the piece's index (modulo 2^16) and the header
//! checksum. Everything else is copied.
//!
//! So a train is packets whose bodies (BTH to ICRC) all have one length, `gso_size`, but the
//! last, which may be shorter; and the ICRC of each body is computed over the IP and UDP
//! headers its piece will carry (the ICRC covers the lengths and the IPv4 identification; it
//! masks the checksums). A NIC that cuts trains in hardware must number IPv4 pieces as the
//! kernel does (as it numbers TCP segments); Documentation/wire.rst says more.
//!
//! Pure `core` code, tested on the host against a model of the kernel's cutting
//! (`host-tests/`); the data path uses it.

use crate::protocol::{
    bth::Bth,
    icrc,
    packet::{self, Route},
};

/// Packets a train carries at most: half the kernel's limit of pieces per datagram
/// (`UDP_MAX_SEGMENTS`, 128 in 6.12). The sender's limit on a train's bytes usually binds
/// first (31 packets of a 1024-byte path MTU).
pub(crate) const MAX_CARS: usize = 64;

/// How many of the packets whose bodies (BTH to ICRC) are `bodies` bytes long, in order, go in
/// the next train on `route` whose datagram (IP header included) is at most `max_len` bytes:
/// the first, those after it as long as it, and one shorter that ends the train unless a run
/// of its own length starts with it (a WRITE's first packet, longer by its RETH, goes alone
/// rather than pulling one middle packet after it); at most [`MAX_CARS`]. 1: the first goes
/// alone.
pub(crate) fn cars(
    route: &Route,
    bodies: impl IntoIterator<Item = usize>,
    max_len: usize,
) -> usize {
    let mut bodies = bodies.into_iter().peekable();
    let Some(seg) = bodies.next() else {
        return 0;
    };
    let (mut n, mut len) = (1, packet::ip_udp_len(route) + seg);
    while let Some(body) = bodies.next() {
        let shorter = body < seg;
        if n == MAX_CARS
            || body > seg
            || body == 0
            || len + body > max_len
            || (shorter && bodies.peek() == Some(&body))
        {
            break;
        }
        len += body;
        n += 1;
        if shorter {
            break;
        }
    }
    n
}

/// The layout of a train on one route: `count` packets, every body `seg` bytes long but the
/// last, `last` bytes.
///
/// # Invariants
///
/// `count >= 2`, `0 < last <= seg`, and the whole datagram fits the IP and UDP length fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Train {
    route: Route,
    seg: usize,
    count: usize,
    last: usize,
}

impl Train {
    /// A train on `route` of `count` packets (2 to [`MAX_CARS`]: the kernel refuses to cut a
    /// datagram into one piece), with bodies of `seg` bytes but the last, of `last`; `None` if
    /// it cannot be one datagram.
    pub(crate) fn new(route: &Route, seg: usize, count: usize, last: usize) -> Option<Train> {
        if !(2..=MAX_CARS).contains(&count) || last == 0 || last > seg {
            return None;
        }
        let bodies = seg.checked_mul(count - 1)?.checked_add(last)?;
        packet::ip_len(route, bodies)?;
        // INVARIANT: Checked above.
        Some(Train {
            route: *route,
            seg,
            count,
            last,
        })
    }

    /// Bytes of the datagram: IP and UDP header, then every body.
    pub(crate) fn len(&self) -> usize {
        packet::ip_udp_len(&self.route) + self.seg * (self.count - 1) + self.last
    }

    /// Bytes of each piece after its UDP header but the last: the datagram's `gso_size`.
    pub(crate) fn segment(&self) -> usize {
        self.seg
    }

    /// Packets in the train.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Where the body of packet `i` is in the datagram.
    fn body_at(&self, i: usize) -> Option<core::ops::Range<usize>> {
        if i >= self.count {
            return None;
        }
        let start = packet::ip_udp_len(&self.route) + self.seg * i;
        let len = if i + 1 == self.count {
            self.last
        } else {
            self.seg
        };
        Some(start..start + len)
    }

    /// Writes the datagram's IP and UDP headers at the start of `buf` (the whole datagram,
    /// [`Train::len`] bytes): those of a packet of the route (`packet::write_headers`), with
    /// the datagram's lengths and the route's IPv4 identification, which the first piece
    /// keeps.
    pub(crate) fn write_head(&self, buf: &mut [u8]) -> Option<()> {
        if buf.len() != self.len() {
            return None;
        }
        let head = buf.get_mut(..packet::ip_udp_len(&self.route))?;
        packet::write_ip_udp(head, &self.route, self.route.ip_id, self.len())
    }

    /// The body of packet `i` in the datagram `buf`, for `packet::write_transport` and its
    /// payload.
    pub(crate) fn body_mut<'b>(&self, buf: &'b mut [u8], i: usize) -> Option<&'b mut [u8]> {
        if buf.len() != self.len() {
            return None;
        }
        buf.get_mut(self.body_at(i)?)
    }

    /// The IP and UDP headers the piece of packet `i` carries once the kernel has cut the
    /// datagram (in `out`, which is [`packet::ip_udp_len`] bytes long), its checksums left 0.
    pub(crate) fn piece_head(&self, i: usize, out: &mut [u8]) -> Option<()> {
        let body = self.body_at(i)?;
        let id = self.route.ip_id.wrapping_add(i as u16);
        let len = packet::ip_udp_len(&self.route) + body.len();
        packet::write_ip_udp(out, &self.route, id, len)
    }

    /// Completes the body of packet `i` in the datagram `buf` once its headers
    /// (`packet::write_transport`) and payload are in place: its pad zeroed and its ICRC,
    /// computed with the CRC step `crc` over the headers of its piece.
    pub(crate) fn seal(&self, buf: &mut [u8], i: usize, crc: icrc::Update) -> Option<()> {
        let mut head = [0u8; 48];
        let head = head.get_mut(..packet::ip_udp_len(&self.route))?;
        self.piece_head(i, head)?;
        let body = self.body_mut(buf, i)?;
        let pad = Bth::parse(body)?.pad;
        packet::seal(head, body, pad, crc)
    }
}
