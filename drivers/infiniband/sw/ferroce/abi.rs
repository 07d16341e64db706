// SPDX-License-Identifier: GPL-2.0

//! The layout of `include/uapi/rdma/ferroce-abi.h`, the ABI shared with the provider.
//!
//! Pure `core` code: also built on the host, where a test compiles the C header and checks
//! every offset and size here against it (`host-tests/`).

/// Byte offsets in `struct ferroce_queue_ctrl`, at the start of every shared queue.
pub(crate) const CTRL_PRODUCER: usize = 0;
pub(crate) const CTRL_CONSUMER: usize = 64;
pub(crate) const CTRL_NOTIFY: usize = 128;
pub(crate) const CTRL_FLAGS: usize = 132;
/// `FERROCE_QUEUE_ENTRIES`: the byte offset of entry 0.
pub(crate) const QUEUE_ENTRIES: usize = 256;

/// `ferroce_queue_ctrl.flags`.
pub(crate) const QUEUE_ERROR: u32 = 1 << 0;

/// `ferroce_queue_ctrl.flags`: a CQ lost a completion (overrun).
pub(crate) const QUEUE_OVERFLOW: u32 = 1 << 1;
/// `ferroce_queue_ctrl.flags`: new work needs the doorbell system call (POST_SEND for an SQ,
/// POST_RECV for an RQ).
pub(crate) const QUEUE_NEED_WAKEUP: u32 = 1 << 2;

/// `ferroce_queue_ctrl.notify` of a CQ: signal the next completion.
pub(crate) const CQ_NOTIFY_NEXT: u32 = 1;
/// `ferroce_queue_ctrl.notify` of a CQ: signal the next solicited completion.
pub(crate) const CQ_NOTIFY_SOLICITED: u32 = 2;

/// `sizeof(struct ferroce_send_wqe)`: the header before the SGEs or inline data.
pub(crate) const SEND_WQE_HEADER: usize = 64;
/// `sizeof(struct ferroce_recv_wqe)`: the header before the SGEs.
pub(crate) const RECV_WQE_HEADER: usize = 16;
/// `sizeof(struct ferroce_sge)`.
pub(crate) const SGE_SIZE: usize = 16;

/// `sizeof(struct ferroce_cqe)`.
pub(crate) const CQE_SIZE: usize = 64;

/// Byte offsets in the WQE headers (`struct ferroce_send_wqe`, `struct ferroce_recv_wqe`).
pub(crate) const WQE_WR_ID: usize = 0;
pub(crate) const SEND_WQE_OPCODE: usize = 8;

/// `enum ibv_wc_status` values ferroce reports.
pub(crate) mod wc_status {
    pub(crate) const WR_FLUSH_ERR: u32 = 5;
}

/// `enum ibv_wc_opcode`.
pub(crate) mod wc_opcode {
    pub(crate) const SEND: u32 = 0;
    pub(crate) const RDMA_WRITE: u32 = 1;
    pub(crate) const RDMA_READ: u32 = 2;
    pub(crate) const COMP_SWAP: u32 = 3;
    pub(crate) const FETCH_ADD: u32 = 4;
    pub(crate) const BIND_MW: u32 = 5;
    pub(crate) const LOCAL_INV: u32 = 6;
    pub(crate) const RECV: u32 = 128;
}

/// `enum ibv_wr_opcode`.
pub(crate) mod wr_opcode {
    pub(crate) const RDMA_WRITE: u32 = 0;
    pub(crate) const RDMA_WRITE_WITH_IMM: u32 = 1;
    pub(crate) const SEND: u32 = 2;
    pub(crate) const SEND_WITH_IMM: u32 = 3;
    pub(crate) const RDMA_READ: u32 = 4;
    pub(crate) const ATOMIC_CMP_AND_SWP: u32 = 5;
    pub(crate) const ATOMIC_FETCH_AND_ADD: u32 = 6;
    pub(crate) const LOCAL_INV: u32 = 7;
    pub(crate) const BIND_MW: u32 = 8;
    pub(crate) const SEND_WITH_INV: u32 = 9;
}

/// The completion opcode of a send work request's opcode, `None` for an unknown one.
pub(crate) fn wc_opcode_of(wr: u32) -> Option<u32> {
    use wr_opcode as w;
    Some(match wr {
        w::SEND | w::SEND_WITH_IMM | w::SEND_WITH_INV => wc_opcode::SEND,
        w::RDMA_WRITE | w::RDMA_WRITE_WITH_IMM => wc_opcode::RDMA_WRITE,
        w::RDMA_READ => wc_opcode::RDMA_READ,
        w::ATOMIC_CMP_AND_SWP => wc_opcode::COMP_SWAP,
        w::ATOMIC_FETCH_AND_ADD => wc_opcode::FETCH_ADD,
        w::LOCAL_INV => wc_opcode::LOCAL_INV,
        w::BIND_MW => wc_opcode::BIND_MW,
        _ => return None,
    })
}

/// `struct ferroce_cqe`: the fields the kernel fills in (the rest are zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cqe {
    pub(crate) wr_id: u64,
    pub(crate) status: u32,
    pub(crate) opcode: u32,
    pub(crate) vendor_err: u32,
    pub(crate) byte_len: u32,
    /// Big endian, as on the wire (or the invalidated rkey).
    pub(crate) imm_data: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: u32,
    pub(crate) pkey_index: u16,
    pub(crate) sl: u8,
    pub(crate) port_num: u8,
    /// Not part of the entry: whether it satisfies a "solicited only" arming.
    pub(crate) solicited: bool,
}

impl Cqe {
    /// A flushed work request's completion.
    pub(crate) fn flushed(wr_id: u64, opcode: u32, qp_num: u32) -> Self {
        Cqe {
            wr_id,
            status: wc_status::WR_FLUSH_ERR,
            opcode,
            qp_num,
            port_num: 1,
            ..Cqe::default()
        }
    }

    /// The C layout, native byte order.
    pub(crate) fn to_bytes(&self) -> [u8; CQE_SIZE] {
        let mut b = [0u8; CQE_SIZE];
        b[0..8].copy_from_slice(&self.wr_id.to_ne_bytes());
        let words = [
            self.status,
            self.opcode,
            self.vendor_err,
            self.byte_len,
            self.imm_data,
            self.qp_num,
            self.src_qp,
            self.wc_flags,
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        b[40..42].copy_from_slice(&self.pkey_index.to_ne_bytes());
        // slid (42..44) stays 0: RoCE has no LIDs.
        b[44] = self.sl;
        b[46] = self.port_num;
        b
    }
}

/// Whether a CQ armed with `notify` (`FERROCE_CQ_NOTIFY_*`) signals a completion.
pub(crate) fn notify_fires(notify: u32, solicited: bool) -> bool {
    notify == CQ_NOTIFY_NEXT || (notify == CQ_NOTIFY_SOLICITED && solicited)
}

/// The bytes a queue of `num_entries` entries of `entry_size` bytes maps, if representable.
pub(crate) fn queue_bytes(num_entries: u32, entry_size: usize) -> Option<usize> {
    (num_entries as usize)
        .checked_mul(entry_size)?
        .checked_add(QUEUE_ENTRIES)
}

/// `struct ferroce_mmap_info`: where the provider maps a queue.
pub(crate) struct MmapInfo {
    pub(crate) offset: u64,
    pub(crate) size: u32,
    pub(crate) num_entries: u32,
}

impl MmapInfo {
    /// `sizeof(struct ferroce_mmap_info)`, also the size of the create/resize CQ responses.
    pub(crate) const SIZE: usize = 16;

    /// The C layout, native byte order (as the provider on the same host reads it).
    pub(crate) fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&self.offset.to_ne_bytes());
        b[8..12].copy_from_slice(&self.size.to_ne_bytes());
        b[12..16].copy_from_slice(&self.num_entries.to_ne_bytes());
        b
    }
}

/// `struct ferroce_create_ah_resp`.
pub(crate) fn create_ah_resp(ah_num: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0..4].copy_from_slice(&ah_num.to_ne_bytes());
    b
}

/// `struct ferroce_create_qp_resp`: the SQ and RQ mappings and their entry sizes.
pub(crate) fn create_qp_resp(
    sq: &MmapInfo,
    rq: Option<&MmapInfo>,
    sq_wqe: u32,
    rq_wqe: u32,
) -> [u8; 40] {
    let mut b = [0u8; 40];
    b[0..16].copy_from_slice(&sq.to_bytes());
    if let Some(rq) = rq {
        b[16..32].copy_from_slice(&rq.to_bytes());
    }
    b[32..36].copy_from_slice(&sq_wqe.to_ne_bytes());
    b[36..40].copy_from_slice(&rq_wqe.to_ne_bytes());
    b
}

/// `struct ferroce_create_srq_resp`: the SRQ's mapping and its entry size.
pub(crate) fn create_srq_resp(mi: &MmapInfo, wqe_size: u32) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0..16].copy_from_slice(&mi.to_bytes());
    b[16..20].copy_from_slice(&wqe_size.to_ne_bytes());
    b
}

/// `sizeof(struct ferroce_modify_srq_cmd)`.
pub(crate) const MODIFY_SRQ_CMD_SIZE: usize = 8;

/// `struct ferroce_modify_srq_cmd`: where user space wants a resized SRQ's new mapping
/// described (`mmap_info_addr`).
pub(crate) fn modify_srq_cmd(b: &[u8; MODIFY_SRQ_CMD_SIZE]) -> u64 {
    u64::from_ne_bytes(*b)
}

/// Send and receive WQE sizes (powers of two) for the given capabilities.
pub(crate) fn wqe_sizes(send_sge: u32, inline: u32, recv_sge: u32) -> (u32, u32) {
    let send_body = (send_sge as usize * SGE_SIZE).max(inline as usize);
    let send = (SEND_WQE_HEADER + send_body).next_power_of_two() as u32;
    let recv = (RECV_WQE_HEADER + recv_sge.max(1) as usize * SGE_SIZE).next_power_of_two() as u32;
    (send, recv)
}

/// How many entries a queue asked for `requested` entries gets: the next power of two.
pub(crate) fn ring_entries(requested: u32, max: u32) -> Option<u32> {
    if requested == 0 || requested > max {
        return None;
    }
    requested.checked_next_power_of_two()
}

/// The number of entries between a consumer index written by user space and the kernel's own
/// producer index, or `None` if the user's index is impossible (ahead of the producer or more
/// than a ring behind it).
pub(crate) fn pending(producer: u32, user_consumer: u32, num_entries: u32) -> Option<u32> {
    let n = producer.wrapping_sub(user_consumer);
    (n <= num_entries).then_some(n)
}
