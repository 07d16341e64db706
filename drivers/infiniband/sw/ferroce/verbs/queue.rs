// SPDX-License-Identifier: GPL-2.0

//! A queue shared with the provider (`struct ferroce_queue_ctrl` + 2^n entries): the CQ
//! rings, where the kernel produces, and the send and receive rings, where it consumes.

use kernel::{
    prelude::*,
    rdma::{SharedBuffer, UContext},
};

use crate::{
    protocol::abi::{self, MmapInfo},
    verbs::device::Ferroce,
};

/// Which side of a queue the kernel is on.
#[derive(Clone, Copy)]
pub(crate) enum KernelSide {
    /// The kernel writes entries; user space publishes a consumer index.
    Producer,
    /// User space writes entries and publishes a producer index.
    Consumer,
}

pub(crate) struct SharedQueue {
    pub(crate) buf: SharedBuffer,
    pub(crate) num_entries: u32,
    side: KernelSide,
}

impl SharedQueue {
    /// A queue for `uctx`'s process to map, or (`None`) a kernel user's queue, which has the
    /// same layout and which the kernel drives from both sides.
    pub(crate) fn new(
        uctx: Option<&UContext<Ferroce>>,
        num_entries: u32,
        entry_size: usize,
        side: KernelSide,
    ) -> Result<Self> {
        let bytes = abi::queue_bytes(num_entries, entry_size).ok_or(EINVAL)?;
        let buf = match uctx {
            Some(uctx) => SharedBuffer::new(uctx, bytes)?,
            None => SharedBuffer::new_kernel(bytes)?,
        };
        Ok(SharedQueue {
            buf,
            num_entries,
            side,
        })
    }

    /// Whether a kernel user owns the queue (nothing in it is hostile; kernel pointers may go
    /// in it).
    pub(crate) fn is_kernel(&self) -> bool {
        !self.buf.is_mapped()
    }

    pub(crate) fn mmap_info(&self) -> Result<MmapInfo> {
        Ok(MmapInfo {
            offset: self.buf.mmap_offset(),
            size: u32::try_from(self.buf.len()).map_err(|_| EINVAL)?,
            num_entries: self.num_entries,
        })
    }

    /// Entries between the kernel's own index and the one user space published. An
    /// impossible user index (the consumer ahead of the producer, or more than a ring apart)
    /// puts the queue in error: that process corrupted its own queue.
    pub(crate) fn outstanding(&self, kernel_index: u32) -> Result<u32> {
        let n = match self.side {
            KernelSide::Producer => {
                let user = self.buf.load_acquire(abi::CTRL_CONSUMER)?;
                abi::pending(kernel_index, user, self.num_entries)
            }
            KernelSide::Consumer => {
                let user = self.buf.load_acquire(abi::CTRL_PRODUCER)?;
                abi::pending(user, kernel_index, self.num_entries)
            }
        };
        match n {
            Some(n) => Ok(n),
            None => {
                // Set, not stored: the queue's other flags (NEED_WAKEUP) stay as they are.
                self.buf.fetch_or(abi::CTRL_FLAGS, abi::QUEUE_ERROR)?;
                Err(EINVAL)
            }
        }
    }
}
