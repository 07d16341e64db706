// SPDX-License-Identifier: GPL-2.0

//! Node GUIDs derived from MAC addresses (modified EUI-64, as RoCE hardware does).
//!
//! Pure `core` code: also built and tested on the host (`host-tests/`).

/// The modified EUI-64 of a MAC address: `ff:fe` in the middle, universal/local bit flipped.
pub(crate) fn from_mac(mac: [u8; 6]) -> u64 {
    let eui = [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ];
    u64::from_be_bytes(eui)
}
