// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring of `struct ferroce_cqe` shared with the provider, which polls it
//! and arms it without system calls (`include/uapi/rdma/ferroce-abi.h`).

use kernel::{
    new_mutex,
    prelude::*,
    rdma::{Cq, CqInitAttr, Device, SharedBuffer, UContext, Udata},
    sync::Mutex,
};

use crate::{
    abi::{self, MmapInfo},
    device::Ferroce,
    limits,
};

/// Per-CQ state.
pub(crate) struct CqData {
    ring: Pin<KBox<Mutex<CqRing>>>,
}

/// The ring and the kernel's private copy of the index it produces.
struct CqRing {
    buf: SharedBuffer,
    num_entries: u32,
    /// The producer index; user space's copy in the ring is informational only.
    producer: u32,
}

impl CqRing {
    fn new(uctx: &UContext<Ferroce>, num_entries: u32) -> Result<Self> {
        let bytes = abi::queue_bytes(num_entries, abi::CQE_SIZE).ok_or(EINVAL)?;
        let buf = SharedBuffer::new(uctx, bytes)?;
        Ok(CqRing { buf, num_entries, producer: 0 })
    }

    fn mmap_info(&self) -> Result<MmapInfo> {
        Ok(MmapInfo {
            offset: self.buf.mmap_offset(),
            size: u32::try_from(self.buf.len()).map_err(|_| EINVAL)?,
            num_entries: self.num_entries,
        })
    }

    /// Completions written and not yet consumed, per the consumer index user space published.
    /// An impossible index puts the ring in error: that process corrupted its own CQ.
    fn pending(&self) -> Result<u32> {
        let consumer = self.buf.load_acquire(abi::CTRL_CONSUMER)?;
        match abi::pending(self.producer, consumer, self.num_entries) {
            Some(n) => Ok(n),
            None => {
                self.buf.store_release(abi::CTRL_FLAGS, abi::QUEUE_ERROR)?;
                Err(EINVAL)
            }
        }
    }
}

fn entries_for(cqe: u32) -> Result<u32> {
    abi::ring_entries(cqe, limits::MAX_CQE).ok_or(EINVAL)
}

pub(crate) fn create(
    dev: &Device<Ferroce>,
    attr: &CqInitAttr,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result<(CqData, u32)> {
    // Kernel ULPs cannot use ferroce yet (it is no kverbs provider), so only user CQs exist.
    let uctx = uctx.ok_or(EOPNOTSUPP)?;
    if attr.flags != 0 {
        return Err(EOPNOTSUPP);
    }
    if attr.comp_vector >= limits::NUM_COMP_VECTORS {
        return Err(EINVAL);
    }
    udata.require_no_input()?;
    let num_entries = entries_for(attr.cqe)?;
    let ring = CqRing::new(uctx, num_entries)?;
    udata.write(&ring.mmap_info()?.to_bytes())?;
    let ring = KBox::pin_init(new_mutex!(ring, "ferroce:cq"), GFP_KERNEL)?;
    // Counted last: nothing after this can fail, so the count never needs undoing here.
    dev.data().cqs.take(limits::MAX_CQ)?;
    Ok((CqData { ring }, num_entries))
}

pub(crate) fn destroy(cq: &Cq<Ferroce>) {
    cq.device().data().cqs.put();
}

/// Moves the CQ to a new ring of at least `cqe` entries, carrying over the completions user
/// space has not polled. The provider maps the new ring from the response and unmaps the old.
pub(crate) fn resize(
    cq: &Cq<Ferroce>,
    cqe: u32,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result<u32> {
    let uctx = uctx.ok_or(EOPNOTSUPP)?;
    udata.require_no_input()?;
    let num_entries = entries_for(cqe)?;
    let mut ring = cq.data().ring.lock();
    let pending = ring.pending()?;
    if pending > num_entries {
        return Err(EINVAL);
    }
    let new = CqRing::new(uctx, num_entries)?;
    let consumer = ring.producer.wrapping_sub(pending);
    let mut cqe_bytes = [0u8; abi::CQE_SIZE];
    for i in 0..pending {
        let from = (consumer.wrapping_add(i) & (ring.num_entries - 1)) as usize;
        ring.buf.read(abi::QUEUE_ENTRIES + from * abi::CQE_SIZE, &mut cqe_bytes)?;
        new.buf.write(abi::QUEUE_ENTRIES + i as usize * abi::CQE_SIZE, &cqe_bytes)?;
    }
    let mut new = new;
    new.producer = pending;
    new.buf.store_release(abi::CTRL_PRODUCER, pending)?;
    new.buf.store_release(abi::CTRL_NOTIFY, ring.buf.load_acquire(abi::CTRL_NOTIFY)?)?;
    udata.write(&new.mmap_info()?.to_bytes())?;
    *ring = new;
    Ok(num_entries)
}
