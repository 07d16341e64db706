// SPDX-License-Identifier: GPL-2.0

//! Host unit tests of the driver's `core`-only modules, which the kernel module compiles too.

#![allow(dead_code)]

#[path = "../../count.rs"]
mod count;
#[path = "../../guid.rs"]
mod guid;
#[path = "../../limits.rs"]
mod limits;

#[cfg(test)]
mod tests {
    use super::{count, guid, limits};

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
        assert_eq!(limits::path_mtu_bytes(4096 + limits::ROCE_OVERHEAD), Some(4096));
        assert_eq!(limits::path_mtu_bytes(4095 + limits::ROCE_OVERHEAD), Some(2048));
        assert_eq!(limits::path_mtu_bytes(256 + limits::ROCE_OVERHEAD), Some(256));
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

    #[test]
    fn limits_fit_the_c_types() {
        for v in [
            limits::MAX_QP, limits::MAX_QP_WR, limits::MAX_SGE, limits::MAX_CQ, limits::MAX_CQE,
            limits::MAX_MR, limits::MAX_PD, limits::MAX_AH, limits::MAX_SRQ, limits::MAX_SRQ_WR,
            limits::MAX_RES_RD_ATOM, limits::GID_TBL_LEN,
        ] {
            assert!(i32::try_from(v).is_ok(), "{v} does not fit a C int");
        }
        // lkey/rkey: 24-bit index, 8-bit key.
        assert!(limits::MAX_MR <= 1 << 24);
    }
}
