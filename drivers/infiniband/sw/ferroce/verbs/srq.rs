// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: a receive ring shared with the provider that many QPs take from, with
//! a limit that, once armed, reports when the ring runs low.

use kernel::{
    new_spinlock_irq,
    prelude::*,
    rdma::{srq_mask, Pd, RecvWr, Srq, SrqAttr, SrqEvent, UContext, Udata},
    sync::SpinLockIrq,
    uaccess::UserSlice,
};

use crate::{
    protocol::{abi, limits},
    verbs::{
        device::Ferroce,
        numbers::Counted,
        wq::{self, WorkQueue},
    },
};

/// Per-SRQ state.
#[pin_data]
pub(crate) struct SrqData {
    /// Taken in any context (kernel users post from softirq).
    #[pin]
    state: SpinLockIrq<SrqShared>,
    wqe_size: u32,
    /// The SRQ's place in the device's count.
    _counted: Counted,
}

/// The SGEs an SRQ WQE of `wqe_size` bytes holds, as advertised.
fn max_sge_of(wqe_size: u32) -> u32 {
    abi::sge_room(wqe_size, abi::RECV_WQE_HEADER).min(limits::MAX_SGE)
}

struct SrqShared {
    wq: WorkQueue,
    /// The armed limit (0: disarmed).
    limit: u32,
}

impl SrqShared {
    /// Fires the limit event if it is armed and fewer WQEs remain; disarms it then. Returns
    /// whether the event must be sent (by the caller, outside the lock).
    fn limit_reached(&mut self) -> Result<bool> {
        if self.limit != 0 && self.wq.pending()? < self.limit {
            self.limit = 0;
            return Ok(true);
        }
        Ok(false)
    }
}

fn entries(max_wr: u32) -> Result<u32> {
    abi::ring_entries(max_wr, limits::MAX_SRQ_WR).ok_or(EINVAL)
}

pub(crate) fn create(
    pd: &Pd<Ferroce>,
    attr: &mut SrqAttr,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result<impl PinInit<SrqData, Error>> {
    udata.require_no_input()?;
    if attr.max_sge > limits::MAX_SGE {
        return Err(EINVAL);
    }
    let num_entries = entries(attr.max_wr)?;
    let (_, wqe_size) = abi::wqe_sizes(0, 0, attr.max_sge);
    let wq = WorkQueue::new(uctx, num_entries, wqe_size)?;
    if uctx.is_some() {
        udata.write(&abi::create_srq_resp(&wq.queue.mmap_info()?, wqe_size))?;
    }
    let max_sge = max_sge_of(wqe_size);
    let counted = Counted::take(&pd.device().data().srqs, limits::MAX_SRQ)?;
    *attr = SrqAttr {
        max_wr: num_entries,
        max_sge,
        srq_limit: 0,
    };
    // The limit is armed by modify_srq only (`srq_limit` is ignored at creation).
    Ok(try_pin_init!(SrqData {
        state <- new_spinlock_irq!(SrqShared { wq, limit: 0 }, "ferroce:srq"),
        wqe_size,
        _counted: counted,
    }))
}

pub(crate) fn modify(
    srq: &Srq<Ferroce>,
    attr: &SrqAttr,
    mask: u32,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result {
    if mask == 0 || mask & !(srq_mask::MAX_WR | srq_mask::LIMIT) != 0 {
        return Err(EINVAL);
    }
    let data = srq.data();
    // The provider sends where a resized ring's description goes (needed for a resize only).
    let info_addr = if udata.in_len() >= abi::MODIFY_SRQ_CMD_SIZE {
        let mut cmd = [0u8; abi::MODIFY_SRQ_CMD_SIZE];
        udata.read(&mut cmd)?;
        Some(abi::modify_srq_cmd(&cmd))
    } else {
        udata.require_no_input()?;
        None
    };
    let resize_kernel = mask & srq_mask::MAX_WR != 0 && uctx.is_none();
    if resize_kernel {
        // Kernel users' SRQs are not resized (no kernel user asks).
        return Err(EOPNOTSUPP);
    }
    let info_addr = match (mask & srq_mask::MAX_WR != 0, info_addr) {
        (true, None) => return Err(EINVAL),
        (true, addr) => addr,
        (false, _) => None,
    };
    // A new ring is allocated and described to user space before the SRQ lock (a spinlock) is
    // taken; if the resize then fails, the provider ignores the description.
    let mut new = None;
    if let Some(addr) = info_addr {
        let uctx = uctx.ok_or(EOPNOTSUPP)?;
        let wq = WorkQueue::new(Some(uctx), entries(attr.max_wr)?, data.wqe_size)?;
        let info = wq.queue.mmap_info()?.to_bytes();
        UserSlice::new(addr as usize, info.len())
            .writer()
            .write_slice(&info)?;
        new = Some(wq);
    }
    let mut st = data.state.lock();
    let r = modify_locked(&mut st, &mut new, attr, mask);
    drop(st);
    // The ring left over (the old one after a resize, or the new one if it failed) is
    // unmapped and freed outside the lock.
    drop(new);
    if r? {
        srq.dispatch_event(SrqEvent::LimitReached);
    }
    Ok(())
}

/// The part of `modify_srq` under the SRQ lock: a resize swaps `new` in (leaving the old ring
/// in `new`), the limit is armed; returns whether the limit event is due.
fn modify_locked(
    st: &mut SrqShared,
    new: &mut Option<WorkQueue>,
    attr: &SrqAttr,
    mask: u32,
) -> Result<bool> {
    let max_wr = new
        .as_ref()
        .map_or(st.wq.queue.num_entries, |wq| wq.queue.num_entries);
    if mask & srq_mask::LIMIT != 0 && attr.srq_limit > max_wr {
        return Err(EINVAL);
    }
    if let Some(wq) = new.as_mut() {
        if st.wq.queue.is_kernel() || st.wq.pending()? > max_wr {
            // The WQEs already posted would not fit.
            return Err(EINVAL);
        }
        st.wq.move_to(wq)?;
        core::mem::swap(&mut st.wq, wq);
    }
    if mask & srq_mask::LIMIT != 0 {
        st.limit = attr.srq_limit;
    }
    st.limit_reached()
}

pub(crate) fn query(srq: &Srq<Ferroce>) -> Result<SrqAttr> {
    let data = srq.data();
    let st = data.state.lock();
    Ok(SrqAttr {
        max_wr: st.wq.queue.num_entries,
        max_sge: max_sge_of(data.wqe_size),
        srq_limit: st.limit,
    })
}

/// Queues a kernel user's receive work request on the SRQ.
pub(crate) fn post_recv(srq: &Srq<Ferroce>, wr: &RecvWr<'_>) -> Result {
    let data = srq.data();
    let mut st = data.state.lock();
    if !st.wq.queue.is_kernel() {
        return Err(EINVAL);
    }
    wq::produce_recv(&mut st.wq, wr, max_sge_of(data.wqe_size))
}

/// Takes the SRQ's next receive WQE into `buf` for a responder: its length and the most SGEs
/// it may hold, or `None` when the SRQ is empty. Sends the limit event if it became due.
pub(crate) fn take(srq: &Srq<Ferroce>, buf: &mut [u8]) -> Result<Option<(usize, u32)>> {
    let data = srq.data();
    let mut st = data.state.lock();
    if st.wq.pending()? == 0 {
        return Ok(None);
    }
    let len = (st.wq.wqe_size as usize).min(buf.len());
    st.wq.peek(0, &mut buf[..len])?;
    st.wq.consume(1)?;
    let event = st.limit_reached()?;
    drop(st);
    if event {
        srq.dispatch_event(SrqEvent::LimitReached);
    }
    Ok(Some((len, max_sge_of(data.wqe_size))))
}
