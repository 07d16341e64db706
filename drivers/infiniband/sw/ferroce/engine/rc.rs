// SPDX-License-Identifier: GPL-2.0

//! The connected transports on the wire (RC and UC, IBTA chapter 9): requester, completer and
//! responder of a QP whose peer is on another host (or another ferroce device).
//!
//! - [`requester`]: the send queue's executor (`run`, in the doorbell system call, or in softirq
//!   when an acknowledgement opens the window) turns WQEs into packets within the send
//!   [`window`] (PSNs from the QP's `sq_psn` on, a record per started WQE).
//! - [`completer`] (RC): acknowledgements, NAKs, READ responses and atomic acknowledgements
//!   complete the WQEs in order, or send them again (go-back-N, RNR waits).
//! - [`responder`] (softirq): the requests of the peer, in PSN order.
//! - Here: the QP's wire state ([`Conn`]), the packet dispatch ([`receive`]) and the QP's timer
//!   (`kernel::rdma::sw::deferred`), for the acknowledgement timeout or the RNR wait; progress
//!   is seen by the oldest unacknowledged PSN moving on, or by responses bringing something new
//!   (a slow responder still serving READs is not timed out, as rxe's completer restarts its
//!   timer on each response).

use kernel::{
    alloc::KVec,
    prelude::*,
    rdma::{Qp, QpState, QpType},
};

use crate::{
    engine::{
        executor::{self, Budget},
        qp::{After, QpShared, RECV_WQE_MAX},
        reply::{self, Offer, Reply, ReplyQueue},
    },
    protocol::{
        abi::{self, WcStatus},
        opcode::{self, op},
        packet::Parsed,
        psn, transport,
    },
    verbs::{device::Ferroce, stats::Stat},
};

mod completer;
pub(crate) mod requester;
mod responder;
mod window;

use completer::{fail_front, go_back, on_response};
use responder::{on_request, InMsg, RecvHeld, SavedRead, SAVED_ATOMICS, SAVED_READS};
pub(crate) use window::Rec;
use window::{Window, MAX_BACKOFF, WINDOW};

/// What the QP's timer is set for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TimerUse {
    Idle,
    /// The acknowledgement timeout (RC).
    Ack,
    /// The wait an RNR NAK asked for.
    Rnr,
    /// The wait after a packet that could not be made (no memory for an skb): the requester
    /// holds while the timer has this use (an RNR NAK that comes meanwhile replaces it, and
    /// its go-back covers the lost packet too); then what is not acknowledged goes again.
    Lost,
}

/// How long a requester waits after a packet it could not make before it sends again: memory
/// may come back meanwhile, and without the wait it would try again at once, and again.
const LOST_RETRY_US: u32 = 1000;

/// The wire state of a connected QP (under the QP's lock).
pub(crate) struct Conn {
    /// Requester: the WQEs started, the PSNs in flight.
    tx: Window<KVec<Rec>>,
    retries: u8,
    rnr_retries: u8,
    timer: TimerUse,
    una_at_arm: u32,
    /// The requester's count of responses that brought something new when the timer was
    /// armed (as `una_at_arm`: either moving is progress).
    heard_at_arm: u32,
    /// Waiting out an RNR NAK.
    rnr_hold: bool,
    // Responder.
    epsn: u32,
    msn: u32,
    nak_sent: bool,
    msg: InMsg,
    recv: Option<RecvHeld>,
    /// The bytes of the held receive WQE (on the heap, as `atomics`).
    recv_wqe: KBox<[u8; RECV_WQE_MAX]>,
    // On the heap: QP creation runs deep in ib_core (QP1 at device registration) and moves
    // this state by value a few times; kernel stacks are small.
    atomics: KVec<(u32, u64, bool)>,
    atomic_next: usize,
    /// The PSNs of the recent ATOMIC_WRITEs and FLUSHes executed (and whether the slot holds
    /// one): only a request again for one of them is answered again.
    singles: KVec<(u32, bool)>,
    single_next: usize,
    /// Recent READs served: only a request again for one of them (or for the rest of one,
    /// which continues its response with MIDDLE/LAST packets) is served again.
    reads: KVec<SavedRead>,
    read_next: usize,
    /// Replies waiting to be sent, in order (READ responses are paced).
    pub(crate) out: ReplyQueue,
}

impl Conn {
    /// The state of a QP whose send queue has `sq_entries` entries; only an RC QP (`rc`)
    /// keeps READ and atomic responder resources and a reply queue (a UD QP costs little).
    pub(crate) fn new(sq_entries: u32, rc: bool) -> Result<Self> {
        let resources = if rc { SAVED_READS } else { 0 };
        Ok(Conn {
            tx: Window::new(KVec::from_elem(
                Rec::default(),
                sq_entries as usize,
                GFP_KERNEL,
            )?),
            retries: 0,
            rnr_retries: 0,
            timer: TimerUse::Idle,
            una_at_arm: 0,
            heard_at_arm: 0,
            rnr_hold: false,
            epsn: 0,
            msn: 0,
            nak_sent: false,
            msg: InMsg::None,
            recv: None,
            recv_wqe: KBox::new([0u8; RECV_WQE_MAX], GFP_KERNEL)?,
            atomics: KVec::from_elem(
                (0, 0, false),
                if rc { SAVED_ATOMICS } else { 0 },
                GFP_KERNEL,
            )?,
            atomic_next: 0,
            singles: KVec::from_elem((0, false), if rc { SAVED_ATOMICS } else { 0 }, GFP_KERNEL)?,
            single_next: 0,
            reads: KVec::from_elem(SavedRead::default(), resources, GFP_KERNEL)?,
            read_next: 0,
            out: ReplyQueue::new(rc)?,
        })
    }

    /// Whether the requester waits before it sends (an RNR NAK's wait, or after a packet it
    /// could not make).
    pub(crate) fn holds(&self) -> bool {
        self.rnr_hold || self.timer == TimerUse::Lost
    }

    /// A packet of the requester could not be made (no memory for an skb): what follows it
    /// was not sent either. It waits [`LOST_RETRY_US`], then sends again what is not
    /// acknowledged (the timer's [`TimerUse::Lost`]); without this, a lost tail with the
    /// acknowledgement timeout off (0: wait forever) would never be sent.
    pub(crate) fn hold_after_lost(&mut self, qp: &Qp<Ferroce>) {
        if self.holds() {
            // Already waiting (a turn lost before): that wait ends in a go-back too.
            return;
        }
        self.timer = TimerUse::Lost;
        qp.arm_timer(LOST_RETRY_US);
    }

    /// Forgets the requester's records (the send queue was flushed or emptied).
    pub(crate) fn clear_requester(&mut self) {
        self.tx.clear();
        self.rnr_hold = false;
        self.timer = TimerUse::Idle;
    }

    /// Back to RESET: everything goes.
    pub(crate) fn reset(&mut self) {
        self.clear_requester();
        self.msg = InMsg::None;
        self.recv = None;
        self.nak_sent = false;
        self.msn = 0;
        self.atomics.iter_mut().for_each(|a| *a = (0, 0, false));
        self.singles.iter_mut().for_each(|a| *a = (0, false));
        self.reads
            .iter_mut()
            .for_each(|r| *r = SavedRead::default());
        self.out.clear();
    }

    /// The PSNs a modify set: the responder's expected one, the requester's next one.
    pub(crate) fn set_rq_psn(&mut self, p: u32) {
        self.epsn = p & psn::MASK;
    }

    pub(crate) fn set_sq_psn(&mut self, p: u32) {
        self.tx.set_psn(p);
    }

    pub(crate) fn set_retries(&mut self, retry_cnt: u8, rnr_retry: u8) {
        self.retries = retry_cnt;
        self.rnr_retries = rnr_retry;
    }

    pub(crate) fn sq_psn(&self) -> u32 {
        self.tx.psn()
    }

    pub(crate) fn rq_psn(&self) -> u32 {
        self.epsn
    }

    /// The receive WQE of a message in progress, which a move to ERR completes flushed first.
    pub(crate) fn take_held_recv(&mut self, resets: u32) -> Option<u64> {
        self.msg = InMsg::None;
        let h = self.recv.take()?;
        let hdr: &[u8; abi::RECV_WQE_HEADER] = self.recv_wqe.first_chunk()?;
        (h.resets == resets).then(|| abi::wqe_wr_id(hdr))
    }
}

/// The QP's path MTU in bytes.
pub(crate) fn mtu_of(st: &QpShared) -> u32 {
    256u32 << st.attr.path_mtu.clamp(1, 5).saturating_sub(1)
}

fn arm_ack_timer(qp: &Qp<Ferroce>, st: &mut QpShared) {
    if let Some(ns) = transport::ack_timeout_ns(st.attr.timeout) {
        st.conn.timer = TimerUse::Ack;
        st.conn.una_at_arm = st.conn.tx.una();
        st.conn.heard_at_arm = st.conn.tx.heard();
        let ns = ns << st.conn.tx.backoff().min(MAX_BACKOFF);
        qp.arm_timer((ns / 1000).min(u64::from(u32::MAX)) as u32);
    }
}

/// A packet of a connected transport for `qp` (softirq).
pub(crate) fn receive(qp: &Qp<Ferroce>, p: &Parsed<'_>) {
    let data = qp.data();
    let qp_type = data.qp_type();
    let transport = p.hdr.bth.opcode & 0xe0;
    let matches_type = match qp_type {
        QpType::Rc => transport == opcode::RC,
        QpType::Uc => transport == opcode::UC,
        _ => false,
    };
    let counters = &qp.device().data().counters;
    if !matches_type {
        counters.add(Stat::Dropped, 1);
        return;
    }
    let opc = p.hdr.bth.opcode & 0x1f;
    let is_response = transport == opcode::RC
        && matches!(opc, op::RDMA_READ_RESPONSE_FIRST..=op::ATOMIC_ACKNOWLEDGE);
    let mut after = After::default();
    let mut guard = data.state.lock();
    let st = &mut *guard;
    // Only from the connected peer.
    // Only from the connected peer, to the GID the QP sends from (which also makes it one of
    // the port's).
    let from_peer = st
        .attr
        .av
        .is_some_and(|av| av.dgid == p.route.sgid && av.sgid == p.route.dgid);
    if !from_peer || st.peer_local {
        counters.add(Stat::Dropped, 1);
        return;
    }
    let mut reply = Reply::None;
    let mut resume = false;
    if is_response {
        on_response(qp, st, p, &mut after);
        resume = !st.sending
            && st.attr.qp_state == QpState::Rts
            && !st.conn.holds()
            && (st.conn.tx.repair_due()
                || st.conn.tx.outstanding() < WINDOW
                    && (st.conn.tx.next() < st.conn.tx.count()
                        || st.sq.pending().unwrap_or(0) as usize > st.conn.tx.count()));
        if resume {
            st.sending = true;
        }
    } else {
        reply = on_request(qp, st, p, &mut after);
    }
    let mtu = mtu_of(st);
    let offer = st.conn.out.offer(reply, mtu);
    if matches!(offer, Offer::Dropped) {
        counters.add(Stat::Dropped, 1);
        // Not sent: the next packet out of sequence may NAK again.
        st.conn.nak_sent = false;
    }
    // Where a reply goes, read only for one sent now (most packets are not answered one by one).
    let back = match offer {
        Offer::Now(_) => reply::Back::of(qp, st, mtu),
        _ => None,
    };
    drop(guard);
    after.run(qp, false);
    match offer {
        Offer::Now(reply) => {
            if let Some(back) = back {
                reply::send(qp, &back, reply);
            }
        }
        Offer::Send => reply::send_queued(qp, false),
        Offer::Nothing | Offer::Queued | Offer::Dropped => {}
    }
    if resume {
        executor::run(qp, false, Budget::UntilDone);
    }
}

/// The QP's timer (softirq): an acknowledgement timeout, or the end of an RNR wait.
pub(crate) fn timer(qp: &Qp<Ferroce>) {
    let data = qp.data();
    let mut after = After::default();
    let mut guard = data.state.lock();
    let st = &mut *guard;
    if qp.timer_pending() {
        // Armed again while this expiry waited for the lock: it is stale.
        return;
    }
    let mut resume = false;
    match st.conn.timer {
        TimerUse::Idle => {}
        TimerUse::Rnr => {
            st.conn.timer = TimerUse::Idle;
            st.conn.rnr_hold = false;
            resume = true;
            if st.conn.tx.outstanding() > 0 || st.conn.tx.count() > 0 {
                arm_ack_timer(qp, st);
            }
        }
        TimerUse::Lost => {
            st.conn.timer = TimerUse::Idle;
            if st.attr.qp_state == QpState::Rts || st.attr.qp_state == QpState::Sqd {
                // As after an acknowledgement timeout, but no retry is spent: the peer was
                // never asked.
                let una = st.conn.tx.una();
                go_back(qp, st, una);
                resume = true;
            }
            if st.conn.tx.outstanding() > 0 || st.conn.tx.count() > 0 {
                arm_ack_timer(qp, st);
            }
        }
        TimerUse::Ack => {
            if st.conn.tx.outstanding() == 0 && st.conn.tx.count() == 0 {
                st.conn.timer = TimerUse::Idle;
            } else if st.conn.tx.una() != st.conn.una_at_arm
                || st.conn.tx.heard() != st.conn.heard_at_arm
            {
                st.conn.tx.progressed();
                arm_ack_timer(qp, st);
            } else if st.attr.qp_state == QpState::Rts || st.attr.qp_state == QpState::Sqd {
                qp.device().data().counters.add(Stat::Timeouts, 1);
                if st.conn.retries == 0 {
                    st.conn.timer = TimerUse::Idle;
                    fail_front(qp, st, WcStatus::RetryExcErr, &mut after);
                } else {
                    st.conn.retries -= 1;
                    st.conn.tx.timed_out();
                    let una = st.conn.tx.una();
                    go_back(qp, st, una);
                    arm_ack_timer(qp, st);
                    resume = true;
                }
            } else {
                st.conn.timer = TimerUse::Idle;
            }
        }
    }
    resume = resume && !st.sending && st.attr.qp_state == QpState::Rts;
    if resume {
        st.sending = true;
    }
    drop(guard);
    after.run(qp, false);
    if resume {
        executor::run(qp, false, Budget::UntilDone);
    }
}
