// SPDX-License-Identifier: GPL-2.0

//! The limits ferroce advertises through `query_device`/`query_port`, and enforces in every
//! verb that creates or sizes an object (Documentation/limits.rst lists them with reasons).
//!
//! Pure `core` code: also built and tested on the host (`host-tests/`).

/// Queue pairs per device.
pub(crate) const MAX_QP: u32 = 16384;
/// Work requests per send or receive queue.
pub(crate) const MAX_QP_WR: u32 = 16384;
/// Scatter/gather entries per work request (send, receive, SRQ).
pub(crate) const MAX_SGE: u32 = 32;
/// Scatter/gather entries per RDMA READ.
pub(crate) const MAX_SGE_RD: u32 = 32;
/// Bytes of inline data per send work request.
pub(crate) const MAX_INLINE_DATA: u32 = 512;
/// Completion queues per device.
pub(crate) const MAX_CQ: u32 = 16384;
/// Completion vectors (completion events are signalled from one context).
pub(crate) const NUM_COMP_VECTORS: u32 = 1;
/// Entries per completion queue. Requests round up to a power of two (the ring's size), so the
/// maximum is one too: a CQ never holds more than the `max_cqe` advertised.
pub(crate) const MAX_CQE: u32 = 1 << 16;
/// Memory regions per device (the 24-bit index part of an lkey/rkey).
pub(crate) const MAX_MR: u32 = 65536;
/// Memory windows per device (they take their rkeys from the MRs' key space).
pub(crate) const MAX_MW: u32 = 16384;
/// Largest memory region: 1 TiB.
pub(crate) const MAX_MR_SIZE: u64 = 1 << 40;
/// Protection domains per device.
pub(crate) const MAX_PD: u32 = 65536;
/// Outstanding RDMA READ/atomic requests per QP, either direction.
pub(crate) const MAX_QP_RD_ATOM: u32 = 128;
/// Packets of READ response a responder sends for one request: a foreign requester asks for
/// the rest, as rxe does after its timeout. ferroce's requester asks for fewer at once (a
/// window's worth, `READ_CHUNK` in `engine/rc/window.rs`): it splits a READ into requests,
/// each sent once the one before is answered.
pub(crate) const READ_BURST: u32 = 1024;
/// Responder resources for RDMA READ/atomic across the device.
pub(crate) const MAX_RES_RD_ATOM: u32 = MAX_QP_RD_ATOM * MAX_QP;
/// Address handles per device.
pub(crate) const MAX_AH: u32 = 65536;
/// Shared receive queues per device.
pub(crate) const MAX_SRQ: u32 = 16384;
/// Work requests per shared receive queue.
pub(crate) const MAX_SRQ_WR: u32 = 16384;
/// Pages in a fast-registration page list.
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;
/// Largest message: 2 GiB, the InfiniBand maximum.
pub(crate) const MAX_MSG_SZ: u32 = 1 << 31;
/// GIDs per port (ib_core fills the table from the netdev's IP addresses).
pub(crate) const GID_TBL_LEN: u32 = 128;
/// P_Keys per port (`pkey.rs`): the default full-membership key at 0, the rest the
/// administrator's.
pub(crate) const PKEY_TBL_LEN: u16 = super::pkey::TABLE_LEN as u16;
/// Local CA ACK delay exponent: 4.096 us * 2^15 = 134 ms.
pub(crate) const LOCAL_CA_ACK_DELAY: u8 = 15;

/// Bytes a RoCEv2 packet spends on headers besides the payload, at most: IPv6 (40) + UDP (8)
/// + BTH (12) + the largest extended header, ATOMIC ETH (28) + ICRC (4).
pub(crate) const ROCE_OVERHEAD: u32 = 40 + 8 + 12 + 28 + 4;

/// The largest InfiniBand path MTU (in bytes: 256 to 4096) that fits in a netdev MTU, or
/// `None` if none does.
pub(crate) fn path_mtu_bytes(netdev_mtu: u32) -> Option<u32> {
    let room = netdev_mtu.checked_sub(ROCE_OVERHEAD)?;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&m| m <= room)
}
