// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The fast path of the ferroce provider: the queues it shares with the kernel
//! (`include/uapi/rdma/ferroce-abi.h`), driven without system calls.
//!
//! A queue is a control block followed by 2^n fixed-size entries. Producer and consumer
//! indices are free-running u32 counters on their own cache lines; each side publishes its
//! index with a release store and reads the other's with an acquire load. The C part of the
//! provider (`ferroce.c`) holds a [`CqState`] per CQ and calls the `ferroce_cq_*` functions.
//!
//! Wakeups are the exception to release/acquire: arming a CQ and publishing work to a queue
//! whose kernel side may be asleep are each a store followed by a load of what the other side
//! stores, and release/acquire never orders a store before a later load. Both sides put a full
//! barrier ([`fence`]`(SeqCst)`, `smp_mb()` in the kernel) between the two, as io_uring does
//! for `IORING_SQ_NEED_WAKEUP`; see `include/uapi/rdma/ferroce-abi.h`.

use core::mem::MaybeUninit;
use core::sync::atomic::{fence, AtomicU32, Ordering};

mod cq_batch;
mod sq_batch;
pub use cq_batch::*;
pub use sq_batch::*;

/// Byte offsets of `struct ferroce_queue_ctrl` and the entries.
pub mod layout {
    /// `producer`.
    pub const CTRL_PRODUCER: usize = 0;
    /// `consumer`.
    pub const CTRL_CONSUMER: usize = 64;
    /// `notify`.
    pub const CTRL_NOTIFY: usize = 128;
    /// `flags`.
    pub const CTRL_FLAGS: usize = 132;
    /// `FERROCE_QUEUE_ENTRIES`.
    pub const QUEUE_ENTRIES: usize = 256;
    /// `FERROCE_QUEUE_ERROR`.
    pub const QUEUE_ERROR: u32 = 1;
    /// `FERROCE_QUEUE_OVERFLOW`.
    pub const QUEUE_OVERFLOW: u32 = 2;
    /// `FERROCE_CQ_NOTIFY_NEXT`.
    pub const CQ_NOTIFY_NEXT: u32 = 1;
    /// `FERROCE_CQ_NOTIFY_SOLICITED`.
    pub const CQ_NOTIFY_SOLICITED: u32 = 2;
    /// `FERROCE_QUEUE_NEED_WAKEUP`.
    pub const QUEUE_NEED_WAKEUP: u32 = 4;
    /// `IBV_WC_RECV`: the bit every receive completion's opcode has (`IBV_WC_RECV`,
    /// `IBV_WC_RECV_RDMA_WITH_IMM`).
    pub const WC_RECV: u32 = 128;
    /// `sizeof(struct ferroce_send_wqe)`.
    pub const SEND_WQE_HEADER: usize = 64;
    /// `sizeof(struct ferroce_recv_wqe)`.
    pub const RECV_WQE_HEADER: usize = 16;
    /// `IBV_SEND_INLINE`.
    pub const SEND_INLINE: u32 = 8;
    /// `sizeof(struct ferroce_sge)`.
    pub const SGE_SIZE: usize = 16;
    /// `struct ferroce_send_wqe`: `opcode`, `send_flags`, `num_sge`, `inline_len` and
    /// `wr.rdma.remote_addr` (= `wr.atomic.remote_addr`).
    pub const SEND_OPCODE: usize = 8;
    pub const SEND_FLAGS: usize = 12;
    pub const SEND_NUM_SGE: usize = 16;
    pub const SEND_INLINE_LEN: usize = 20;
    pub const SEND_REMOTE_ADDR: usize = 32;
    /// `struct ferroce_recv_wqe`: `num_sge` and `reserved` (after the u64 `wr_id`).
    pub const RECV_NUM_SGE: usize = 8;
    pub const RECV_RESERVED: usize = 12;
    /// `struct ferroce_send_wqe`: `wr.ud.ah_num`, `wr.ud.remote_qpn`, `wr.ud.remote_qkey`.
    pub const SEND_UD_AH_NUM: usize = 32;
    pub const SEND_UD_REMOTE_QPN: usize = 36;
    pub const SEND_UD_REMOTE_QKEY: usize = 40;
    /// `struct ferroce_send_wqe`: `wr.flush.length`, `wr.flush.type` and `wr.flush.level`.
    pub const SEND_FLUSH_LENGTH: usize = 40;
    pub const SEND_FLUSH_TYPE: usize = 52;
    pub const SEND_FLUSH_LEVEL: usize = 53;
}

/// `enum ibv_wr_opcode`.
pub mod opcode {
    pub const RDMA_WRITE: u32 = 0;
    pub const RDMA_WRITE_WITH_IMM: u32 = 1;
    pub const SEND: u32 = 2;
    pub const SEND_WITH_IMM: u32 = 3;
    pub const RDMA_READ: u32 = 4;
    pub const ATOMIC_CMP_AND_SWP: u32 = 5;
    pub const ATOMIC_FETCH_AND_ADD: u32 = 6;
    pub const LOCAL_INV: u32 = 7;
    pub const BIND_MW: u32 = 8;
    pub const SEND_WITH_INV: u32 = 9;
    /// `ibv_wr_flush` only: `struct ibv_send_wr` has no fields for its type and level.
    pub const FLUSH: u32 = 14;
    /// `ibv_wr_atomic_write` only: `struct ibv_send_wr` has no field for its 8 bytes.
    pub const ATOMIC_WRITE: u32 = 15;
}

/// `enum ibv_qp_type`.
pub mod qp_type {
    pub const RC: u32 = 2;
    pub const UC: u32 = 3;
    pub const UD: u32 = 4;
}

/// What a work queue accepts (`struct ferroce_wq_caps`): the capabilities its QP or SRQ was
/// created with, as the kernel returned them (`ibv_qp_cap`, `ibv_srq_attr`), which can be less
/// than what a ring entry has room for.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WqCaps {
    /// `enum ibv_qp_type` of the QP (send queues only).
    pub qp_type: u32,
    /// `max_send_sge`, `max_recv_sge` or the SRQ's `max_sge`.
    pub max_sge: u32,
    /// `max_inline_data` (send queues only).
    pub max_inline: u32,
}

/// Whether a QP of type `qp_type` can post send work requests of `opcode`. Others are refused
/// at posting, as rxe's kernel refuses them (no TSO; memory windows are bound and invalidated
/// by the connected QPs only).
pub fn opcode_allowed(qp_type: u32, opcode: u32) -> bool {
    use opcode::*;
    match qp_type {
        qp_type::UD => matches!(opcode, SEND | SEND_WITH_IMM),
        qp_type::UC => matches!(
            opcode,
            SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_WRITE_WITH_IMM | LOCAL_INV | BIND_MW
        ),
        qp_type::RC => matches!(
            opcode,
            SEND | SEND_WITH_IMM
                | RDMA_WRITE
                | RDMA_WRITE_WITH_IMM
                | RDMA_READ
                | ATOMIC_CMP_AND_SWP
                | ATOMIC_FETCH_AND_ADD
                | SEND_WITH_INV
                | LOCAL_INV
                | BIND_MW
                | ATOMIC_WRITE
                | FLUSH
        ),
        _ => false,
    }
}

fn is_atomic(opcode: u32) -> bool {
    matches!(
        opcode,
        opcode::ATOMIC_CMP_AND_SWP | opcode::ATOMIC_FETCH_AND_ADD
    )
}

/// Checks a send work request (its `struct ferroce_send_wqe` header and SGEs) against the QP's
/// capabilities, with the rules of rxe's `validate_send_wr` and the opcodes the QP type has:
/// at most `max_sge` SGEs; atomics on an 8-byte aligned remote address with at least 8 bytes
/// of local buffer; inline data at most `max_inline_data` bytes and never for RDMA reads or
/// atomics (they write the local buffer).
pub fn check_send_wr(caps: &WqCaps, header: &[u8; 64], sges: &[Sge]) -> Result<(), i32> {
    let u32_at = |at: usize| u32::from_ne_bytes(header[at..at + 4].try_into().unwrap());
    let opcode = u32_at(layout::SEND_OPCODE);
    let flags = u32_at(layout::SEND_FLAGS);
    let remote_addr = u64::from_ne_bytes(
        header[layout::SEND_REMOTE_ADDR..layout::SEND_REMOTE_ADDR + 8]
            .try_into()
            .unwrap(),
    );
    let length: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    if opcode == opcode::ATOMIC_WRITE || opcode == opcode::FLUSH {
        // Its value (a FLUSH's type and level) has no place in `struct ibv_send_wr`
        // (rdma-core offers them through `ibv_wr_atomic_write` and `ibv_wr_flush` only).
        return Err(errno::EINVAL);
    }
    check_send(caps, opcode, flags, remote_addr, sges.len(), length)
}

/// The checks of [`check_send_wr`] on what they look at: the opcode, the send flags, the remote
/// address, the number of SGEs and the bytes they (or the inline data) hold. `ibv_post_send`
/// and the `ibv_qp_ex` batches (`sq_batch`) share them, so both refuse the same work.
pub fn check_send(
    caps: &WqCaps,
    opcode: u32,
    flags: u32,
    remote_addr: u64,
    num_sge: usize,
    length: u64,
) -> Result<(), i32> {
    if !opcode_allowed(caps.qp_type, opcode) || num_sge > caps.max_sge as usize {
        return Err(errno::EINVAL);
    }
    if is_atomic(opcode) && (length < 8 || remote_addr & 7 != 0) {
        return Err(errno::EINVAL);
    }
    // A FLUSH moves no bytes: no SGEs, no inline data.
    if opcode == opcode::FLUSH && (num_sge != 0 || length != 0 || flags & layout::SEND_INLINE != 0)
    {
        return Err(errno::EINVAL);
    }
    // ATOMIC_WRITE carries its 8 bytes in the WQE: no SGEs, no inline data, an aligned target.
    if opcode == opcode::ATOMIC_WRITE
        && (num_sge != 0 || length != 0 || flags & layout::SEND_INLINE != 0 || remote_addr & 7 != 0)
    {
        return Err(errno::EINVAL);
    }
    if flags & layout::SEND_INLINE != 0
        && (length > u64::from(caps.max_inline) || opcode == opcode::RDMA_READ || is_atomic(opcode))
    {
        return Err(errno::EINVAL);
    }
    Ok(())
}

/// `IBV_FLUSH_GLOBAL`, `IBV_FLUSH_PERSISTENT`; `IBV_FLUSH_RANGE`, `IBV_FLUSH_MR`.
pub mod flush {
    pub const GLOBAL: u8 = 1;
    pub const PERSISTENT: u8 = 2;
    pub const RANGE: u8 = 0;
    pub const MR: u8 = 1;
    /// The longest range: "RETH:DMALen field shall be between zero and (2^31 - 1) bytes"
    /// (IBTA 1.5 A19).
    pub const MAX_RANGE: u64 = (1 << 31) - 1;
}

/// Checks what a FLUSH work request's header (`wr.flush`) asks for, as the kernel will: one or
/// both placement types and nothing else, a range or a region, a range of at most 2^31 - 1
/// bytes. Other work requests pass.
pub fn check_flush(header: &[u8; 64]) -> Result<(), i32> {
    let opcode = u32::from_ne_bytes(
        header[layout::SEND_OPCODE..layout::SEND_OPCODE + 4]
            .try_into()
            .unwrap(),
    );
    if opcode != opcode::FLUSH {
        return Ok(());
    }
    let length = u64::from_ne_bytes(
        header[layout::SEND_FLUSH_LENGTH..layout::SEND_FLUSH_LENGTH + 8]
            .try_into()
            .unwrap(),
    );
    let ty = header[layout::SEND_FLUSH_TYPE];
    let level = header[layout::SEND_FLUSH_LEVEL];
    let types = flush::GLOBAL | flush::PERSISTENT;
    if ty == 0
        || ty & !types != 0
        || !matches!(level, flush::RANGE | flush::MR)
        || (level == flush::RANGE && length > flush::MAX_RANGE)
    {
        return Err(errno::EINVAL);
    }
    Ok(())
}

/// Checks a receive work request against the QP's (or SRQ's) capabilities.
pub fn check_recv_wr(caps: &WqCaps, sges: &[Sge]) -> Result<(), i32> {
    if sges.len() > caps.max_sge as usize {
        return Err(errno::EINVAL);
    }
    Ok(())
}

/// `struct ferroce_mmap_info`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmapInfo {
    pub offset: u64,
    pub size: u32,
    pub num_entries: u32,
}

/// Whether a queue the kernel described is one the provider can use: a non-zero power of two
/// of entries, each a power of two of at least `header + body` bytes, all inside the mapping.
/// Computed in u64, so no response can overflow or underflow a size.
fn queue_ok(mi: &MmapInfo, entry_size: u32, header: u64, body: u64) -> bool {
    mi.num_entries.is_power_of_two()
        && entry_size.is_power_of_two()
        && u64::from(entry_size) >= header + body
        && u64::from(mi.size)
            >= layout::QUEUE_ENTRIES as u64 + u64::from(mi.num_entries) * u64::from(entry_size)
}

/// Whether a CQ's ring (`create_cq`, `resize_cq`) is usable.
pub fn cq_ok(mi: &MmapInfo) -> bool {
    let cqe = core::mem::size_of::<Cqe>() as u32;
    queue_ok(mi, cqe, u64::from(cqe), 0)
}

/// Whether a send queue of `wqe_size` entries holds work requests up to `caps`.
pub fn sq_ok(mi: &MmapInfo, wqe_size: u32, caps: &WqCaps) -> bool {
    let body = (u64::from(caps.max_sge) * layout::SGE_SIZE as u64).max(u64::from(caps.max_inline));
    queue_ok(mi, wqe_size, layout::SEND_WQE_HEADER as u64, body)
}

/// Whether a receive queue (or SRQ) of `wqe_size` entries holds work requests up to `caps`.
pub fn rq_ok(mi: &MmapInfo, wqe_size: u32, caps: &WqCaps) -> bool {
    let body = u64::from(caps.max_sge) * layout::SGE_SIZE as u64;
    queue_ok(mi, wqe_size, layout::RECV_WQE_HEADER as u64, body)
}

/// `struct ferroce_sge`, which has the layout of `struct ibv_sge`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// The producer side of a work queue (SQ, RQ or SRQ), embedded in the C provider's QP or SRQ.
#[repr(C)]
pub struct WqState {
    base: *mut u8,
    num_entries: u32,
    wqe_size: u32,
    /// The private producer index, published with a release store.
    producer: u32,
    /// Entries written since the last publish.
    unpublished: u32,
    /// What each work request is checked against.
    caps: WqCaps,
}

/// Why a post failed (errno values, as `ibv_post_*` return them).
pub mod errno {
    /// The queue is full.
    pub const ENOMEM: i32 = 12;
    /// The work request does not fit the QP's capabilities.
    pub const EINVAL: i32 = 22;
    /// The kernel put the queue in error.
    pub const EIO: i32 = 5;
    /// `ibv_start_poll`, `ibv_next_poll`: no completion (yet).
    pub const ENOENT: i32 = 2;
    /// `ibv_start_poll`, `ibv_next_poll`: the CQ overflowed and holds no more completions.
    pub const EOVERFLOW: i32 = 75;
    /// `ibv_create_qp_ex`: a send operation the QP type (or ferroce) cannot do.
    pub const EOPNOTSUPP: i32 = 95;
}

impl WqState {
    /// # Safety
    ///
    /// `base` must map a work queue of `num_entries` (a power of two) entries of `wqe_size`
    /// bytes that stays mapped while the state is used, and those entries must hold work
    /// requests up to `caps` ([`sq_ok`] or [`rq_ok`] said so).
    pub unsafe fn new(base: *mut u8, num_entries: u32, wqe_size: u32, caps: WqCaps) -> Self {
        // SAFETY: The producer word is inside the control block.
        let producer = unsafe { word(base, layout::CTRL_PRODUCER) }.load(Ordering::Relaxed);
        WqState {
            base,
            num_entries,
            wqe_size,
            producer,
            unpublished: 0,
            caps,
        }
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `base` maps the control block (constructor contract).
        unsafe { word(self.base, offset) }
    }

    /// The next free entry, if the consumer has left room.
    fn next_slot(&mut self) -> Result<*mut u8, i32> {
        if self.word(layout::CTRL_FLAGS).load(Ordering::Acquire) & layout::QUEUE_ERROR != 0 {
            return Err(errno::EIO);
        }
        let consumer = self.word(layout::CTRL_CONSUMER).load(Ordering::Acquire);
        let next = self.producer.wrapping_add(self.unpublished);
        if next.wrapping_sub(consumer) >= self.num_entries {
            return Err(errno::ENOMEM);
        }
        let index = next & (self.num_entries - 1);
        // SAFETY: `index` < num_entries: the entry is inside the mapping.
        Ok(unsafe {
            self.base
                .add(layout::QUEUE_ENTRIES + index as usize * self.wqe_size as usize)
        })
    }

    /// Makes the written entries visible to the kernel; returns whether the kernel must be told
    /// with the doorbell system call. Nothing written, nothing to tell: an empty publish never
    /// asks for the doorbell.
    pub fn publish(&mut self) -> bool {
        if self.unpublished == 0 {
            return false;
        }
        self.producer = self.producer.wrapping_add(self.unpublished);
        self.unpublished = 0;
        self.word(layout::CTRL_PRODUCER)
            .store(self.producer, Ordering::Release);
        // Store producer, then load NEED_WAKEUP; a kernel poller going to sleep sets
        // NEED_WAKEUP, then loads producer. Without a full barrier on both sides each load can
        // pass the other side's store (store->load reordering, which release/acquire allows):
        // the poller sleeps on an old producer while we skip the doorbell, and the work waits
        // forever. With the barriers at least one side sees the other's store.
        fence(Ordering::SeqCst);
        self.word(layout::CTRL_FLAGS).load(Ordering::Relaxed) & layout::QUEUE_NEED_WAKEUP != 0
    }

    /// Writes a receive WQE (not yet published); nothing is written if it fails.
    pub fn post_recv(&mut self, wr_id: u64, sges: &[Sge]) -> Result<(), i32> {
        check_recv_wr(&self.caps, sges)?;
        // Implied by the caps (rq_ok), checked again because the slot write relies on it.
        if layout::RECV_WQE_HEADER + sges.len() * layout::SGE_SIZE > self.wqe_size as usize {
            return Err(errno::EINVAL);
        }
        let slot = self.next_slot()?;
        // SAFETY: The slot holds `wqe_size` bytes, enough for the header and the SGEs.
        unsafe {
            slot.cast::<u64>().write_volatile(wr_id);
            slot.add(layout::RECV_NUM_SGE)
                .cast::<u32>()
                .write_volatile(sges.len() as u32);
            slot.add(layout::RECV_RESERVED)
                .cast::<u32>()
                .write_volatile(0);
            for (i, sge) in sges.iter().enumerate() {
                slot.add(layout::RECV_WQE_HEADER + i * layout::SGE_SIZE)
                    .cast::<Sge>()
                    .write_volatile(*sge);
            }
        }
        self.unpublished += 1;
        Ok(())
    }

    /// Writes a send WQE (not yet published): `header` is a `struct ferroce_send_wqe` header
    /// the caller filled in; with `IBV_SEND_INLINE` the SGEs' bytes are copied into the WQE.
    /// The work request is checked against the QP's capabilities first ([`check_send_wr`]):
    /// nothing is written if it fails.
    ///
    /// # Safety
    ///
    /// With `IBV_SEND_INLINE`, every SGE must describe readable memory of this process.
    pub unsafe fn post_send(&mut self, header: &[u8; 64], sges: &[Sge]) -> Result<(), i32> {
        check_send_wr(&self.caps, header, sges)?;
        let flags = u32::from_ne_bytes(
            header[layout::SEND_FLAGS..layout::SEND_FLAGS + 4]
                .try_into()
                .unwrap(),
        );
        // The caps fit the entry (sq_ok), so neither can fail; checked again because the slot
        // writes rely on it, and saturating so that no state can make the room wrap.
        let room = (self.wqe_size as usize).saturating_sub(layout::SEND_WQE_HEADER);
        let inline = flags & layout::SEND_INLINE != 0;
        let body = if inline {
            sges.iter().map(|s| s.length as u64).sum::<u64>()
        } else {
            (sges.len() * layout::SGE_SIZE) as u64
        };
        if body > room as u64 {
            return Err(errno::EINVAL);
        }
        let body = body as usize;
        let slot = self.next_slot()?;
        // SAFETY: The slot holds `wqe_size` bytes: the header and `body` <= room bytes.
        unsafe {
            core::ptr::copy_nonoverlapping(header.as_ptr(), slot, layout::SEND_WQE_HEADER);
            let mut at = slot.add(layout::SEND_WQE_HEADER);
            let (num_sge, inline_len) = if inline {
                for s in sges {
                    core::ptr::copy_nonoverlapping(
                        s.addr as usize as *const u8,
                        at,
                        s.length as usize,
                    );
                    at = at.add(s.length as usize);
                }
                (0, body as u32)
            } else {
                for s in sges {
                    at.cast::<Sge>().write_volatile(*s);
                    at = at.add(layout::SGE_SIZE);
                }
                (sges.len() as u32, 0)
            };
            slot.add(layout::SEND_NUM_SGE)
                .cast::<u32>()
                .write_volatile(num_sge);
            slot.add(layout::SEND_INLINE_LEN)
                .cast::<u32>()
                .write_volatile(inline_len);
        }
        self.unpublished += 1;
        Ok(())
    }
}

/// C entry point: initialises `state` for the work queue at `base`.
///
/// # Safety
///
/// As for [`WqState::new`]; `state` must be writable, `caps` readable.
#[no_mangle]
pub unsafe extern "C" fn ferroce_wq_init(
    state: *mut WqState,
    base: *mut u8,
    num_entries: u32,
    wqe_size: u32,
    caps: *const WqCaps,
) {
    // SAFETY: Forwarded contract.
    unsafe { state.write(WqState::new(base, num_entries, wqe_size, *caps)) };
}

/// C entry point: 0 if the send queue `mi` describes holds work requests up to `caps`, else
/// `EINVAL` (a response the provider must not use).
///
/// # Safety
///
/// `mi` and `caps` must be readable.
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_check(
    mi: *const MmapInfo,
    wqe_size: u32,
    caps: *const WqCaps,
) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let ok = unsafe { sq_ok(&*mi, wqe_size, &*caps) };
    if ok {
        0
    } else {
        errno::EINVAL
    }
}

/// C entry point: as [`ferroce_sq_check`], for a receive queue or an SRQ.
///
/// # Safety
///
/// `mi` and `caps` must be readable.
#[no_mangle]
pub unsafe extern "C" fn ferroce_rq_check(
    mi: *const MmapInfo,
    wqe_size: u32,
    caps: *const WqCaps,
) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let ok = unsafe { rq_ok(&*mi, wqe_size, &*caps) };
    if ok {
        0
    } else {
        errno::EINVAL
    }
}

/// C entry point: as [`ferroce_sq_check`], for a CQ's ring.
///
/// # Safety
///
/// `mi` must be readable.
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_check(mi: *const MmapInfo) -> i32 {
    // SAFETY: Guaranteed by the caller.
    if unsafe { cq_ok(&*mi) } {
        0
    } else {
        errno::EINVAL
    }
}

/// The caller's SGE array as a slice, or `EINVAL` for a count the queue refuses anyway.
///
/// `num_sge` is checked against the queue's `max_sge` before the slice is made: a slice
/// asserts that all `num_sge` entries are readable, and a count larger than the array is a
/// common application bug, which must get `EINVAL` without that (undefined) assertion.
///
/// # Safety
///
/// If `num_sge` is within `caps.max_sge`, `sges` must hold `num_sge` entries that stay
/// unchanged while the slice is used.
unsafe fn sge_slice<'a>(caps: &WqCaps, sges: *const Sge, num_sge: i32) -> Result<&'a [Sge], i32> {
    let Ok(n) = u32::try_from(num_sge) else {
        return Err(errno::EINVAL);
    };
    if n > caps.max_sge || (n > 0 && sges.is_null()) {
        return Err(errno::EINVAL);
    }
    if n == 0 {
        return Ok(&[]);
    }
    // SAFETY: Non-null and, within the caps, `n` entries (the caller's contract).
    Ok(unsafe { core::slice::from_raw_parts(sges, n as usize) })
}

/// C entry point: writes a receive WQE; 0 or an errno.
///
/// # Safety
///
/// `state` must be initialised and not used concurrently; `sges` must hold `num_sge` entries
/// when `num_sge` is within the queue's `max_sge` (beyond it nothing is read: `EINVAL`).
#[no_mangle]
pub unsafe extern "C" fn ferroce_rq_post(
    state: *mut WqState,
    wr_id: u64,
    sges: *const Sge,
    num_sge: i32,
) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let st = unsafe { &mut *state };
    // SAFETY: Guaranteed by the caller.
    let sges = match unsafe { sge_slice(&st.caps, sges, num_sge) } {
        Ok(sges) => sges,
        Err(e) => return e,
    };
    match st.post_recv(wr_id, sges) {
        Ok(()) => 0,
        Err(e) => e,
    }
}

/// C entry point: writes a send WQE; 0 or an errno.
///
/// # Safety
///
/// As for [`ferroce_rq_post`], and [`WqState::post_send`]'s contract; `header` points to 64
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_post(
    state: *mut WqState,
    header: *const u8,
    sges: *const Sge,
    num_sge: i32,
) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let (st, header) = unsafe { (&mut *state, &*header.cast::<[u8; 64]>()) };
    // SAFETY: Guaranteed by the caller.
    let sges = match unsafe { sge_slice(&st.caps, sges, num_sge) } {
        Ok(sges) => sges,
        Err(e) => return e,
    };
    // SAFETY: Forwarded contract.
    match unsafe { st.post_send(header, sges) } {
        Ok(()) => 0,
        Err(e) => e,
    }
}

/// C entry point: publishes the written WQEs; returns 1 if the kernel wants the doorbell.
///
/// # Safety
///
/// `state` must be initialised and not used concurrently.
#[no_mangle]
pub unsafe extern "C" fn ferroce_wq_publish(state: *mut WqState) -> i32 {
    // SAFETY: Guaranteed by the caller.
    i32::from(unsafe { &mut *state }.publish())
}

/// `struct ferroce_cqe`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: u32,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
    pub port_num: u8,
    pub reserved0: u8,
    pub reserved1: [u32; 4],
}

const _: () = assert!(core::mem::size_of::<Cqe>() == 64);

/// `struct ibv_wc` (rdma-core's `infiniband/verbs.h`), what `ibv_poll_cq` fills in. A
/// `struct ferroce_cqe` starts with exactly these fields, so a completion goes from the ring to
/// the caller's array in one copy (`ferroce.c` checks the offsets at compile time).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wc {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub vendor_err: u32,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: u32,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

const _: () = {
    assert!(core::mem::size_of::<Wc>() == 48);
    assert!(core::mem::offset_of!(Wc, wc_flags) == core::mem::offset_of!(Cqe, wc_flags));
    assert!(
        core::mem::offset_of!(Wc, dlid_path_bits) == core::mem::offset_of!(Cqe, dlid_path_bits)
    );
};

/// What a completion can be read as: a prefix of `struct ferroce_cqe`.
///
/// # Safety
///
/// The type must be `repr(C)`, at most 64 bytes, and every bit pattern must be valid for it.
pub unsafe trait CqeView: Copy {}
// SAFETY: `repr(C)` integers only, 64 bytes.
unsafe impl CqeView for Cqe {}
// SAFETY: `repr(C)` integers only, 48 bytes.
unsafe impl CqeView for Wc {}

/// The consumer side of a CQ ring, embedded in the C provider's CQ.
#[repr(C)]
pub struct CqState {
    base: *mut u8,
    num_entries: u32,
    /// The private consumer index: the shared copy is written, never read back.
    consumer: u32,
}

/// Why a poll stopped early.
#[derive(Debug, PartialEq, Eq)]
pub enum PollError {
    /// The kernel marked the queue in error (a corrupted index, say).
    QueueError,
    /// The CQ overflowed (a completion was lost) and holds no more completions.
    Overflow,
}

impl CqState {
    /// # Safety
    ///
    /// `base` must point to a mapping of a CQ ring with `num_entries` (a power of two) entries
    /// that stays mapped while the state is used.
    pub unsafe fn new(base: *mut u8, num_entries: u32) -> Self {
        debug_assert!(num_entries.is_power_of_two());
        // SAFETY: The consumer word is inside the control block.
        let consumer = unsafe { word(base, layout::CTRL_CONSUMER) }.load(Ordering::Relaxed);
        CqState {
            base,
            num_entries,
            consumer,
        }
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `base` maps the control block (constructor contract).
        unsafe { word(self.base, offset) }
    }

    /// Moves up to `out.len()` completions out of the ring, oldest first, as whole entries or
    /// as `ibv_wc`s.
    ///
    /// An overflowed CQ lost a completion: the application cannot trust it to account for its
    /// work, so once the completions it still holds are polled every poll fails instead of
    /// reporting an empty CQ (on which the application would wait forever).
    pub fn poll<T: CqeView>(&mut self, out: &mut [T]) -> Result<usize, PollError> {
        // SAFETY: `MaybeUninit<T>` has the layout of `T`, and `poll_into` only writes
        // initialised `T`s, so `out` holds valid `T`s afterwards.
        let out = unsafe { &mut *(out as *mut [T] as *mut [MaybeUninit<T>]) };
        self.poll_into(out)
    }

    /// As [`CqState::poll`], into memory that need not be initialised (`ibv_poll_cq`'s `wc`
    /// array): entries are only written, never read, and the first `n` returned are
    /// initialised.
    pub fn poll_into<T: CqeView>(
        &mut self,
        out: &mut [MaybeUninit<T>],
    ) -> Result<usize, PollError> {
        let ready = self.ready()? as usize;
        let n = ready.min(out.len());
        for (i, slot) in out.iter_mut().take(n).enumerate() {
            // `i` < ready: the kernel wrote it (`ready`'s acquire load).
            slot.write(self.read_entry(i as u32));
        }
        if n > 0 {
            self.consumer = self.consumer.wrapping_add(n as u32);
            self.word(layout::CTRL_CONSUMER)
                .store(self.consumer, Ordering::Release);
        }
        Ok(n)
    }

    /// How many completions the ring holds past the consumer index; fails on a queue in error,
    /// and on an overflowed one that holds none.
    fn ready(&self) -> Result<u32, PollError> {
        // Flags before producer: the kernel publishes its last completion, then sets
        // OVERFLOW (both release), so once this acquire load sees OVERFLOW the producer load
        // below sees every completion the ring will ever hold, and "empty" is final.
        let flags = self.word(layout::CTRL_FLAGS).load(Ordering::Acquire);
        if flags & layout::QUEUE_ERROR != 0 {
            return Err(PollError::QueueError);
        }
        let producer = self.word(layout::CTRL_PRODUCER).load(Ordering::Acquire);
        let ready = producer.wrapping_sub(self.consumer).min(self.num_entries);
        if ready == 0 && flags & layout::QUEUE_OVERFLOW != 0 {
            return Err(PollError::Overflow);
        }
        Ok(ready)
    }

    /// The completion `i` entries past the consumer index, which [`CqState::ready`] counted.
    fn read_entry<T: CqeView>(&self, i: u32) -> T {
        let index = self.consumer.wrapping_add(i) & (self.num_entries - 1);
        let at = layout::QUEUE_ENTRIES + index as usize * core::mem::size_of::<Cqe>();
        // SAFETY: `index` < num_entries, so the entry (64 bytes, at least `T`) is inside the
        // mapping; any bits are a valid `T`; the acquire load of `producer` in `ready` orders
        // this read after the kernel wrote it.
        unsafe { core::ptr::read_volatile(self.base.add(at).cast::<T>()) }
    }

    /// Removes the completions of the QP `qp_num` the ring holds, receive completions too
    /// unless `keep_receives`; returns how many. The QP went to RESET, and IBTA's Reset state
    /// leaves none of a QP's completions in its CQs (mlx5's provider cleans them out the same
    /// way, `mlx5_cq_clean`). The other completions keep their order: from the newest down,
    /// each kept one moves up past the removed ones, and the consumer index moves past the
    /// slots freed. The kernel writes only past the producer index it published, so the
    /// entries between the two indices are the consumer's to move.
    pub fn clean(&mut self, qp_num: u32, keep_receives: bool) -> Result<u32, PollError> {
        let ready = match self.ready() {
            Ok(n) => n,
            // Overflowed and empty: nothing to clean (the next poll fails anyway).
            Err(PollError::Overflow) => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut removed = 0u32;
        for i in (0..ready).rev() {
            let e: Cqe = self.read_entry(i);
            let receive = e.opcode & layout::WC_RECV != 0;
            if e.qp_num == qp_num && !(keep_receives && receive) {
                removed += 1;
            } else if removed > 0 {
                self.write_entry(i + removed, &e);
            }
        }
        if removed > 0 {
            self.consumer = self.consumer.wrapping_add(removed);
            self.word(layout::CTRL_CONSUMER)
                .store(self.consumer, Ordering::Release);
        }
        Ok(removed)
    }

    /// Writes `e` at the entry `i` past the consumer index (one [`CqState::ready`] counted).
    fn write_entry(&self, i: u32, e: &Cqe) {
        let index = self.consumer.wrapping_add(i) & (self.num_entries - 1);
        let at = layout::QUEUE_ENTRIES + index as usize * core::mem::size_of::<Cqe>();
        // SAFETY: `index` < num_entries, so the 64-byte entry is inside the mapping, and
        // aligned (the mapping is page aligned, entries start at 256 and are 64 bytes). The
        // entries between the consumer and producer indices are the consumer's: the kernel
        // writes a slot only at its producer index while fewer than num_entries are pending,
        // and reads them only to copy them in a resize, which the provider serialises with
        // this under the CQ's lock (the kernel never acts on a user CQE). `&mut self`: one
        // consumer.
        unsafe { core::ptr::write_volatile(self.base.add(at).cast::<Cqe>(), *e) }
    }

    /// Arms the CQ: the kernel signals the completion channel on the next completion (or the
    /// next solicited one).
    ///
    /// The request is ORed in, never stored: arming for the next completion and then for the
    /// next solicited one must still fire on the next completion (NEXT wins; a store of
    /// SOLICITED would weaken the first request), and the kernel's exchange that disarms the
    /// CQ must not be overwritten by a plain store of an older value.
    pub fn arm(&self, solicited_only: bool) {
        let v = if solicited_only {
            layout::CQ_NOTIFY_SOLICITED
        } else {
            layout::CQ_NOTIFY_NEXT
        };
        self.word(layout::CTRL_NOTIFY).fetch_or(v, Ordering::SeqCst);
        // The caller polls again after arming (the canonical poll, arm, poll loop): store
        // notify, then load producer, while the kernel stores producer, then loads notify. A
        // full barrier on each side keeps both loads from passing the stores, so either our
        // next poll sees the completion or the kernel sees the arm and signals the channel;
        // release/acquire alone would let both miss (a lost wakeup).
        fence(Ordering::SeqCst);
    }

    /// Switches to a new ring after a resize; the kernel copied the unpolled completions to its
    /// start and set its producer index to their number.
    ///
    /// # Safety
    ///
    /// As for [`CqState::new`].
    pub unsafe fn remap(&mut self, base: *mut u8, num_entries: u32) {
        // SAFETY: Forwarded contract.
        *self = unsafe { CqState::new(base, num_entries) };
    }
}

/// # Safety
///
/// `base + offset` must be a 4-byte aligned word of a live mapping.
unsafe fn word<'a>(base: *mut u8, offset: usize) -> &'a AtomicU32 {
    // SAFETY: Guaranteed by the caller; the kernel accesses the word atomically too.
    unsafe { AtomicU32::from_ptr(base.add(offset).cast()) }
}

/// C entry point: initialises `state` for the ring at `base`.
///
/// # Safety
///
/// `state` must be writable; `base` as for [`CqState::new`].
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_init(state: *mut CqState, base: *mut u8, num_entries: u32) {
    // SAFETY: Forwarded contract.
    unsafe { state.write(CqState::new(base, num_entries)) };
}

/// C entry point: polls up to `max` completions into `out` (`struct ibv_wc`s); returns how
/// many, or -1 if the kernel put the queue in error or it overflowed and is empty.
///
/// A `max` of 0 or less polls nothing but still fails on such a CQ: "every poll fails" must
/// hold for a caller that only checks the CQ, too. `out` is not touched then (it may be NULL).
///
/// # Safety
///
/// `state` must be initialised and not used concurrently; `out` must be writable for `max`
/// entries, which need not be initialised (only the returned number are written).
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_poll(state: *mut CqState, out: *mut Wc, max: i32) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let state = unsafe { &mut *state };
    let out: &mut [MaybeUninit<Wc>] = match usize::try_from(max) {
        // SAFETY: Guaranteed by the caller; `MaybeUninit` makes no claim about the contents.
        Ok(n) if n > 0 => unsafe { core::slice::from_raw_parts_mut(out.cast(), n) },
        _ => &mut [],
    };
    match state.poll_into(out) {
        Ok(n) => n as i32,
        Err(PollError::QueueError | PollError::Overflow) => -1,
    }
}

/// C entry point: removes the completions of the QP `qp_num` from the ring (receive
/// completions too unless `keep_receives`); returns how many, or -1 for a queue in error.
///
/// # Safety
///
/// `state` must be initialised and not used concurrently.
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_clean(
    state: *mut CqState,
    qp_num: u32,
    keep_receives: i32,
) -> i32 {
    // SAFETY: Guaranteed by the caller.
    match unsafe { &mut *state }.clean(qp_num, keep_receives != 0) {
        Ok(n) => n as i32,
        Err(_) => -1,
    }
}

/// C entry point: arms the CQ.
///
/// # Safety
///
/// `state` must be initialised.
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_arm(state: *const CqState, solicited_only: i32) {
    // SAFETY: Guaranteed by the caller.
    unsafe { &*state }.arm(solicited_only != 0);
}

/// C entry point: switches to the ring a resize returned.
///
/// # Safety
///
/// As for [`ferroce_cq_init`].
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_remap(state: *mut CqState, base: *mut u8, num_entries: u32) {
    // SAFETY: Forwarded contract.
    unsafe { (*state).remap(base, num_entries) };
}

// The layouts shared with the C part of the provider and with the kernel. ferroce.c asserts
// the same numbers of the C structures ("What provider/ring assumes"), so a change on either
// side fails a build instead of corrupting a ring or the caller's memory.
const _: () = {
    use core::mem::{offset_of, size_of};
    // `struct ferroce_cq_state`, `struct ferroce_wq_caps`, `struct ferroce_wq_state` (C reads
    // `caps` and `wqe_size` of an SRQ's state), `struct ferroce_mmap_info`.
    assert!(size_of::<CqState>() == 16);
    assert!(offset_of!(CqState, base) == 0);
    assert!(offset_of!(CqState, num_entries) == 8);
    assert!(offset_of!(CqState, consumer) == 12);
    assert!(size_of::<WqCaps>() == 12);
    assert!(offset_of!(WqCaps, qp_type) == 0);
    assert!(offset_of!(WqCaps, max_sge) == 4);
    assert!(offset_of!(WqCaps, max_inline) == 8);
    assert!(size_of::<WqState>() == 40);
    assert!(offset_of!(WqState, base) == 0);
    assert!(offset_of!(WqState, num_entries) == 8);
    assert!(offset_of!(WqState, wqe_size) == 12);
    assert!(offset_of!(WqState, producer) == 16);
    assert!(offset_of!(WqState, unpublished) == 20);
    assert!(offset_of!(WqState, caps) == 24);
    assert!(size_of::<MmapInfo>() == 16);
    assert!(offset_of!(MmapInfo, offset) == 0);
    assert!(offset_of!(MmapInfo, size) == 8);
    assert!(offset_of!(MmapInfo, num_entries) == 12);
    // `struct ferroce_queue_ctrl` and the entries after it.
    assert!(layout::CTRL_PRODUCER == 0 && layout::CTRL_CONSUMER == 64);
    assert!(layout::CTRL_NOTIFY == 128 && layout::CTRL_FLAGS == 132);
    assert!(layout::QUEUE_ENTRIES == 256);
    // `struct ferroce_sge` (and `struct ibv_sge`, which ferroce.c passes as one).
    assert!(size_of::<Sge>() == layout::SGE_SIZE && layout::SGE_SIZE == 16);
    assert!(offset_of!(Sge, addr) == 0);
    assert!(offset_of!(Sge, length) == 8);
    assert!(offset_of!(Sge, lkey) == 12);
    // `struct ferroce_send_wqe` and `struct ferroce_recv_wqe`.
    assert!(layout::SEND_WQE_HEADER == 64 && layout::RECV_WQE_HEADER == 16);
    assert!(layout::SEND_OPCODE == 8 && layout::SEND_FLAGS == 12);
    assert!(layout::SEND_NUM_SGE == 16 && layout::SEND_INLINE_LEN == 20);
    assert!(layout::SEND_REMOTE_ADDR == 32);
    assert!(layout::RECV_NUM_SGE == 8 && layout::RECV_RESERVED == 12);
    assert!(layout::SEND_UD_AH_NUM == 32 && layout::SEND_UD_REMOTE_QPN == 36);
    assert!(layout::SEND_UD_REMOTE_QKEY == 40);
    // `struct ferroce_cqe`, whose head is `struct ibv_wc` (`Wc`).
    assert!(size_of::<Cqe>() == 64 && size_of::<Wc>() == 48);
    assert!(offset_of!(Cqe, wr_id) == 0 && offset_of!(Wc, wr_id) == 0);
    assert!(offset_of!(Cqe, status) == 8 && offset_of!(Wc, status) == 8);
    assert!(offset_of!(Cqe, opcode) == 12 && offset_of!(Wc, opcode) == 12);
    assert!(offset_of!(Cqe, vendor_err) == 16 && offset_of!(Wc, vendor_err) == 16);
    assert!(offset_of!(Cqe, byte_len) == 20 && offset_of!(Wc, byte_len) == 20);
    assert!(offset_of!(Cqe, imm_data) == 24 && offset_of!(Wc, imm_data) == 24);
    assert!(offset_of!(Cqe, qp_num) == 28 && offset_of!(Wc, qp_num) == 28);
    assert!(offset_of!(Cqe, src_qp) == 32 && offset_of!(Wc, src_qp) == 32);
    assert!(offset_of!(Cqe, wc_flags) == 36 && offset_of!(Wc, wc_flags) == 36);
    assert!(offset_of!(Cqe, pkey_index) == 40 && offset_of!(Wc, pkey_index) == 40);
    assert!(offset_of!(Cqe, slid) == 42 && offset_of!(Wc, slid) == 42);
    assert!(offset_of!(Cqe, sl) == 44 && offset_of!(Wc, sl) == 44);
    assert!(offset_of!(Cqe, dlid_path_bits) == 45 && offset_of!(Wc, dlid_path_bits) == 45);
};

/// Work requests for the unit tests of this crate's modules.
#[cfg(test)]
pub(crate) mod test_wqe {
    use super::Sge;

    /// A send WQE header: wr_id, opcode, flags and the remote address.
    pub(crate) fn header(wr_id: u64, opcode: u32, flags: u32, remote_addr: u64) -> [u8; 64] {
        let mut h = [0u8; 64];
        h[0..8].copy_from_slice(&wr_id.to_ne_bytes());
        h[8..12].copy_from_slice(&opcode.to_ne_bytes());
        h[12..16].copy_from_slice(&flags.to_ne_bytes());
        h[32..40].copy_from_slice(&remote_addr.to_ne_bytes());
        h
    }

    /// An SGE over `len` readable bytes (up to 4 KiB).
    pub(crate) fn sge(len: u32) -> Sge {
        static DATA: [u8; 4096] = [0x5a; 4096];
        Sge {
            addr: DATA.as_ptr() as u64,
            length: len,
            lkey: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_wqe::{header, sge};
    use super::*;
    use std::sync::Arc;

    /// A ring buffer with the kernel's producer side, for tests.
    struct Ring {
        mem: Vec<u64>,
        num_entries: u32,
        producer: u32,
    }

    impl Ring {
        fn new(num_entries: u32) -> Self {
            let bytes = layout::QUEUE_ENTRIES + num_entries as usize * 64;
            Ring {
                mem: vec![0u64; bytes / 8],
                num_entries,
                producer: 0,
            }
        }
        fn base(&mut self) -> *mut u8 {
            self.mem.as_mut_ptr().cast()
        }
        /// Writes a CQE if there is room, as the kernel does.
        fn push(&mut self, wr_id: u64) -> bool {
            self.push_cqe(Cqe {
                wr_id,
                byte_len: wr_id as u32,
                ..Default::default()
            })
        }
        /// Writes `cqe` if there is room, as the kernel does.
        fn push_cqe(&mut self, cqe: Cqe) -> bool {
            let base = self.base();
            let consumer = unsafe { word(base, layout::CTRL_CONSUMER) }.load(Ordering::Acquire);
            if self.producer.wrapping_sub(consumer) == self.num_entries {
                return false;
            }
            let index = self.producer & (self.num_entries - 1);
            unsafe {
                base.add(layout::QUEUE_ENTRIES + index as usize * 64)
                    .cast::<Cqe>()
                    .write_volatile(cqe)
            };
            self.producer = self.producer.wrapping_add(1);
            unsafe { word(base, layout::CTRL_PRODUCER) }.store(self.producer, Ordering::Release);
            true
        }
    }

    #[test]
    fn empty_ring_polls_nothing() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        let mut out = [Cqe::default(); 4];
        assert_eq!(cq.poll(&mut out), Ok(0));
    }

    /// A QP's completions leave the ring (its receives too, or not), the others stay in order,
    /// across the ring's wrap, and the slots freed are the kernel's again.
    #[test]
    fn cleaning_takes_out_one_qps_completions() {
        for keep_receives in [false, true] {
            let mut r = Ring::new(8);
            let mut cq = unsafe { CqState::new(r.base(), 8) };
            let mut out = [Cqe::default(); 8];
            // Move the indices so that what follows wraps.
            for i in 0..6 {
                assert!(r.push(i));
            }
            assert_eq!(cq.poll(&mut out), Ok(6));
            let cqe = |wr_id, qp_num, opcode| Cqe {
                wr_id,
                qp_num,
                opcode,
                ..Default::default()
            };
            for c in [
                cqe(10, 5, 0),
                cqe(11, 7, 0),
                cqe(12, 5, layout::WC_RECV),
                cqe(13, 7, layout::WC_RECV + 1),
                cqe(14, 5, 1),
                cqe(15, 7, 0),
            ] {
                assert!(r.push_cqe(c));
            }
            let removed = cq.clean(5, keep_receives).unwrap();
            let want: &[u64] = if keep_receives {
                &[11, 12, 13, 15]
            } else {
                &[11, 13, 15]
            };
            assert_eq!(removed as usize, 6 - want.len());
            // The room is the kernel's: it fills the ring up again.
            let mut pushed = 0;
            while r.push_cqe(cqe(20 + pushed, 7, 0)) {
                pushed += 1;
            }
            assert_eq!(pushed as usize, 8 - want.len());
            let n = cq.poll(&mut out).unwrap();
            let got: Vec<u64> = out[..n].iter().map(|c| c.wr_id).collect();
            let mut all = want.to_vec();
            all.extend(20..20 + pushed);
            assert_eq!(got, all);
            assert_eq!(cq.clean(9, false), Ok(0), "an empty ring");
        }
    }

    /// Every pattern of two QPs' completions on a full ring whose indices wrap past u32::MAX:
    /// the other QP's stay in order, and the kernel gets exactly the freed slots back.
    #[test]
    fn cleaning_a_full_ring_across_the_index_wrap() {
        for start in [0, u32::MAX - 2, u32::MAX] {
            for pattern in 0u32..256 {
                let mut r = Ring::new(8);
                r.producer = start;
                unsafe { word(r.base(), layout::CTRL_PRODUCER) }.store(start, Ordering::Release);
                unsafe { word(r.base(), layout::CTRL_CONSUMER) }.store(start, Ordering::Release);
                let mut cq = unsafe { CqState::new(r.base(), 8) };
                for i in 0..8u32 {
                    let qp_num = if pattern >> i & 1 != 0 { 5 } else { 7 };
                    assert!(r.push_cqe(Cqe {
                        wr_id: i.into(),
                        qp_num,
                        ..Default::default()
                    }));
                }
                let removed = cq.clean(5, false).unwrap();
                assert_eq!(removed, pattern.count_ones());
                let mut pushed = 0;
                while r.push_cqe(Cqe {
                    wr_id: 100,
                    qp_num: 7,
                    ..Default::default()
                }) {
                    pushed += 1;
                }
                assert_eq!(pushed, removed, "start {start} pattern {pattern:#x}");
                let mut out = [Cqe::default(); 8];
                assert_eq!(cq.poll(&mut out), Ok(8));
                let kept: Vec<u64> = (0..8u64).filter(|i| pattern >> i & 1 == 0).collect();
                let got: Vec<u64> = out[..kept.len()].iter().map(|c| c.wr_id).collect();
                assert_eq!(got, kept, "start {start} pattern {pattern:#x}");
                assert!(out[kept.len()..].iter().all(|c| c.wr_id == 100));
            }
        }
    }

    #[test]
    fn full_ring_and_wrap_around() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        let mut out = [Cqe::default(); 8];
        let mut next = 0u64;
        let mut seen = 0u64;
        for _round in 0..10 {
            while r.push(next) {
                next += 1;
            }
            assert_eq!(next - seen, 4, "the ring holds exactly 4");
            let n = cq.poll(&mut out[..3]).unwrap();
            assert_eq!(n, 3);
            for c in &out[..n] {
                assert_eq!(c.wr_id, seen);
                seen += 1;
            }
        }
        let n = cq.poll(&mut out).unwrap();
        assert_eq!(n, 1);
        assert_eq!(out[0].wr_id, seen);
    }

    #[test]
    fn indices_wrap_past_u32_max() {
        let mut r = Ring::new(8);
        let start = u32::MAX - 2;
        r.producer = start;
        unsafe {
            word(r.base(), layout::CTRL_PRODUCER).store(start, Ordering::Relaxed);
            word(r.base(), layout::CTRL_CONSUMER).store(start, Ordering::Relaxed);
        }
        let mut cq = unsafe { CqState::new(r.base(), 8) };
        for i in 0..6 {
            assert!(r.push(i));
        }
        let mut out = [Cqe::default(); 8];
        assert_eq!(cq.poll(&mut out), Ok(6));
        assert_eq!(
            out[..6].iter().map(|c| c.wr_id).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4, 5]
        );
    }

    #[test]
    fn polls_straight_into_ibv_wc() {
        let mut ring = Ring::new(4);
        let mut cq = unsafe { CqState::new(ring.base(), 4) };
        assert!(ring.push(7));
        assert!(ring.push(8));
        let mut out = [Wc::default(); 4];
        assert_eq!(cq.poll(&mut out), Ok(2));
        assert_eq!((out[0].wr_id, out[1].wr_id), (7, 8));
        assert_eq!(out[2], Wc::default());
        assert_eq!(cq.poll(&mut out), Ok(0));
    }

    #[test]
    fn queue_error_stops_polling() {
        let mut r = Ring::new(4);
        r.push(1);
        unsafe { word(r.base(), layout::CTRL_FLAGS).store(layout::QUEUE_ERROR, Ordering::Release) };
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        assert_eq!(
            cq.poll(&mut [Cqe::default(); 4]),
            Err(PollError::QueueError)
        );
    }

    fn notify(r: &mut Ring) -> u32 {
        unsafe { word(r.base(), layout::CTRL_NOTIFY) }.load(Ordering::Acquire)
    }

    #[test]
    fn arm_ors_the_request_in() {
        let mut r = Ring::new(4);
        let cq = unsafe { CqState::new(r.base(), 4) };
        cq.arm(true);
        assert_eq!(notify(&mut r), layout::CQ_NOTIFY_SOLICITED);
        // The kernel fires on NEXT: a later solicited-only request never clears it.
        cq.arm(false);
        assert_eq!(
            notify(&mut r),
            layout::CQ_NOTIFY_NEXT | layout::CQ_NOTIFY_SOLICITED
        );
        unsafe { word(r.base(), layout::CTRL_NOTIFY) }.swap(0, Ordering::AcqRel);
        cq.arm(false);
        cq.arm(true);
        assert_ne!(
            notify(&mut r) & layout::CQ_NOTIFY_NEXT,
            0,
            "arming for solicited completions undid the arming for the next one"
        );
        unsafe { word(r.base(), layout::CTRL_NOTIFY) }.swap(0, Ordering::AcqRel);
        cq.arm(false);
        cq.arm(false);
        assert_eq!(notify(&mut r), layout::CQ_NOTIFY_NEXT);
    }

    /// The canonical poll, arm, poll loop against a kernel that stores producer, then loads
    /// notify (with a full barrier between): every completion is either polled or signalled.
    #[test]
    fn arm_and_completion_race_loses_no_wakeup() {
        const N: u64 = 20_000;
        let ring = Arc::new(std::sync::Mutex::new(Ring::new(64)));
        let base = SendPtr(ring.lock().unwrap().base());
        let wakeups = Arc::new(AtomicU32::new(0));
        let kernel = {
            let (ring, wakeups) = (ring.clone(), wakeups.clone());
            std::thread::spawn(move || {
                let mut next = 0;
                while next < N {
                    let mut r = ring.lock().unwrap();
                    if !r.push(next) {
                        drop(r);
                        std::thread::yield_now();
                        continue;
                    }
                    next += 1;
                    fence(Ordering::SeqCst);
                    let notify = unsafe { word(r.base(), layout::CTRL_NOTIFY) };
                    if notify.load(Ordering::Relaxed) & layout::CQ_NOTIFY_NEXT != 0
                        && notify.swap(0, Ordering::AcqRel) != 0
                    {
                        wakeups.fetch_add(1, Ordering::Release);
                    }
                }
            })
        };
        let mut cq = unsafe { CqState::new(base.0, 64) };
        let mut out = [Cqe::default(); 8];
        let (mut seen, mut waited) = (0u64, 0u32);
        while seen < N {
            let n = cq.poll(&mut out).unwrap();
            seen += n as u64;
            if n > 0 || seen == N {
                continue;
            }
            cq.arm(false);
            let n = cq.poll(&mut out).unwrap();
            seen += n as u64;
            if n > 0 {
                continue;
            }
            // Wait for the wakeup: it must come, since the ring was empty after arming.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while wakeups.load(Ordering::Acquire) == waited {
                assert!(
                    std::time::Instant::now() < deadline,
                    "lost wakeup after {seen} completions"
                );
                std::thread::yield_now();
            }
            waited = wakeups.load(Ordering::Acquire);
        }
        kernel.join().unwrap();
    }

    /// An overflowed CQ returns the completions it holds, in batches, then fails every poll,
    /// through the C entry point too, and also when asked for none.
    #[test]
    fn overflowed_cq_returns_what_it_holds_then_fails() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        let mut next = 0;
        while r.push(next) {
            next += 1;
        }
        // The kernel lost the fifth completion.
        unsafe { word(r.base(), layout::CTRL_FLAGS) }
            .fetch_or(layout::QUEUE_OVERFLOW, Ordering::Release);
        let mut out = [Wc::default(); 3];
        assert_eq!(cq.poll(&mut out), Ok(3));
        assert_eq!(out.map(|c| c.wr_id), [0, 1, 2]);
        assert_eq!(cq.poll(&mut out), Ok(1));
        assert_eq!(out[0].wr_id, 3);
        for _ in 0..3 {
            assert_eq!(cq.poll(&mut out), Err(PollError::Overflow));
        }
        let mut wc = [Wc::default(); 2];
        assert_eq!(
            unsafe { ferroce_cq_poll(&mut cq, wc.as_mut_ptr(), 2) },
            -1,
            "the C entry point fails too"
        );
        for max in [0, -1, i32::MIN] {
            assert_eq!(
                unsafe { ferroce_cq_poll(&mut cq, core::ptr::null_mut(), max) },
                -1,
                "a poll for {max} completions of the emptied overflowed CQ"
            );
        }
    }

    /// Asking for no completion polls nothing and touches no array; it fails only on a CQ
    /// that fails every poll.
    #[test]
    fn polls_for_no_completion() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        let null = core::ptr::null_mut();
        assert_eq!(unsafe { ferroce_cq_poll(&mut cq, null, 0) }, 0, "empty");
        r.push(1);
        unsafe { word(r.base(), layout::CTRL_FLAGS) }
            .fetch_or(layout::QUEUE_OVERFLOW, Ordering::Release);
        for max in [0, -3] {
            assert_eq!(
                unsafe { ferroce_cq_poll(&mut cq, null, max) },
                0,
                "overflowed, one completion held: nothing polled, no failure yet"
            );
        }
        let mut wc = [Wc::default(); 1];
        assert_eq!(unsafe { ferroce_cq_poll(&mut cq, wc.as_mut_ptr(), 1) }, 1);
        assert_eq!(wc[0].wr_id, 1);
        assert_eq!(unsafe { ferroce_cq_poll(&mut cq, null, 0) }, -1);
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        r.push(1);
        unsafe { word(r.base(), layout::CTRL_FLAGS) }.store(layout::QUEUE_ERROR, Ordering::Release);
        assert_eq!(unsafe { ferroce_cq_poll(&mut cq, null, 0) }, -1, "in error");
    }

    #[test]
    fn overflow_flag_with_completions_left_polls_them_first() {
        let mut r = Ring::new(8);
        let mut cq = unsafe { CqState::new(r.base(), 8) };
        r.push(1);
        unsafe { word(r.base(), layout::CTRL_FLAGS) }
            .fetch_or(layout::QUEUE_OVERFLOW, Ordering::Release);
        let mut out = [Cqe::default(); 8];
        assert_eq!(
            cq.poll(&mut out[..0]),
            Ok(0),
            "asking for none fails nothing"
        );
        assert_eq!(cq.poll(&mut out), Ok(1));
        assert_eq!(cq.poll(&mut out), Err(PollError::Overflow));
    }

    /// A work queue whose caps are what its entries have room for.
    fn wq(num_entries: u32, wqe_size: u32) -> (Vec<u64>, WqState) {
        let caps = WqCaps {
            qp_type: qp_type::RC,
            max_sge: (wqe_size - 16) / 16,
            max_inline: wqe_size.saturating_sub(64),
        };
        wq_caps(num_entries, wqe_size, caps)
    }

    fn wq_caps(num_entries: u32, wqe_size: u32, caps: WqCaps) -> (Vec<u64>, WqState) {
        let mut mem = vec![0u64; (layout::QUEUE_ENTRIES + (num_entries * wqe_size) as usize) / 8];
        let st = unsafe { WqState::new(mem.as_mut_ptr().cast(), num_entries, wqe_size, caps) };
        (mem, st)
    }

    #[test]
    fn recv_ring_fills_and_publishes() {
        let (mem, mut rq) = wq(4, 64);
        let sge = Sge {
            addr: 0x1000,
            length: 64,
            lkey: 0x105,
        };
        for i in 0..4 {
            rq.post_recv(i, &[sge, sge]).unwrap();
        }
        assert_eq!(
            rq.post_recv(9, &[sge]),
            Err(errno::ENOMEM),
            "a full ring refuses"
        );
        assert_eq!(
            rq.post_recv(9, &[sge; 4]),
            Err(errno::EINVAL),
            "too many SGEs for 64-byte WQEs"
        );
        assert!(!rq.publish());
        assert!(
            !rq.publish(),
            "an empty publish never asks for the doorbell"
        );
        let base: *const u8 = mem.as_ptr().cast();
        assert_eq!(
            unsafe { word(base as *mut u8, layout::CTRL_PRODUCER) }.load(Ordering::Acquire),
            4
        );
        // Entry 2: wr_id 2, two SGEs.
        let e2 = unsafe { base.add(layout::QUEUE_ENTRIES + 2 * 64) };
        assert_eq!(unsafe { e2.cast::<u64>().read() }, 2);
        assert_eq!(unsafe { e2.add(8).cast::<u32>().read() }, 2);
        assert_eq!(unsafe { e2.add(32).cast::<Sge>().read() }, sge);
        // The consumer frees room.
        unsafe { word(base as *mut u8, layout::CTRL_CONSUMER) }.store(3, Ordering::Release);
        rq.post_recv(10, &[]).unwrap();
        rq.post_recv(11, &[]).unwrap();
        rq.post_recv(12, &[]).unwrap();
        assert_eq!(rq.post_recv(13, &[]), Err(errno::ENOMEM));
    }

    #[test]
    fn send_inline_copies_the_data() {
        let (mem, mut sq) = wq(2, 128);
        unsafe { word(mem.as_ptr() as *mut u8, layout::CTRL_FLAGS) }
            .store(layout::QUEUE_NEED_WAKEUP, Ordering::Release);
        let data = *b"hello, inline world";
        let sge = Sge {
            addr: data.as_ptr() as u64,
            length: data.len() as u32,
            lkey: 0,
        };
        let mut header = [0u8; 64];
        header[0..8].copy_from_slice(&7u64.to_ne_bytes());
        header[12..16].copy_from_slice(&layout::SEND_INLINE.to_ne_bytes());
        unsafe { sq.post_send(&header, &[sge]) }.unwrap();
        assert!(sq.publish(), "the kernel asked for the doorbell");
        assert!(!sq.publish(), "nothing new published: no doorbell");
        let e0 = unsafe { (mem.as_ptr() as *const u8).add(layout::QUEUE_ENTRIES) };
        assert_eq!(
            unsafe { e0.add(20).cast::<u32>().read() },
            data.len() as u32
        );
        assert_eq!(
            unsafe { core::slice::from_raw_parts(e0.add(64), data.len()) },
            &data
        );
        let big = Sge {
            addr: data.as_ptr() as u64,
            length: 65,
            lkey: 0,
        };
        assert_eq!(
            unsafe { sq.post_send(&header, &[big]) },
            Err(errno::EINVAL),
            "65 bytes do not fit"
        );
    }

    #[test]
    fn queue_error_refuses_posts() {
        let (mem, mut rq) = wq(4, 32);
        unsafe { word(mem.as_ptr() as *mut u8, layout::CTRL_FLAGS) }
            .store(layout::QUEUE_ERROR, Ordering::Release);
        assert_eq!(rq.post_recv(1, &[]), Err(errno::EIO));
    }

    /// The producer index and the bytes of the ring: what the kernel could see.
    fn snapshot(mem: &[u64], st: &WqState) -> (u32, u32, Vec<u64>) {
        (st.producer, st.unpublished, mem.to_vec())
    }

    #[test]
    fn opcodes_by_qp_type() {
        use opcode::*;
        let all = [
            RDMA_WRITE,
            RDMA_WRITE_WITH_IMM,
            SEND,
            SEND_WITH_IMM,
            RDMA_READ,
            ATOMIC_CMP_AND_SWP,
            ATOMIC_FETCH_AND_ADD,
            LOCAL_INV,
            BIND_MW,
            SEND_WITH_INV,
            10,
            11,
            14,
            15,
            0x20,
            u32::MAX,
        ];
        let allowed = |t, ops: &[u32]| {
            for op in all {
                assert_eq!(
                    opcode_allowed(t, op),
                    ops.contains(&op),
                    "QP type {t}, opcode {op}"
                );
            }
        };
        allowed(qp_type::UD, &[SEND, SEND_WITH_IMM]);
        allowed(
            qp_type::UC,
            &[
                SEND,
                SEND_WITH_IMM,
                RDMA_WRITE,
                RDMA_WRITE_WITH_IMM,
                LOCAL_INV,
                BIND_MW,
            ],
        );
        allowed(
            qp_type::RC,
            &[
                SEND,
                SEND_WITH_IMM,
                RDMA_WRITE,
                RDMA_WRITE_WITH_IMM,
                RDMA_READ,
                ATOMIC_CMP_AND_SWP,
                ATOMIC_FETCH_AND_ADD,
                SEND_WITH_INV,
                LOCAL_INV,
                BIND_MW,
                ATOMIC_WRITE,
                FLUSH,
            ],
        );
        allowed(0, &[]);
        allowed(1, &[]);
    }

    #[test]
    fn send_wr_checked_against_the_caps() {
        use opcode::*;
        // 1 KiB entries: room for 60 SGEs or 960 bytes, but the QP has fewer.
        let caps = WqCaps {
            qp_type: qp_type::RC,
            max_sge: 32,
            max_inline: 512,
        };
        let (mem, mut sq) = wq_caps(4, 1024, caps);
        let before = snapshot(&mem, &sq);
        let refused: &[(&str, [u8; 64], Vec<Sge>)] = &[
            ("num_sge > max_sge", header(1, SEND, 0, 0), vec![sge(1); 33]),
            (
                "inline > max_inline_data",
                header(1, SEND, layout::SEND_INLINE, 0),
                vec![sge(513)],
            ),
            (
                "inline RDMA read",
                header(1, RDMA_READ, layout::SEND_INLINE, 0),
                vec![sge(8)],
            ),
            (
                "inline atomic",
                header(1, ATOMIC_FETCH_AND_ADD, layout::SEND_INLINE, 8),
                vec![sge(8)],
            ),
            (
                "unaligned atomic",
                header(1, ATOMIC_CMP_AND_SWP, 0, 0x1004),
                vec![sge(8)],
            ),
            (
                "atomic into less than 8 bytes",
                header(1, ATOMIC_FETCH_AND_ADD, 0, 0x1000),
                vec![sge(4)],
            ),
            ("TSO", header(1, 10, 0, 0), vec![]),
            (
                "ATOMIC_WRITE by ibv_post_send",
                header(1, ATOMIC_WRITE, 0, 0x1000),
                vec![],
            ),
            (
                "FLUSH by ibv_post_send",
                header(1, FLUSH, 0, 0x1000),
                vec![],
            ),
            ("unknown opcode", header(1, 99, 0, 0), vec![sge(1)]),
        ];
        for (what, header, sges) in refused {
            assert_eq!(
                unsafe { sq.post_send(header, sges) },
                Err(errno::EINVAL),
                "{what}"
            );
            assert!(
                snapshot(&mem, &sq) == before,
                "{what}: something was written"
            );
        }
        assert!(!sq.publish(), "nothing to publish after refusals");
        let ok: &[(&str, [u8; 64], Vec<Sge>)] = &[
            ("max_sge SGEs", header(1, SEND, 0, 0), vec![sge(1); 32]),
            (
                "max_inline_data bytes",
                header(1, RDMA_WRITE, layout::SEND_INLINE, 0),
                vec![sge(500), sge(12)],
            ),
            (
                "aligned atomic",
                header(1, ATOMIC_CMP_AND_SWP, 0, 0x1008),
                vec![sge(8)],
            ),
            (
                "RDMA read into many SGEs",
                header(1, RDMA_READ, 0, 0x1001),
                vec![sge(1); 3],
            ),
        ];
        for (what, header, sges) in ok {
            assert_eq!(unsafe { sq.post_send(header, sges) }, Ok(()), "{what}");
        }
    }

    #[test]
    fn ud_and_uc_send_wr_opcodes() {
        let caps = |t| WqCaps {
            qp_type: t,
            max_sge: 4,
            max_inline: 64,
        };
        let (_m, mut ud) = wq_caps(8, 128, caps(qp_type::UD));
        let (_n, mut uc) = wq_caps(8, 128, caps(qp_type::UC));
        let s = [sge(16)];
        for op in [
            opcode::RDMA_WRITE,
            opcode::RDMA_READ,
            opcode::ATOMIC_FETCH_AND_ADD,
        ] {
            assert_eq!(
                unsafe { ud.post_send(&header(1, op, 0, 0), &s) },
                Err(errno::EINVAL)
            );
        }
        assert_eq!(
            unsafe { ud.post_send(&header(1, opcode::SEND_WITH_IMM, 0, 0), &s) },
            Ok(())
        );
        assert_eq!(
            unsafe { uc.post_send(&header(1, opcode::RDMA_READ, 0, 0), &s) },
            Err(errno::EINVAL)
        );
        assert_eq!(
            unsafe { uc.post_send(&header(1, opcode::RDMA_WRITE_WITH_IMM, 0, 0), &s) },
            Ok(())
        );
    }

    #[test]
    fn recv_wr_checked_against_the_caps() {
        // 1 KiB entries hold 63 SGEs; the QP (or SRQ) takes 32.
        let caps = WqCaps {
            qp_type: qp_type::RC,
            max_sge: 32,
            max_inline: 0,
        };
        let (mem, mut rq) = wq_caps(4, 1024, caps);
        let before = snapshot(&mem, &rq);
        assert_eq!(rq.post_recv(1, &[sge(1); 33]), Err(errno::EINVAL));
        assert!(snapshot(&mem, &rq) == before);
        assert!(!rq.publish());
        assert_eq!(rq.post_recv(2, &[sge(1); 32]), Ok(()));
        assert_eq!(
            unsafe { ffi_rq_post(&mut rq, &[sge(1); 33]) },
            errno::EINVAL
        );
        assert_eq!(unsafe { ffi_rq_post(&mut rq, &[]) }, 0);
    }

    /// An SGE count beyond the caps is refused before the array is looked at: here the
    /// "array" is a dangling pointer, which no slice may be made over.
    #[test]
    fn sge_count_beyond_the_caps_is_refused_unread() {
        let caps = WqCaps {
            qp_type: qp_type::RC,
            max_sge: 2,
            max_inline: 0,
        };
        let (mem, mut rq) = wq_caps(4, 64, caps);
        let (_m, mut sq) = wq_caps(4, 128, caps);
        let before = snapshot(&mem, &rq);
        let dangling = core::ptr::NonNull::<Sge>::dangling().as_ptr();
        let header = header(1, opcode::SEND, 0, 0);
        for n in [3, 1000, i32::MAX, -1, i32::MIN] {
            assert_eq!(
                unsafe { ferroce_rq_post(&mut rq, 1, dangling, n) },
                errno::EINVAL,
                "recv, num_sge {n}"
            );
            assert_eq!(
                unsafe { ferroce_sq_post(&mut sq, header.as_ptr(), dangling, n) },
                errno::EINVAL,
                "send, num_sge {n}"
            );
        }
        let null = core::ptr::null();
        assert_eq!(
            unsafe { ferroce_rq_post(&mut rq, 1, null, 1) },
            errno::EINVAL
        );
        assert!(snapshot(&mem, &rq) == before, "something was written");
        assert_eq!(unsafe { ferroce_rq_post(&mut rq, 1, null, 0) }, 0);
        assert_eq!(
            unsafe { ferroce_rq_post(&mut rq, 2, [sge(1); 2].as_ptr(), 2) },
            0
        );
        assert_eq!(
            unsafe { ferroce_sq_post(&mut sq, header.as_ptr(), [sge(1); 2].as_ptr(), 2) },
            0
        );
    }

    /// `ibv_poll_cq`'s array is uninitialised memory: only the completions returned are
    /// written, and nothing beyond them.
    #[test]
    fn polls_into_uninitialised_memory() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        assert!(r.push(5));
        assert!(r.push(6));
        let mut out = [const { MaybeUninit::<Wc>::uninit() }; 4];
        // A canary past the two completions: must stay as it is.
        let canary = Wc {
            wr_id: 0xdead,
            ..Wc::default()
        };
        out[2].write(canary);
        assert_eq!(
            unsafe { ferroce_cq_poll(&mut cq, out.as_mut_ptr().cast(), 4) },
            2
        );
        let got = unsafe { [out[0].assume_init(), out[1].assume_init()] };
        assert_eq!((got[0].wr_id, got[1].wr_id), (5, 6));
        assert_eq!(unsafe { out[2].assume_init() }, canary);
        assert_eq!(
            unsafe { ferroce_cq_poll(&mut cq, out.as_mut_ptr().cast(), 4) },
            0
        );
    }

    unsafe fn ffi_rq_post(rq: &mut WqState, sges: &[Sge]) -> i32 {
        unsafe { ferroce_rq_post(rq, 3, sges.as_ptr(), sges.len() as i32) }
    }

    #[test]
    fn queue_geometry_from_the_kernel() {
        let mi = |size, num_entries| MmapInfo {
            offset: 0,
            size,
            num_entries,
        };
        let caps = WqCaps {
            qp_type: qp_type::RC,
            max_sge: 4,
            max_inline: 64,
        };
        // What the kernel returns for such a QP: 128-byte entries.
        assert!(sq_ok(&mi(256 + 8 * 128, 8), 128, &caps));
        assert!(rq_ok(&mi(256 + 8 * 128, 8), 128, &caps));
        assert!(cq_ok(&mi(256 + 4 * 64, 4)));
        // A zero (short) response.
        assert!(!sq_ok(&mi(0, 0), 0, &caps));
        assert!(!rq_ok(&MmapInfo::default(), 0, &caps));
        assert!(!cq_ok(&MmapInfo::default()));
        // Entries not a power of two, or none.
        assert!(!sq_ok(&mi(256 + 6 * 128, 6), 128, &caps));
        assert!(!cq_ok(&mi(256 + 3 * 64, 3)));
        assert!(!cq_ok(&mi(4096, 0)));
        // Entry sizes: not a power of two, smaller than the header (wqe_size - 64 would
        // underflow), or without room for the caps.
        assert!(!sq_ok(&mi(256 + 8 * 96, 8), 96, &caps));
        assert!(!sq_ok(&mi(256 + 8 * 32, 8), 32, &caps));
        assert!(!sq_ok(&mi(256 + 8 * 64, 8), 64, &caps));
        assert!(!rq_ok(&mi(256 + 8 * 8, 8), 8, &caps));
        assert!(!rq_ok(&mi(256 + 8 * 64, 8), 64, &caps));
        let big = WqCaps {
            max_inline: 512,
            ..caps
        };
        assert!(!sq_ok(&mi(256 + 8 * 512, 8), 512, &big));
        assert!(sq_ok(&mi(256 + 8 * 1024, 8), 1024, &big));
        // A mapping too small for the entries, including by u32 overflow.
        assert!(!sq_ok(&mi(256 + 7 * 128, 8), 128, &caps));
        assert!(!cq_ok(&mi(255 + 4 * 64, 4)));
        assert!(!cq_ok(&mi(u32::MAX, 1 << 31)));
        assert!(!sq_ok(&mi(u32::MAX, 1 << 24), 1 << 31, &caps));
        // Caps no entry can hold.
        let huge = WqCaps {
            max_sge: u32::MAX,
            ..caps
        };
        assert!(!sq_ok(&mi(u32::MAX, 2), 1 << 31, &huge));
        assert!(!rq_ok(&mi(u32::MAX, 2), 1 << 31, &huge));
        let m = mi(256 + 8 * 128, 8);
        assert_eq!(unsafe { ferroce_sq_check(&m, 128, &caps) }, 0);
        assert_eq!(unsafe { ferroce_sq_check(&m, 32, &caps) }, errno::EINVAL);
        assert_eq!(
            unsafe { ferroce_cq_check(&MmapInfo::default()) },
            errno::EINVAL
        );
    }

    struct SendPtr(*mut u8);
    unsafe impl Send for SendPtr {}
    unsafe impl Sync for SendPtr {}

    #[test]
    fn concurrent_producer_and_consumer() {
        const N: u64 = 200_000;
        let ring = Arc::new(std::sync::Mutex::new(Ring::new(16)));
        let base = SendPtr(ring.lock().unwrap().base());
        let producer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                let mut next = 0;
                while next < N {
                    if ring.lock().unwrap().push(next) {
                        next += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut cq = unsafe { CqState::new(base.0, 16) };
        let mut out = [Cqe::default(); 5];
        let mut expect = 0;
        while expect < N {
            let n = cq.poll(&mut out).unwrap();
            for c in &out[..n] {
                assert_eq!(c.wr_id, expect);
                assert_eq!(c.byte_len, expect as u32);
                expect += 1;
            }
        }
        producer.join().unwrap();
        assert_eq!(cq.poll(&mut out), Ok(0));
    }
}
