// SPDX-License-Identifier: GPL-2.0

//! The invariant CRC that closes every RoCEv2 packet (IBTA RoCEv2 annex A17.4.3): CRC-32
//! (the Ethernet polynomial, reflected) over the packet from the IP header to the end of the
//! payload and pad, with the fields routers may change replaced by ones, after eight bytes of
//! ones that stand for InfiniBand's LRH. The masked fields: IPv4 TOS, TTL and header checksum;
//! IPv6 traffic class, flow label and hop limit; the UDP checksum; the BTH's FECN, BECN and
//! reserved bits. The four bytes go on the wire least significant byte first.
//!
//! Pure `core` code, tested on the host against packets rdma_rxe sent (`host-tests/`); the data
//! path uses it.

use crate::protocol::opcode::BTH_BYTES;

const IPV4_BYTES: usize = 20;
const IPV6_BYTES: usize = 40;
const UDP_BYTES: usize = 8;

/// CRC-32 lookup table, polynomial 0xEDB88320 (reflected 0x04C11DB7).
const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Runs the CRC register over `data` (no final inversion).
pub(crate) fn update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// The CRC register after the all-ones seed and the eight bytes of ones of the masked LRH.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn seed() -> u32 {
    update(0xffff_ffff, &[0xff; 8])
}

/// The ICRC of `packet`: an IPv4 (without options) or IPv6 header, the UDP header, the BTH and
/// the rest up to the end of the pad, without the ICRC itself. `None` if it is too short or
/// not IP.
// The kernel passes its own CRC step (`*_with`); the host tests use the table.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn compute(packet: &[u8]) -> Option<u32> {
    compute_with(packet, update)
}

/// A CRC-32 step with the arithmetic of [`update`] (reflected polynomial 0xedb88320, no
/// inversions): `update` itself, or a faster one (the kernel's `crc32_le`).
pub(crate) type Update = fn(u32, &[u8]) -> u32;

/// What a receiver does with a packet's ICRC.
#[derive(Clone, Copy)]
pub(crate) enum Check {
    /// Computes it with this CRC step and refuses the packet if it differs from the one the
    /// packet carries.
    With(Update),
    /// Takes it on trust: the stack vouches for the packet's bytes (it built the train the
    /// packet came in, which has only been in memory since, or checked each piece's UDP
    /// checksum when it merged them), as it trusts UDP and TCP checksums it left to be filled
    /// in. A sender that writes a wrong ICRC on purpose gains nothing by it: one that writes
    /// a right one reaches the same code.
    Trusted,
}

/// [`compute`] with the CRC step `update`.
pub(crate) fn compute_with(packet: &[u8], update: Update) -> Option<u32> {
    let ip = ip_bytes(packet)?;
    let (ip_udp, body) = (packet.get(..ip + UDP_BYTES)?, &packet[ip + UDP_BYTES..]);
    compute_parts(ip_udp, body, update)
}

/// Bytes of the IP header `packet` starts with (IPv4 without options, or IPv6); `None` if it
/// is not IP.
fn ip_bytes(packet: &[u8]) -> Option<usize> {
    match packet.first()? >> 4 {
        4 if packet[0] & 0xf == 5 => Some(IPV4_BYTES),
        6 => Some(IPV6_BYTES),
        _ => None,
    }
}

/// The ICRC of a packet given in two parts: `ip_udp`, its IP and UDP headers, and `body`, the
/// BTH and the rest up to the end of the pad (without the ICRC). A packet of a train has no
/// IP and UDP header of its own until the IP stack cuts the train: its ICRC is computed over
/// the headers it will carry (`train.rs`). `None` if the headers are not IP and UDP, or the
/// body is shorter than a BTH.
pub(crate) fn compute_parts(ip_udp: &[u8], body: &[u8], update: Update) -> Option<u32> {
    let ip = ip_bytes(ip_udp)?;
    let masked_len = ip + UDP_BYTES + BTH_BYTES;
    if ip_udp.len() != ip + UDP_BYTES {
        return None;
    }
    let mut masked = [0u8; IPV6_BYTES + UDP_BYTES + BTH_BYTES];
    masked[..ip + UDP_BYTES].copy_from_slice(ip_udp);
    masked[ip + UDP_BYTES..masked_len].copy_from_slice(body.get(..BTH_BYTES)?);
    if ip == IPV4_BYTES {
        masked[1] = 0xff; // TOS
        masked[8] = 0xff; // TTL
        masked[10] = 0xff; // header checksum
        masked[11] = 0xff;
    } else {
        masked[0] |= 0x0f; // traffic class (high nibble) ...
        masked[1] = 0xff; // ... its low nibble and the flow label
        masked[2] = 0xff;
        masked[3] = 0xff;
        masked[7] = 0xff; // hop limit
    }
    masked[ip + 6] = 0xff; // UDP checksum
    masked[ip + 7] = 0xff;
    masked[ip + UDP_BYTES + 4] = 0xff; // BTH: FECN, BECN, resv6
    let seed = update(0xffff_ffff, &[0xff; 8]);
    let crc = update(seed, &masked[..masked_len]);
    Some(!update(crc, &body[BTH_BYTES..]))
}

/// Whether `packet` (IP header to the end, ICRC included) carries a correct ICRC.
// The kernel passes its own CRC step (`*_with`); the host tests use the table.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn check(packet: &[u8]) -> bool {
    check_with(packet, update)
}

/// [`check`] with the CRC step `update`.
// The data path checks packets in two parts (`packet::parse_parts_with`).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn check_with(packet: &[u8], update: Update) -> bool {
    let Some(body) = packet.len().checked_sub(4) else {
        return false;
    };
    let wire = u32::from_le_bytes([
        packet[body],
        packet[body + 1],
        packet[body + 2],
        packet[body + 3],
    ]);
    compute_with(&packet[..body], update) == Some(wire)
}
