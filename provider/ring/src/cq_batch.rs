// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Polling a CQ one completion at a time (`ibv_start_poll`, `ibv_next_poll`, `ibv_end_poll`
//! of `ibv_cq_ex`).
//!
//! The current completion is copied out of the ring into a [`CqCursor`], which the `read_*`
//! functions of `ibv_cq_ex` read: a completion is copied once, as `ibv_poll_cq` copies it.
//! Completions passed over are consumed in the private index only; the shared consumer index is
//! stored once, in `end_poll`, so a batch costs one store to the cache line the kernel reads.
//! The errors are `ferroce_cq_poll`'s: a CQ in error, or an overflowed CQ with nothing left to
//! return, fails every poll instead of looking empty.

use super::*;

/// `struct ferroce_cq_cursor`: the completion `ibv_cq_ex` is on.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CqCursor {
    /// A copy of the current completion.
    pub cqe: Cqe,
    /// 1 while `cqe` is the entry at the consumer index, returned and not yet consumed.
    held: u32,
    reserved: u32,
}

impl CqState {
    /// Copies the completion at the consumer index into the cursor: `Ok(true)`, `Ok(false)` if
    /// there is none yet.
    fn cursor_read(&mut self, c: &mut CqCursor) -> Result<bool, PollError> {
        c.held = 0;
        if self.ready()? == 0 {
            return Ok(false);
        }
        c.cqe = self.read_entry(0);
        c.held = 1;
        Ok(true)
    }

    /// Consumes the completion the cursor holds, in the private index only.
    fn cursor_consume(&mut self, c: &mut CqCursor) {
        if c.held != 0 {
            self.consumer = self.consumer.wrapping_add(1);
            c.held = 0;
        }
    }

    /// `start_poll`: the oldest completion into the cursor.
    pub fn start_poll(&mut self, c: &mut CqCursor) -> Result<bool, PollError> {
        self.cursor_read(c)
    }

    /// `next_poll`: consumes the current completion and moves to the next one.
    pub fn next_poll(&mut self, c: &mut CqCursor) -> Result<bool, PollError> {
        self.cursor_consume(c);
        self.cursor_read(c)
    }

    /// `end_poll`: consumes the current completion (if `next_poll` did not find one after it)
    /// and gives the polled entries back to the kernel.
    pub fn end_poll(&mut self, c: &mut CqCursor) {
        self.cursor_consume(c);
        self.word(layout::CTRL_CONSUMER)
            .store(self.consumer, Ordering::Release);
    }
}

fn poll_errno(r: Result<bool, PollError>) -> i32 {
    match r {
        Ok(true) => 0,
        Ok(false) => errno::ENOENT,
        Err(PollError::QueueError) => errno::EIO,
        Err(PollError::Overflow) => errno::EOVERFLOW,
    }
}

/// C entry point of `start_poll`: 0 with the completion in `cursor`, `ENOENT` if the CQ is
/// empty, `EIO` if the kernel put it in error, `EOVERFLOW` if it overflowed and holds nothing
/// more.
///
/// # Safety
///
/// `state` must be initialised and not used concurrently; `cursor` must be writable.
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_start(state: *mut CqState, cursor: *mut CqCursor) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let (state, cursor) = unsafe { (&mut *state, &mut *cursor) };
    poll_errno(state.start_poll(cursor))
}

/// C entry point of `next_poll`, after a `start_poll` that returned 0: as
/// [`ferroce_cq_start`], for the completion after the current one.
///
/// # Safety
///
/// As for [`ferroce_cq_start`]; `cursor` is the one `start_poll` filled.
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_next(state: *mut CqState, cursor: *mut CqCursor) -> i32 {
    // SAFETY: Guaranteed by the caller.
    let (state, cursor) = unsafe { (&mut *state, &mut *cursor) };
    poll_errno(state.next_poll(cursor))
}

/// C entry point of `end_poll`, after a `start_poll` that returned 0.
///
/// # Safety
///
/// As for [`ferroce_cq_next`].
#[no_mangle]
pub unsafe extern "C" fn ferroce_cq_end(state: *mut CqState, cursor: *mut CqCursor) {
    // SAFETY: Guaranteed by the caller.
    let (state, cursor) = unsafe { (&mut *state, &mut *cursor) };
    state.end_poll(cursor);
}

// `struct ferroce_cq_cursor` in ferroce-ring.h; ferroce.c asserts the same numbers.
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<CqCursor>() == 72);
    assert!(offset_of!(CqCursor, cqe) == 0);
    assert!(offset_of!(CqCursor, held) == 64);
    assert!(offset_of!(CqCursor, reserved) == 68);
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A CQ ring the tests play the kernel on.
    struct Ring {
        mem: Vec<u64>,
        producer: u32,
    }

    impl Ring {
        fn new(num_entries: u32) -> Self {
            Ring {
                mem: vec![0; (layout::QUEUE_ENTRIES + num_entries as usize * 64) / 8],
                producer: 0,
            }
        }
        fn base(&mut self) -> *mut u8 {
            self.mem.as_mut_ptr().cast()
        }
        fn word(&mut self, at: usize) -> &AtomicU32 {
            unsafe { word(self.base(), at) }
        }
        fn consumer(&mut self) -> u32 {
            self.word(layout::CTRL_CONSUMER).load(Ordering::Acquire)
        }
        /// Writes a completion (no room check: the tests stay within the ring).
        fn push(&mut self, num_entries: u32, wr_id: u64, opcode: u32) {
            let index = self.producer & (num_entries - 1);
            let cqe = Cqe {
                wr_id,
                opcode,
                status: 5,
                qp_num: 0x11,
                ..Default::default()
            };
            let base = self.base();
            unsafe {
                base.add(layout::QUEUE_ENTRIES + index as usize * 64)
                    .cast::<Cqe>()
                    .write_volatile(cqe)
            };
            self.producer = self.producer.wrapping_add(1);
            let p = self.producer;
            self.word(layout::CTRL_PRODUCER).store(p, Ordering::Release);
        }
        fn set_flag(&mut self, flag: u32) {
            self.word(layout::CTRL_FLAGS)
                .fetch_or(flag, Ordering::Release);
        }
    }

    #[test]
    fn empty_cq_is_enoent_and_consumes_nothing() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        let mut c = CqCursor::default();
        assert_eq!(unsafe { ferroce_cq_start(&mut cq, &mut c) }, errno::ENOENT);
        assert_eq!(r.consumer(), 0);
    }

    #[test]
    fn batch_walks_in_order_and_publishes_once() {
        let mut r = Ring::new(8);
        let mut cq = unsafe { CqState::new(r.base(), 8) };
        for i in 0..3 {
            r.push(8, 100 + i, i as u32);
        }
        let mut c = CqCursor::default();
        assert_eq!(unsafe { ferroce_cq_start(&mut cq, &mut c) }, 0);
        assert_eq!((c.cqe.wr_id, c.cqe.opcode, c.cqe.status), (100, 0, 5));
        assert_eq!(unsafe { ferroce_cq_next(&mut cq, &mut c) }, 0);
        assert_eq!(c.cqe.wr_id, 101);
        assert_eq!(r.consumer(), 0, "nothing given back before end_poll");
        assert_eq!(unsafe { ferroce_cq_next(&mut cq, &mut c) }, 0);
        assert_eq!(c.cqe.wr_id, 102);
        assert_eq!(unsafe { ferroce_cq_next(&mut cq, &mut c) }, errno::ENOENT);
        unsafe { ferroce_cq_end(&mut cq, &mut c) };
        assert_eq!(r.consumer(), 3, "all three consumed, none twice");
        assert_eq!(unsafe { ferroce_cq_start(&mut cq, &mut c) }, errno::ENOENT);
    }

    #[test]
    fn end_poll_consumes_only_what_was_returned() {
        let mut r = Ring::new(8);
        let mut cq = unsafe { CqState::new(r.base(), 8) };
        for i in 0..3 {
            r.push(8, i, 0);
        }
        let mut c = CqCursor::default();
        assert_eq!(cq.start_poll(&mut c), Ok(true));
        cq.end_poll(&mut c);
        assert_eq!(r.consumer(), 1);
        // The rest is still there, for ibv_poll_cq too.
        let mut out = [Wc::default(); 4];
        assert_eq!(cq.poll(&mut out), Ok(2));
        assert_eq!((out[0].wr_id, out[1].wr_id), (1, 2));
        // A completion that arrives during a batch is found by next_poll.
        r.push(8, 7, 0);
        assert_eq!(cq.start_poll(&mut c), Ok(true));
        r.push(8, 8, 0);
        assert_eq!(cq.next_poll(&mut c), Ok(true));
        assert_eq!(c.cqe.wr_id, 8);
        cq.end_poll(&mut c);
        assert_eq!(r.consumer(), 5);
    }

    #[test]
    fn batches_wrap_around_the_ring() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        let mut c = CqCursor::default();
        let mut next = 0;
        for _ in 0..5 {
            for _ in 0..3 {
                r.push(4, next, 0);
                next += 1;
            }
            let mut got = vec![];
            let mut more = cq.start_poll(&mut c).unwrap();
            while more {
                got.push(c.cqe.wr_id);
                more = cq.next_poll(&mut c).unwrap();
            }
            cq.end_poll(&mut c);
            assert_eq!(got, (next - 3..next).collect::<Vec<_>>());
        }
    }

    #[test]
    fn overflowed_cq_returns_what_it_holds_then_fails() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        for i in 0..4 {
            r.push(4, i, 0);
        }
        r.set_flag(layout::QUEUE_OVERFLOW);
        let mut c = CqCursor::default();
        assert_eq!(unsafe { ferroce_cq_start(&mut cq, &mut c) }, 0);
        for i in 1..4 {
            assert_eq!(unsafe { ferroce_cq_next(&mut cq, &mut c) }, 0);
            assert_eq!(c.cqe.wr_id, i);
        }
        assert_eq!(
            unsafe { ferroce_cq_next(&mut cq, &mut c) },
            errno::EOVERFLOW,
            "past the last completion of an overflowed CQ"
        );
        unsafe { ferroce_cq_end(&mut cq, &mut c) };
        assert_eq!(r.consumer(), 4);
        for _ in 0..2 {
            assert_eq!(
                unsafe { ferroce_cq_start(&mut cq, &mut c) },
                errno::EOVERFLOW
            );
        }
    }

    #[test]
    fn queue_error_fails_start_and_next() {
        let mut r = Ring::new(4);
        let mut cq = unsafe { CqState::new(r.base(), 4) };
        r.push(4, 1, 0);
        r.push(4, 2, 0);
        let mut c = CqCursor::default();
        assert_eq!(cq.start_poll(&mut c), Ok(true));
        r.set_flag(layout::QUEUE_ERROR);
        assert_eq!(cq.next_poll(&mut c), Err(PollError::QueueError));
        cq.end_poll(&mut c);
        assert_eq!(r.consumer(), 1);
        assert_eq!(unsafe { ferroce_cq_start(&mut cq, &mut c) }, errno::EIO);
    }
}
