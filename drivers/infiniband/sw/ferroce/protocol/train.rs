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
//! A train can also arrive whole: a veth hands the datagram to the other namespace as it is,
//! and its receiving stack cuts it only for sockets that do not take UDP GSO datagrams. The
//! RoCEv2 port takes them ([`Arrival`]): each piece is parsed in place, with the IP and UDP
//! headers it would have carried made beside it, so that it is checked and handled exactly as
//! the packet the stack would have cut (the receiver trusts nothing of the datagram: a local
//! user in another namespace may send one).
//!
//! Pure `core` code, tested on the host against a model of the kernel's cutting
//! (`host-tests/`); the data path uses it.

use crate::protocol::{
    bth::Bth,
    icrc,
    packet::{self, Route},
};

/// Pieces the kernel cuts a UDP datagram into at most (`UDP_MAX_SEGMENTS` in 6.12): a UDP
/// socket may send no more, and the RoCEv2 port hands no longer train over whole.
pub(crate) const UDP_MAX_SEGMENTS: usize = 128;

/// Packets a train carries at most: half the kernel's limit of pieces per datagram
/// ([`UDP_MAX_SEGMENTS`]). The sender's limit on a train's bytes usually binds first (31
/// packets of a 1024-byte path MTU).
pub(crate) const MAX_CARS: usize = UDP_MAX_SEGMENTS / 2;

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
        let mut head = [0u8; packet::MAX_IP_UDP];
        let head = head.get_mut(..packet::ip_udp_len(&self.route))?;
        self.piece_head(i, head)?;
        let body = self.body_mut(buf, i)?;
        let pad = Bth::parse(body)?.pad;
        packet::seal(head, body, pad, crc)
    }
}

/// A train as it arrived whole: a UDP datagram whose payload is pieces of `seg` bytes, the
/// last as long or shorter, each the body (BTH to ICRC) of one packet.
///
/// # Invariants
///
/// `datagram` starts with `head` bytes of IP and UDP headers that `packet::datagram_head`
/// accepts; `seg > 0`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arrival<'a> {
    datagram: &'a [u8],
    head: usize,
    seg: usize,
}

impl<'a> Arrival<'a> {
    /// The train `datagram` (from its IP header to its end) cut every `seg` bytes after its UDP
    /// header; `None` if its IP and UDP headers do not make it a datagram to the RoCEv2 port of
    /// its own length (as `packet::parse` checks a packet's), `seg` is 0, or it would be cut
    /// into more than [`UDP_MAX_SEGMENTS`] pieces (no UDP socket sends such a datagram, and the
    /// port cuts none whole: a bound on the work one datagram asks for).
    pub(crate) fn new(datagram: &'a [u8], seg: usize) -> Option<Self> {
        let head = packet::datagram_head(datagram)?;
        // INVARIANT: Checked here.
        let a = (seg > 0).then_some(Arrival {
            datagram,
            head,
            seg,
        })?;
        (a.count() <= UDP_MAX_SEGMENTS).then_some(a)
    }

    /// Bytes of the IP and UDP headers of each piece.
    pub(crate) fn head_len(&self) -> usize {
        self.head
    }

    /// Pieces in the train.
    pub(crate) fn count(&self) -> usize {
        (self.datagram.len() - self.head).div_ceil(self.seg)
    }

    /// The body of piece `i`; into the first [`Arrival::head_len`] bytes of `head`, the IP and
    /// UDP headers the stack would have given it had it cut the datagram (its lengths, and over
    /// IPv4 the datagram's identification plus `i` and the header checksum; the UDP checksum
    /// 0). `None` past the last piece.
    pub(crate) fn piece(&self, i: usize, head: &mut [u8; packet::MAX_IP_UDP]) -> Option<&'a [u8]> {
        let start = self.seg.checked_mul(i)?.checked_add(self.head)?;
        let rest = self.datagram.get(start..).filter(|r| !r.is_empty())?;
        let body = rest.get(..self.seg).unwrap_or(rest);
        let head = head.get_mut(..self.head)?;
        head.copy_from_slice(self.datagram.get(..self.head)?);
        // The stack numbers pieces modulo 2^16.
        packet::restate_ip_udp(head, body.len(), i as u16)?;
        Some(body)
    }
}
