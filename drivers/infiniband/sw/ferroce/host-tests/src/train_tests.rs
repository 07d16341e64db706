// SPDX-License-Identifier: GPL-2.0

//! Tests of `train.rs`: a train, cut as the kernel cuts a UDP GSO datagram (modelled here on
//! its own, from net/ipv4/udp_offload.c and af_inet.c, not from `packet.rs`), gives byte for
//! byte the packets the data path sends one at a time, over IPv4 and IPv6; trains are
//! planned and refused as the kernel needs; and a train that arrives whole parses, piece by
//! piece, exactly as the packets the kernel would have cut from it, while any datagram at all
//! is handled without a panic.

use crate::{
    bth::Bth,
    icrc,
    opcode::{RC, UC},
    packet::{self, Headers, Route},
    packet_tests::{build, routes, udp6_checksum_ok},
    train::{self, Arrival, Train, MAX_CARS, UDP_MAX_SEGMENTS},
};

/// The one's complement sum of `bytes` (a trailing odd byte padded with 0).
fn ones_sum(bytes: &[u8]) -> u16 {
    let mut sum: u64 = bytes
        .chunks(2)
        .map(|w| u64::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// What the kernel makes of the UDP datagram `datagram` (IP header first) sent with
/// `gso_size`: pieces of the payload after the UDP header, each behind a copy of the headers
/// with its own lengths, IPv4 identification (the datagram's plus the piece's index), IPv4
/// header checksum, and UDP checksum (complete, as software segmentation on a real link leaves
/// it). The rest of the headers is copied as it is.
fn cut(datagram: &[u8], gso_size: usize) -> Vec<Vec<u8>> {
    let v6 = datagram[0] >> 4 == 6;
    let ip = if v6 {
        40
    } else {
        usize::from(datagram[0] & 0xf) * 4
    };
    let (head, payload) = datagram.split_at(ip + 8);
    let id = u16::from_be_bytes([head[4], head[5]]);
    payload
        .chunks(gso_size)
        .enumerate()
        .map(|(i, piece)| {
            let mut p = head.to_vec();
            p.extend_from_slice(piece);
            let udp_len = (8 + piece.len()) as u16;
            if v6 {
                p[4..6].copy_from_slice(&udp_len.to_be_bytes());
            } else {
                p[2..4].copy_from_slice(&(ip as u16 + udp_len).to_be_bytes());
                p[4..6].copy_from_slice(&id.wrapping_add(i as u16).to_be_bytes());
                p[10..12].fill(0);
                let sum = !ones_sum(&p[..ip]);
                p[10..12].copy_from_slice(&sum.to_be_bytes());
            }
            p[ip + 4..ip + 6].copy_from_slice(&udp_len.to_be_bytes());
            p[ip + 6..ip + 8].fill(0);
            let mut pseudo = Vec::new();
            if v6 {
                pseudo.extend_from_slice(&p[8..40]);
                pseudo.extend_from_slice(&u32::from(udp_len).to_be_bytes());
                pseudo.extend_from_slice(&[0, 0, 0, 17]);
            } else {
                pseudo.extend_from_slice(&p[12..20]);
                pseudo.extend_from_slice(&[0, 17]);
                pseudo.extend_from_slice(&udp_len.to_be_bytes());
            }
            pseudo.extend_from_slice(&p[ip..]);
            let check = match !ones_sum(&pseudo) {
                0 => 0xffff,
                s => s,
            };
            p[ip + 6..ip + 8].copy_from_slice(&check.to_be_bytes());
            p
        })
        .collect()
}

/// One packet of a message: headers and payload.
struct Car {
    h: Headers,
    payload: Vec<u8>,
}

/// The packets of a message of `len` bytes in `mtu`-byte packets, from `psn` on: a SEND (with
/// immediate data if `imm`) or an RDMA WRITE (its first packet carries the RETH). Payload
/// bytes count up from `seed`.
fn message(write: bool, imm: bool, len: usize, mtu: usize, psn: u32, seed: u8) -> Vec<Car> {
    let n = len.div_ceil(mtu);
    (0..n)
        .map(|i| {
            let (first, last) = (i == 0, i + 1 == n);
            let opcode = RC | crate::opcode::data_opcode(write, first, last, imm, false);
            let chunk = if last { len - i * mtu } else { mtu };
            Car {
                h: Headers {
                    bth: Bth {
                        opcode,
                        pkey: 0xffff,
                        dest_qp: 0x12,
                        ack_req: last || i % 8 == 7,
                        psn: (psn + i as u32) & 0xff_ffff,
                        ..Bth::default()
                    },
                    reth: (write && first).then_some(crate::eth::Reth {
                        va: 0x1000,
                        rkey: 0x77,
                        dma_len: len as u32,
                    }),
                    imm: (imm && last).then_some(0xfeed_f00d),
                    ..Headers::default()
                },
                payload: (0..chunk).map(|b| (b as u8).wrapping_add(seed)).collect(),
            }
        })
        .collect()
}

fn body_of(c: &Car) -> usize {
    packet::body_len(c.h.bth.opcode, c.payload.len()).unwrap()
}

/// The train of `cars` on `route`, built as the data path builds it (in a buffer of garbage).
fn build_train(route: &Route, cars: &[Car]) -> (Train, Vec<u8>) {
    let seg = body_of(&cars[0]);
    let t = Train::new(route, seg, cars.len(), body_of(cars.last().unwrap())).expect("train");
    let mut buf = vec![0x5au8; t.len()];
    t.write_head(&mut buf).expect("write_head");
    for (i, c) in cars.iter().enumerate() {
        let body = t.body_mut(&mut buf, i).expect("body");
        let at = packet::write_transport(body, &c.h, c.payload.len()).expect("write_transport");
        body[at..at + c.payload.len()].copy_from_slice(&c.payload);
        t.seal(&mut buf, i, icrc::update).expect("seal");
    }
    (t, buf)
}

/// Each piece of a cut train equals the packet sent alone with the piece's IPv4
/// identification: byte for byte over IPv6 (UDP checksum included); over IPv4 but for the UDP
/// checksum, which a packet sent alone leaves 0 and the kernel fills in for a piece.
fn assert_cuts_to_packets(route: &Route, cars: &[Car]) {
    let (t, datagram) = build_train(route, cars);
    let pieces = cut(&datagram, t.segment());
    assert_eq!(pieces.len(), cars.len());
    let ip = packet::ip_udp_len(route) - 8;
    for (i, (piece, c)) in pieces.iter().zip(cars).enumerate() {
        let alone = build(
            &Route {
                ip_id: if route.ipv4 {
                    route.ip_id.wrapping_add(i as u16)
                } else {
                    0
                },
                ..*route
            },
            &c.h,
            &c.payload,
        );
        if route.ipv4 {
            let mask = |p: &[u8]| [&p[..ip + 6], &p[ip + 8..]].concat();
            assert_eq!(mask(piece), mask(&alone), "piece {i}");
        } else {
            assert_eq!(piece, &alone, "piece {i}");
            assert!(udp6_checksum_ok(piece));
        }
        let parsed = packet::parse(piece).expect("piece parses");
        assert_eq!(parsed.hdr.bth.opcode, c.h.bth.opcode);
        assert_eq!(parsed.hdr.bth.psn, c.h.bth.psn);
        assert_eq!(parsed.payload, &c.payload[..]);
    }
}

/// Trains of SEND and WRITE packets cut into exactly the packets sent alone: full middles and
/// a shorter last (with a pad), a last as long as the middles, immediate data, both families,
/// and an IPv4 identification that wraps inside the train.
#[test]
fn trains_cut_into_the_packets_sent_alone() {
    for mut route in routes() {
        for (len, mtu) in [
            (4096, 1024),
            (3 * 1024 + 301, 1024),
            (5 * 256, 256),
            (9000, 4096),
        ] {
            // SEND: the first packet is as long as the middles.
            assert_cuts_to_packets(&route, &message(false, false, len, mtu, 10, 1));
            // With immediate data in a shorter last.
            let m = message(false, true, len, mtu, 0xff_fffe, 2);
            if body_of(m.last().unwrap()) <= body_of(&m[0]) {
                assert_cuts_to_packets(&route, &m);
            }
            // WRITE: the first carries the RETH and goes alone; the rest is a train.
            let w = message(true, false, len + mtu, mtu, 7, 3);
            assert!(body_of(&w[0]) > body_of(&w[1]));
            assert_cuts_to_packets(&route, &w[1..]);
        }
        if route.ipv4 {
            route.ip_id = 0xfffe;
            assert_cuts_to_packets(&route, &message(false, false, 6 * 1024, 1024, 1, 4));
        }
    }
}

/// A mistake in the pieces' headers is caught: the ICRC of a piece whose identification the
/// train did not count up (or whose lengths are those of the datagram) does not hold.
#[test]
fn pieces_need_their_own_identification_and_lengths() {
    let route = routes()[0];
    let cars = message(false, false, 4 * 1024, 1024, 5, 9);
    let (t, datagram) = build_train(&route, &cars);
    let pieces = cut(&datagram, t.segment());
    assert!(pieces.iter().all(|p| icrc::check(p)));
    // Piece 2 with the identification of piece 0.
    let mut p = pieces[2].clone();
    p[4..6].copy_from_slice(&route.ip_id.to_be_bytes());
    assert!(!icrc::check(&p));
    // The datagram read as one packet: its ICRC is none of its pieces'.
    assert!(!icrc::check(&datagram));
}

/// Bodies of the lengths given: `cars` takes the first, those as long after it and one
/// shorter to end, within the length and count limits.
#[test]
fn cars_take_equal_bodies_and_one_shorter() {
    let route = routes()[0];
    let head = packet::ip_udp_len(&route);
    assert_eq!(train::cars(&route, [], 65535), 0);
    assert_eq!(train::cars(&route, [100], 65535), 1);
    assert_eq!(train::cars(&route, [100, 100, 100], 65535), 3);
    assert_eq!(train::cars(&route, [100, 100, 60, 100], 65535), 3);
    // A longer one (a WRITE's first packet before its middles) ends it before.
    assert_eq!(train::cars(&route, [116, 100, 100], 65535), 1);
    assert_eq!(train::cars(&route, [100, 116], 65535), 1);
    // A shorter one that is the last, or alone of its length, ends it.
    assert_eq!(train::cars(&route, [116, 100], 65535), 2);
    assert_eq!(train::cars(&route, [116, 100, 120], 65535), 2);
    assert_eq!(train::cars(&route, [100, 0], 65535), 1);
    // The length limit counts the headers once.
    assert_eq!(train::cars(&route, [100; 10], head + 300), 3);
    assert_eq!(train::cars(&route, [100; 10], head + 299), 2);
    assert_eq!(train::cars(&route, [100; 10], head + 50), 1);
    assert_eq!(train::cars(&route, [1; 1000], 65535), MAX_CARS);
}

/// `Train::new` refuses what the kernel would not cut or the length fields cannot say.
#[test]
fn trains_the_kernel_cannot_cut_are_refused() {
    for route in routes() {
        assert!(Train::new(&route, 1040, 1, 1040).is_none());
        assert!(Train::new(&route, 1040, 2, 0).is_none());
        assert!(Train::new(&route, 1040, 2, 1041).is_none());
        assert!(Train::new(&route, 16, MAX_CARS + 1, 16).is_none());
        assert!(Train::new(&route, 4112, 16, 4112).is_none());
        assert!(Train::new(&route, usize::MAX / 2, 3, 1).is_none());
        let t = Train::new(&route, 4112, 15, 4112).expect("61680 bytes");
        assert!(t.len() <= 65535);
        // The datagram's buffer must be exactly its length.
        let mut short = vec![0u8; t.len() - 1];
        assert!(t.write_head(&mut short).is_none());
        assert!(t.body_mut(&mut short, 0).is_none());
        let mut buf = vec![0u8; t.len()];
        assert!(t.body_mut(&mut buf, 15).is_none());
        // Sealing a body of garbage (any 12 bytes read as a BTH) does not panic.
        let _ = t.seal(&mut buf, 14, icrc::update);
    }
    // UC packets go in trains as RC ones do.
    let route = routes()[1];
    let mut cars = message(false, false, 3000, 1024, 0, 0);
    for c in &mut cars {
        c.h.bth.opcode = UC | (c.h.bth.opcode & 0x1f);
    }
    assert_cuts_to_packets(&route, &cars);
}

/// Each piece of a train that arrived whole parses to exactly what the packet the kernel cuts
/// from it parses to (route, IPv4 identification and IP header included), over both families,
/// with a shorter last, immediate data, and an identification that wraps.
#[test]
fn trains_arriving_whole_parse_as_the_pieces_cut() {
    for mut route in routes() {
        for _ in 0..2 {
            for (len, mtu) in [(4096, 1024), (3 * 1024 + 301, 1024), (9000, 4096)] {
                for cars in [
                    message(false, false, len, mtu, 10, 1),
                    message(false, true, len, mtu, 0xff_fffe, 2),
                    message(true, false, len + mtu, mtu, 7, 3).split_off(1),
                ] {
                    if body_of(cars.last().unwrap()) > body_of(&cars[0]) {
                        continue;
                    }
                    let (t, datagram) = build_train(&route, &cars);
                    let cut = cut(&datagram, t.segment());
                    let a = Arrival::new(&datagram, t.segment()).expect("arrival");
                    assert_eq!(a.count(), cars.len());
                    assert_eq!(a.head_len(), packet::ip_udp_len(&route));
                    let mut head = [0u8; packet::MAX_IP_UDP];
                    for (i, piece) in cut.iter().enumerate() {
                        let body = a.piece(i, &mut head).expect("piece");
                        let parsed = packet::parse_parts_with(
                            &head[..a.head_len()],
                            body,
                            icrc::Check::With(icrc::update),
                        );
                        assert_eq!(parsed, packet::parse(piece), "piece {i}");
                        assert!(parsed.is_ok());
                    }
                    assert!(a.piece(cut.len(), &mut head).is_none());
                }
            }
            if !route.ipv4 {
                break;
            }
            route.ip_id = 0xfffe;
        }
    }
}

/// A datagram whose own headers are not those of a RoCEv2 datagram of its length, or a
/// segment of 0, is no train.
#[test]
fn datagrams_that_are_no_train_are_refused() {
    for route in routes() {
        let cars = message(false, false, 4096, 1024, 3, 5);
        let (t, datagram) = build_train(&route, &cars);
        let seg = t.segment();
        assert!(Arrival::new(&datagram, 0).is_none());
        // Truncated, or with bytes past its IP length.
        assert!(Arrival::new(&datagram[..datagram.len() - 1], seg).is_none());
        let mut longer = datagram.clone();
        longer.push(0);
        assert!(Arrival::new(&longer, seg).is_none());
        let ip = packet::ip_udp_len(&route) - 8;
        // To another port, or a UDP length that is not the datagram's.
        let mut other = datagram.clone();
        other[ip + 3] ^= 1;
        assert!(Arrival::new(&other, seg).is_none());
        let mut other = datagram.clone();
        other[ip + 5] ^= 4;
        assert!(Arrival::new(&other, seg).is_none());
        // Not UDP.
        let mut other = datagram.clone();
        other[if route.ipv4 { 9 } else { 6 }] = 6;
        assert!(Arrival::new(&other, seg).is_none());
        // More pieces than the kernel cuts a datagram into.
        let body = datagram.len() - packet::ip_udp_len(&route);
        let fine = body.div_ceil(UDP_MAX_SEGMENTS);
        assert_eq!(
            Arrival::new(&datagram, fine).map(|a| a.count()),
            Some(body.div_ceil(fine))
        );
        assert!(body.div_ceil(fine - 1) > UDP_MAX_SEGMENTS);
        assert!(Arrival::new(&datagram, fine - 1).is_none());
        assert!(Arrival::new(&datagram, 1).is_none());
    }
}

/// Whatever a sender puts in a datagram and its segment length, the pieces are handled
/// without a panic, each counted once, and only pieces that are whole packets parse: a
/// segment length off the packets' boundaries, and bytes flipped anywhere.
#[test]
fn any_train_is_handled_piece_by_piece() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for route in routes() {
        let cars = message(false, false, 4096 + 77, 1024, 3, 5);
        let (t, datagram) = build_train(&route, &cars);
        let good = t.segment();
        let fine = (datagram.len() - packet::ip_udp_len(&route)).div_ceil(UDP_MAX_SEGMENTS);
        for seg in [
            fine,
            fine + 1,
            41,
            64,
            good - 4,
            good - 1,
            good + 1,
            good + 4,
            65535,
        ] {
            let a = Arrival::new(&datagram, seg).expect("headers are fine");
            let mut head = [0u8; packet::MAX_IP_UDP];
            let mut ok = 0;
            for i in 0..a.count() {
                let body = a.piece(i, &mut head).expect("piece");
                assert!(body.len() <= seg);
                ok += usize::from(
                    packet::parse_parts_with(
                        &head[..a.head_len()],
                        body,
                        icrc::Check::With(icrc::update),
                    )
                    .is_ok(),
                );
            }
            assert_eq!(ok, 0, "segment {seg}");
        }
        for _ in 0..2000 {
            let mut d = datagram.clone();
            for _ in 0..1 + next() % 3 {
                let at = (next() % d.len() as u64) as usize;
                d[at] ^= 1 << (next() % 8);
            }
            let seg = if next() % 4 == 0 {
                (next() % 2000) as usize
            } else {
                good
            };
            let Some(a) = Arrival::new(&d, seg) else {
                continue;
            };
            let mut head = [0u8; packet::MAX_IP_UDP];
            let mut pieces = 0;
            while let Some(body) = a.piece(pieces, &mut head) {
                let _ = packet::parse_parts_with(
                    &head[..a.head_len()],
                    body,
                    icrc::Check::With(icrc::update),
                );
                pieces += 1;
            }
            assert_eq!(pieces, a.count());
        }
    }
}
