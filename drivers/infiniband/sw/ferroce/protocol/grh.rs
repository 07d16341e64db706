// SPDX-License-Identifier: GPL-2.0

//! The 40 bytes a UD receive starts with: the Global Route Header of the datagram, which for
//! RoCEv2 is the IP header it came in (IBTA A17.4.5.1): an IPv6 header fills all 40 bytes; an
//! IPv4 header (20 bytes) fills the last 20, after 20 zero bytes. Only the GIDs' last 4 bytes
//! are an IPv4 address.
//!
//! Pure `core` code: also built and tested on the host (`host-tests/`).

/// Bytes of a GRH.
pub(crate) const GRH_LEN: usize = 40;

/// What a RoCEv2 datagram's IP header is made of: the packet's route (its UDP source port and
/// IPv4 identification do not show in a GRH).
pub(crate) use crate::protocol::packet::Route;

/// UDP (8), BTH (12), DETH (8) and ICRC (4) around a UD payload.
const UD_OVERHEAD: u32 = 8 + 12 + 8 + 4;

/// The GRH of a UD datagram of `payload` bytes (with immediate data if `imm`) on `route`.
pub(crate) fn ud_grh(route: &Route, payload: u32, imm: bool) -> [u8; GRH_LEN] {
    let mut g = [0u8; GRH_LEN];
    let after_ip = payload + UD_OVERHEAD + if imm { 4 } else { 0 };
    if route.ipv4 {
        let h = &mut g[20..];
        h[0] = 0x45;
        h[1] = route.traffic_class;
        h[2..4].copy_from_slice(&((20 + after_ip) as u16).to_be_bytes());
        // Don't fragment, as rxe sends.
        h[6] = 0x40;
        h[8] = route.hop_limit;
        h[9] = 17;
        h[12..16].copy_from_slice(&route.sgid[12..]);
        h[16..20].copy_from_slice(&route.dgid[12..]);
        let sum = ipv4_checksum(h);
        h[10..12].copy_from_slice(&sum.to_be_bytes());
    } else {
        let vtf = 6u32 << 28 | u32::from(route.traffic_class) << 20 | route.flow_label & 0xf_ffff;
        g[0..4].copy_from_slice(&vtf.to_be_bytes());
        g[4..6].copy_from_slice(&(after_ip as u16).to_be_bytes());
        g[6] = 17;
        g[7] = route.hop_limit;
        g[8..24].copy_from_slice(&route.sgid);
        g[24..40].copy_from_slice(&route.dgid);
    }
    g
}

/// The IPv4 header checksum of `h` (whose checksum field is zero).
pub(crate) fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum::<u32>();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
