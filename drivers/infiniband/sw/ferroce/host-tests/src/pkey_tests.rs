// SPDX-License-Identifier: GPL-2.0

//! P_Key matching and the P_Key table (`protocol/pkey.rs`).

use crate::pkey::{self, BadIndex, Table};

#[test]
fn membership_rules() {
    // Same partition: full with full, full with limited (either way).
    assert!(pkey::matches(0xffff, 0xffff));
    assert!(pkey::matches(0x8001, 0x8001));
    assert!(pkey::matches(0x0001, 0x8001));
    assert!(pkey::matches(0x8001, 0x0001));
    // Two limited members cannot talk.
    assert!(!pkey::matches(0x0001, 0x0001));
    assert!(!pkey::matches(0x7fff, 0x7fff));
    // Different partitions.
    assert!(!pkey::matches(0x8001, 0x8002));
    assert!(!pkey::matches(0xffff, 0x8001));
    // Invalid P_Keys match nothing, not even themselves.
    assert!(!pkey::matches(0x8000, 0x8000));
    assert!(!pkey::matches(0x0000, 0x0000));
    assert!(!pkey::matches(0x8000, 0x0000));
    assert!(!pkey::is_valid(0x8000));
    assert!(pkey::is_valid(0x0001));
}

#[test]
fn table() {
    let t = Table::new();
    assert_eq!(t.get(0), pkey::DEFAULT);
    for i in 1..pkey::TABLE_LEN as u16 {
        assert_eq!(t.get(i), 0);
    }
    assert_eq!(t.get(pkey::TABLE_LEN as u16), 0, "beyond the table");
    assert_eq!(t.set(pkey::TABLE_LEN as u16, 1), Err(BadIndex));
    assert_eq!(t.set(3, 0x8005), Ok(true));
    assert_eq!(t.set(3, 0x8005), Ok(false), "unchanged");
    assert_eq!(t.get(3), 0x8005);
    // QP1 finds the first entry a packet matches.
    assert_eq!(t.find(0xffff), Some(0));
    assert_eq!(
        t.find(0x7fff),
        Some(0),
        "a limited member meets the full default"
    );
    assert_eq!(t.find(0x0005), Some(3));
    assert_eq!(t.find(0x8006), None);
    assert_eq!(t.set(0, 0x7fff), Ok(true));
    assert_eq!(t.find(0x7fff), None, "two limited members");
    assert_eq!(t.find(0xffff), Some(0));
    assert_eq!(t.set(0, 0), Ok(true));
    assert_eq!(t.find(0x0000), None);
    assert_eq!(t.find(0x8000), None);
}
