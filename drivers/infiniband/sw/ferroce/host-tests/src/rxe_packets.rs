// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 packets rdma_rxe (Linux 6.12) sent, from the IP header to the ICRC: the reference the
//! protocol modules are checked against. `fixtures/capture-rxe-packets.sh` captures them again.

/// RC SEND_ONLY, 44 bytes of payload, to QP 0x123, PSN 0x456, AckReq.
pub(crate) const RC_SEND_ONLY: &str = "45000058e4244000401141d20a4e00010a4e0002d35312b7004400000400ffff0000012380000456666572726f6365204943524320666978747572653a20616e2052432053454e4420746f20515020307831323358829f29";

/// RC RDMA_WRITE_ONLY of 16 bytes to VA 0x1000, rkey 0x4242, PSN 0x457.
pub(crate) const RC_RDMA_WRITE_ONLY: &str = "4500004ce4264000401141dc0a4e00010a4e0002d35312b7003800000a00ffff000001238000045700000000000010000000424200000010666572726f63652049435243206669783bb7883a";

/// UD SEND_ONLY_WITH_IMMEDIATE of 21 bytes (3 bytes of pad) from QP 0x12 to QP 0x321, Q_Key
/// 0x11111111, PSN 0x789.
pub(crate) const UD_SEND_ONLY_WITH_IMM: &str = "45000050e4274000401141d70a4e00010a4e0002f80612b7003c00006530ffff0000032100000789111111110000001204030201666572726f6365204943524320666978747572653a00000047faee7d";

/// The bytes of a hex string.
pub(crate) fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}
