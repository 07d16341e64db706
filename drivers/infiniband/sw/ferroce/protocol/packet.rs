// SPDX-License-Identifier: GPL-2.0

//! Whole RoCEv2 packets, from the IP header to the ICRC (IBTA RoCEv2 annex A17): an IPv4
//! header without options or an IPv6 header without extension headers, a UDP header to port
//! 4791, the BTH, the extended headers of the opcode's layout (`opcode.rs`), the payload, 0-3
//! bytes of pad that round it to 4 bytes, and the ICRC.
//!
//! Sending is three steps so that the payload is copied once, straight into the packet buffer:
//! [`packet_len`] sizes the buffer, [`write_headers`] fills everything before the payload and
//! says where the payload goes, and once the caller has copied it [`finish`] fills what depends
//! on it (the pad, the IPv4 header checksum or the IPv6 UDP checksum, the ICRC). Receiving is
//! [`parse`], which checks everything the transport relies on before anything is decoded.
//!
//! Pure `core` code, tested on the host against packets rdma_rxe sent (`host-tests/`); the data
//! path uses it.

use crate::protocol::{
    bth::Bth,
    eth::{self, Aeth, AtomicEth, Deth, Feth, Reth},
    grh, icrc,
    opcode::{self, hdr, Layout, BTH_BYTES, ICRC_BYTES},
};

/// The UDP port RoCEv2 packets go to (IANA).
pub(crate) const ROCE_UDP_PORT: u16 = 4791;

const IPV4_BYTES: usize = 20;
const IPV6_BYTES: usize = 40;
const UDP_BYTES: usize = 8;
const IPPROTO_UDP: u8 = 17;

/// The IP and UDP fields of a packet: the sender's and the receiver's GIDs and what the QP's
/// address vector adds. An IPv4 GID is IPv4-mapped (`::ffff:a.b.c.d`); only its last 4 bytes
/// go on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) ipv4: bool,
    /// The sender's GID (the IP source address).
    pub(crate) sgid: [u8; 16],
    /// The receiver's GID (the IP destination address).
    pub(crate) dgid: [u8; 16],
    /// IPv4 TOS or IPv6 traffic class, DSCP and ECN.
    pub(crate) traffic_class: u8,
    /// IPv6 only (20 bits); 0 for IPv4.
    pub(crate) flow_label: u32,
    /// IPv4 TTL or IPv6 hop limit.
    pub(crate) hop_limit: u8,
    /// The UDP source port: a per-QP entropy value that spreads flows over ECMP paths.
    pub(crate) src_port: u16,
    /// IPv4 identification (the sender picks it, as for any IPv4 datagram); 0 for IPv6.
    pub(crate) ip_id: u16,
    /// The 802.1Q VLAN the packets go on, the source GID's (`None`: untagged). Not in the
    /// bytes written here: the VLAN device adds the tag.
    pub(crate) vlan_id: Option<u16>,
}

/// The IB transport headers of a packet: the BTH and the extended headers. Exactly the
/// extended headers the opcode's layout names are `Some`: [`parse`] fills them, and
/// [`write_headers`] refuses a packet with one missing or one too many, so that a header meant
/// for the wire is never dropped silently.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Headers {
    pub(crate) bth: Bth,
    pub(crate) deth: Option<Deth>,
    pub(crate) feth: Option<Feth>,
    pub(crate) reth: Option<Reth>,
    pub(crate) atomic_eth: Option<AtomicEth>,
    pub(crate) aeth: Option<Aeth>,
    /// AtomicAckETH: the value the target held before the atomic.
    pub(crate) atomic_ack: Option<u64>,
    /// ImmDt, in wire order (as `ibv_wc.imm_data`).
    pub(crate) imm: Option<u32>,
    /// IETH: the R_Key to invalidate.
    pub(crate) ieth: Option<u32>,
}

impl Headers {
    /// The [`hdr`] bits of the extended headers present.
    fn present(&self) -> u16 {
        let bit = |present: bool, bit: u16| if present { bit } else { 0 };
        bit(self.deth.is_some(), hdr::DETH)
            | bit(self.feth.is_some(), hdr::FETH)
            | bit(self.reth.is_some(), hdr::RETH)
            | bit(self.atomic_eth.is_some(), hdr::ATOMIC_ETH)
            | bit(self.aeth.is_some(), hdr::AETH)
            | bit(self.atomic_ack.is_some(), hdr::ATOMIC_ACK_ETH)
            | bit(self.imm.is_some(), hdr::IMMDT)
            | bit(self.ieth.is_some(), hdr::IETH)
    }

    /// Decodes the extended headers `headers` names from `b` (which starts after the BTH).
    fn parse_extended(bth: Bth, headers: u16, b: &[u8]) -> Option<Headers> {
        let mut r = Reader { b, at: 0, headers };
        // In wire order (IBTA 9.3).
        Some(Headers {
            bth,
            deth: r.take(hdr::DETH, opcode::DETH_BYTES, Deth::parse)?,
            feth: r.take(hdr::FETH, opcode::FETH_BYTES, Feth::parse)?,
            reth: r.take(hdr::RETH, opcode::RETH_BYTES, Reth::parse)?,
            atomic_eth: r.take(hdr::ATOMIC_ETH, opcode::ATOMIC_ETH_BYTES, AtomicEth::parse)?,
            aeth: r.take(hdr::AETH, opcode::AETH_BYTES, Aeth::parse)?,
            atomic_ack: r.take(
                hdr::ATOMIC_ACK_ETH,
                opcode::ATOMIC_ACK_ETH_BYTES,
                eth::atomic_ack_parse,
            )?,
            imm: r.take(hdr::IMMDT, opcode::IMMDT_BYTES, eth::word_parse)?,
            ieth: r.take(hdr::IETH, opcode::IETH_BYTES, eth::word_parse)?,
        })
    }
}

/// Reads the extended headers a layout names, one after the other.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    /// The layout's [`hdr`] bits.
    headers: u16,
}

impl Reader<'_> {
    /// The header `bit` if the layout names it (`Some(None)` if not); `None` if it does not
    /// fit.
    fn take<T>(
        &mut self,
        bit: u16,
        len: usize,
        parse: fn(&[u8]) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.headers & bit == 0 {
            return Some(None);
        }
        let field = self.b.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        parse(field).map(Some)
    }
}

/// Pad bytes that round `payload_len` up to 4 bytes.
fn pad_of(payload_len: usize) -> usize {
    payload_len.wrapping_neg() & 3
}

fn ip_bytes(ipv4: bool) -> usize {
    if ipv4 {
        IPV4_BYTES
    } else {
        IPV6_BYTES
    }
}

/// Bytes from the BTH to the end of the ICRC of the packet `opcode` with `payload_len` bytes
/// of payload: BTH and extended headers, payload, pad and ICRC (what follows the UDP header).
/// `None` if the opcode has no layout, or its layout carries no payload and `payload_len` is
/// not 0.
pub(crate) fn body_len(opcode: u8, payload_len: usize) -> Option<usize> {
    let layout = opcode::layout(opcode)?;
    if !layout.payload && payload_len != 0 {
        return None;
    }
    (layout.header_bytes() + pad_of(payload_len) + ICRC_BYTES).checked_add(payload_len)
}

/// Bytes of an IP packet with `body` bytes after its UDP header on `route` (IP header
/// included); `None` beyond the 64 KiB the IP and UDP length fields can say.
pub(crate) fn ip_len(route: &Route, body: usize) -> Option<usize> {
    let udp_len = body.checked_add(UDP_BYTES)?;
    let len = udp_len.checked_add(ip_bytes(route.ipv4))?;
    // IPv4 counts its header in its total length; IPv6 and UDP do not count the IP header.
    let field = if route.ipv4 { len } else { udp_len };
    (field <= usize::from(u16::MAX)).then_some(len)
}

/// Bytes of the IP and UDP headers on `route`: where the BTH starts.
pub(crate) fn ip_udp_len(route: &Route) -> usize {
    ip_bytes(route.ipv4) + UDP_BYTES
}

/// Bytes of the packet `opcode` with `payload_len` bytes of payload makes on `route`: IP, UDP,
/// BTH and extended headers, payload, pad and ICRC. `None` if [`body_len`] refuses it or the
/// packet exceeds the 64 KiB the IP and UDP length fields can say.
pub(crate) fn packet_len(route: &Route, opcode: u8, payload_len: usize) -> Option<usize> {
    ip_len(route, body_len(opcode, payload_len)?)
}

/// Bytes of the IP and UDP headers of any packet, at most.
pub(crate) const MAX_IP_UDP: usize = IPV6_BYTES + UDP_BYTES;

/// Bytes of the IP and UDP headers of `datagram`, a UDP datagram to the RoCEv2 port whose
/// headers check as [`parse`] checks a packet's and whose IP length is its own; `None` if it
/// is not one.
pub(crate) fn datagram_head(datagram: &[u8]) -> Option<usize> {
    let f = frame(datagram, datagram.len()).ok()?;
    (f.len == datagram.len()).then(|| f.bth())
}

/// Makes `head`, the IP and UDP headers of a datagram ([`datagram_head`] bytes), those of a
/// packet with `body` bytes after its UDP header and, over IPv4, the identification of the
/// datagram plus `id_step`: lengths, identification and IPv4 header checksum set; the UDP
/// checksum 0 (nothing reads it: the ICRC masks it). `None` if `head` is no such headers or
/// the packet would be too long.
pub(crate) fn restate_ip_udp(head: &mut [u8], body: usize, id_step: u16) -> Option<()> {
    let (ipv4, ip) = match head.first()? >> 4 {
        4 => (true, IPV4_BYTES),
        6 => (false, IPV6_BYTES),
        _ => return None,
    };
    if head.len() != ip + UDP_BYTES {
        return None;
    }
    let udp_len = u16::try_from(body.checked_add(UDP_BYTES)?).ok()?;
    if ipv4 {
        let h = head.first_chunk_mut::<IPV4_BYTES>()?;
        let total = udp_len.checked_add(IPV4_BYTES as u16)?;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        let id = u16::from_be_bytes([h[4], h[5]]).wrapping_add(id_step);
        h[4..6].copy_from_slice(&id.to_be_bytes());
        h[10..12].fill(0);
        let sum = grh::ipv4_checksum(h);
        h[10..12].copy_from_slice(&sum.to_be_bytes());
    } else {
        head.get_mut(4..6)?.copy_from_slice(&udp_len.to_be_bytes());
    }
    head.get_mut(ip + 4..ip + 6)?
        .copy_from_slice(&udp_len.to_be_bytes());
    head.get_mut(ip + 6..ip + 8)?.fill(0);
    Some(())
}

/// `buf` split at `at`; `None` if it is shorter.
fn split_mut(buf: &mut [u8], at: usize) -> Option<(&mut [u8], &mut [u8])> {
    (at <= buf.len()).then(|| buf.split_at_mut(at))
}

/// Copies `bytes` to `buf` at `*at` and moves `*at` past them.
fn put(buf: &mut [u8], at: &mut usize, bytes: &[u8]) -> Option<()> {
    let end = at.checked_add(bytes.len())?;
    buf.get_mut(*at..end)?.copy_from_slice(bytes);
    *at = end;
    Some(())
}

/// Writes everything before the payload of the packet `h` makes on `route` with `payload_len`
/// bytes of payload into `buf`, which must be exactly [`packet_len`] bytes long, and returns
/// where the payload goes; the caller copies it there and calls [`finish`].
///
/// The IP header is what rdma_rxe sends: IPv4 with no options, don't-fragment set (RoCE
/// depends on the path MTU, not on fragmentation), the route's identification, TOS and TTL,
/// and the checksum left for [`finish`]; or IPv6 with the route's traffic class, flow label and
/// hop limit. Both carry UDP from the route's source port to [`ROCE_UDP_PORT`], its checksum
/// left for [`finish`]. The BTH is `h.bth` with the pad count set from `payload_len` and the
/// transport version 0; the extended headers follow in wire order. `None` if `buf` has the
/// wrong length, the BTH's opcode has no layout, or `h` does not carry exactly the extended
/// headers the layout names.
pub(crate) fn write_headers(
    buf: &mut [u8],
    route: &Route,
    h: &Headers,
    payload_len: usize,
) -> Option<usize> {
    let len = packet_len(route, h.bth.opcode, payload_len)?;
    if buf.len() != len {
        return None;
    }
    let (ip_udp, body) = split_mut(buf, ip_udp_len(route))?;
    write_ip_udp(ip_udp, route, route.ip_id, len)?;
    Some(ip_udp.len() + write_transport(body, h, payload_len)?)
}

/// Writes the IP and UDP headers of an IP packet of `len` bytes on `route` with the IPv4
/// identification `ip_id` into `buf` (exactly [`ip_udp_len`] bytes; see [`write_headers`]).
/// The IPv4 header checksum and the UDP checksum are left 0.
pub(crate) fn write_ip_udp(buf: &mut [u8], route: &Route, ip_id: u16, len: usize) -> Option<()> {
    let ip = ip_bytes(route.ipv4);
    if buf.len() != ip + UDP_BYTES || ip_len(route, len.checked_sub(ip + UDP_BYTES)?)? != len {
        return None;
    }
    let udp_len = u16::try_from(len - ip).ok()?;
    if route.ipv4 {
        let ip_header = buf.first_chunk_mut::<IPV4_BYTES>()?;
        ip_header.fill(0);
        ip_header[0] = 0x45; // version 4, 5 words of header
        ip_header[1] = route.traffic_class;
        ip_header[2..4].copy_from_slice(&u16::try_from(len).ok()?.to_be_bytes());
        ip_header[4..6].copy_from_slice(&ip_id.to_be_bytes());
        ip_header[6] = 0x40; // don't fragment
        ip_header[8] = route.hop_limit;
        ip_header[9] = IPPROTO_UDP;
        ip_header[12..16].copy_from_slice(&route.sgid[12..]);
        ip_header[16..20].copy_from_slice(&route.dgid[12..]);
    } else {
        let ip_header = buf.first_chunk_mut::<IPV6_BYTES>()?;
        ip_header.fill(0);
        let vtf = 6 << 28 | u32::from(route.traffic_class) << 20 | route.flow_label & 0xf_ffff;
        ip_header[0..4].copy_from_slice(&vtf.to_be_bytes());
        ip_header[4..6].copy_from_slice(&udp_len.to_be_bytes());
        ip_header[6] = IPPROTO_UDP;
        ip_header[7] = route.hop_limit;
        ip_header[8..24].copy_from_slice(&route.sgid);
        ip_header[24..40].copy_from_slice(&route.dgid);
    }
    let mut at = ip;
    put(buf, &mut at, &route.src_port.to_be_bytes())?;
    put(buf, &mut at, &ROCE_UDP_PORT.to_be_bytes())?;
    put(buf, &mut at, &udp_len.to_be_bytes())?;
    put(buf, &mut at, &[0, 0])
}

/// Writes the BTH and the extended headers of the packet `h` with `payload_len` bytes of
/// payload into `body`, which must be exactly [`body_len`] bytes long (what follows the UDP
/// header), and returns where in `body` the payload goes (see [`write_headers`]).
pub(crate) fn write_transport(body: &mut [u8], h: &Headers, payload_len: usize) -> Option<usize> {
    let layout = opcode::layout(h.bth.opcode)?;
    if body.len() != body_len(h.bth.opcode, payload_len)? || h.present() != layout.headers {
        return None;
    }
    let mut at = 0;
    let bth = Bth {
        pad: pad_of(payload_len) as u8,
        tver: 0,
        ..h.bth
    };
    put(body, &mut at, &bth.to_bytes())?;
    // In wire order (IBTA 9.3); `present() == layout.headers` made sure each is there.
    if let Some(d) = h.deth {
        put(body, &mut at, &d.to_bytes())?;
    }
    if let Some(f) = h.feth {
        put(body, &mut at, &f.to_bytes())?;
    }
    if let Some(r) = h.reth {
        put(body, &mut at, &r.to_bytes())?;
    }
    if let Some(a) = h.atomic_eth {
        put(body, &mut at, &a.to_bytes())?;
    }
    if let Some(a) = h.aeth {
        put(body, &mut at, &a.to_bytes())?;
    }
    if let Some(v) = h.atomic_ack {
        put(body, &mut at, &v.to_be_bytes())?;
    }
    if let Some(v) = h.imm {
        put(body, &mut at, &v.to_be_bytes())?;
    }
    if let Some(v) = h.ieth {
        put(body, &mut at, &v.to_be_bytes())?;
    }
    Some(at)
}

/// Where the parts of a packet are, once its IP and UDP headers check.
struct Frame {
    ipv4: bool,
    /// Bytes of the IP header; the UDP header follows.
    ip: usize,
    /// Bytes of the packet by its IP header (up to the end of the ICRC).
    len: usize,
}

impl Frame {
    /// Where the BTH starts.
    fn bth(&self) -> usize {
        self.ip + UDP_BYTES
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(*b.get(at..)?.first_chunk()?))
}

/// Checks the IP and UDP headers at the start of `packet`, a packet of which `avail` bytes
/// are at hand (`packet` holds at least its headers), and that they leave room for a BTH and
/// an ICRC. Bytes past the IP length (link-layer padding) are not part of the packet.
fn frame(packet: &[u8], avail: usize) -> Result<Frame, Reject> {
    let version = packet.first().ok_or(Reject::Malformed)? >> 4;
    let (ipv4, ip, len) = match version {
        4 => {
            let h = packet
                .first_chunk::<IPV4_BYTES>()
                .ok_or(Reject::Malformed)?;
            // IHL 5: RoCEv2 senders add no options (and `icrc.rs` reads a 20-byte header).
            // Fragments never reach UDP: the IP layer reassembles them first.
            let fragment = u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0;
            if h[0] & 0xf != 5 || fragment || h[9] != IPPROTO_UDP {
                return Err(Reject::NotRoce);
            }
            (
                true,
                IPV4_BYTES,
                usize::from(u16::from_be_bytes([h[2], h[3]])),
            )
        }
        6 => {
            let h = packet
                .first_chunk::<IPV6_BYTES>()
                .ok_or(Reject::Malformed)?;
            // Extension headers are not RoCEv2.
            if h[6] != IPPROTO_UDP {
                return Err(Reject::NotRoce);
            }
            (
                false,
                IPV6_BYTES,
                IPV6_BYTES + usize::from(u16::from_be_bytes([h[4], h[5]])),
            )
        }
        _ => return Err(Reject::NotRoce),
    };
    if len > avail || len < ip + UDP_BYTES {
        return Err(Reject::Malformed);
    }
    if be16(packet, ip + 2) != Some(ROCE_UDP_PORT) {
        return Err(Reject::NotRoce);
    }
    let udp_len = be16(packet, ip + 4).ok_or(Reject::Malformed)?;
    if usize::from(udp_len) != len - ip || len < ip + UDP_BYTES + BTH_BYTES + ICRC_BYTES {
        return Err(Reject::Malformed);
    }
    Ok(Frame { ipv4, ip, len })
}

/// Checks the BTH of the packet whose body (BTH to the end of the ICRC) is `body` against its
/// opcode's layout: transport version 0, room for the extended headers, the pad and the ICRC,
/// and a payload only where the layout has one. Returns the BTH, the layout and the length of
/// the payload.
fn transport(body: &[u8]) -> Result<(Bth, Layout, usize), Reject> {
    let bth = Bth::parse(body).ok_or(Reject::Malformed)?;
    if bth.tver != 0 {
        return Err(Reject::Malformed);
    }
    let layout = opcode::layout(bth.opcode).ok_or(Reject::BadOpcode)?;
    let payload_len = body
        .len()
        .checked_sub(layout.header_bytes() + usize::from(bth.pad) + ICRC_BYTES)
        .ok_or(Reject::Malformed)?;
    if !layout.payload && payload_len + usize::from(bth.pad) != 0 {
        return Err(Reject::Malformed);
    }
    Ok((bth, layout, payload_len))
}

/// The Internet checksum (RFC 1071) of the concatenation of `parts`, all but the last of even
/// length, as the sum of each part's (`grh::ipv4_checksum` sums any bytes).
fn internet_checksum(parts: &[&[u8]]) -> u16 {
    let mut sum = parts
        .iter()
        .map(|p| u32::from(!grh::ipv4_checksum(p)))
        .sum::<u32>();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Completes a packet [`write_headers`] began, once its payload is in place: zeroes the pad,
/// sets the IPv4 header checksum, the ICRC in the last 4 bytes, and for IPv6 the UDP checksum.
///
/// Over IPv4 the UDP checksum stays 0 ("none"), as rdma_rxe sends it: the ICRC protects the
/// packet. IPv6 has no "none" for UDP (rdma_rxe sends 0 anyway, and accepts a real one), so
/// the checksum is computed; it covers the ICRC (UDP payload to UDP), so it comes last. The
/// ICRC does not see it: it masks the field. `None` if `buf` is not a packet [`write_headers`]
/// could have written.
// The kernel passes its own CRC step (`*_with`); the host tests use the table.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn finish(buf: &mut [u8]) -> Option<()> {
    finish_with(buf, icrc::update)
}

/// [`finish`] with the CRC step `crc` for the ICRC.
pub(crate) fn finish_with(buf: &mut [u8], crc: icrc::Update) -> Option<()> {
    let f = frame(buf, buf.len()).ok()?;
    let (bth, _, _) = transport(buf.get(f.bth()..f.len)?).ok()?;
    if f.len != buf.len() {
        return None;
    }
    if f.ipv4 {
        buf.get_mut(10..12)?.fill(0);
        let sum = grh::ipv4_checksum(buf.get(..IPV4_BYTES)?);
        buf.get_mut(10..12)?.copy_from_slice(&sum.to_be_bytes());
    }
    let (ip_udp, body) = split_mut(buf, f.bth())?;
    seal(ip_udp, body, bth.pad, crc)?;
    if !f.ipv4 {
        let check = f.ip + 6;
        buf.get_mut(check..check + 2)?.fill(0);
        // The pseudo-header (RFC 8200 8.1): addresses, UDP length, next header.
        let mut pseudo = [0u8; 40];
        pseudo[..32].copy_from_slice(buf.get(8..40)?);
        pseudo[32..36].copy_from_slice(&u32::try_from(f.len - f.ip).ok()?.to_be_bytes());
        pseudo[39] = IPPROTO_UDP;
        let sum = match internet_checksum(&[&pseudo, buf.get(f.ip..)?]) {
            // 0 says "no checksum", which IPv6 forbids; 0xffff is the same sum.
            0 => 0xffff,
            s => s,
        };
        buf.get_mut(check..check + 2)?
            .copy_from_slice(&sum.to_be_bytes());
    }
    Some(())
}

/// Completes the body of a packet (BTH to ICRC, its payload in place) that will carry the
/// IP and UDP headers `ip_udp`: zeroes the pad of `pad` bytes and writes the ICRC, computed
/// with the CRC step `crc`, into the last 4 bytes.
pub(crate) fn seal(ip_udp: &[u8], body: &mut [u8], pad: u8, crc: icrc::Update) -> Option<()> {
    let end = body.len().checked_sub(ICRC_BYTES)?;
    body.get_mut(end.checked_sub(usize::from(pad))?..end)?
        .fill(0);
    let icrc = icrc::compute_parts(ip_udp, body.get(..end)?, crc)?;
    body.get_mut(end..)?.copy_from_slice(&icrc.to_le_bytes());
    Some(())
}

/// Why [`parse`] refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Not RoCEv2: not IPv4 (without options, unfragmented) or IPv6 (without extension
    /// headers) carrying UDP to [`ROCE_UDP_PORT`].
    NotRoce,
    /// A RoCEv2 packet whose lengths or headers do not hold together: truncated, IP and UDP
    /// lengths that disagree with each other or the bytes, too short for its opcode's headers,
    /// a pad longer than the payload, a payload where the opcode has none, or a transport
    /// version other than 0.
    Malformed,
    /// The ICRC does not match: the packet was damaged on the way.
    BadIcrc,
    /// An opcode ferroce does not speak (no layout in `opcode.rs`).
    BadOpcode,
}

/// A received packet, checked by [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parsed<'a> {
    /// The packet's IP and UDP fields, as the sender's [`Route`]: `sgid` is the sender's.
    pub(crate) route: Route,
    pub(crate) layout: Layout,
    /// The BTH and the extended headers the layout names.
    pub(crate) hdr: Headers,
    /// The payload, without pad and ICRC.
    pub(crate) payload: &'a [u8],
    /// The IP header as received (for the GRH of a UD receive).
    pub(crate) ip_header: &'a [u8],
}

/// Checks and decodes `packet`, the bytes from the IP header to the end of the ICRC (bytes
/// past the IP length are ignored). Everything the transport relies on is checked here:
/// IPv4 (no options, not a fragment) or IPv6 carrying UDP to [`ROCE_UDP_PORT`], IP and UDP
/// lengths that agree with each other and the bytes, the ICRC, transport version 0, an opcode
/// with a layout, room for the layout's headers, pad and ICRC, and a payload only where the
/// layout has one.
///
/// Neither the IPv4 header checksum nor the UDP checksum is checked: the IP and UDP layers did
/// before handing the packet over, and the ICRC covers everything they would.
// The kernel passes its own CRC step (`*_with`); the host tests use the table.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn parse(packet: &[u8]) -> Result<Parsed<'_>, Reject> {
    parse_with(packet, icrc::Check::With(icrc::update))
}

/// [`parse`] with the ICRC checked as `crc` says (computed with another CRC step, or taken on
/// trust: then only its presence is checked).
pub(crate) fn parse_with(packet: &[u8], crc: icrc::Check) -> Result<Parsed<'_>, Reject> {
    let f = frame(packet, packet.len())?;
    let head = packet.get(..f.bth()).ok_or(Reject::Malformed)?;
    let body = packet.get(f.bth()..f.len).ok_or(Reject::Malformed)?;
    decode(head, body, &f, crc)
}

/// [`parse_with`] for a packet given in two parts: `head`, exactly its IP and UDP headers, and
/// `body`, the BTH and what follows (bytes past the IP length are ignored). A packet of a train
/// that arrived whole has no headers of its own: `train.rs` makes them.
pub(crate) fn parse_parts_with<'a>(
    head: &'a [u8],
    body: &'a [u8],
    crc: icrc::Check,
) -> Result<Parsed<'a>, Reject> {
    let f = frame(head, head.len().saturating_add(body.len()))?;
    if head.len() != f.bth() {
        return Err(Reject::Malformed);
    }
    let body = body.get(..f.len - f.bth()).ok_or(Reject::Malformed)?;
    decode(head, body, &f, crc)
}

/// The ICRC of a packet given as its IP and UDP headers `head` and its `body` (BTH to the end
/// of the ICRC), which `f` framed, checked as `crc` says; then the rest decoded and checked as
/// [`parse`] says.
fn decode<'a>(
    head: &'a [u8],
    body: &'a [u8],
    f: &Frame,
    crc: icrc::Check,
) -> Result<Parsed<'a>, Reject> {
    let end = body
        .len()
        .checked_sub(ICRC_BYTES)
        .ok_or(Reject::Malformed)?;
    let wire = body.get(end..).and_then(|b| b.first_chunk::<ICRC_BYTES>());
    let wire = u32::from_le_bytes(*wire.ok_or(Reject::Malformed)?);
    if let icrc::Check::With(crc) = crc {
        if icrc::compute_parts(head, body.get(..end).ok_or(Reject::Malformed)?, crc) != Some(wire) {
            return Err(Reject::BadIcrc);
        }
    }
    let (bth, layout, payload_len) = transport(body)?;
    let payload_at = layout.header_bytes();
    let hdr = Headers::parse_extended(
        bth,
        layout.headers,
        body.get(BTH_BYTES..payload_at).ok_or(Reject::Malformed)?,
    )
    .ok_or(Reject::Malformed)?;
    let ip_header = head.get(..f.ip).ok_or(Reject::Malformed)?;
    let src_port = be16(head, f.ip).ok_or(Reject::Malformed)?;
    let route = if f.ipv4 {
        let h = ip_header
            .first_chunk::<IPV4_BYTES>()
            .ok_or(Reject::Malformed)?;
        // IPv4-mapped GIDs: ::ffff:a.b.c.d.
        let mut sgid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0];
        let mut dgid = sgid;
        sgid[12..].copy_from_slice(&h[12..16]);
        dgid[12..].copy_from_slice(&h[16..20]);
        Route {
            ipv4: true,
            sgid,
            dgid,
            traffic_class: h[1],
            flow_label: 0,
            hop_limit: h[8],
            src_port,
            ip_id: u16::from_be_bytes([h[4], h[5]]),
            // Not in the bytes: the receiver knows the VLAN the packet came on.
            vlan_id: None,
        }
    } else {
        let h = ip_header
            .first_chunk::<IPV6_BYTES>()
            .ok_or(Reject::Malformed)?;
        let vtf = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let (mut sgid, mut dgid) = ([0u8; 16], [0u8; 16]);
        sgid.copy_from_slice(&h[8..24]);
        dgid.copy_from_slice(&h[24..40]);
        Route {
            ipv4: false,
            sgid,
            dgid,
            traffic_class: (vtf >> 20) as u8,
            flow_label: vtf & 0xf_ffff,
            hop_limit: h[7],
            src_port,
            ip_id: 0,
            vlan_id: None,
        }
    };
    Ok(Parsed {
        route,
        layout,
        hdr,
        payload: body
            .get(payload_at..payload_at + payload_len)
            .ok_or(Reject::Malformed)?,
        ip_header,
    })
}

impl Parsed<'_> {
    /// The 40 bytes a UD receive gets before the payload: the packet's GRH, which for RoCEv2 is
    /// its IP header as received (IBTA A17.4.5.1), laid out as `grh::ud_grh` lays out the one
    /// of a datagram that never left the host: an IPv6 header fills all 40 bytes, an IPv4 one
    /// the last 20 after 20 zero bytes.
    pub(crate) fn grh(&self) -> [u8; grh::GRH_LEN] {
        let mut g = [0u8; grh::GRH_LEN];
        let h = self.ip_header;
        if let Some(to) = grh::GRH_LEN
            .checked_sub(h.len())
            .and_then(|at| g.get_mut(at..))
        {
            to.copy_from_slice(h);
        }
        g
    }
}
