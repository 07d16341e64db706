// SPDX-License-Identifier: GPL-2.0

//! Host tests of a send WQE's message (`protocol/wqe.rs`), which every executor reads.

use crate::{
    abi::{self, send_flags, wr_opcode as op, SendWqe, WcStatus as s, WqeUnion},
    limits,
    wqe::{allows, message, sge_list_len, Service},
};

const MAX_INLINE: u32 = 64;
const MAX_SGE: u32 = 4;

/// A WQE: the header, then `body` (SGEs or inline bytes).
fn wqe(w: SendWqe, body: &[u8]) -> Vec<u8> {
    let mut b = w.to_bytes().to_vec();
    b.extend_from_slice(body);
    b
}

fn sges(lens: &[u32]) -> Vec<u8> {
    lens.iter()
        .enumerate()
        .flat_map(|(i, &l)| abi::sge_bytes(0x1000 * (i as u64 + 1), l, 7))
        .collect()
}

fn send(opcode: u32, lens: &[u32]) -> Vec<u8> {
    let w = SendWqe {
        wr_id: 9,
        opcode,
        num_sge: lens.len() as u32,
        ..SendWqe::default()
    };
    wqe(w, &sges(lens))
}

fn status(b: &[u8], service: Service) -> Result<u32, abi::WcStatus> {
    message(b, service, MAX_INLINE, MAX_SGE).map(|m| m.len)
}

#[test]
fn each_service_sends_its_opcodes() {
    use Service::*;
    for o in [op::SEND, op::SEND_WITH_IMM] {
        assert!(
            allows(ReliableConnected, o) && allows(UnreliableConnected, o) && allows(Datagram, o)
        );
    }
    for o in [op::RDMA_WRITE, op::RDMA_WRITE_WITH_IMM] {
        assert!(
            allows(ReliableConnected, o) && allows(UnreliableConnected, o) && !allows(Datagram, o)
        );
    }
    for o in [
        op::SEND_WITH_INV,
        op::RDMA_READ,
        op::ATOMIC_CMP_AND_SWP,
        op::ATOMIC_FETCH_AND_ADD,
        op::ATOMIC_WRITE,
        op::FLUSH,
    ] {
        assert!(
            allows(ReliableConnected, o) && !allows(UnreliableConnected, o) && !allows(Datagram, o)
        );
    }
    // Local operations and unknown opcodes are no messages.
    for o in [op::LOCAL_INV, op::BIND_MW, op::REG_MR, 10, 16, u32::MAX] {
        assert!(!allows(ReliableConnected, o), "{o}");
    }
}

#[test]
fn a_message_is_its_sges_or_its_inline_bytes() {
    assert_eq!(
        status(&send(op::SEND, &[100, 0, 28]), Service::Datagram),
        Ok(128)
    );
    let inline = SendWqe {
        opcode: op::RDMA_WRITE,
        send_flags: send_flags::INLINE,
        inline_len: 5,
        wr: WqeUnion::Rdma {
            remote_addr: 8,
            rkey: 1,
        },
        ..SendWqe::default()
    };
    let b = wqe(inline, b"hello");
    let m = message(&b, Service::UnreliableConnected, MAX_INLINE, MAX_SGE).unwrap();
    assert_eq!((m.len, m.inline, m.sges.len()), (5, Some(&b"hello"[..]), 0));
    // An ATOMIC_WRITE's 8 bytes are in its header.
    let aw = SendWqe {
        opcode: op::ATOMIC_WRITE,
        wr: WqeUnion::AtomicWrite {
            remote_addr: 8,
            rkey: 1,
            value: *b"8 bytes!",
        },
        ..SendWqe::default()
    };
    let b = wqe(aw, &[]);
    let m = message(&b, Service::ReliableConnected, MAX_INLINE, MAX_SGE).unwrap();
    assert_eq!((m.len, m.inline), (8, Some(&b"8 bytes!"[..])));
}

#[test]
fn what_the_requester_refuses_and_with_which_status() {
    use Service::*;
    // An opcode the service does not send.
    assert_eq!(
        status(&send(op::RDMA_READ, &[8]), UnreliableConnected),
        Err(s::LocQpOpErr)
    );
    assert_eq!(
        status(&send(op::SEND_WITH_INV, &[8]), Datagram),
        Err(s::LocQpOpErr)
    );
    // Inline data with an opcode that carries none.
    let read_inline = SendWqe {
        opcode: op::RDMA_READ,
        send_flags: send_flags::INLINE,
        inline_len: 4,
        ..SendWqe::default()
    };
    assert_eq!(
        status(&wqe(read_inline, b"abcd"), ReliableConnected),
        Err(s::LocQpOpErr)
    );
    // More inline bytes than the QP takes, or than the WQE holds.
    let long_inline = SendWqe {
        opcode: op::SEND,
        send_flags: send_flags::INLINE,
        inline_len: MAX_INLINE + 1,
        ..SendWqe::default()
    };
    assert_eq!(
        status(&wqe(long_inline, &[0; 80]), ReliableConnected),
        Err(s::LocLenErr)
    );
    let torn_inline = SendWqe {
        inline_len: 10,
        ..long_inline
    };
    assert_eq!(
        status(&wqe(torn_inline, &[0; 4]), ReliableConnected),
        Err(s::LocLenErr)
    );
    // More SGEs than the QP takes, or than the WQE holds.
    assert_eq!(
        status(&send(op::SEND, &[1; 5]), ReliableConnected),
        Err(s::LocQpOpErr)
    );
    let mut torn = send(op::SEND, &[1, 1]);
    torn.truncate(torn.len() - 1);
    assert_eq!(status(&torn, ReliableConnected), Err(s::LocQpOpErr));
    // Longer than any message.
    let big = send(op::RDMA_WRITE, &[limits::MAX_MSG_SZ, 1]);
    assert_eq!(status(&big, ReliableConnected), Err(s::LocLenErr));
    assert_eq!(
        status(
            &send(op::RDMA_WRITE, &[limits::MAX_MSG_SZ]),
            ReliableConnected
        ),
        Ok(limits::MAX_MSG_SZ)
    );
    // An atomic of other than 8 bytes.
    assert_eq!(
        status(&send(op::ATOMIC_FETCH_AND_ADD, &[4]), ReliableConnected),
        Err(s::LocLenErr)
    );
    assert_eq!(
        status(&send(op::ATOMIC_CMP_AND_SWP, &[8]), ReliableConnected),
        Ok(8)
    );
    // An ATOMIC_WRITE with SGEs.
    assert_eq!(
        status(&send(op::ATOMIC_WRITE, &[8]), ReliableConnected),
        Err(s::LocQpOpErr)
    );
    // Less than a header.
    assert_eq!(status(&[0; 10], ReliableConnected), Err(s::LocQpOpErr));
}

#[test]
fn sge_list_lengths_add_up() {
    assert_eq!(
        sge_list_len(&sges(&[u32::MAX, u32::MAX])),
        Some(2 * u64::from(u32::MAX))
    );
    assert_eq!(sge_list_len(&[]), Some(0));
    assert_eq!(sge_list_len(&sges(&[3])[..10]), None);
}

#[test]
fn data_packets_carry_the_headers_their_place_asks_for() {
    use crate::opcode::{data_opcode, hdr, layout, RC};
    for write in [false, true] {
        for (first, last) in [(true, true), (true, false), (false, false), (false, true)] {
            for (imm, inv) in [(false, false), (true, false), (false, true)] {
                if write && inv {
                    continue; // no RDMA WRITE invalidates
                }
                let opc = data_opcode(write, first, last, imm, inv);
                let l = layout(RC | opc).unwrap_or_else(|| panic!("{opc:#x} has no layout"));
                let what = format!("write {write} first {first} last {last} imm {imm} inv {inv}");
                assert_eq!((l.first, l.last), (first, last), "{what}");
                assert_eq!(l.headers & hdr::RETH != 0, write && first, "{what}");
                assert_eq!(l.headers & hdr::IMMDT != 0, imm && last, "{what}");
                assert_eq!(l.headers & hdr::IETH != 0, inv && last, "{what}");
            }
        }
    }
}

/// A FLUSH WQE of `length` bytes at a range or of a region (`level`) for `placement`, with
/// `num_sge` SGEs of 8 bytes.
fn flush_wqe(placement: u8, level: u8, length: u64, num_sge: u32) -> Vec<u8> {
    let w = SendWqe {
        wr_id: 5,
        opcode: op::FLUSH,
        num_sge,
        wr: WqeUnion::Flush {
            remote_addr: 0x7000_0000_1000,
            length,
            rkey: 0x1234,
            placement,
            level,
        },
        ..SendWqe::default()
    };
    let lens = vec![8; num_sge as usize];
    wqe(w, &sges(&lens))
}

/// A FLUSH moves no bytes; it asks for a placement type or both and a range or a region,
/// carries no SGEs or inline data, and a range's length fits a RETH.
#[test]
fn a_flush_asks_for_a_defined_placement_and_moves_no_bytes() {
    use crate::eth::flush::{GLOBAL, PERSISTENT, RANGE, REGION};
    use Service::*;
    for (placement, level) in [(GLOBAL, RANGE), (GLOBAL, REGION), (PERSISTENT, RANGE)] {
        assert_eq!(
            status(&flush_wqe(placement, level, 4096, 0), ReliableConnected),
            Ok(0)
        );
    }
    assert_eq!(
        status(
            &flush_wqe(GLOBAL | PERSISTENT, RANGE, 0, 0),
            ReliableConnected
        ),
        Ok(0)
    );
    // The header round-trips through the ring's bytes.
    let b = flush_wqe(GLOBAL, REGION, 1 << 40, 0);
    let w = SendWqe::from_bytes(b[..abi::SEND_WQE_HEADER].try_into().unwrap());
    assert_eq!(
        w.wr,
        WqeUnion::Flush {
            remote_addr: 0x7000_0000_1000,
            length: 1 << 40,
            rkey: 0x1234,
            placement: GLOBAL,
            level: REGION,
        }
    );
    // A region's length is not looked at; a range is 2^31 - 1 bytes at most (IBTA A19).
    assert_eq!(status(&b, ReliableConnected), Ok(0));
    assert_eq!(
        status(
            &flush_wqe(GLOBAL, RANGE, (1 << 31) - 1, 0),
            ReliableConnected
        ),
        Ok(0)
    );
    assert_eq!(
        status(&flush_wqe(GLOBAL, RANGE, 1 << 31, 0), ReliableConnected),
        Err(s::LocLenErr)
    );
    // No placement type, an undefined one, an undefined level, SGEs: refused.
    for (placement, level, sges) in [
        (0, RANGE, 0),
        (4, RANGE, 0),
        (GLOBAL, 2, 0),
        (GLOBAL, RANGE, 1),
    ] {
        assert_eq!(
            status(&flush_wqe(placement, level, 64, sges), ReliableConnected),
            Err(s::LocQpOpErr),
            "{placement} {level} {sges}"
        );
    }
    // Only RC has it.
    assert_eq!(
        status(&flush_wqe(GLOBAL, RANGE, 64, 0), UnreliableConnected),
        Err(s::LocQpOpErr)
    );
}
