// SPDX-License-Identifier: GPL-2.0

//! Tests of `packet.rs`: rdma_rxe's packets parse to what was sent and re-encode to the same
//! bytes, every opcode round-trips over IPv4 and IPv6, and damaged or foreign packets are
//! refused without a panic.

use crate::{
    bth::Bth,
    eth::{Aeth, AtomicEth, Deth, Feth, Reth},
    grh, icrc,
    opcode::{self, hdr, op, RC, UC, UD},
    packet::{self, Headers, Parsed, Reject, Route},
    psn, rxe_packets,
};

fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&a);
    g
}

/// The packet `h` with `payload` makes on `route`, built as the data path builds it, in a
/// buffer that starts out as garbage.
pub(crate) fn build(route: &Route, h: &Headers, payload: &[u8]) -> Vec<u8> {
    let len = packet::packet_len(route, h.bth.opcode, payload.len()).expect("packet_len");
    let mut buf = vec![0xa5u8; len];
    let at = packet::write_headers(&mut buf, route, h, payload.len()).expect("write_headers");
    buf[at..at + payload.len()].copy_from_slice(payload);
    packet::finish(&mut buf).expect("finish");
    buf
}

/// Recomputes the ICRC of a packet after a test changed it on purpose (if it still has one).
fn reseal(p: &mut [u8]) {
    let body = p.len() - 4;
    if let Some(crc) = icrc::compute(&p[..body]) {
        p[body..].copy_from_slice(&crc.to_le_bytes());
    }
}

/// The UDP checksum of an IPv6 packet, checked independently of `packet.rs`: the one's
/// complement sum of the pseudo-header and the UDP datagram, checksum included, is 0xffff.
pub(crate) fn udp6_checksum_ok(p: &[u8]) -> bool {
    let udp = &p[40..];
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&p[8..40]);
    bytes.extend_from_slice(&(udp.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&[0, 0, 0, 17]);
    bytes.extend_from_slice(udp);
    if bytes.len() % 2 == 1 {
        bytes.push(0);
    }
    let mut sum: u64 = bytes
        .chunks(2)
        .map(|w| u64::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff && udp[6..8] != [0, 0]
}

fn rxe_route(src_port: u16, ip_id: u16) -> Route {
    Route {
        ipv4: true,
        sgid: v4([10, 78, 0, 1]),
        dgid: v4([10, 78, 0, 2]),
        traffic_class: 0,
        flow_label: 0,
        hop_limit: 64,
        src_port,
        ip_id,
        vlan_id: None,
    }
}

/// What rxe sent in each fixture (`rxe_packets.rs`).
fn rxe_fixtures() -> Vec<(Vec<u8>, Route, Headers, &'static [u8])> {
    vec![
        (
            rxe_packets::bytes(rxe_packets::RC_SEND_ONLY),
            rxe_route(0xd353, 0xe424),
            Headers {
                bth: Bth {
                    opcode: RC | op::SEND_ONLY,
                    pkey: 0xffff,
                    dest_qp: 0x123,
                    ack_req: true,
                    psn: 0x456,
                    ..Bth::default()
                },
                ..Headers::default()
            },
            b"ferroce ICRC fixture: an RC SEND to QP 0x123",
        ),
        (
            rxe_packets::bytes(rxe_packets::RC_RDMA_WRITE_ONLY),
            rxe_route(0xd353, 0xe426),
            Headers {
                bth: Bth {
                    opcode: RC | op::RDMA_WRITE_ONLY,
                    pkey: 0xffff,
                    dest_qp: 0x123,
                    ack_req: true,
                    psn: 0x457,
                    ..Bth::default()
                },
                reth: Some(Reth {
                    va: 0x1000,
                    rkey: 0x4242,
                    dma_len: 16,
                }),
                ..Headers::default()
            },
            b"ferroce ICRC fix",
        ),
        (
            rxe_packets::bytes(rxe_packets::UD_SEND_ONLY_WITH_IMM),
            rxe_route(0xf806, 0xe427),
            Headers {
                bth: Bth {
                    opcode: UD | op::SEND_ONLY_WITH_IMMEDIATE,
                    pad: 3,
                    pkey: 0xffff,
                    dest_qp: 0x321,
                    psn: 0x789,
                    ..Bth::default()
                },
                deth: Some(Deth {
                    qkey: 0x1111_1111,
                    src_qp: 0x12,
                }),
                imm: Some(0x0403_0201),
                ..Headers::default()
            },
            b"ferroce ICRC fixture:",
        ),
    ]
}

#[test]
fn rxe_packets_parse_to_what_was_sent() {
    for (p, route, h, payload) in rxe_fixtures() {
        let got = packet::parse(&p).expect("rxe's packet parses");
        assert_eq!(got.route, route);
        assert_eq!(got.hdr, h);
        assert_eq!(got.payload, payload);
        assert_eq!(got.layout, opcode::layout(h.bth.opcode).unwrap());
        assert_eq!(got.ip_header, &p[..20]);
        let g = got.grh();
        assert_eq!(&g[..20], &[0u8; 20]);
        assert_eq!(&g[20..], &p[..20]);
    }
}

/// ferroce's encoder is the wire format: each rxe packet, rebuilt from what was sent, comes
/// out byte for byte the same, IPv4 header checksum and ICRC included.
#[test]
fn rxe_packets_rebuild_byte_for_byte() {
    for (p, route, h, payload) in rxe_fixtures() {
        assert_eq!(build(&route, &h, payload), p);
        let got = packet::parse(&p).unwrap();
        assert_eq!(build(&got.route, &got.hdr, got.payload), p);
    }
}

/// Headers for `opcode` with every field its layout names set to something recognisable.
fn headers_for(opcode: u8, n: u32) -> Headers {
    let l = opcode::layout(opcode).unwrap();
    let has = |bit: u16| l.headers & bit != 0;
    let n64 = u64::from(n);
    Headers {
        bth: Bth {
            opcode,
            se: n & 1 != 0,
            mig: n & 2 != 0,
            pkey: 0x8000 | n as u16,
            fecn: n & 4 != 0,
            becn: n & 8 != 0,
            dest_qp: 0xab_c000 | n,
            ack_req: n & 16 != 0,
            psn: 0xff_fff0u32.wrapping_add(n) & 0xff_ffff,
            ..Bth::default()
        },
        deth: has(hdr::DETH).then_some(Deth {
            qkey: 0x8000_0000 | n,
            src_qp: 0xfe_dc00 | n,
        }),
        feth: has(hdr::FETH).then_some(Feth {
            placement: (n % 15 + 1) as u8,
            selectivity: (n % 4) as u8,
        }),
        reth: has(hdr::RETH).then_some(Reth {
            va: 0xffff_8880_0000_0000 | n64,
            rkey: 0x1234_5600 | n,
            dma_len: 0x8000_0000 | n,
        }),
        atomic_eth: has(hdr::ATOMIC_ETH).then_some(AtomicEth {
            va: 0x7fff_0000_0000_0008 | n64 << 3,
            rkey: 0x99 | n << 8,
            swap_add: u64::MAX - n64,
            compare: n64 << 40,
        }),
        aeth: has(hdr::AETH).then_some(Aeth {
            syndrome: 0x1f,
            msn: 0xff_ff00 | n,
        }),
        atomic_ack: has(hdr::ATOMIC_ACK_ETH).then_some(0x0102_0304_0506_0708 ^ n64),
        imm: has(hdr::IMMDT).then_some(0xdead_be00 | n),
        ieth: has(hdr::IETH).then_some(0x4242_0000 | n),
    }
}

fn opcodes() -> Vec<u8> {
    (0..=255u8)
        .filter(|&o| opcode::layout(o).is_some())
        .collect()
}

pub(crate) fn routes() -> [Route; 2] {
    [
        Route {
            ipv4: true,
            sgid: v4([192, 168, 1, 10]),
            dgid: v4([192, 168, 1, 20]),
            traffic_class: 0xb8,
            flow_label: 0,
            hop_limit: 63,
            src_port: 0xc000,
            ip_id: 0xbeef,
            vlan_id: None,
        },
        Route {
            ipv4: false,
            sgid: [
                0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56,
            ],
            dgid: [
                0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
            ],
            traffic_class: 0x5a,
            flow_label: 0xabcde,
            hop_limit: 255,
            src_port: 0xffff,
            ip_id: 0,
            vlan_id: None,
        },
    ]
}

/// parse(build(x)) == x for every opcode of RC, UC and UD, payloads of 0 to 5 bytes and of
/// path-MTU sizes, over IPv4 and IPv6; the checksums hold.
#[test]
fn every_opcode_round_trips() {
    let ops = opcodes();
    // RC: 12 SEND/WRITE, READ request, 4 READ responses, 2 ACKs, 2 atomics, 2 with invalidate,
    // FLUSH, ATOMIC_WRITE.
    assert_eq!(ops.len(), 24 + 12 + 2 + 1);
    let big: Vec<u8> = (0..4096 + 8u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut n = 0u32;
    for route in routes() {
        for &o in &ops {
            let layout = opcode::layout(o).unwrap();
            let sizes: &[usize] = if layout.payload {
                &[0, 1, 2, 3, 4, 5, 1024, 4096]
            } else {
                &[0]
            };
            for &size in sizes {
                n += 1;
                let mut h = headers_for(o, n);
                let payload = &big[n as usize % 7..][..size];
                let p = build(&route, &h, payload);
                h.bth.pad = ((4 - size % 4) % 4) as u8;
                let ip = if route.ipv4 { 20 } else { 40 };
                assert_eq!(
                    p.len(),
                    ip + 8 + layout.header_bytes() + size + h.bth.pad as usize + 4
                );
                assert_eq!(
                    packet::parse(&p),
                    Ok(Parsed {
                        route,
                        layout,
                        hdr: h,
                        payload,
                        ip_header: &p[..ip],
                    }),
                    "opcode {o:#x}, {size} bytes, ipv4 {}",
                    route.ipv4
                );
                assert!(icrc::check(&p));
                let pad_at = p.len() - 4 - h.bth.pad as usize;
                assert!(
                    p[pad_at..p.len() - 4].iter().all(|&b| b == 0),
                    "pad is zero"
                );
                if route.ipv4 {
                    assert_eq!(grh::ipv4_checksum(&p[..20]), 0, "IPv4 header checksum");
                    assert_eq!(&p[26..28], &[0, 0], "no UDP checksum over IPv4");
                } else {
                    assert!(udp6_checksum_ok(&p), "IPv6 UDP checksum");
                }
                // The GRH a UD receive gets is the one the local path makes (which counts no
                // pad in the IPv4 length or the IPv6 payload length: compare whole words).
                if o & 0xe0 == UD && size % 4 == 0 {
                    let gr = route;
                    let got = packet::parse(&p).unwrap();
                    let mut want = grh::ud_grh(&gr, size as u32, h.imm.is_some());
                    if route.ipv4 {
                        // The local path has no IPv4 identification; the wire does.
                        want[24..26].copy_from_slice(&route.ip_id.to_be_bytes());
                        want[30..32].fill(0);
                        let sum = grh::ipv4_checksum(&want[20..]);
                        want[30..32].copy_from_slice(&sum.to_be_bytes());
                    }
                    assert_eq!(got.grh(), want);
                }
            }
        }
    }
}

/// What rxe puts in the GRH of an IPv4 datagram is what `grh::ud_grh` makes for the same route
/// with an identification of 0.
#[test]
fn ud_grh_matches_the_local_path() {
    for route in routes() {
        let route = Route { ip_id: 0, ..route };
        let h = headers_for(UD | op::SEND_ONLY, 1);
        let p = build(&route, &h, b"twelve bytes");
        let gr = route;
        assert_eq!(
            packet::parse(&p).unwrap().grh(),
            grh::ud_grh(&gr, 12, false)
        );
    }
}

#[test]
fn builder_refuses_what_it_cannot_send() {
    let [r4, r6] = routes();
    let send = headers_for(RC | op::SEND_ONLY, 1);
    let len = packet::packet_len(&r4, send.bth.opcode, 3).unwrap();
    assert_eq!(len, 20 + 8 + 12 + 3 + 1 + 4);
    let mut buf = vec![0u8; len];
    assert_eq!(packet::write_headers(&mut buf, &r4, &send, 3), Some(40));
    assert_eq!(
        packet::write_headers(&mut buf[1..], &r4, &send, 3),
        None,
        "short buffer"
    );
    let mut longer = vec![0u8; len + 1];
    assert_eq!(
        packet::write_headers(&mut longer, &r4, &send, 3),
        None,
        "long buffer"
    );
    // A header the layout names is missing, or one it does not name is there.
    let write = headers_for(RC | op::RDMA_WRITE_ONLY, 1);
    let no_reth = Headers {
        reth: None,
        ..write
    };
    let l = packet::packet_len(&r4, write.bth.opcode, 0).unwrap();
    assert_eq!(
        packet::write_headers(&mut vec![0; l], &r4, &no_reth, 0),
        None
    );
    let extra = Headers {
        imm: Some(1),
        ..write
    };
    assert_eq!(packet::write_headers(&mut vec![0; l], &r4, &extra, 0), None);
    // No payload where the layout has none; no opcode without a layout.
    assert_eq!(packet::packet_len(&r4, RC | op::ACKNOWLEDGE, 1), None);
    assert_eq!(
        packet::packet_len(&r4, RC | op::ACKNOWLEDGE, 0),
        Some(20 + 8 + 12 + 4 + 4)
    );
    assert_eq!(packet::packet_len(&r4, 0x15, 0), None);
    assert_eq!(packet::packet_len(&r4, UD | op::SEND_FIRST, 0), None);
    // The IP and UDP length fields are 16 bits; IPv4 counts its own header, IPv6 does not.
    let so = RC | op::SEND_ONLY;
    assert_eq!(packet::packet_len(&r4, so, 65488), Some(65532));
    assert_eq!(packet::packet_len(&r4, so, 65492), None);
    assert_eq!(packet::packet_len(&r6, so, 65508), Some(65572));
    assert_eq!(packet::packet_len(&r6, so, 65512), None);
    assert_eq!(packet::packet_len(&r4, so, usize::MAX), None);
    // The largest packets still build and parse.
    let big = vec![0x5au8; 65508];
    let p = build(&r6, &send, &big);
    assert_eq!(packet::parse(&p).unwrap().payload, &big[..]);
    // finish wants a whole packet.
    let mut p = build(&r4, &send, b"abc");
    assert_eq!(packet::finish(&mut p[..40]), None);
    p.push(0);
    assert_eq!(packet::finish(&mut p), None);
    assert_eq!(packet::finish(&mut []), None);
    assert_eq!(packet::finish(&mut [0x45; 60]), None);
}

/// A packet whose ICRC is taken on trust (one of a train the stack vouches for): a wrong ICRC
/// changes nothing of what it parses to, and everything else is checked as always.
#[test]
fn trusted_icrc_is_not_computed_but_the_rest_is_checked() {
    for (p, ..) in rxe_fixtures() {
        let good = packet::parse(&p).unwrap();
        let mut q = p.clone();
        let last = q.len() - 1;
        q[last] ^= 0x5a;
        assert_eq!(packet::parse(&q), Err(Reject::BadIcrc));
        assert_eq!(packet::parse_with(&q, icrc::Check::Trusted), Ok(good));
        // Still framed and decoded: a packet cut short, or one whose transport version is
        // not 0, is refused without an ICRC to compare.
        assert!(packet::parse_with(&q[..q.len() - 6], icrc::Check::Trusted).is_err());
        let ip = if p[0] >> 4 == 4 { 20 } else { 40 };
        let mut v = q.clone();
        v[ip + 8 + 1] |= 0x01;
        assert!(packet::parse_with(&v, icrc::Check::Trusted).is_err());
    }
}

/// Flipping any bit of an rxe packet either leaves it valid (the fields routers may change,
/// which the ICRC masks) or gets it refused; past the IP and UDP fields that say what the
/// packet is, by the ICRC.
#[test]
fn damaged_packets_are_refused() {
    // TOS, TTL, IP header checksum, UDP checksum, BTH FECN/BECN/resv6.
    let masked = [1, 8, 10, 11, 26, 27, 32];
    // Version/IHL, total length, flags/fragment offset, protocol, UDP destination port and
    // length: a change there makes it something else than a RoCEv2 packet of this length.
    let structural = [0, 2, 3, 6, 7, 9, 22, 23, 24, 25];
    for (p, ..) in rxe_fixtures() {
        for at in 0..p.len() {
            for bit in 0..8 {
                let mut q = p.clone();
                q[at] ^= 1 << bit;
                let got = packet::parse(&q);
                if masked.contains(&at) {
                    assert!(got.is_ok(), "byte {at} bit {bit} is masked");
                } else if structural.contains(&at) {
                    assert!(got.is_err(), "byte {at} bit {bit}");
                } else {
                    assert_eq!(got, Err(Reject::BadIcrc), "byte {at} bit {bit}");
                }
            }
        }
        // Routers may change TOS and TTL; the packet says so.
        let mut q = p.clone();
        q[1] = 0x02;
        q[8] = 1;
        let r = packet::parse(&q).unwrap().route;
        assert_eq!((r.traffic_class, r.hop_limit), (2, 1));
    }
}

#[test]
fn truncated_and_padded_packets() {
    for (p, ..) in rxe_fixtures() {
        for len in 0..p.len() {
            assert_eq!(
                packet::parse(&p[..len]),
                Err(Reject::Malformed),
                "{len} bytes"
            );
        }
        // Bytes past the IP length (Ethernet padding) are not part of the packet.
        let mut q = p.clone();
        q.extend_from_slice(&[0; 7]);
        assert_eq!(packet::parse(&q), packet::parse(&p));
    }
}

/// Takes `n` bytes off the end of an IPv4 packet's payload and pad, lengths made right.
fn shrink(p: &mut Vec<u8>, n: usize) {
    let icrc = p.len() - 4;
    p.drain(icrc - n..icrc);
    let len = p.len() as u16;
    p[2..4].copy_from_slice(&len.to_be_bytes());
    p[24..26].copy_from_slice(&(len - 20).to_be_bytes());
}

/// An IPv4 packet of `h` with `payload`, then changed by `patch` and its ICRC made right again:
/// what a sender that gets the format wrong would send.
fn patched(h: &Headers, payload: &[u8], patch: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut p = build(&routes()[0], h, payload);
    patch(&mut p);
    reseal(&mut p);
    p
}

#[test]
fn foreign_and_inconsistent_packets_are_refused() {
    let send = headers_for(RC | op::SEND_ONLY, 2);
    let parse = |p: &[u8]| packet::parse(p).map(|_| ());
    // The control: patched but unchanged.
    assert_eq!(parse(&patched(&send, b"12345678", |_| {})), Ok(()));
    // Another UDP port.
    let p = patched(&send, b"12345678", |p| {
        p[22..24].copy_from_slice(&4790u16.to_be_bytes())
    });
    assert_eq!(parse(&p), Err(Reject::NotRoce));
    // Not UDP; a fragment; another IP version.
    assert_eq!(
        parse(&patched(&send, b"", |p| p[9] = 6)),
        Err(Reject::NotRoce)
    );
    assert_eq!(
        parse(&patched(&send, b"", |p| p[6] |= 0x20)),
        Err(Reject::NotRoce)
    );
    assert_eq!(
        parse(&patched(&send, b"", |p| p[7] = 1)),
        Err(Reject::NotRoce)
    );
    assert_eq!(
        parse(&patched(&send, b"", |p| p[0] = 0x55)),
        Err(Reject::NotRoce)
    );
    // IPv4 options (four NOPs), lengths made right (the ICRC cannot even be computed).
    let mut p = build(&routes()[0], &send, b"abcd");
    p.splice(20..20, [1, 1, 1, 1]);
    p[0] = 0x46;
    let len = p.len() as u16;
    p[2..4].copy_from_slice(&len.to_be_bytes());
    assert_eq!(parse(&p), Err(Reject::NotRoce));
    // IPv6 with an extension header.
    let mut p = build(&routes()[1], &send, b"x");
    p[6] = 0; // hop-by-hop options
    assert_eq!(parse(&p), Err(Reject::NotRoce));
    // UDP length disagreeing with the IP length.
    assert_eq!(
        parse(&patched(&send, b"abcd", |p| p[25] -= 4)),
        Err(Reject::Malformed)
    );
    // Too short for the opcode's headers: RDMA WRITE ONLY needs 16 bytes of RETH.
    let p = patched(&send, b"12345678", |p| p[28] = RC | op::RDMA_WRITE_ONLY);
    assert_eq!(parse(&p), Err(Reject::Malformed));
    // ... and with exactly 16 bytes after the BTH it is an RDMA WRITE of nothing.
    let p = patched(&send, b"0123456789abcdef", |p| {
        p[28] = RC | op::RDMA_WRITE_ONLY
    });
    let got = packet::parse(&p).unwrap();
    assert_eq!(got.payload, b"");
    assert_eq!(got.hdr.reth.unwrap().to_bytes(), *b"0123456789abcdef");
    // A payload where the layout has none: an ACK with 4 bytes after its AETH ...
    let p = patched(&send, b"12345678", |p| p[28] = RC | op::ACKNOWLEDGE);
    assert_eq!(parse(&p), Err(Reject::Malformed));
    // ... or with a pad (and one byte less, so that the pad is all there is after the AETH);
    // an RDMA READ request with its RETH is fine.
    let p = patched(&send, b"12345678", |p| {
        shrink(p, 3);
        p[28] = RC | op::ACKNOWLEDGE;
        p[29] |= 0x10;
    });
    assert_eq!(parse(&p), Err(Reject::Malformed));
    let p = patched(&send, b"12345678", |p| {
        shrink(p, 3);
        p[28] = RC | op::ACKNOWLEDGE;
        p[29] &= !0x30;
    });
    assert_eq!(parse(&p), Err(Reject::Malformed), "one byte of payload");
    let p = patched(&send, b"0123456789abcdef", |p| {
        p[28] = RC | op::RDMA_READ_REQUEST
    });
    assert_eq!(parse(&p), Ok(()));
    // A pad longer than the payload.
    assert_eq!(
        parse(&patched(&send, b"", |p| p[29] |= 0x30)),
        Err(Reject::Malformed)
    );
    assert_eq!(
        parse(&patched(&send, b"ab", |p| p[29] |= 0x30)),
        Ok(()),
        "payload 1, pad 3"
    );
    // Opcodes without a layout: reserved, CNP, RD, UD RDMA WRITE.
    for o in [
        0x15,
        0x1f,
        0x81,
        0x40,
        UD | op::RDMA_WRITE_ONLY,
        UC | op::FETCH_ADD,
    ] {
        assert_eq!(
            parse(&patched(&send, b"", |p| p[28] = o)),
            Err(Reject::BadOpcode)
        );
    }
    // Transport version 1.
    assert_eq!(
        parse(&patched(&send, b"", |p| p[29] |= 1)),
        Err(Reject::Malformed)
    );
    // The UDP checksum is the UDP layer's business (0 over IPv6 included); the ICRC is ours.
    let mut p = build(&routes()[1], &send, b"x");
    p[46] ^= 0xff;
    assert_eq!(parse(&p), Ok(()));
}

/// xorshift64: deterministic noise without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Whatever comes in, `parse` and `finish` return instead of panicking, and what `parse`
/// accepts holds together.
#[test]
fn no_input_panics() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let ops = opcodes();
    let mut valid = Vec::new();
    for route in routes() {
        for (i, &o) in ops.iter().enumerate() {
            let size = if opcode::layout(o).unwrap().payload {
                i % 9
            } else {
                0
            };
            valid.push(build(&route, &headers_for(o, i as u32), &vec![7; size]));
        }
    }
    let mut accepted = 0;
    for round in 0..200_000 {
        let mut p = if round % 4 == 0 {
            let len = rng.below(160);
            let mut p: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            if let Some(b) = p.first_mut() {
                *b = [0x45, 0x60, 0x46, *b][rng.below(4)];
            }
            p
        } else {
            let mut p = valid[rng.below(valid.len())].clone();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(p.len());
                p[at] = rng.next() as u8;
            }
            match rng.below(4) {
                0 => p.truncate(rng.below(p.len() + 1)),
                1 => p.extend((0..rng.below(8)).map(|_| rng.next() as u8)),
                _ => {}
            }
            // Often a valid ICRC, so that what comes after it is exercised too.
            if rng.below(2) == 0 && p.len() >= 4 {
                let body = p.len() - 4;
                if let Some(crc) = icrc::compute(&p[..body]) {
                    p[body..].copy_from_slice(&crc.to_le_bytes());
                }
            }
            p
        };
        if let Ok(got) = packet::parse(&p) {
            accepted += 1;
            let l = got.layout;
            assert_eq!(Some(l), opcode::layout(got.hdr.bth.opcode));
            assert!(got.payload.is_empty() || l.payload);
            assert!(
                got.payload.len() + l.header_bytes() + usize::from(got.hdr.bth.pad) + 4 < p.len()
            );
            assert_eq!(got.ip_header.len(), if got.route.ipv4 { 20 } else { 40 });
        }
        let _ = packet::finish(&mut p);
        let opcode = rng.next() as u8;
        let _ = packet::packet_len(&routes()[rng.below(2)], opcode, rng.below(70_000));
    }
    assert!(accepted > 1000, "the noise reached the decoder: {accepted}");
}

/// PSN arithmetic holds everywhere on the 24-bit circle, across the wrap included: adding `n`
/// (less than half the circle) moves `n` after, `diff` is antisymmetric, `before` agrees, and
/// every result stays within 24 bits, whatever high bits the inputs carry.
#[test]
fn psn_arithmetic_is_a_circle() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let half = 1u32 << 23;
    let mut near_wrap = 0;
    for round in 0..500_000u32 {
        let a = match round % 4 {
            // Around the wrap and around zero, where mistakes hide.
            0 => psn::MASK - rng.below(64) as u32,
            1 => rng.below(64) as u32,
            _ => rng.next() as u32,
        };
        let n = match round % 3 {
            0 => rng.below(4096) as u32,
            1 => half - 1 - rng.below(4096) as u32,
            _ => rng.next() as u32 % half,
        };
        let b = psn::add(a, n);
        assert!(b <= psn::MASK);
        let a24 = a & psn::MASK;
        if b < a24 {
            near_wrap += 1;
        }
        assert_eq!(psn::diff(b, a), n as i32, "{a:#x} + {n:#x}");
        assert_eq!(psn::diff(a, b), -(n as i32));
        assert_eq!(psn::before(a, b), n != 0);
        assert!(!psn::before(b, a));
        // Going back: adding the complement on the circle returns to the start.
        assert_eq!(psn::add(b, (1 << 24) - n), a24);
    }
    assert!(near_wrap > 10_000, "the wrap was crossed {near_wrap} times");
}

/// A FETH's placement type is its low 4 bits and its selectivity level the next 2; the other
/// bits are reserved (ignored when received, 0 when sent), and only defined values are valid.
#[test]
fn a_feth_reads_its_two_fields_and_ignores_reserved_bits() {
    use crate::eth::flush::{GLOBAL, PERSISTENT, RANGE, REGION};
    let f = Feth::parse(&[0xff, 0xff, 0xff, 0xd1]).unwrap();
    assert_eq!((f.placement, f.selectivity), (GLOBAL, REGION));
    assert!(f.is_valid());
    assert_eq!(f.to_bytes(), [0, 0, 0, 0x11]);
    assert_eq!(Feth::parse(&[0, 0, 0]), None);
    let valid = |placement, selectivity| {
        Feth {
            placement,
            selectivity,
        }
        .is_valid()
    };
    assert!(valid(PERSISTENT, RANGE) && valid(GLOBAL | PERSISTENT, REGION));
    assert!(!valid(0, RANGE) && !valid(4, RANGE) && !valid(8 | GLOBAL, RANGE));
    assert!(!valid(GLOBAL, 2) && !valid(GLOBAL, 3));
}
