// SPDX-License-Identifier: GPL-2.0

//! The multicast attachment table (`protocol/mcast.rs`).

use crate::mcast::{self, Attachment, Refused, Table};

fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d]
}

fn v6(last: u8) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xff;
    g[1] = 0x0e;
    g[15] = last;
    g
}

fn table() -> Table<Vec<Attachment>> {
    Table::new(vec![Attachment::default(); mcast::MAX_ATTACHMENTS])
}

#[test]
fn multicast_gids() {
    assert!(mcast::is_multicast(&v4(224, 0, 0, 1)));
    assert!(mcast::is_multicast(&v4(239, 255, 1, 2)));
    assert!(!mcast::is_multicast(&v4(10, 0, 0, 1)));
    assert!(!mcast::is_multicast(&v4(240, 0, 0, 1)));
    assert!(mcast::is_multicast(&v6(1)));
    let mut unicast = v6(1);
    unicast[0] = 0xfe;
    assert!(!mcast::is_multicast(&unicast));
    // ff00::/8 wins over a v4-mapped look only when the prefix is ::ffff.
    assert!(!mcast::is_multicast(&[0u8; 16]));
}

#[test]
fn attach_detach_counts_and_membership() {
    let mut t = table();
    let g = v4(239, 1, 2, 3);
    assert_eq!(t.attach(&v4(10, 1, 2, 3), 5), Err(Refused::NotMulticast));
    assert_eq!(t.attach(&g, 5), Ok(true), "first QP of the group");
    assert_eq!(t.attach(&g, 6), Ok(false));
    assert_eq!(t.attach(&g, 5), Ok(false), "a second attach of the same QP");
    assert_eq!(t.members(&g), 2);
    let mut out = [0u32; mcast::MAX_QPS_PER_GROUP];
    let n = t.qps(&g, &mut out);
    let mut got = out[..n].to_vec();
    got.sort();
    assert_eq!(got, [5, 6], "each QP once, however often attached");
    assert_eq!(t.detach(&g, 7), None);
    assert_eq!(t.detach(&v4(239, 1, 2, 4), 5), None);
    assert_eq!(t.detach(&g, 5), Some(false));
    assert_eq!(t.detach(&g, 6), Some(false), "QP 5 is attached once more");
    assert_eq!(t.detach(&g, 5), Some(true), "the last one");
    assert_eq!(t.detach(&g, 5), None);
    assert_eq!(t.qps(&g, &mut out), 0);
}

#[test]
fn limits_hold() {
    let mut t = table();
    let g = v6(9);
    for qpn in 0..mcast::MAX_QPS_PER_GROUP as u32 {
        assert!(t.attach(&g, 100 + qpn).is_ok());
    }
    assert_eq!(t.attach(&g, 999), Err(Refused::Full), "max_mcast_qp_attach");
    // Groups up to max_mcast_grp.
    let mut t = table();
    for i in 0..mcast::MAX_GROUPS {
        assert_eq!(t.attach(&v4(239, 0, (i >> 8) as u8, i as u8), 2), Ok(true));
    }
    assert_eq!(
        t.attach(&v4(239, 9, 9, 9), 2),
        Err(Refused::Full),
        "max_mcast_grp"
    );
    assert_eq!(
        t.attach(&v4(239, 0, 0, 0), 3),
        Ok(false),
        "an existing group takes QPs"
    );
    // A group that empties makes room for another.
    assert_eq!(t.detach(&v4(239, 0, 0, 1), 2), Some(true));
    assert_eq!(t.attach(&v4(239, 9, 9, 9), 2), Ok(true));
    assert_eq!(t.attach(&v4(239, 9, 9, 8), 2), Err(Refused::Full));
    // The table's length: max_total_mcast_qp_attach.
    let mut t = Table::new(vec![Attachment::default(); 3]);
    for qpn in 0..3 {
        assert!(t.attach(&g, qpn).is_ok());
    }
    assert_eq!(t.attach(&g, 3), Err(Refused::Full));
    assert_eq!(t.detach(&g, 1), Some(false));
    assert_eq!(t.attach(&g, 3), Ok(false), "a freed slot is used again");
}
