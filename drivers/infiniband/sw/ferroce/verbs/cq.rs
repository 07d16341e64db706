// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring of `struct ferroce_cqe` shared with the provider, which polls it
//! and arms it without system calls (`include/uapi/rdma/ferroce-abi.h`).

use kernel::{
    new_spinlock_irq,
    prelude::*,
    rdma::{Cq, CqInitAttr, Device, QpToken, UContext, Udata, Wc},
    sync::{barrier::smp_mb, SpinLockIrq},
};

use crate::{
    protocol::{abi, limits},
    verbs::{
        device::Ferroce,
        numbers::Counted,
        queue::{KernelSide, SharedQueue},
    },
};

/// Per-CQ state.
#[pin_data]
pub(crate) struct CqData {
    /// Taken in any context: kernel users poll and arm from softirq, completions are written
    /// from process context now and from packet processing later.
    #[pin]
    ring: SpinLockIrq<CqRing>,
    /// The CQ's place in the device's count.
    _counted: Counted,
}

/// The ring and the kernel's private copy of the index it produces.
struct CqRing {
    queue: SharedQueue,
    /// The producer index; user space's copy in the ring is informational only.
    producer: u32,
    /// The CQ lost a completion. Kept here, not read back from the ring's flags (which user
    /// space can clear): an overrun CQ stays overrun, across a resize too.
    overrun: bool,
}

impl CqRing {
    fn new(uctx: Option<&UContext<Ferroce>>, num_entries: u32) -> Result<Self> {
        let queue = SharedQueue::new(uctx, num_entries, abi::CQE_SIZE, KernelSide::Producer)?;
        Ok(CqRing {
            queue,
            producer: 0,
            overrun: false,
        })
    }

    /// Completions written and not yet consumed.
    fn pending(&self) -> Result<u32> {
        self.queue.outstanding(self.producer)
    }

    /// Writes `cqe` and publishes it; returns whether the owner asked to be signalled.
    fn push(&mut self, cqe: &abi::Cqe) -> Result<Pushed> {
        let buf = &self.queue.buf;
        if self.overrun {
            // Already overrun and reported: the CQ takes nothing more.
            return Ok(Pushed::Dropped);
        }
        if self.pending()? >= self.queue.num_entries {
            self.overrun = true;
            buf.fetch_or(abi::CTRL_FLAGS, abi::QUEUE_OVERFLOW)?;
            return Ok(Pushed::Overrun);
        }
        let slot = (self.producer & (self.queue.num_entries - 1)) as usize;
        // Only a kernel user's ring may hold a kernel pointer.
        let mut entry = *cqe;
        if !self.queue.is_kernel() {
            entry.kernel_qp = 0;
        }
        buf.write(abi::QUEUE_ENTRIES + slot * abi::CQE_SIZE, &entry.to_bytes())?;
        self.producer = self.producer.wrapping_add(1);
        buf.store_release(abi::CTRL_PRODUCER, self.producer)?;
        // The consumer arms (stores `notify`) and then polls (loads `producer`); we publish
        // (store `producer`) and then load `notify`. A full barrier on both sides means at
        // least one of us sees the other's store: either it polls this completion, or we see
        // it armed and signal. (Release/acquire alone would let both miss.)
        smp_mb();
        // Disarm with an exchange, so that a re-arm racing with us is never lost: it either
        // lands before (and fires now) or after (and waits for the next completion).
        if abi::notify_fires(buf.load_acquire(abi::CTRL_NOTIFY)?, cqe.wakes_solicited())
            && buf.swap(abi::CTRL_NOTIFY, 0)? != 0
        {
            return Ok(Pushed::Signal);
        }
        Ok(Pushed::Quiet)
    }
}

/// What became of a completion.
enum Pushed {
    /// Written; nobody waits for it.
    Quiet,
    /// Written; the CQ was armed for it.
    Signal,
    /// The CQ is full: lost, and the CQ overran just now.
    Overrun,
    /// The CQ overran earlier: lost.
    Dropped,
}

/// What a CQ's owner must be told once the caller has dropped its locks: the handlers may call
/// back into the verbs (a ULP's completion handler may post to the very QP being flushed).
#[derive(Clone, Copy, Default)]
#[must_use]
pub(crate) struct Notice {
    signal: bool,
    overrun: bool,
}

impl Notice {
    /// Both notices.
    pub(crate) fn or(self, other: Notice) -> Notice {
        Notice {
            signal: self.signal || other.signal,
            overrun: self.overrun || other.overrun,
        }
    }

    /// Calls the CQ's completion handler or reports its overrun, as noted.
    pub(crate) fn deliver(self, cq: &Cq<Ferroce>) {
        if self.signal {
            cq.notify_completion();
        }
        if self.overrun {
            cq.dispatch_error();
        }
    }
}

/// Writes a completion to `cq`'s ring and says whether the CQ was armed for it. A full CQ loses
/// the completion, never one already written: it is marked overrun and its owner is to get
/// `IB_EVENT_CQ_ERR` (once). The caller delivers the [`Notice`] when it holds no lock.
///
/// Fails only if user space corrupted the ring (which is then in error).
pub(crate) fn post(cq: &Cq<Ferroce>, cqe: &abi::Cqe) -> Result<Notice> {
    Ok(match cq.data().ring.lock().push(cqe)? {
        Pushed::Signal => Notice {
            signal: true,
            overrun: false,
        },
        Pushed::Overrun => Notice {
            signal: false,
            overrun: true,
        },
        Pushed::Quiet | Pushed::Dropped => Notice::default(),
    })
}

fn entries_for(cqe: u32) -> Result<u32> {
    abi::ring_entries(cqe, limits::MAX_CQE).ok_or(EINVAL)
}

pub(crate) fn create(
    dev: &Device<Ferroce>,
    attr: &CqInitAttr,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result<(impl PinInit<CqData, Error>, u32)> {
    if attr.flags != 0 {
        return Err(EOPNOTSUPP);
    }
    if attr.comp_vector >= limits::NUM_COMP_VECTORS {
        return Err(EINVAL);
    }
    udata.require_no_input()?;
    let num_entries = entries_for(attr.cqe)?;
    let ring = CqRing::new(uctx, num_entries)?;
    if uctx.is_some() {
        udata.write(&ring.queue.mmap_info()?.to_bytes())?;
    }
    let counted = Counted::take(&dev.data().cqs, limits::MAX_CQ)?;
    let data = try_pin_init!(CqData {
        ring <- new_spinlock_irq!(ring, "ferroce:cq"),
        _counted: counted,
    });
    Ok((data, num_entries))
}

/// Moves the CQ to a new ring of at least `cqe` entries, carrying over the completions user
/// space has not polled. The provider maps the new ring from the response and unmaps the old.
pub(crate) fn resize(
    cq: &Cq<Ferroce>,
    cqe: u32,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result<u32> {
    udata.require_no_input()?;
    let num_entries = entries_for(cqe)?;
    // Allocated and described to user space before the ring lock (a spinlock) is taken; if
    // the resize then fails, the provider ignores the description.
    let mut new = CqRing::new(uctx, num_entries)?;
    if uctx.is_some() {
        udata.write(&new.queue.mmap_info()?.to_bytes())?;
    }
    let mut ring = cq.data().ring.lock();
    if ring.queue.is_kernel() != uctx.is_none() {
        return Err(EINVAL);
    }
    let pending = ring.pending()?;
    if pending > num_entries {
        return Err(EINVAL);
    }
    let consumer = ring.producer.wrapping_sub(pending);
    let mut cqe_bytes = [0u8; abi::CQE_SIZE];
    let (old_q, new_q) = (&ring.queue, &new.queue);
    for i in 0..pending {
        let from = (consumer.wrapping_add(i) & (old_q.num_entries - 1)) as usize;
        old_q
            .buf
            .read(abi::QUEUE_ENTRIES + from * abi::CQE_SIZE, &mut cqe_bytes)?;
        new_q
            .buf
            .write(abi::QUEUE_ENTRIES + i as usize * abi::CQE_SIZE, &cqe_bytes)?;
    }
    new_q.buf.store_release(abi::CTRL_PRODUCER, pending)?;
    new_q
        .buf
        .store_release(abi::CTRL_NOTIFY, old_q.buf.load_acquire(abi::CTRL_NOTIFY)?)?;
    // The consumer index of the new ring starts at 0 (user space learns it from the response,
    // a kernel user through the kernel). An overrun CQ stays overrun.
    new.producer = pending;
    new.overrun = ring.overrun;
    if new.overrun {
        new.queue
            .buf
            .fetch_or(abi::CTRL_FLAGS, abi::QUEUE_OVERFLOW)?;
    }
    let old = core::mem::replace(&mut *ring, new);
    drop(ring);
    // Unmapped and freed outside the lock.
    drop(old);
    Ok(num_entries)
}

// A kernel user's completion keeps the status and opcode numbers of the ring (rdma-core's,
// which ib_core's equal, `REG_MR` being ib_core's own); only the flags are renumbered.
const _: () = {
    use kernel::rdma::wr;
    assert!(abi::WcStatus::WrFlushErr.to_abi() == wr::wc_status::WR_FLUSH_ERR);
    assert!(abi::wc_opcode::REG_MR == wr::wc_opcode::REG_MR);
    assert!(abi::kernel_wc_flags(abi::wc_flags::GRH) == wr::wc_flags::GRH);
    assert!(abi::kernel_wc_flags(abi::wc_flags::WITH_IMM) == wr::wc_flags::WITH_IMM);
    assert!(abi::kernel_wc_flags(abi::wc_flags::WITH_INV) == wr::wc_flags::WITH_INVALIDATE);
    assert!(abi::kernel_wc_flags(abi::wc_flags::IP_CSUM_OK) == wr::wc_flags::IP_CSUM_OK);
    assert!(abi::RDMA_NETWORK_IPV4 == wr::network_type::IPV4);
    assert!(abi::RDMA_NETWORK_IPV6 == wr::network_type::IPV6);
};

/// Takes completions from a kernel user's CQ (`ib_poll_cq`).
pub(crate) fn poll(cq: &Cq<Ferroce>, out: &mut [Wc]) -> Result<usize> {
    let ring = cq.data().ring.lock();
    let q = &ring.queue;
    if !q.is_kernel() {
        // A user's CQ is polled in user space only.
        return Err(EINVAL);
    }
    let consumer = q.buf.load_acquire(abi::CTRL_CONSUMER)?;
    let n = (ring.pending()? as usize).min(out.len());
    let mut bytes = [0u8; abi::CQE_SIZE];
    for (i, wc) in out[..n].iter_mut().enumerate() {
        let slot = (consumer.wrapping_add(i as u32) & (q.num_entries - 1)) as usize;
        q.buf
            .read(abi::QUEUE_ENTRIES + slot * abi::CQE_SIZE, &mut bytes)?;
        let c = abi::Cqe::from_bytes(&bytes);
        *wc = Wc {
            wr_id: c.wr_id,
            status: c.status.to_abi(),
            opcode: c.opcode,
            vendor_err: c.vendor_err,
            byte_len: c.byte_len,
            qp: QpToken::from_bits(c.kernel_qp),
            ex: c.imm_data,
            src_qp: c.src_qp,
            wc_flags: abi::kernel_wc_flags(c.wc_flags)
                | if c.network.is_some() {
                    kernel::rdma::wr::wc_flags::WITH_NETWORK_HDR_TYPE
                } else {
                    0
                },
            pkey_index: c.pkey_index,
            sl: c.sl,
            port_num: c.port_num.into(),
            network_hdr_type: match c.network {
                Some(true) => abi::RDMA_NETWORK_IPV4,
                Some(false) => abi::RDMA_NETWORK_IPV6,
                None => 0,
            },
            vlan_id: c.vlan_id,
        };
    }
    q.buf
        .store_release(abi::CTRL_CONSUMER, consumer.wrapping_add(n as u32))?;
    Ok(n)
}

/// Arms a kernel user's CQ (`ib_req_notify_cq`); returns whether completions wait already.
pub(crate) fn arm(cq: &Cq<Ferroce>, solicited_only: bool, report_missed: bool) -> Result<bool> {
    let ring = cq.data().ring.lock();
    if !ring.queue.is_kernel() {
        return Err(EINVAL);
    }
    let how = if solicited_only {
        abi::CQ_NOTIFY_SOLICITED
    } else {
        abi::CQ_NOTIFY_NEXT
    };
    // ORed in, as the provider arms: a pending NEXT is not weakened to SOLICITED.
    ring.queue.buf.fetch_or(abi::CTRL_NOTIFY, how)?;
    Ok(report_missed && ring.pending()? > 0)
}
