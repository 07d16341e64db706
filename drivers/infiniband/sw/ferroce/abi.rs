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

/// `ferroce_queue_ctrl.flags`: the SQ needs the POST_SEND doorbell system call.
pub(crate) const QUEUE_NEED_WAKEUP: u32 = 1 << 2;

/// `sizeof(struct ferroce_send_wqe)`: the header before the SGEs or inline data.
pub(crate) const SEND_WQE_HEADER: usize = 64;
/// `sizeof(struct ferroce_recv_wqe)`: the header before the SGEs.
pub(crate) const RECV_WQE_HEADER: usize = 16;
/// `sizeof(struct ferroce_sge)`.
pub(crate) const SGE_SIZE: usize = 16;

/// `sizeof(struct ferroce_cqe)`.
pub(crate) const CQE_SIZE: usize = 64;

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
