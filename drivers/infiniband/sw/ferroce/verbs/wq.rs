// SPDX-License-Identifier: GPL-2.0

//! Work queues (SQ, RQ, SRQ): rings of WQEs that user space produces and the kernel consumes.
//!
//! The kernel keeps its own consumer index and publishes it, so user space knows which
//! entries it may reuse; the user's producer index is checked on every read (`queue.rs`).

use kernel::{
    prelude::*,
    rdma::{RecvWr, Sge, UContext},
};

use crate::{
    protocol::{abi, limits},
    verbs::{
        device::Ferroce,
        queue::{KernelSide, SharedQueue},
    },
};

pub(crate) struct WorkQueue {
    pub(crate) queue: SharedQueue,
    pub(crate) wqe_size: u32,
    /// The kernel's consumer index (user space's copy is informational).
    consumer: u32,
}

impl WorkQueue {
    /// A user's (`Some(uctx)`) or a kernel user's work queue.
    pub(crate) fn new(
        uctx: Option<&UContext<Ferroce>>,
        num_entries: u32,
        wqe_size: u32,
    ) -> Result<Self> {
        let queue = SharedQueue::new(uctx, num_entries, wqe_size as usize, KernelSide::Consumer)?;
        Ok(WorkQueue {
            queue,
            wqe_size,
            consumer: 0,
        })
    }

    /// Work posted and not yet consumed.
    pub(crate) fn pending(&self) -> Result<u32> {
        self.queue.outstanding(self.consumer)
    }

    fn offset_of(&self, index: u32) -> usize {
        abi::QUEUE_ENTRIES
            + (index & (self.queue.num_entries - 1)) as usize * self.wqe_size as usize
    }

    /// Copies the start of the `nth` WQE after the consumer index into `dst` (at most a WQE).
    pub(crate) fn peek(&self, nth: u32, dst: &mut [u8]) -> Result {
        if dst.len() > self.wqe_size as usize {
            return Err(EINVAL);
        }
        self.queue
            .buf
            .read(self.offset_of(self.consumer.wrapping_add(nth)), dst)
    }

    /// Consumes `n` WQEs and tells user space their entries are free.
    pub(crate) fn consume(&mut self, n: u32) -> Result {
        self.consumer = self.consumer.wrapping_add(n);
        self.queue
            .buf
            .store_release(abi::CTRL_CONSUMER, self.consumer)
    }

    /// Writes a WQE for a kernel user (who produces through the kernel): `parts` one after the
    /// other, then publishes it. `ENOMEM` when the queue is full, `EINVAL` when the parts do not
    /// fit a WQE.
    pub(crate) fn produce(&mut self, parts: &[&[u8]]) -> Result {
        if self.pending()? >= self.queue.num_entries {
            return Err(ENOMEM);
        }
        let total = parts.iter().map(|p| p.len()).sum::<usize>();
        if total > self.wqe_size as usize {
            return Err(EINVAL);
        }
        let producer = self.queue.buf.load_acquire(abi::CTRL_PRODUCER)?;
        let mut at = self.offset_of(producer);
        for part in parts {
            self.queue.buf.write(at, part)?;
            at += part.len();
        }
        self.queue
            .buf
            .store_release(abi::CTRL_PRODUCER, producer.wrapping_add(1))
    }

    /// Consumes every WQE posted so far, calling `each` with its first `N` bytes.
    pub(crate) fn drain<const N: usize>(&mut self, mut each: impl FnMut(&[u8; N])) -> Result {
        let n = self.pending()?;
        let mut hdr = [0u8; N];
        for i in 0..n {
            self.peek(i, &mut hdr)?;
            each(&hdr);
        }
        self.consume(n)
    }

    /// Drops every WQE posted so far (a QP back in RESET).
    pub(crate) fn discard(&mut self) -> Result {
        let n = self.pending()?;
        self.consume(n)
    }

    /// Sets or clears `flag` in the queue's flags word (only the kernel writes it), atomically:
    /// the other flags stay as they are whoever changes them meanwhile.
    pub(crate) fn set_flag(&self, flag: u32, on: bool) -> Result {
        if on {
            self.queue.buf.fetch_or(abi::CTRL_FLAGS, flag)?;
        } else {
            self.queue.buf.fetch_clear(abi::CTRL_FLAGS, flag)?;
        }
        Ok(())
    }

    /// Moves the WQEs not yet consumed to the start of `to`, whose producer index becomes their
    /// number (SRQ resize); `to` must have room and the same WQE size.
    pub(crate) fn move_to(&self, to: &mut WorkQueue) -> Result {
        let n = self.pending()?;
        if n > to.queue.num_entries || to.wqe_size != self.wqe_size {
            return Err(EINVAL);
        }
        // Copied in small pieces: this runs under a spinlock, without allocating.
        let mut chunk = [0u8; 128];
        for i in 0..n {
            let (from, dst) = (
                self.offset_of(self.consumer.wrapping_add(i)),
                to.offset_of(i),
            );
            let mut done = 0;
            while done < self.wqe_size as usize {
                let len = chunk.len().min(self.wqe_size as usize - done);
                self.queue.buf.read(from + done, &mut chunk[..len])?;
                to.queue.buf.write(dst + done, &chunk[..len])?;
                done += len;
            }
        }
        to.consumer = 0;
        to.queue.buf.store_release(abi::CTRL_PRODUCER, n)?;
        to.queue.buf.store_release(abi::CTRL_CONSUMER, 0)
    }
}

/// Room for the SGEs or the inline data of one WQE (both at most 512 bytes).
pub(crate) const WQE_BODY: usize = abi::SGE_SIZE * limits::MAX_SGE as usize;
const _: () = assert!(limits::MAX_INLINE_DATA as usize <= WQE_BODY);

/// The largest part of a send WQE the executor reads: the header, then up to 32 SGEs or 512
/// inline bytes.
pub(crate) const SEND_WQE_MAX: usize = abi::SEND_WQE_HEADER + WQE_BODY;
/// The largest part of a receive WQE the data path reads.
pub(crate) const RECV_WQE_MAX: usize = abi::RECV_WQE_HEADER + WQE_BODY;

/// Writes a receive WQE for a kernel user (RQ or SRQ).
pub(crate) fn produce_recv(wq: &mut WorkQueue, wr: &RecvWr<'_>, max_sge: u32) -> Result {
    let mut body = [0u8; WQE_BODY];
    let len = sge_list(wr.sges, max_sge, &mut body)?;
    let header = abi::recv_wqe_header(wr.wr_id, wr.sges.len() as u32);
    wq.produce(&[&header, &body[..len]])
}

/// Writes `sges` as `struct ferroce_sge`s to the start of `body`; returns the bytes written.
/// `EINVAL` beyond `max_sge`.
pub(crate) fn sge_list(sges: &[Sge], max_sge: u32, body: &mut [u8; WQE_BODY]) -> Result<usize> {
    if sges.len() > max_sge as usize {
        return Err(EINVAL);
    }
    for (i, sge) in sges.iter().enumerate() {
        let at = i * abi::SGE_SIZE;
        body.get_mut(at..at + abi::SGE_SIZE)
            .ok_or(EINVAL)?
            .copy_from_slice(&abi::sge_bytes(sge.addr, sge.length, sge.lkey));
    }
    Ok(sges.len() * abi::SGE_SIZE)
}
