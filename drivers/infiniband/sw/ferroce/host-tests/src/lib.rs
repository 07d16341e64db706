// SPDX-License-Identifier: GPL-2.0

//! Host unit tests of the driver's `core`-only modules, which the kernel module compiles too.

#![allow(dead_code)]

#[path = "../../abi.rs"]
mod abi;
#[path = "../../count.rs"]
mod count;
#[path = "../../guid.rs"]
mod guid;
#[path = "../../keys.rs"]
mod keys;
#[path = "../../limits.rs"]
mod limits;

#[cfg(test)]
mod tests {
    use super::{abi, count, guid, keys, limits};

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
	printf("%zu %zu %zu %zu %d %zu %zu %zu %d %zu %d %d %d %d %zu %zu %zu %zu %zu %zu %zu %zu %zu\n",
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
	       sizeof(struct ferroce_create_qp_resp));
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
        ];
        assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn cqe_bytes_match_the_c_layout() {
        let c = abi::Cqe {
            wr_id: 0x1122_3344_5566_7788,
            status: abi::wc_status::WR_FLUSH_ERR,
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
        assert_eq!((f.status, f.opcode, f.qp_num, f.wr_id), (5, 0, 77, 9));
    }

    #[test]
    fn cqe_round_trips_and_flags_convert() {
        let c = abi::Cqe {
            wr_id: 42,
            status: 5,
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
            ..abi::Cqe::default()
        };
        assert_eq!(abi::Cqe::from_bytes(&c.to_bytes()), c);
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
        let ud = abi::SendWqe {
            wr: abi::WqeUnion::Ud {
                ah_num: 3,
                remote_qpn: 0x12,
                remote_qkey: 0x1111_1111,
            },
            ..abi::SendWqe::default()
        }
        .to_bytes();
        assert_eq!(&ud[32..36], &3u32.to_ne_bytes());
        assert_eq!(&ud[40..44], &0x1111_1111u32.to_ne_bytes());
        assert_eq!(abi::recv_wqe_header(5, 2)[8..12], 2u32.to_ne_bytes());
        assert_eq!(abi::sge_bytes(1, 2, 3)[12..16], 3u32.to_ne_bytes());
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
        assert!(!abi::notify_fires(0xdead_beef, true), "garbage arms nothing");
    }

    #[test]
    fn ring_sizes_and_user_indices() {
        assert_eq!(abi::ring_entries(3, limits::MAX_CQE), Some(4));
        assert_eq!(abi::ring_entries(65535, limits::MAX_CQE), Some(65536));
        assert_eq!(abi::ring_entries(0, limits::MAX_CQE), None);
        assert_eq!(abi::ring_entries(65536, limits::MAX_CQE), None);
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
        let a = t.alloc().unwrap();
        let b = t.alloc().unwrap();
        let c = t.alloc().unwrap();
        assert_eq!(
            t.alloc(),
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
        let b2 = t.alloc().unwrap();
        assert_eq!(b2 >> 8, b >> 8, "the index is reused");
        assert_ne!(b2, b, "with a new key byte");
        t.free(b); // a stale key frees nothing
        assert!(t.is_live(b2));
        assert!(!t.is_live(0) && !t.is_live(0xffff_ffff));
        // 256 reuses cycle the key byte without ever repeating the live key.
        let mut t = keys::KeyTable::new(vec![0u16; 2]);
        let mut prev = t.alloc().unwrap();
        for _ in 0..600 {
            t.free(prev);
            let k = t.alloc().unwrap();
            assert_ne!(k, prev);
            prev = k;
        }
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
}
