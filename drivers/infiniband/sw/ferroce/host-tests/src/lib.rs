// SPDX-License-Identifier: GPL-2.0

//! Host unit tests of the driver's `core`-only modules, which the kernel module compiles too.

#![allow(dead_code)]

#[path = "../../protocol/abi.rs"]
mod abi;
#[path = "../../protocol/bth.rs"]
mod bth;
#[path = "../../protocol/count.rs"]
mod count;
#[path = "../../protocol/eth.rs"]
mod eth;
#[path = "../../protocol/grh.rs"]
mod grh;
#[path = "../../protocol/guid.rs"]
mod guid;
#[path = "../../protocol/icrc.rs"]
mod icrc;
#[path = "../../protocol/keys.rs"]
mod keys;
#[cfg(test)]
mod layer_tests;
#[path = "../../protocol/limits.rs"]
mod limits;
#[path = "../../protocol/mcast.rs"]
mod mcast;
#[cfg(test)]
mod mcast_tests;
#[path = "../../protocol/opcode.rs"]
mod opcode;
#[path = "../../protocol/packet.rs"]
mod packet;
#[cfg(test)]
mod packet_tests;
#[path = "../../protocol/pkey.rs"]
mod pkey;
#[cfg(test)]
mod pkey_tests;
#[path = "../../protocol/psn.rs"]
mod psn;
#[path = "../../protocol/refusal.rs"]
mod refusal;
#[cfg(test)]
mod refusal_tests;
#[cfg(test)]
mod rxe_packets;
#[path = "../../protocol/train.rs"]
mod train;
#[cfg(test)]
mod train_tests;
#[path = "../../protocol/transport.rs"]
mod transport;
#[path = "../../engine/rc/window.rs"]
mod window;
#[cfg(test)]
mod window_tests;
#[path = "../../protocol/wqe.rs"]
mod wqe;
#[cfg(test)]
mod wqe_tests;

/// The driver's `crate::protocol` paths, to the modules above.
mod protocol {
    pub(crate) use super::{
        abi, bth, count, eth, grh, guid, icrc, keys, limits, opcode, packet, psn, refusal, train,
        transport, wqe,
    };
}

#[cfg(test)]
mod tests {
    use super::{
        abi, bth, count, eth, grh, guid, icrc, keys, limits, opcode, psn, rxe_packets, transport,
    };

    #[test]
    fn guid_is_modified_eui64() {
        assert_eq!(
            guid::from_mac([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]),
            0x5054_00ff_fe12_3456
        );
        // The universal/local bit flips both ways.
        assert_eq!(guid::from_mac([0x02, 0, 0, 0, 0, 1]), 0x0000_00ff_fe00_0001);
    }

    #[test]
    fn path_mtu_follows_netdev_mtu() {
        assert_eq!(limits::path_mtu_bytes(1500), Some(1024));
        assert_eq!(limits::path_mtu_bytes(9000), Some(4096));
        assert_eq!(
            limits::path_mtu_bytes(4096 + limits::ROCE_OVERHEAD),
            Some(4096)
        );
        assert_eq!(
            limits::path_mtu_bytes(4095 + limits::ROCE_OVERHEAD),
            Some(2048)
        );
        assert_eq!(
            limits::path_mtu_bytes(256 + limits::ROCE_OVERHEAD),
            Some(256)
        );
        assert_eq!(limits::path_mtu_bytes(255 + limits::ROCE_OVERHEAD), None);
        assert_eq!(limits::path_mtu_bytes(0), None);
    }

    #[test]
    fn object_count_stops_at_the_limit() {
        let c = count::ObjectCount::new();
        assert_eq!(c.take(2), Ok(()));
        assert_eq!(c.take(2), Ok(()));
        assert_eq!(c.take(2), Err(count::LimitReached));
        c.put();
        assert_eq!(c.take(2), Ok(()));
        assert_eq!(c.take(2), Err(count::LimitReached));
    }

    #[test]
    fn object_count_is_exact_under_contention() {
        let c = std::sync::Arc::new(count::ObjectCount::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || (0..1000).filter(|_| c.take(1500).is_ok()).count())
            })
            .collect();
        let taken: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(taken, 1500);
        assert_eq!(c.take(1500), Err(count::LimitReached));
    }

    /// Compiles the uapi header with the host's C compiler and checks every offset and size
    /// the driver assumes against it.
    #[test]
    fn abi_matches_the_c_header() {
        let dir = std::env::temp_dir().join(format!("ferroce-abi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("abi.c");
        std::fs::write(
            &src,
            r#"
#include <stddef.h>
#include <stdio.h>
#include <rdma/ferroce-abi.h>
int main(void)
{
	printf("%zu %zu %zu %zu %d %zu %zu %zu %d %zu %d %d %d %d %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu "
	       "%zu %zu %zu %zu %zu %zu %zu\n",
	       offsetof(struct ferroce_queue_ctrl, producer),
	       offsetof(struct ferroce_queue_ctrl, consumer),
	       offsetof(struct ferroce_queue_ctrl, notify),
	       offsetof(struct ferroce_queue_ctrl, flags),
	       FERROCE_QUEUE_ENTRIES, sizeof(struct ferroce_cqe),
	       sizeof(struct ferroce_mmap_info),
	       sizeof(struct ferroce_create_cq_resp), FERROCE_QUEUE_ERROR,
	       sizeof(struct ferroce_create_ah_resp),
	       FERROCE_QUEUE_OVERFLOW, FERROCE_QUEUE_NEED_WAKEUP,
	       FERROCE_CQ_NOTIFY_NEXT, FERROCE_CQ_NOTIFY_SOLICITED,
	       sizeof(struct ferroce_create_srq_resp),
	       sizeof(struct ferroce_modify_srq_cmd),
	       offsetof(struct ferroce_cqe, pkey_index),
	       offsetof(struct ferroce_cqe, sl),
	       offsetof(struct ferroce_cqe, port_num),
	       offsetof(struct ferroce_send_wqe, opcode),
	       offsetof(struct ferroce_send_wqe, send_flags),
	       offsetof(struct ferroce_recv_wqe, wr_id),
	       sizeof(struct ferroce_create_qp_resp),
	       sizeof(struct ferroce_alloc_ucontext_cmd),
	       sizeof(struct ferroce_alloc_ucontext_resp),
	       offsetof(struct ferroce_send_wqe, wr.bind.addr),
	       offsetof(struct ferroce_send_wqe, wr.bind.length),
	       offsetof(struct ferroce_send_wqe, wr.bind.mw_rkey),
	       offsetof(struct ferroce_send_wqe, wr.bind.rkey),
	       offsetof(struct ferroce_send_wqe, wr.bind.mr_lkey),
	       offsetof(struct ferroce_send_wqe, wr.bind.access),
	       sizeof(struct ferroce_send_wqe));
	return 0;
}
"#,
        )
        .unwrap();
        let include = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../../../include/uapi");
        let exe = dir.join("abi");
        let status = std::process::Command::new("cc")
            .args(["-I", include, "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .expect("run cc");
        assert!(status.success(), "the uapi header does not compile");
        let out = std::process::Command::new(&exe).output().unwrap();
        let mi = abi::MmapInfo {
            offset: 0,
            size: 0,
            num_entries: 0,
        };
        let got: Vec<usize> = String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(|v| v.parse().unwrap())
            .collect();
        let want = vec![
            abi::CTRL_PRODUCER,
            abi::CTRL_CONSUMER,
            abi::CTRL_NOTIFY,
            abi::CTRL_FLAGS,
            abi::QUEUE_ENTRIES,
            abi::CQE_SIZE,
            abi::MmapInfo::SIZE,
            abi::MmapInfo::SIZE,
            abi::QUEUE_ERROR as usize,
            abi::create_ah_resp(0).len(),
            abi::QUEUE_OVERFLOW as usize,
            abi::QUEUE_NEED_WAKEUP as usize,
            abi::CQ_NOTIFY_NEXT as usize,
            abi::CQ_NOTIFY_SOLICITED as usize,
            abi::create_srq_resp(&mi, 0).len(),
            abi::MODIFY_SRQ_CMD_SIZE,
            40,
            44,
            46,
            abi::SEND_WQE_OPCODE,
            12, // send_flags: read by the data path
            abi::WQE_WR_ID,
            abi::create_qp_resp(&mi, None, 0, 0).len(),
            abi::ALLOC_UCONTEXT_CMD_SIZE,
            abi::ContextFeatures(0).resp().len(),
            // The bind union, as `SendWqe::{to,from}_bytes` write and read it.
            32,
            40,
            48,
            52,
            56,
            60,
            abi::SEND_WQE_HEADER,
        ];
        assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn cqe_bytes_match_the_c_layout() {
        let c = abi::Cqe {
            wr_id: 0x1122_3344_5566_7788,
            status: abi::WcStatus::WrFlushErr,
            opcode: abi::wc_opcode::RECV,
            byte_len: 7,
            qp_num: 0x12,
            pkey_index: 0x3456,
            sl: 3,
            port_num: 1,
            ..abi::Cqe::default()
        };
        let b = c.to_bytes();
        assert_eq!(&b[0..8], &0x1122_3344_5566_7788u64.to_ne_bytes());
        assert_eq!(&b[8..12], &5u32.to_ne_bytes());
        assert_eq!(&b[12..16], &128u32.to_ne_bytes());
        assert_eq!(&b[20..24], &7u32.to_ne_bytes());
        assert_eq!(&b[28..32], &0x12u32.to_ne_bytes());
        assert_eq!(&b[40..42], &0x3456u16.to_ne_bytes());
        assert_eq!((b[44], b[46]), (3, 1));
        assert!(b[47..].iter().all(|&x| x == 0));
        let f = abi::Cqe::flushed(9, abi::wc_opcode::SEND, 77);
        assert_eq!(
            (f.status, f.opcode, f.qp_num, f.wr_id),
            (abi::WcStatus::WrFlushErr, 0, 77, 9)
        );
        assert_eq!(&f.to_bytes()[8..12], &5u32.to_ne_bytes());
    }

    #[test]
    fn wc_status_numbers_are_ibv_wc_status() {
        use abi::WcStatus::*;
        // `enum ibv_wc_status` (rdma-core's verbs.h), which `enum ib_wc_status` equals.
        let ibv = [
            (Success, 0),
            (LocLenErr, 1),
            (LocQpOpErr, 2),
            (LocEecOpErr, 3),
            (LocProtErr, 4),
            (WrFlushErr, 5),
            (MwBindErr, 6),
            (BadRespErr, 7),
            (LocAccessErr, 8),
            (RemInvReqErr, 9),
            (RemAccessErr, 10),
            (RemOpErr, 11),
            (RetryExcErr, 12),
            (RnrRetryExcErr, 13),
            (LocRddViolErr, 14),
            (RemInvRdReqErr, 15),
            (RemAbortErr, 16),
            (InvEecnErr, 17),
            (InvEecStateErr, 18),
            (FatalErr, 19),
            (RespTimeoutErr, 20),
            (GeneralErr, 21),
        ];
        for (status, n) in ibv {
            assert_eq!(status.to_abi(), n, "{status:?}");
            assert_eq!(abi::WcStatus::from_abi(n), Some(status));
        }
        assert_eq!(abi::WcStatus::from_abi(22), None);
        assert_eq!(abi::WcStatus::default(), Success);
        // A CQE carries the number.
        let c = abi::Cqe {
            status: RnrRetryExcErr,
            ..abi::Cqe::default()
        };
        assert_eq!(&c.to_bytes()[8..12], &13u32.to_ne_bytes());
    }

    #[test]
    fn bind_wqe_round_trips() {
        let w = abi::SendWqe {
            wr_id: 7,
            opcode: abi::wr_opcode::BIND_MW,
            send_flags: 2,
            wr: abi::WqeUnion::Bind {
                addr: 0x7f00_1234_5678,
                length: 0x1_0000_0001,
                mw_rkey: 0x1234_56aa,
                rkey: 0x1234_56ab,
                mr_lkey: 0x0000_0101,
                access: 3,
            },
            ..abi::SendWqe::default()
        };
        assert_eq!(abi::SendWqe::from_bytes(&w.to_bytes()), w);
    }

    #[test]
    fn cqe_round_trips_and_flags_convert() {
        let c = abi::Cqe {
            wr_id: 42,
            status: abi::WcStatus::WrFlushErr,
            opcode: abi::wc_opcode::RECV,
            byte_len: 1000,
            imm_data: 0x0102_0304,
            qp_num: 17,
            src_qp: 18,
            wc_flags: abi::wc_flags::WITH_IMM | abi::wc_flags::GRH,
            pkey_index: 0,
            sl: 2,
            port_num: 1,
            kernel_qp: 0xffff_8880_1234_5678,
            network: Some(false),
            ..abi::Cqe::default()
        };
        assert_eq!(abi::Cqe::from_bytes(&c.to_bytes()), c);
        // A kernel CQE's network type: `enum rdma_network_type` in `reserved0`.
        assert_eq!(c.to_bytes()[47], abi::RDMA_NETWORK_IPV6);
        let v4 = abi::Cqe {
            network: Some(true),
            ..c
        };
        assert_eq!(v4.to_bytes()[47], abi::RDMA_NETWORK_IPV4);
        assert_eq!(abi::Cqe::from_bytes(&v4.to_bytes()), v4);
        // A kernel CQE's VLAN: bit 15 says there is one; VLAN 0 is one.
        assert_eq!(c.to_bytes()[56..58], [0, 0]);
        for id in [0u16, 100, 4095] {
            let tagged = abi::Cqe {
                vlan_id: Some(id),
                ..c
            };
            assert_eq!(abi::Cqe::from_bytes(&tagged.to_bytes()), tagged);
            assert_eq!(tagged.to_bytes()[56..58], (0x8000 | id).to_ne_bytes());
        }
        assert_eq!(abi::kernel_wc_flags(0), 0);
        assert_eq!(abi::kernel_wc_flags(abi::wc_flags::GRH), 1);
        assert_eq!(abi::kernel_wc_flags(abi::wc_flags::WITH_IMM), 2);
        assert_eq!(abi::kernel_wc_flags(abi::wc_flags::WITH_INV), 4);
        assert_eq!(abi::kernel_wc_flags(abi::wc_flags::IP_CSUM_OK), 8);
    }

    #[test]
    fn send_wqe_header_layout() {
        let w = abi::SendWqe {
            wr_id: 7,
            opcode: abi::wr_opcode::ATOMIC_CMP_AND_SWP,
            send_flags: 2,
            num_sge: 1,
            inline_len: 0,
            imm_data: 0,
            wr: abi::WqeUnion::Atomic {
                remote_addr: 0x1000,
                compare_add: 3,
                swap: 4,
                rkey: 0x99,
            },
        };
        let b = w.to_bytes();
        assert_eq!(&b[0..8], &7u64.to_ne_bytes());
        assert_eq!(&b[8..12], &5u32.to_ne_bytes());
        assert_eq!(&b[16..20], &1u32.to_ne_bytes());
        assert_eq!(&b[32..40], &0x1000u64.to_ne_bytes());
        assert_eq!(&b[48..56], &4u64.to_ne_bytes());
        assert_eq!(&b[56..60], &0x99u32.to_ne_bytes());
        // atomic_write: remote_addr, rkey, reserved, then the value's bytes as they are.
        let aw = abi::SendWqe {
            opcode: abi::wr_opcode::ATOMIC_WRITE,
            wr: abi::WqeUnion::AtomicWrite {
                remote_addr: 0x2000,
                rkey: 0x77,
                value: [1, 2, 3, 4, 5, 6, 7, 8],
            },
            ..abi::SendWqe::default()
        }
        .to_bytes();
        assert_eq!(&aw[8..12], &15u32.to_ne_bytes());
        assert_eq!(&aw[32..40], &0x2000u64.to_ne_bytes());
        assert_eq!(&aw[40..44], &0x77u32.to_ne_bytes());
        assert_eq!(&aw[48..56], &[1, 2, 3, 4, 5, 6, 7, 8]);
        let ud = abi::SendWqe {
            wr: abi::WqeUnion::Ud {
                ah_num: 3,
                remote_qpn: 0x12,
                remote_qkey: 0x1111_1111,
                pkey_index: 5,
            },
            ..abi::SendWqe::default()
        }
        .to_bytes();
        assert_eq!(&ud[32..36], &3u32.to_ne_bytes());
        assert_eq!(&ud[40..44], &0x1111_1111u32.to_ne_bytes());
        assert_eq!(&ud[44..46], &5u16.to_ne_bytes());
        assert_eq!(abi::recv_wqe_header(5, 2)[8..12], 2u32.to_ne_bytes());
        assert_eq!(abi::sge_bytes(1, 2, 3)[12..16], 3u32.to_ne_bytes());
    }

    #[test]
    fn send_wqe_headers_read_back_as_written() {
        use abi::{wr_opcode as o, SendWqe, WqeUnion};
        let with = |opcode, wr| SendWqe {
            wr_id: 0x0123_4567_89ab_cdef,
            opcode,
            send_flags: 0xa,
            num_sge: 3,
            inline_len: 17,
            imm_data: 0xdead_beef,
            wr,
        };
        let rdma = WqeUnion::Rdma {
            remote_addr: 0xffff_0000_1234_5678,
            rkey: 0x4242,
        };
        let atomic = WqeUnion::Atomic {
            remote_addr: 8,
            compare_add: u64::MAX,
            swap: 1 << 63,
            rkey: 7,
        };
        for w in [
            with(o::SEND, WqeUnion::None),
            with(o::SEND_WITH_IMM, WqeUnion::None),
            with(o::RDMA_WRITE, rdma),
            with(o::RDMA_WRITE_WITH_IMM, rdma),
            with(o::RDMA_READ, rdma),
            with(o::ATOMIC_CMP_AND_SWP, atomic),
            with(o::ATOMIC_FETCH_AND_ADD, atomic),
            with(
                o::ATOMIC_WRITE,
                WqeUnion::AtomicWrite {
                    remote_addr: 0x10_0008,
                    rkey: 0x1234,
                    value: *b"ferroce!",
                },
            ),
        ] {
            assert_eq!(SendWqe::from_bytes(&w.to_bytes()), w);
        }
        // An unknown opcode reads with no union: nothing of it is used.
        let odd = with(0x77, rdma).to_bytes();
        assert_eq!(SendWqe::from_bytes(&odd).wr, WqeUnion::None);
        // A UD send's destination.
        let ud = WqeUnion::Ud {
            ah_num: 9,
            remote_qpn: 0x00ab_cdef,
            remote_qkey: 0x8000_0000,
            pkey_index: 3,
        };
        assert_eq!(SendWqe::ud_of(&with(o::SEND, ud).to_bytes()), ud);
        // SGEs and receive headers.
        let sge = abi::RingSge {
            addr: 0x7fff_0000_0001,
            length: 4096,
            lkey: 0x1_23ff,
        };
        let b = abi::sge_bytes(sge.addr, sge.length, sge.lkey);
        assert_eq!(abi::RingSge::from_bytes(&b), Some(sge));
        assert_eq!(abi::RingSge::from_bytes(&b[..15]), None);
        assert_eq!(abi::recv_wqe_num_sge(&abi::recv_wqe_header(1, 32)), 32);
    }

    #[test]
    fn ud_grh_is_the_ip_header() {
        let mut v4 = [0u8; 16];
        v4[10] = 0xff;
        v4[11] = 0xff;
        let (mut s, mut d) = (v4, v4);
        s[12..].copy_from_slice(&[10, 0, 0, 1]);
        d[12..].copy_from_slice(&[10, 0, 0, 2]);
        let route = grh::Route {
            ipv4: true,
            sgid: s,
            dgid: d,
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 64,
            ..Default::default()
        };
        let g = grh::ud_grh(&route, 100, false);
        assert_eq!(&g[..20], &[0u8; 20]);
        // 20 IP + 8 UDP + 12 BTH + 8 DETH + 100 + 4 ICRC.
        assert_eq!(&g[20..24], &[0x45, 0, 0, 152]);
        assert_eq!(&g[32..40], &[10, 0, 0, 1, 10, 0, 0, 2]);
        // A header with its checksum sums to 0xffff (checksums to 0).
        assert_eq!(grh::ipv4_checksum(&g[20..]), 0);
        // The example of RFC 1071's reference header.
        let h = [
            0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0,
            0xc7,
        ];
        assert_eq!(grh::ipv4_checksum(&h), 0xb861);
        let v6 = grh::Route {
            ipv4: false,
            sgid: [0xfe; 16],
            dgid: [0x20; 16],
            traffic_class: 0x12,
            flow_label: 0xabcde,
            hop_limit: 9,
            ..Default::default()
        };
        let g = grh::ud_grh(&v6, 8, true);
        assert_eq!(&g[..8], &[0x61, 0x2a, 0xbc, 0xde, 0, 44, 17, 9]);
        assert_eq!(&g[8..24], &[0xfe; 16]);
        assert_eq!(&g[24..40], &[0x20; 16]);
    }

    #[test]
    fn send_opcodes_complete_as_their_kind() {
        use abi::{wc_opcode as c, wr_opcode as w};
        for (wr, wc) in [
            (w::SEND, c::SEND),
            (w::SEND_WITH_IMM, c::SEND),
            (w::SEND_WITH_INV, c::SEND),
            (w::RDMA_WRITE, c::RDMA_WRITE),
            (w::RDMA_WRITE_WITH_IMM, c::RDMA_WRITE),
            (w::RDMA_READ, c::RDMA_READ),
            (w::ATOMIC_CMP_AND_SWP, c::COMP_SWAP),
            (w::ATOMIC_FETCH_AND_ADD, c::FETCH_ADD),
            (w::LOCAL_INV, c::LOCAL_INV),
            (w::BIND_MW, c::BIND_MW),
            (w::ATOMIC_WRITE, c::ATOMIC_WRITE),
            (w::REG_MR, c::REG_MR),
        ] {
            assert_eq!(abi::wc_opcode_of(wr), Some(wc), "wr opcode {wr}");
        }
        assert_eq!(abi::wc_opcode_of(10), None);
        assert_eq!(abi::wc_opcode_of(u32::MAX), None);
    }

    #[test]
    fn cq_arming() {
        assert!(!abi::notify_fires(0, true));
        assert!(abi::notify_fires(abi::CQ_NOTIFY_NEXT, false));
        assert!(abi::notify_fires(abi::CQ_NOTIFY_SOLICITED, true));
        assert!(!abi::notify_fires(abi::CQ_NOTIFY_SOLICITED, false));
        assert!(
            !abi::notify_fires(0xdead_beef & !3, true),
            "other bits arm nothing"
        );
        // Arming ORs: NEXT then SOLICITED (or the other way) is armed for any completion.
        let both = abi::CQ_NOTIFY_NEXT | abi::CQ_NOTIFY_SOLICITED;
        assert!(abi::notify_fires(both, false));
        assert!(abi::notify_fires(both, true));
        // Solicited: a receive with the SE bit, or any completion that is not a success.
        let ok = abi::Cqe::default();
        let solicited = abi::Cqe {
            solicited: true,
            ..ok
        };
        let failed = abi::Cqe {
            status: abi::WcStatus::RemAccessErr,
            ..ok
        };
        assert!(!ok.wakes_solicited());
        assert!(solicited.wakes_solicited());
        assert!(failed.wakes_solicited());
        assert!(abi::Cqe::flushed(1, 0, 2).wakes_solicited());
    }

    #[test]
    fn context_features_are_negotiated() {
        assert_eq!(abi::ContextFeatures::granted(None), abi::ContextFeatures(0));
        // Bits the driver does not know are never granted.
        let all = u64::MAX.to_ne_bytes();
        assert_eq!(
            abi::ContextFeatures::granted(Some(&all)).0,
            abi::UCTX_FEATURES
        );
        assert_eq!(abi::ContextFeatures(0).resp(), [0; 8]);
    }

    #[test]
    fn ring_sizes_and_user_indices() {
        assert_eq!(abi::ring_entries(3, limits::MAX_CQE), Some(4));
        assert_eq!(abi::ring_entries(65535, limits::MAX_CQE), Some(65536));
        assert_eq!(abi::ring_entries(0, limits::MAX_CQE), None);
        assert_eq!(abi::ring_entries(65536, limits::MAX_CQE), Some(65536));
        assert_eq!(abi::ring_entries(65537, limits::MAX_CQE), None);
        // Every queue's entries, rounded up, stay within what is advertised.
        for max in [limits::MAX_CQE, limits::MAX_QP_WR, limits::MAX_SRQ_WR] {
            assert!(
                max.is_power_of_two(),
                "a maximum that rounds up past itself"
            );
            assert_eq!(abi::ring_entries(max, max), Some(max));
        }
        assert_eq!(abi::queue_bytes(4, abi::CQE_SIZE), Some(256 + 256));
        // The user's consumer index may lag by up to the ring size, never lead.
        assert_eq!(abi::pending(10, 6, 4), Some(4));
        assert_eq!(abi::pending(10, 5, 4), None);
        assert_eq!(abi::pending(10, 11, 4), None);
        assert_eq!(abi::pending(2, u32::MAX - 1, 4), Some(4));
    }

    #[test]
    fn keys_are_unique_and_stale_keys_die() {
        let mut t = keys::KeyTable::new(vec![0u16; 4]);
        let a = t.alloc(1).unwrap();
        let b = t.alloc(1).unwrap();
        let c = t.alloc(1).unwrap();
        assert_eq!(
            t.alloc(1),
            Err(keys::TableFull),
            "3 keys in a table of 4 slots"
        );
        assert!(
            a >> 8 != 0 && b >> 8 != 0 && c >> 8 != 0,
            "index 0 is never used"
        );
        assert!(t.is_live(b));
        t.free(b);
        assert!(!t.is_live(b));
        let b2 = t.alloc(1).unwrap();
        assert_eq!(b2 >> 8, b >> 8, "the index is reused");
        assert_ne!(b2, b, "with a new key byte");
        t.free(b); // a stale key frees nothing
        assert!(t.is_live(b2));
        assert!(!t.is_live(0) && !t.is_live(0xffff_ffff));
        // Reuses never repeat the key just freed, whatever byte comes.
        let mut t = keys::KeyTable::new(vec![0u16; 2]);
        let mut prev = t.alloc(7).unwrap();
        for i in 0..600u32 {
            t.free(prev);
            let k = t.alloc((i % 3) as u8 + 6).unwrap();
            assert_ne!(k, prev);
            prev = k;
        }
    }

    #[test]
    fn keys_take_the_random_byte_but_never_the_last() {
        let mut t = keys::KeyTable::new(vec![0u16; 3]);
        let a = t.alloc(0x5e).unwrap();
        assert_eq!(
            a,
            1 << 8 | 0x5e,
            "the first key of an index is the random byte"
        );
        let b = t.alloc(0).unwrap();
        assert_eq!(
            b,
            2 << 8 | 1,
            "an index that had byte 0 (none yet) skips it"
        );
        t.free(a);
        let a2 = t.alloc(0x5e).unwrap();
        assert_eq!(
            a2,
            1 << 8 | 0x5f,
            "the same random byte as last time is skipped"
        );
        t.free(a2);
        assert_eq!(
            t.alloc(0x11).unwrap(),
            1 << 8 | 0x11,
            "any other byte is taken"
        );
    }

    #[test]
    fn keys_released_with_a_changed_byte_skip_it() {
        // An object whose key byte changed (REG_MR, a window bind: +1 each, as ib_inc_rkey)
        // gives its index back with that byte: the next key of the index is none it had last.
        let mut t = keys::KeyTable::new(vec![0u16; 2]);
        let k = t.alloc(0x40).unwrap();
        let rebound = (k & !0xff) | ((k + 1) & 0xff);
        t.release(rebound);
        assert!(!t.is_live(k) && !t.is_live(rebound));
        let next = t.alloc(0x41).unwrap();
        assert_eq!(next >> 8, k >> 8);
        assert!(
            next != k && next != rebound,
            "{next:#x} reuses a recent key"
        );
        t.release(0x0000_0005); // index 0: never in use
        t.release(next + 0x100); // an index past the table
        assert!(t.is_live(next));
    }

    #[test]
    fn limits_fit_the_c_types() {
        for v in [
            limits::MAX_QP,
            limits::MAX_QP_WR,
            limits::MAX_SGE,
            limits::MAX_CQ,
            limits::MAX_CQE,
            limits::MAX_MR,
            limits::MAX_PD,
            limits::MAX_AH,
            limits::MAX_SRQ,
            limits::MAX_SRQ_WR,
            limits::MAX_RES_RD_ATOM,
            limits::GID_TBL_LEN,
        ] {
            assert!(i32::try_from(v).is_ok(), "{v} does not fit a C int");
        }
        // lkey/rkey: 24-bit index, 8-bit key.
        assert!(limits::MAX_MR <= 1 << 24);
    }

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn::add(0xff_fffe, 3), 1);
        assert_eq!(psn::diff(1, 0xff_ffff), 2);
        assert_eq!(psn::diff(0xff_ffff, 1), -2);
        assert!(psn::before(0xff_fff0, 0x10));
        assert!(!psn::before(0x10, 0xff_fff0));
        assert_eq!(
            psn::diff(0x80_0000, 0),
            -0x80_0000,
            "half the circle away is before"
        );
        assert_eq!(psn::diff(0x7f_ffff, 0), 0x7f_ffff);
    }

    #[test]
    fn opcode_layouts() {
        use opcode::{hdr, layout, op, RC, UC, UD};
        let bytes = |o: u8| layout(o).map(|l| l.header_bytes());
        assert_eq!(bytes(RC | op::SEND_ONLY), Some(12));
        assert_eq!(bytes(RC | op::RDMA_WRITE_ONLY), Some(28));
        assert_eq!(bytes(RC | op::RDMA_WRITE_ONLY_WITH_IMMEDIATE), Some(32));
        assert_eq!(bytes(RC | op::RDMA_READ_REQUEST), Some(28));
        assert_eq!(bytes(RC | op::ATOMIC_ACKNOWLEDGE), Some(24));
        assert_eq!(bytes(RC | op::COMPARE_SWAP), Some(40));
        assert_eq!(bytes(UD | op::SEND_ONLY_WITH_IMMEDIATE), Some(24));
        assert_eq!(bytes(RC | op::SEND_ONLY_WITH_INVALIDATE), Some(16));
        let aw = layout(RC | op::ATOMIC_WRITE).unwrap();
        assert!(aw.payload && aw.first && aw.last && aw.headers == hdr::RETH);
        let l = layout(RC | op::RDMA_READ_RESPONSE_MIDDLE).unwrap();
        assert!(l.payload && !l.first && !l.last && l.headers == 0);
        assert_eq!(layout(RC | op::ACKNOWLEDGE).unwrap().headers, hdr::AETH);
        for bad in [
            0x15,
            0x18,
            0x1f,
            UD | op::RDMA_WRITE_ONLY,
            UD | op::SEND_FIRST,
            UC | op::RDMA_READ_REQUEST,
            UC | op::COMPARE_SWAP,
            UC | op::ATOMIC_WRITE,
            0x40,
            0x80,
            0xe0,
        ] {
            assert_eq!(layout(bad), None, "opcode {bad:#x}");
        }
    }

    #[test]
    fn icrc_takes_any_crc_step_with_the_same_arithmetic() {
        // A bit-at-a-time CRC-32 step, as the kernel's crc32_le computes it: the ICRC comes
        // out the same through it as through the table.
        fn bitwise(mut crc: u32, data: &[u8]) -> u32 {
            for &b in data {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        (crc >> 1) ^ 0xedb8_8320
                    } else {
                        crc >> 1
                    };
                }
            }
            crc
        }
        for hex in [
            rxe_packets::RC_SEND_ONLY,
            rxe_packets::RC_RDMA_WRITE_ONLY,
            rxe_packets::UD_SEND_ONLY_WITH_IMM,
        ] {
            let p = &rxe_packets::bytes(hex)[..];
            assert!(icrc::check_with(p, bitwise));
            let body = &p[..p.len() - 4];
            assert_eq!(icrc::compute_with(body, bitwise), icrc::compute(body));
        }
    }

    #[test]
    fn icrc_seed_is_the_masked_lrh() {
        // rxe starts from this register value: all ones, then eight bytes of ones.
        assert_eq!(icrc::seed(), 0xdebb_20e3);
    }

    /// Every rxe packet's ICRC checks; bytes routers may change are masked, others are not.
    #[test]
    fn icrc_of_rxe_packets() {
        for hex in [
            rxe_packets::RC_SEND_ONLY,
            rxe_packets::RC_RDMA_WRITE_ONLY,
            rxe_packets::UD_SEND_ONLY_WITH_IMM,
        ] {
            let p = rxe_packets::bytes(hex);
            assert!(icrc::check(&p), "rxe's ICRC does not check: {hex}");
            for masked in [1, 8, 10, 11, 26, 27, 32] {
                // TOS, TTL, IP checksum, UDP checksum, BTH FECN/BECN/resv6
                let mut q = p.clone();
                q[masked] ^= 0x40;
                assert!(icrc::check(&q), "byte {masked} is masked");
            }
            for covered in [0, 12, 16, 22, 28, 31, 40, p.len() - 5] {
                let mut q = p.clone();
                q[covered] ^= 1;
                assert!(!icrc::check(&q), "byte {covered} is covered");
            }
        }
        assert!(!icrc::check(&[0x45; 3]));
        assert_eq!(icrc::compute(&[0x46; 60]), None, "IPv4 options");
    }

    #[test]
    fn headers_of_rxe_packets() {
        use opcode::{op, RC, UD};
        let p = rxe_packets::bytes(rxe_packets::RC_SEND_ONLY);
        let b = bth::Bth::parse(&p[28..]).unwrap();
        assert_eq!(
            b,
            bth::Bth {
                opcode: RC | op::SEND_ONLY,
                pkey: 0xffff,
                dest_qp: 0x123,
                ack_req: true,
                psn: 0x456,
                ..bth::Bth::default()
            }
        );
        assert_eq!(&b.to_bytes()[..], &p[28..40]);
        let payload = &p[40..p.len() - 4];
        assert_eq!(payload, b"ferroce ICRC fixture: an RC SEND to QP 0x123");

        let p = rxe_packets::bytes(rxe_packets::RC_RDMA_WRITE_ONLY);
        let b = bth::Bth::parse(&p[28..]).unwrap();
        assert_eq!((b.opcode, b.psn), (RC | op::RDMA_WRITE_ONLY, 0x457));
        let r = eth::Reth::parse(&p[40..]).unwrap();
        assert_eq!(
            r,
            eth::Reth {
                va: 0x1000,
                rkey: 0x4242,
                dma_len: 16
            }
        );
        assert_eq!(&r.to_bytes()[..], &p[40..56]);

        let p = rxe_packets::bytes(rxe_packets::UD_SEND_ONLY_WITH_IMM);
        let b = bth::Bth::parse(&p[28..]).unwrap();
        assert_eq!(
            (b.opcode, b.pad, b.dest_qp, b.psn, b.ack_req),
            (UD | op::SEND_ONLY_WITH_IMMEDIATE, 3, 0x321, 0x789, false)
        );
        assert_eq!(&b.to_bytes()[..], &p[28..40]);
        let d = eth::Deth::parse(&p[40..]).unwrap();
        assert_eq!((d.qkey, d.src_qp), (0x1111_1111, 0x12));
        assert_eq!(&d.to_bytes()[..], &p[40..48]);
        assert_eq!(eth::word_parse(&p[48..]), Some(0x0403_0201));
        let l = opcode::layout(b.opcode).unwrap();
        assert_eq!(l.header_bytes(), 24);
        let payload_and_pad = p.len() - 28 - l.header_bytes() - opcode::ICRC_BYTES;
        assert_eq!(payload_and_pad - usize::from(b.pad), 21);
    }

    #[test]
    fn extended_headers_round_trip() {
        let a = eth::AtomicEth {
            va: 0x1122_3344_5566_7788,
            rkey: 0x99,
            swap_add: 5,
            compare: 6,
        };
        assert_eq!(eth::AtomicEth::parse(&a.to_bytes()), Some(a));
        let k = eth::Aeth {
            syndrome: 0x60,
            msn: 0xab_cdef,
        };
        assert_eq!(eth::Aeth::parse(&k.to_bytes()), Some(k));
        assert_eq!(eth::atomic_ack_parse(&7u64.to_be_bytes()), Some(7));
        assert_eq!(eth::Reth::parse(&[0; 15]), None);
        assert_eq!(bth::Bth::parse(&[0; 11]), None);
    }

    #[test]
    fn aeth_syndromes_round_trip() {
        use transport::{NakCode, Syndrome};
        let mut decoded = 0;
        for b in 0..=255u8 {
            if let Some(s) = Syndrome::from_byte(b) {
                assert_eq!(s.to_byte(), b, "{s:?}");
                decoded += 1;
            }
        }
        // 32 ACK credit codes, 32 RNR timer codes, 5 NAK codes.
        assert_eq!(decoded, 32 + 32 + 5);
        // What rxe sends (rxe_hdr.h): AETH_ACK_UNLIMITED and the NAKs.
        assert_eq!(
            Syndrome::from_byte(0x1f),
            Some(Syndrome::Ack {
                credits: transport::CREDITS_INVALID
            })
        );
        assert_eq!(
            Syndrome::from_byte(0x20 | 14),
            Some(Syndrome::RnrNak { timer: 14 })
        );
        for (b, code) in [
            (0x60, NakCode::PsnSequenceError),
            (0x61, NakCode::InvalidRequest),
            (0x62, NakCode::RemoteAccessError),
            (0x63, NakCode::RemoteOperationalError),
            (0x64, NakCode::InvalidRdRequest),
        ] {
            assert_eq!(Syndrome::from_byte(b), Some(Syndrome::Nak(code)));
        }
        // Reserved: the 010 kind, bit 7, NAK codes past 4.
        for b in [0x40, 0x5f, 0x65, 0x7f, 0x80, 0xff] {
            assert_eq!(Syndrome::from_byte(b), None, "{b:#x}");
        }
        // Arguments keep their five bits.
        assert_eq!(Syndrome::Ack { credits: 0xff }.to_byte(), 0x1f);
        assert_eq!(Syndrome::RnrNak { timer: 0x3f }.to_byte(), 0x3f);
        // The syndrome of an AETH on the wire.
        let a = eth::Aeth::parse(&[0x61, 0, 0, 9]).unwrap();
        assert_eq!(
            Syndrome::from_byte(a.syndrome),
            Some(Syndrome::Nak(NakCode::InvalidRequest))
        );
    }

    #[test]
    fn rnr_timer_and_credit_tables() {
        use transport::{credits, rnr_timer_ns};
        // IB_RNR_TIMER_655_36, _000_01, _000_12, _001_28, _491_52.
        assert_eq!(rnr_timer_ns(0), 655_360_000);
        assert_eq!(rnr_timer_ns(1), 10_000);
        assert_eq!(rnr_timer_ns(7), 120_000);
        assert_eq!(rnr_timer_ns(14), 1_280_000);
        assert_eq!(rnr_timer_ns(31), 491_520_000);
        assert_eq!(rnr_timer_ns(32), rnr_timer_ns(0), "five bits");
        for code in 1..31 {
            assert!(rnr_timer_ns(code) < rnr_timer_ns(code + 1));
        }
        assert_eq!(credits(0), Some(0));
        assert_eq!(credits(5), Some(6));
        assert_eq!(credits(14), Some(128));
        assert_eq!(credits(30), Some(32768));
        assert_eq!(credits(transport::CREDITS_INVALID), None);
        for code in 1..30 {
            assert!(credits(code) < credits(code + 1));
        }
    }

    #[test]
    fn ack_timeout_is_4096ns_times_2_to_the_timeout() {
        use transport::ack_timeout_ns;
        assert_eq!(ack_timeout_ns(0), None, "0 waits forever");
        assert_eq!(ack_timeout_ns(1), Some(8192));
        // 4.096 us * 16384 = 67.1 ms.
        assert_eq!(ack_timeout_ns(14), Some(67_108_864));
        assert_eq!(ack_timeout_ns(31), Some(4096 << 31));
        assert_eq!(ack_timeout_ns(32), ack_timeout_ns(31));
        assert_eq!(ack_timeout_ns(255), ack_timeout_ns(31));
    }
}
