// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Send work built piece by piece: the `ibv_qp_ex` batch (`wr_start`, a builder such as
//! `wr_send` per work request, setters such as `wr_set_sge` for the last one, then
//! `wr_complete` or `wr_abort`).
//!
//! A builder takes the next free entry of the send queue and stages the WQE's header here;
//! setters write the SGEs or the inline data straight into that entry. The work request is
//! checked as `ibv_post_send` checks it ([`check_send`]) when it is finished, at the next
//! builder or at `wr_complete`, and only then is its header written and the entry counted.
//! Nothing is visible to the kernel before `wr_complete` publishes the producer index.
//!
//! The builders and setters return nothing: the first error of a batch is latched, the rest of
//! the batch is ignored, and `wr_complete` returns the error and drops the whole batch (as
//! rxe's provider and mlx5 do). `wr_abort` drops it too. Either way the kernel never saw it.

use super::*;

/// `struct ibv_data_buf`: one buffer of `wr_set_inline_data_list`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DataBuf {
    pub addr: *const u8,
    pub length: usize,
}

/// `struct ferroce_sq_batch`: an `ibv_qp_ex` batch in progress.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SqBatch {
    /// The header of the work request being built (`struct ferroce_send_wqe`).
    header: [u8; 64],
    /// Its entry in the ring, while `open`.
    slot: *mut u8,
    /// The bytes its SGEs (or inline data) hold.
    length: u64,
    /// The first error of the batch, 0 if none.
    err: i32,
    /// 1 while a work request is being built.
    open: u32,
    /// 1 once `wr_set_ud_addr` gave the open work request its destination.
    ud_set: u32,
    reserved: u32,
}

impl Default for SqBatch {
    fn default() -> Self {
        SqBatch {
            header: [0; 64],
            slot: core::ptr::null_mut(),
            length: 0,
            err: 0,
            open: 0,
            ud_set: 0,
            reserved: 0,
        }
    }
}

impl SqBatch {
    /// Latches `err` unless an earlier error is latched; the open work request is dropped.
    pub fn fail(&mut self, err: i32) {
        if self.err == 0 {
            self.err = err;
        }
        self.open = 0;
    }

    /// The open work request, or `None` if there is none (a setter without a builder is an
    /// error) or the batch already failed (ignored).
    fn current(&mut self) -> Option<&mut Self> {
        if self.err != 0 {
            return None;
        }
        if self.open == 0 {
            self.fail(errno::EINVAL);
            return None;
        }
        Some(self)
    }

    fn put_u32(&mut self, at: usize, v: u32) {
        self.header[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    }

    fn u32_at(&self, at: usize) -> u32 {
        u32::from_ne_bytes(self.header[at..at + 4].try_into().unwrap())
    }

    /// Marks the work request's data as SGEs (`inline` false) or inline data.
    fn set_data(&mut self, num_sge: u32, inline_len: u32, length: u64, inline: bool) {
        let flags = self.u32_at(layout::SEND_FLAGS) & !layout::SEND_INLINE;
        let flags = flags | if inline { layout::SEND_INLINE } else { 0 };
        self.put_u32(layout::SEND_FLAGS, flags);
        self.put_u32(layout::SEND_NUM_SGE, num_sge);
        self.put_u32(layout::SEND_INLINE_LEN, inline_len);
        self.length = length;
    }
}

impl WqState {
    /// The room after a send WQE's header; saturating, so no state makes it wrap.
    fn send_room(&self) -> usize {
        (self.wqe_size as usize).saturating_sub(layout::SEND_WQE_HEADER)
    }

    /// `wr_start`. Nothing is unpublished here: `ibv_post_send` publishes what it writes, and a
    /// batch ends by publishing or dropping its work.
    pub fn batch_start(&mut self, b: &mut SqBatch) {
        *b = SqBatch::default();
    }

    /// Finishes the open work request: checked, then its header written and the entry counted.
    fn batch_finish(&mut self, b: &mut SqBatch) {
        if b.open == 0 || b.err != 0 {
            return;
        }
        b.open = 0;
        let opcode = b.u32_at(layout::SEND_OPCODE);
        let flags = b.u32_at(layout::SEND_FLAGS);
        let remote_addr = u64::from_ne_bytes(
            b.header[layout::SEND_REMOTE_ADDR..layout::SEND_REMOTE_ADDR + 8]
                .try_into()
                .unwrap(),
        );
        let num_sge = b.u32_at(layout::SEND_NUM_SGE) as usize;
        if let Err(e) = check_send(&self.caps, opcode, flags, remote_addr, num_sge, b.length)
            .and_then(|()| check_flush(&b.header))
        {
            b.fail(e);
            return;
        }
        // `ibv_post_send` refuses a UD work request without an address handle.
        if self.caps.qp_type == qp_type::UD && b.ud_set == 0 {
            b.fail(errno::EINVAL);
            return;
        }
        // SAFETY: `slot` is the free entry `batch_begin` took (`next_slot`), `wqe_size` >= 64
        // bytes (`sq_ok`), and no other work was written since (one producer, the C lock).
        unsafe {
            core::ptr::copy_nonoverlapping(b.header.as_ptr(), b.slot, layout::SEND_WQE_HEADER)
        };
        self.unpublished += 1;
    }

    /// A builder (`wr_send`, `wr_rdma_write`, ...): finishes the open work request and starts
    /// one with `header`, a `struct ferroce_send_wqe` header whose `wr_id`, `opcode`,
    /// `send_flags`, `imm_data` and `wr.rdma` or `wr.atomic` the caller filled in. The data is
    /// given by a setter; until then the work request carries none.
    pub fn batch_begin(&mut self, b: &mut SqBatch, header: &[u8; 64]) {
        self.batch_finish(b);
        if b.err != 0 {
            return;
        }
        match self.next_slot() {
            Ok(slot) => {
                b.header = *header;
                b.slot = slot;
                b.open = 1;
                b.ud_set = 0;
                // Inline or not is for the setters to say, not the caller's wr_flags.
                b.set_data(0, 0, 0, false);
            }
            Err(e) => b.fail(e),
        }
    }

    /// `wr_set_sge`, `wr_set_sge_list`: the open work request's data is `sges` (replacing any
    /// data set before).
    pub fn batch_sges(&mut self, b: &mut SqBatch, sges: &[Sge]) {
        let room = self.send_room();
        let caps = self.caps;
        let Some(b) = b.current() else { return };
        // The caps fit the entry (sq_ok); checked again because the writes rely on it.
        if sges.len() > caps.max_sge as usize || sges.len() * layout::SGE_SIZE > room {
            b.fail(errno::EINVAL);
            return;
        }
        let length = sges.iter().map(|s| u64::from(s.length)).sum();
        for (i, sge) in sges.iter().enumerate() {
            // SAFETY: `slot` is the open entry, with room for `sges` after its header.
            unsafe {
                b.slot
                    .add(layout::SEND_WQE_HEADER + i * layout::SGE_SIZE)
                    .cast::<Sge>()
                    .write_volatile(*sge)
            };
        }
        b.set_data(sges.len() as u32, 0, length, false);
    }

    /// `wr_set_inline_data`, `wr_set_inline_data_list`: the bytes of `bufs` are copied into
    /// the open work request, at most `max_inline_data` in all.
    ///
    /// # Safety
    ///
    /// Each buffer must be readable for its length.
    pub unsafe fn batch_inline(&mut self, b: &mut SqBatch, bufs: &[DataBuf]) {
        let room = self.send_room() as u64;
        let max = u64::from(self.caps.max_inline);
        let Some(b) = b.current() else { return };
        let mut total: u64 = 0;
        for buf in bufs {
            total = total.saturating_add(buf.length as u64);
        }
        if total > max || total > room {
            b.fail(errno::EINVAL);
            return;
        }
        let mut at = layout::SEND_WQE_HEADER;
        for buf in bufs {
            // SAFETY: The entry has room for `total` bytes after the header; the caller
            // guarantees the buffer.
            unsafe { core::ptr::copy_nonoverlapping(buf.addr, b.slot.add(at), buf.length) };
            at += buf.length;
        }
        b.set_data(0, total as u32, total, true);
    }

    /// `wr_set_ud_addr`: the open work request's destination.
    pub fn batch_ud(&mut self, b: &mut SqBatch, ah_num: u32, remote_qpn: u32, remote_qkey: u32) {
        let Some(b) = b.current() else { return };
        b.put_u32(layout::SEND_UD_AH_NUM, ah_num);
        b.put_u32(layout::SEND_UD_REMOTE_QPN, remote_qpn);
        b.put_u32(layout::SEND_UD_REMOTE_QKEY, remote_qkey);
        b.ud_set = 1;
    }

    /// `wr_abort`: drops the batch; the kernel never saw it.
    pub fn batch_abort(&mut self, b: &mut SqBatch) {
        self.unpublished = 0;
        *b = SqBatch::default();
    }

    /// `wr_complete`: finishes the open work request, then publishes the batch and returns
    /// whether the kernel asks for the doorbell; or drops the whole batch and returns the
    /// first error.
    pub fn batch_complete(&mut self, b: &mut SqBatch) -> Result<bool, i32> {
        self.batch_finish(b);
        let err = b.err;
        if err != 0 {
            self.batch_abort(b);
            return Err(err);
        }
        *b = SqBatch::default();
        Ok(self.publish())
    }
}

/// C entry point of `wr_start`.
///
/// # Safety
///
/// `state` must be initialised and `state` and `batch` not used concurrently (the SQ lock,
/// held from `wr_start` to `wr_complete` or `wr_abort`); `batch` must be writable.
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_start(state: *mut WqState, batch: *mut SqBatch) {
    // SAFETY: Guaranteed by the caller.
    unsafe { (*state).batch_start(&mut *batch) };
}

/// C entry point: latches `err` (the QP's state refuses send work, say).
///
/// # Safety
///
/// As for [`ferroce_sq_batch_start`].
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_fail(batch: *mut SqBatch, err: i32) {
    // SAFETY: Guaranteed by the caller.
    unsafe { (*batch).fail(err) };
}

/// C entry point of the builders; `header` points to 64 bytes.
///
/// # Safety
///
/// As for [`ferroce_sq_batch_start`], after it.
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_begin(
    state: *mut WqState,
    batch: *mut SqBatch,
    header: *const u8,
) {
    // SAFETY: Guaranteed by the caller.
    unsafe { (*state).batch_begin(&mut *batch, &*header.cast::<[u8; 64]>()) };
}

/// C entry point of `wr_set_sge` and `wr_set_sge_list`. A count beyond the QP's `max_sge`
/// fails the batch before `sges` is read.
///
/// # Safety
///
/// As for [`ferroce_sq_batch_begin`]; `sges` must hold `num_sge` entries when `num_sge` is
/// within the QP's `max_sge`.
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_sges(
    state: *mut WqState,
    batch: *mut SqBatch,
    sges: *const Sge,
    num_sge: usize,
) {
    // SAFETY: Guaranteed by the caller.
    let (st, b) = unsafe { (&mut *state, &mut *batch) };
    let num_sge = i32::try_from(num_sge).unwrap_or(-1);
    // SAFETY: Guaranteed by the caller.
    match unsafe { sge_slice(&st.caps, sges, num_sge) } {
        Ok(sges) => st.batch_sges(b, sges),
        Err(e) => {
            if b.err == 0 {
                b.fail(e)
            }
        }
    }
}

/// C entry point of `wr_set_inline_data` and `wr_set_inline_data_list`.
///
/// # Safety
///
/// As for [`ferroce_sq_batch_begin`]; `bufs` must hold `num_buf` entries, each readable for
/// its length.
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_inline(
    state: *mut WqState,
    batch: *mut SqBatch,
    bufs: *const DataBuf,
    num_buf: usize,
) {
    let bufs: &[DataBuf] = if num_buf == 0 || bufs.is_null() {
        &[]
    } else {
        // SAFETY: Guaranteed by the caller.
        unsafe { core::slice::from_raw_parts(bufs, num_buf) }
    };
    // SAFETY: Guaranteed by the caller.
    unsafe { (*state).batch_inline(&mut *batch, bufs) };
}

/// C entry point of `wr_set_ud_addr`.
///
/// # Safety
///
/// As for [`ferroce_sq_batch_begin`].
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_ud(
    state: *mut WqState,
    batch: *mut SqBatch,
    ah_num: u32,
    remote_qpn: u32,
    remote_qkey: u32,
) {
    // SAFETY: Guaranteed by the caller.
    unsafe { (*state).batch_ud(&mut *batch, ah_num, remote_qpn, remote_qkey) };
}

/// C entry point of `wr_abort`.
///
/// # Safety
///
/// As for [`ferroce_sq_batch_begin`].
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_abort(state: *mut WqState, batch: *mut SqBatch) {
    // SAFETY: Guaranteed by the caller.
    unsafe { (*state).batch_abort(&mut *batch) };
}

/// C entry point of `wr_complete`: 0 with `*doorbell` 1 if the kernel asks for the doorbell,
/// or the batch's first error (nothing published, `*doorbell` 0).
///
/// # Safety
///
/// As for [`ferroce_sq_batch_begin`]; `doorbell` must be writable.
#[no_mangle]
pub unsafe extern "C" fn ferroce_sq_batch_complete(
    state: *mut WqState,
    batch: *mut SqBatch,
    doorbell: *mut i32,
) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let (st, b, db) = unsafe { (&mut *state, &mut *batch, &mut *doorbell) };
    match st.batch_complete(b) {
        Ok(ring) => {
            *db = i32::from(ring);
            0
        }
        Err(e) => {
            *db = 0;
            e
        }
    }
}

/// The `enum ibv_wr_opcode` of bit `bit` of `send_ops_flags` (`IBV_QP_EX_WITH_*`): bit n is
/// opcode n for the ten opcodes up to `IBV_WR_SEND_WITH_INV`, bit 11 is FLUSH and bit 12
/// ATOMIC_WRITE; `None` for TSO (10) and unknown bits, which ferroce does not implement.
fn send_op_of_bit(bit: u32) -> Option<u32> {
    match bit {
        0..=opcode::SEND_WITH_INV => Some(bit),
        11 => Some(opcode::FLUSH),
        12 => Some(opcode::ATOMIC_WRITE),
        _ => None,
    }
}

/// Whether a QP of `qp_type` can do every operation of `send_ops_flags`: the opcodes
/// [`opcode_allowed`] lets it post.
pub fn send_ops_ok(qp_type: u32, send_ops_flags: u64) -> bool {
    (0..64)
        .filter(|bit| send_ops_flags & (1u64 << bit) != 0)
        .all(|bit| send_op_of_bit(bit).is_some_and(|op| opcode_allowed(qp_type, op)))
}

/// C entry point: 0, or `EOPNOTSUPP` if a QP of `qp_type` cannot do all of `send_ops_flags`.
#[no_mangle]
pub extern "C" fn ferroce_send_ops_check(qp_type: u32, send_ops_flags: u64) -> i32 {
    if send_ops_ok(qp_type, send_ops_flags) {
        0
    } else {
        errno::EOPNOTSUPP
    }
}

// `struct ferroce_sq_batch` and `struct ibv_data_buf`; ferroce.c asserts the same numbers.
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<SqBatch>() == 96);
    assert!(offset_of!(SqBatch, header) == 0);
    assert!(offset_of!(SqBatch, slot) == 64);
    assert!(offset_of!(SqBatch, length) == 72);
    assert!(offset_of!(SqBatch, err) == 80);
    assert!(offset_of!(SqBatch, open) == 84);
    assert!(offset_of!(SqBatch, ud_set) == 88);
    assert!(size_of::<DataBuf>() == 16);
    assert!(offset_of!(DataBuf, addr) == 0);
    assert!(offset_of!(DataBuf, length) == 8);
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_wqe::{header, sge};

    fn sq(num_entries: u32, wqe_size: u32, caps: WqCaps) -> (Vec<u64>, WqState) {
        let mut mem = vec![0u64; (layout::QUEUE_ENTRIES + (num_entries * wqe_size) as usize) / 8];
        let st = unsafe { WqState::new(mem.as_mut_ptr().cast(), num_entries, wqe_size, caps) };
        (mem, st)
    }

    fn rc() -> WqCaps {
        WqCaps {
            qp_type: qp_type::RC,
            max_sge: 4,
            max_inline: 64,
        }
    }

    fn entry(mem: &[u64], wqe_size: u32, i: usize) -> &[u8] {
        let bytes: &[u8] =
            unsafe { core::slice::from_raw_parts(mem.as_ptr().cast(), mem.len() * 8) };
        let at = layout::QUEUE_ENTRIES + i * wqe_size as usize;
        &bytes[at..at + wqe_size as usize]
    }

    fn u32_of(e: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(e[at..at + 4].try_into().unwrap())
    }

    fn producer(mem: &mut [u64]) -> u32 {
        unsafe { word(mem.as_mut_ptr().cast(), layout::CTRL_PRODUCER) }.load(Ordering::Acquire)
    }

    #[test]
    fn batch_writes_then_publishes_at_complete() {
        let (mut mem, mut st) = sq(8, 256, rc());
        unsafe { word(mem.as_mut_ptr().cast(), layout::CTRL_FLAGS) }
            .store(layout::QUEUE_NEED_WAKEUP, Ordering::Release);
        let mut b = SqBatch::default();
        st.batch_start(&mut b);
        // IBV_SEND_INLINE in wr_flags is ignored: the setter decides.
        st.batch_begin(&mut b, &header(1, opcode::SEND, layout::SEND_INLINE | 2, 0));
        st.batch_sges(&mut b, &[sge(10), sge(20)]);
        st.batch_begin(&mut b, &header(2, opcode::RDMA_WRITE, 0, 0x1000));
        let data = *b"inline bytes";
        let bufs = [
            DataBuf {
                addr: data.as_ptr(),
                length: 6,
            },
            DataBuf {
                addr: data[6..].as_ptr(),
                length: 6,
            },
        ];
        unsafe { st.batch_inline(&mut b, &bufs) };
        st.batch_begin(&mut b, &header(3, opcode::SEND, 0, 0));
        assert_eq!(producer(&mut mem), 0, "nothing published before complete");
        assert_eq!(st.batch_complete(&mut b), Ok(true));
        assert_eq!(producer(&mut mem), 3);
        let e0 = entry(&mem, 256, 0);
        assert_eq!(u32_of(e0, layout::SEND_FLAGS), 2, "INLINE cleared");
        assert_eq!(u32_of(e0, layout::SEND_NUM_SGE), 2);
        assert_eq!(
            unsafe { e0.as_ptr().add(80).cast::<Sge>().read_unaligned() },
            sge(20)
        );
        let e1 = entry(&mem, 256, 1);
        assert_eq!(u32_of(e1, layout::SEND_FLAGS), layout::SEND_INLINE);
        assert_eq!(u32_of(e1, layout::SEND_INLINE_LEN), 12);
        assert_eq!(&e1[64..76], &data);
        let e2 = entry(&mem, 256, 2);
        assert_eq!(u64::from_ne_bytes(e2[0..8].try_into().unwrap()), 3);
        assert_eq!(u32_of(e2, layout::SEND_NUM_SGE), 0, "no setter: no data");
        // An empty batch publishes nothing and asks for no doorbell.
        st.batch_start(&mut b);
        assert_eq!(st.batch_complete(&mut b), Ok(false));
    }

    /// Every refusal of `ibv_post_send` fails the batch: nothing of it is published, and the
    /// queue takes a new batch afterwards.
    #[test]
    fn a_refused_work_request_drops_the_batch() {
        type Step = fn(&mut WqState, &mut SqBatch);
        let cases: &[(&str, Step)] = &[
            ("too many SGEs", |st, b| {
                st.batch_begin(b, &header(9, opcode::SEND, 0, 0));
                st.batch_sges(b, &[sge(1); 5]);
            }),
            ("inline beyond max_inline_data", |st, b| {
                st.batch_begin(b, &header(9, opcode::SEND, 0, 0));
                let big = [0u8; 65];
                let buf = DataBuf {
                    addr: big.as_ptr(),
                    length: 65,
                };
                unsafe { st.batch_inline(b, &[buf]) };
            }),
            ("inline RDMA read", |st, b| {
                st.batch_begin(b, &header(9, opcode::RDMA_READ, 0, 0));
                let d = [0u8; 8];
                let buf = DataBuf {
                    addr: d.as_ptr(),
                    length: 8,
                };
                unsafe { st.batch_inline(b, &[buf]) };
            }),
            ("unaligned ATOMIC_WRITE", |st, b| {
                st.batch_begin(b, &header(9, opcode::ATOMIC_WRITE, 0, 0x1004));
            }),
            ("ATOMIC_WRITE with an SGE", |st, b| {
                st.batch_begin(b, &header(9, opcode::ATOMIC_WRITE, 0, 0x1000));
                st.batch_sges(b, &[sge(8)]);
            }),
            ("unaligned atomic", |st, b| {
                st.batch_begin(b, &header(9, opcode::ATOMIC_FETCH_AND_ADD, 0, 0x1001));
                st.batch_sges(b, &[sge(8)]);
            }),
            ("atomic without a buffer", |st, b| {
                st.batch_begin(b, &header(9, opcode::ATOMIC_CMP_AND_SWP, 0, 0x1000));
            }),
            ("opcode the QP type lacks", |st, b| {
                st.batch_begin(b, &header(9, 10, 0, 0));
            }),
            ("FLUSH with an SGE", |st, b| {
                st.batch_begin(b, &flush_header(flush::GLOBAL, flush::RANGE, 64));
                st.batch_sges(b, &[sge(8)]);
            }),
            ("FLUSH of no placement type", |st, b| {
                st.batch_begin(b, &flush_header(0, flush::RANGE, 64));
            }),
            ("FLUSH of an undefined placement type", |st, b| {
                st.batch_begin(b, &flush_header(4 | flush::GLOBAL, flush::RANGE, 64));
            }),
            ("FLUSH of an undefined level", |st, b| {
                st.batch_begin(b, &flush_header(flush::GLOBAL, 2, 64));
            }),
            ("FLUSH of a range past 2^31 - 1 bytes", |st, b| {
                st.batch_begin(b, &flush_header(flush::GLOBAL, flush::RANGE, 1 << 31));
            }),
        ];
        for (what, step) in cases {
            let (mut mem, mut st) = sq(8, 256, rc());
            let mut b = SqBatch::default();
            st.batch_start(&mut b);
            st.batch_begin(&mut b, &header(1, opcode::SEND, 0, 0));
            st.batch_sges(&mut b, &[sge(4)]);
            step(&mut st, &mut b);
            // Later work requests are ignored.
            st.batch_begin(&mut b, &header(2, opcode::SEND, 0, 0));
            assert_eq!(st.batch_complete(&mut b), Err(errno::EINVAL), "{what}");
            assert_eq!(producer(&mut mem), 0, "{what}: something was published");
            assert_eq!(st.unpublished, 0, "{what}");
            st.batch_start(&mut b);
            st.batch_begin(&mut b, &header(3, opcode::SEND, 0, 0));
            assert_eq!(st.batch_complete(&mut b), Ok(false), "{what}: next batch");
            assert_eq!(producer(&mut mem), 1);
            let e0 = entry(&mem, 256, 0);
            assert_eq!(u64::from_ne_bytes(e0[0..8].try_into().unwrap()), 3);
        }
    }

    /// A FLUSH header (`wr.flush`) of `length` bytes for `ty` at `level`.
    fn flush_header(ty: u8, level: u8, length: u64) -> [u8; 64] {
        let mut h = header(9, opcode::FLUSH, 0, 0x1000);
        h[layout::SEND_FLUSH_LENGTH..layout::SEND_FLUSH_LENGTH + 8]
            .copy_from_slice(&length.to_ne_bytes());
        h[layout::SEND_FLUSH_TYPE] = ty;
        h[layout::SEND_FLUSH_LEVEL] = level;
        h
    }

    /// A FLUSH of a range or of a whole region (whose length is not looked at) goes out as
    /// built, without data.
    #[test]
    fn a_flush_is_published_without_data() {
        let (mut mem, mut st) = sq(8, 256, rc());
        let mut b = SqBatch::default();
        st.batch_start(&mut b);
        st.batch_begin(
            &mut b,
            &flush_header(flush::GLOBAL, flush::RANGE, flush::MAX_RANGE),
        );
        st.batch_begin(&mut b, &flush_header(flush::GLOBAL, flush::MR, u64::MAX));
        assert!(st.batch_complete(&mut b).is_ok());
        assert_eq!(producer(&mut mem), 2);
        let e1 = entry(&mem, 256, 1);
        assert_eq!(u32_of(e1, layout::SEND_OPCODE), opcode::FLUSH);
        assert_eq!(u32_of(e1, layout::SEND_NUM_SGE), 0);
        assert_eq!(e1[layout::SEND_FLUSH_LEVEL], flush::MR);
        assert!(send_ops_ok(qp_type::RC, 1 << 11), "FLUSH on RC");
        assert!(!send_ops_ok(qp_type::UC, 1 << 11), "FLUSH on UC");
    }

    #[test]
    fn a_setter_without_a_builder_fails_the_batch() {
        let (mut mem, mut st) = sq(4, 128, rc());
        let mut b = SqBatch::default();
        st.batch_start(&mut b);
        st.batch_sges(&mut b, &[sge(1)]);
        st.batch_begin(&mut b, &header(1, opcode::SEND, 0, 0));
        assert_eq!(st.batch_complete(&mut b), Err(errno::EINVAL));
        st.batch_start(&mut b);
        st.batch_ud(&mut b, 1, 2, 3);
        assert_eq!(st.batch_complete(&mut b), Err(errno::EINVAL));
        assert_eq!(producer(&mut mem), 0);
    }

    #[test]
    fn abort_leaves_nothing() {
        let (mut mem, mut st) = sq(4, 128, rc());
        let mut b = SqBatch::default();
        st.batch_start(&mut b);
        for i in 0..3 {
            st.batch_begin(&mut b, &header(i, opcode::SEND, 0, 0));
        }
        st.batch_abort(&mut b);
        assert_eq!(producer(&mut mem), 0);
        assert!(!st.publish(), "nothing left to publish");
        // The aborted entries are free again: a full ring's worth fits.
        st.batch_start(&mut b);
        for i in 0..4 {
            st.batch_begin(&mut b, &header(i, opcode::SEND, 0, 0));
        }
        assert_eq!(st.batch_complete(&mut b), Ok(false));
        assert_eq!(producer(&mut mem), 4);
    }

    #[test]
    fn a_full_queue_fails_the_batch() {
        let (mut mem, mut st) = sq(2, 128, rc());
        let mut b = SqBatch::default();
        st.batch_start(&mut b);
        for i in 0..3 {
            st.batch_begin(&mut b, &header(i, opcode::SEND, 0, 0));
        }
        assert_eq!(st.batch_complete(&mut b), Err(errno::ENOMEM));
        assert_eq!(producer(&mut mem), 0);
        unsafe { word(mem.as_mut_ptr().cast(), layout::CTRL_FLAGS) }
            .store(layout::QUEUE_ERROR, Ordering::Release);
        st.batch_start(&mut b);
        st.batch_begin(&mut b, &header(0, opcode::SEND, 0, 0));
        assert_eq!(st.batch_complete(&mut b), Err(errno::EIO));
    }

    #[test]
    fn ud_needs_an_address() {
        let caps = WqCaps {
            qp_type: qp_type::UD,
            ..rc()
        };
        let (mut mem, mut st) = sq(4, 128, caps);
        let mut b = SqBatch::default();
        st.batch_start(&mut b);
        st.batch_begin(&mut b, &header(1, opcode::SEND, 0, 0));
        assert_eq!(st.batch_complete(&mut b), Err(errno::EINVAL));
        st.batch_start(&mut b);
        st.batch_begin(&mut b, &header(1, opcode::SEND_WITH_IMM, 0, 0));
        st.batch_ud(&mut b, 7, 0x12, 0x1111);
        assert_eq!(st.batch_complete(&mut b), Ok(false));
        assert_eq!(producer(&mut mem), 1);
        let e0 = entry(&mem, 128, 0);
        assert_eq!(u32_of(e0, layout::SEND_UD_AH_NUM), 7);
        assert_eq!(u32_of(e0, layout::SEND_UD_REMOTE_QPN), 0x12);
        assert_eq!(u32_of(e0, layout::SEND_UD_REMOTE_QKEY), 0x1111);
    }

    /// A count beyond `max_sge` fails the batch before the array is looked at.
    #[test]
    fn sge_count_beyond_the_caps_is_refused_unread() {
        let (mut mem, mut st) = sq(4, 128, rc());
        let dangling = core::ptr::NonNull::<Sge>::dangling().as_ptr();
        for n in [5usize, 1 << 20, usize::MAX] {
            let mut b = SqBatch::default();
            st.batch_start(&mut b);
            st.batch_begin(&mut b, &header(1, opcode::SEND, 0, 0));
            unsafe { ferroce_sq_batch_sges(&mut st, &mut b, dangling, n) };
            let mut db = 7;
            assert_eq!(
                unsafe { ferroce_sq_batch_complete(&mut st, &mut b, &mut db) },
                errno::EINVAL,
                "num_sge {n}"
            );
            assert_eq!(db, 0);
        }
        assert_eq!(producer(&mut mem), 0);
    }

    #[test]
    fn send_ops_by_qp_type() {
        let bit = |op: u32| 1u64 << op;
        let rc_ops = [
            opcode::RDMA_WRITE,
            opcode::RDMA_WRITE_WITH_IMM,
            opcode::SEND,
            opcode::SEND_WITH_IMM,
            opcode::RDMA_READ,
            opcode::ATOMIC_CMP_AND_SWP,
            opcode::ATOMIC_FETCH_AND_ADD,
            opcode::SEND_WITH_INV,
            opcode::LOCAL_INV,
            opcode::BIND_MW,
        ];
        let all_rc = rc_ops.iter().fold(0, |m, &op| m | bit(op));
        assert!(send_ops_ok(qp_type::RC, all_rc));
        assert!(send_ops_ok(qp_type::RC, 0));
        assert!(
            send_ops_ok(qp_type::RC, all_rc | bit(12)),
            "ATOMIC_WRITE on RC"
        );
        assert!(!send_ops_ok(qp_type::UC, bit(12)), "ATOMIC_WRITE on UC");
        for refused in [10, 13, 15, 63] {
            assert_eq!(
                ferroce_send_ops_check(qp_type::RC, all_rc | bit(refused)),
                errno::EOPNOTSUPP,
                "RC with bit {refused}"
            );
        }
        assert!(send_ops_ok(
            qp_type::UC,
            bit(opcode::SEND) | bit(opcode::RDMA_WRITE_WITH_IMM)
        ));
        assert!(!send_ops_ok(qp_type::UC, bit(opcode::RDMA_READ)));
        assert!(send_ops_ok(
            qp_type::UD,
            bit(opcode::SEND) | bit(opcode::SEND_WITH_IMM)
        ));
        assert!(!send_ops_ok(qp_type::UD, bit(opcode::RDMA_WRITE)));
        assert!(!send_ops_ok(qp_type::UD, bit(opcode::SEND_WITH_INV)));
        assert!(!send_ops_ok(1, bit(opcode::SEND)), "unknown QP type");
    }
}
