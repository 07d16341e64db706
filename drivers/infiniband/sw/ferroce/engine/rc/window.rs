// SPDX-License-Identifier: GPL-2.0

//! The requester's send window of a connected QP (IBTA 9.7.x): a record of each WQE it started,
//! the PSNs in flight, what the next turn sends, going back (go-back-N) and moving on again,
//! and a congestion window that shrinks on loss.
//!
//! Pure `core` code, generic over the records' storage (a `KVec` in the kernel, a `Vec` on the
//! host): the subtlest part of the wire engine is tested on the host (`host-tests/`).

use core::ops::DerefMut;

use crate::protocol::{
    abi::{wr_opcode as wop, WcStatus},
    psn,
};

/// Packets a requester has in flight at most.
pub(crate) const WINDOW: u32 = 256;
/// The least a requester's congestion window shrinks to.
///
/// The window reacts to loss as TCP's does (RFC 5681, and RFC 6582's one reduction per window
/// of data), in packets: a loss (a sequence NAK) halves it, once for all the losses of what
/// was in flight then; an acknowledgement timeout (the responder heard nothing, or nothing
/// came back) makes it a quarter. Either way half of what it was becomes the threshold below which it grows by every
/// PSN acknowledged (slow start) and above which by one per window acknowledged (congestion
/// avoidance), up to [`WINDOW`]. It bounds what the requester sends itself (SEND and WRITE
/// data, atomics); READ responses are the responder's to pace (see [`Window::read_room`]).
/// A link that drops bursts (a virtio ring or a switch buffer that a full window overflows,
/// several QPs at once) then carries a window it holds instead of losing each go-back-N round
/// again; a slow responder (rxe on a loaded host) that fell behind a full window is not
/// flooded with all of it at each timeout.
pub(crate) const MIN_WINDOW: u32 = 8;
/// Consecutive acknowledgement timeouts double the timer up to this many times: a responder
/// slower than the QP's `timeout` gets up to four times as long (the most IBTA lets the
/// transport timer run) before its retries run out.
pub(crate) const MAX_BACKOFF: u32 = 2;
/// Packets one turn of the executor sends before it looks at the QP again.
pub(crate) const BURST: u32 = 32;
/// An RC requester asks for an acknowledgement at least every this many packets.
pub(crate) const ACK_EVERY: u32 = 32;
/// READ response packets a requester keeps past the first one missing (they arrived out of
/// order, or the one missing was lost): one bit each in [`Rec::ahead`].
pub(crate) const READ_AHEAD: u32 = u64::BITS;
/// Response packets past a READ's missing one that make it count as lost rather than
/// overtaken (as TCP's three duplicate acknowledgements): its bytes are asked for again.
pub(crate) const REORDER: u8 = 3;

/// Response packets one READ request of the requester asks for at most: a full window, so that
/// a responder's answer is no longer a burst than what the requester sends itself. (A
/// responder answers up to `limits::READ_BURST` for one request, for requesters that ask for
/// more.)
pub(crate) const READ_CHUNK: u32 = WINDOW;

/// Where the READ request that covers offset `off` of a READ of `len` bytes ends: READs are
/// asked for in chunks of [`READ_CHUNK`] packets, at fixed offsets (a request asked again, in
/// part, after a loss lies within the one the responder remembers).
pub(crate) fn read_chunk_end(off: u32, len: u32, mtu: u32) -> u32 {
    let chunk = READ_CHUNK.saturating_mul(mtu);
    (off / chunk)
        .saturating_add(1)
        .saturating_mul(chunk)
        .min(len)
}

/// Whether a WQE of opcode `op` is one packet answered by one (an atomic, an ATOMIC_WRITE, a
/// FLUSH): it is sent again whole.
pub(crate) fn is_single(op: u32) -> bool {
    matches!(
        op,
        wop::ATOMIC_CMP_AND_SWP | wop::ATOMIC_FETCH_AND_ADD | wop::ATOMIC_WRITE | wop::FLUSH
    )
}

/// Whether the answer to a WQE of opcode `op` is an RDMA READ response ONLY without payload
/// (an ATOMIC_WRITE, a FLUSH: IBTA A19.4.3); an atomic's is an atomic acknowledgement.
pub(crate) fn answered_by_empty_read_response(op: u32) -> bool {
    matches!(op, wop::ATOMIC_WRITE | wop::FLUSH)
}

/// Whether the bytes a READ misses are asked for again ([`Window::take_repair`]).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) enum Repair {
    /// Nothing to ask for, or no evidence yet that what is missing was lost.
    #[default]
    None,
    /// Lost: a request for the bytes missing is to be sent.
    Due,
    /// Asked for from the first byte missing (`done`) since `done` last moved: asked again
    /// only after a timeout, as a responder serves requests in order and the answer is on
    /// its way.
    Asked,
}

/// A WQE the requester has taken from its send queue (the `i`-th pending one).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) wr_id: u64,
    pub(crate) op: u32,
    pub(crate) signaled: bool,
    pub(crate) len: u32,
    /// PSN of its first packet (valid once started).
    pub(crate) first_psn: u32,
    /// PSNs it takes: its packets, a READ's response packets, one for an atomic.
    pub(crate) npkts: u32,
    /// Bytes of a READ's response placed from its start on, with none missing.
    pub(crate) done: u32,
    /// READ response packets placed past `done`: bit `b` is the packet `done / mtu + b` (bit
    /// 0, the first one missing, is never set).
    pub(crate) ahead: u64,
    /// Response packets that came for PSNs past this READ's first missing one since `done`
    /// last moved (or since it was asked for again): evidence that one was lost.
    pub(crate) later: u8,
    pub(crate) repair: Repair,
    /// Where the last request for a READ's bytes (from `done` on) ends.
    pub(crate) asked_to: u32,
    /// One past the last byte of the READ that a response packet came for (placed or not).
    pub(crate) seen_to: u32,
    pub(crate) started: bool,
    /// A READ's or an atomic's answer is all in (it completes once it is the oldest).
    pub(crate) answered: bool,
    /// A local error found when it was taken (or since): it completes with this status once
    /// it is the oldest.
    pub(crate) failed: Option<WcStatus>,
    /// A local operation (REG_MR, LOCAL_INV, BIND_MW), executed when taken: no packets, it
    /// completes once it is the oldest.
    pub(crate) local: bool,
}

impl Rec {
    pub(crate) fn last_psn(&self) -> u32 {
        psn::add(self.first_psn, self.npkts.max(1) - 1)
    }

    /// The status it completes with once it is the oldest: its error, if it failed.
    pub(crate) fn status(&self) -> WcStatus {
        self.failed.unwrap_or(WcStatus::Success)
    }

    /// A READ or an atomic: it completes when its answer came.
    pub(crate) fn waits_response(&self) -> bool {
        self.op == wop::RDMA_READ || is_single(self.op)
    }

    /// One packet, answered by one packet (an atomic, an ATOMIC_WRITE, a FLUSH).
    pub(crate) fn is_single(&self) -> bool {
        is_single(self.op)
    }

    /// Whether PSN `p` is one of the packets this record sent (or asked for).
    pub(crate) fn contains(&self, p: u32) -> bool {
        self.started
            && !self.local
            && psn::diff(p, self.first_psn) >= 0
            && psn::diff(p, self.last_psn()) <= 0
    }
}

/// What a turn of the executor sends of a WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Packets to send.
    pub(crate) pkts: u32,
    /// PSNs they take (a READ request takes its responses').
    pub(crate) advance: u32,
    /// Bytes of the message sent after the turn.
    pub(crate) off: u32,
    /// The message is sent whole after the turn.
    pub(crate) whole: bool,
}

/// The turn for the WQE `rec`, `off` bytes of it sent, at most `budget` packets.
pub(crate) fn plan_turn(rec: &Rec, off: u32, mtu: u32, budget: u32) -> Plan {
    let off = off.min(rec.len);
    match rec.op {
        wop::RDMA_READ => {
            let end = read_chunk_end(off, rec.len, mtu);
            Plan {
                pkts: 1,
                advance: (end - off).div_ceil(mtu).max(1),
                off: end,
                whole: end == rec.len,
            }
        }
        o if is_single(o) => Plan {
            pkts: 1,
            advance: 1,
            off: rec.len,
            whole: true,
        },
        _ => {
            let remaining = (rec.len - off).div_ceil(mtu).max(1);
            let n = remaining.min(budget.max(1));
            Plan {
                pkts: n,
                advance: n,
                off: off.saturating_add(n.saturating_mul(mtu)).min(rec.len),
                whole: n == remaining,
            }
        }
    }
}

/// The requester's window: the records of started WQEs (a ring over `S`, oldest first), the
/// send cursor (record `next`, `off` bytes into it, at PSN `psn`) and the acknowledged edge.
///
/// # Invariants
///
/// `count <= recs.len()`, `next <= count`, `head < recs.len()` (or 0 if it is empty).
pub(crate) struct Window<S> {
    recs: S,
    head: usize,
    count: usize,
    /// The record being sent (records before it are sent whole).
    next: usize,
    /// Bytes of record `next` sent.
    off: u32,
    /// The PSN of the next packet.
    psn: u32,
    /// The oldest PSN not acknowledged.
    una: u32,
    /// One past the highest PSN sent (`psn` is lower after going back).
    max_psn: u32,
    /// Where the requester last went back to, while that round of sending is under way: a NAK
    /// for a PSN it has sent again since is stale (caused by packets of the round before).
    resent_from: Option<u32>,
    /// Changes when the requester goes back (a turn of the executor started before sent
    /// packets that no longer count).
    gen: u32,
    /// Packets the requester may have in flight now (see [`MIN_WINDOW`]).
    cwnd: u32,
    /// Where the window stops growing by every PSN acknowledged (see [`MIN_WINDOW`]).
    ssthresh: u32,
    /// PSNs acknowledged since the window last grew by one above `ssthresh`.
    acked_above: u32,
    /// After a loss, one past the highest PSN sent then: losses until it is acknowledged are
    /// of the same window and do not shrink it again (`None`: no loss pending).
    recover: Option<u32>,
    /// `una` when the window last grew.
    una_seen: u32,
    /// Acknowledgement timeouts in a row (see [`MAX_BACKOFF`]).
    backoff: u32,
    /// Counts the response packets that brought something new (a READ's bytes, an atomic's
    /// answer): the responder is alive and serving, even while the oldest PSN waits.
    heard: u32,
}

/// What a READ response packet is to the READ whose PSNs hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadPacket {
    /// New bytes: placed at offset `off` of the READ's local buffer.
    Place { off: u32 },
    /// Placed before: dropped.
    Duplicate,
    /// Too far past the first packet missing to be kept: dropped (asked for again later).
    Beyond,
    /// Not the size its offset gives (every packet but the READ's last is `mtu` bytes), or
    /// past the READ's end: the READ fails.
    BadSize,
}

/// A request for bytes a READ misses ([`Window::take_repair`]), sent beside the send cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RepairAsk {
    /// The record (from the oldest).
    pub(crate) index: usize,
    pub(crate) rec: Rec,
    /// The bytes asked for, `off..end` of the READ, and the PSN of the first.
    pub(crate) off: u32,
    pub(crate) end: u32,
    pub(crate) psn: u32,
}

impl<S: DerefMut<Target = [Rec]>> Window<S> {
    /// A window over the records `recs` (one per send queue entry), at PSN 0.
    pub(crate) fn new(recs: S) -> Self {
        Window {
            recs,
            head: 0,
            count: 0,
            next: 0,
            off: 0,
            psn: 0,
            una: 0,
            max_psn: 0,
            resent_from: None,
            gen: 0,
            cwnd: WINDOW,
            ssthresh: WINDOW,
            acked_above: 0,
            recover: None,
            una_seen: 0,
            backoff: 0,
            heard: 0,
        }
    }

    /// Counts the response packets that brought something new.
    pub(crate) fn heard(&self) -> u32 {
        self.heard
    }

    /// Records held (started or taken WQEs not completed).
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The record the send cursor is at (`count` when every record is sent whole).
    pub(crate) fn next(&self) -> usize {
        self.next
    }

    /// Bytes of record `next` sent.
    pub(crate) fn off(&self) -> u32 {
        self.off
    }

    /// The PSN of the next packet.
    pub(crate) fn psn(&self) -> u32 {
        self.psn
    }

    /// The oldest PSN not acknowledged.
    pub(crate) fn una(&self) -> u32 {
        self.una
    }

    /// One past the highest PSN sent.
    pub(crate) fn max_psn(&self) -> u32 {
        self.max_psn
    }

    /// Changes whenever the send cursor jumps (going back, skipping on, clearing).
    pub(crate) fn gen(&self) -> u32 {
        self.gen
    }

    /// Acknowledgement timeouts in a row.
    pub(crate) fn backoff(&self) -> u32 {
        self.backoff
    }

    /// The `i`-th record from the oldest (a default one past the end).
    pub(crate) fn rec(&self, i: usize) -> Rec {
        let n = self.recs.len().max(1);
        self.recs
            .get((self.head + i) % n)
            .copied()
            .unwrap_or_default()
    }

    pub(crate) fn set_rec(&mut self, i: usize, r: Rec) {
        let n = self.recs.len().max(1);
        if let Some(slot) = self.recs.get_mut((self.head + i) % n) {
            *slot = r;
        }
    }

    /// The first record (from the oldest) that `f` accepts, among the first `upto`.
    pub(crate) fn find(&self, upto: usize, f: impl Fn(&Rec) -> bool) -> Option<usize> {
        (0..upto.min(self.count)).find(|&i| f(&self.rec(i)))
    }

    /// Records that wait for a READ response or an atomic acknowledgement.
    pub(crate) fn waiting_responses(&self) -> u32 {
        (0..self.count)
            .filter(|&i| self.rec(i).waits_response())
            .count() as u32
    }

    /// Adds a record after the newest; `false` if the ring is full.
    pub(crate) fn push(&mut self, r: Rec) -> bool {
        if self.count >= self.recs.len() {
            return false;
        }
        self.count += 1;
        self.set_rec(self.count - 1, r);
        true
    }

    /// Removes the oldest record (it completed).
    pub(crate) fn pop(&mut self) -> Rec {
        let r = self.rec(0);
        if self.count > 0 {
            self.head = (self.head + 1) % self.recs.len().max(1);
            self.count -= 1;
            self.next = self.next.saturating_sub(1);
            if self.next == 0 && self.count == 0 {
                self.off = 0;
            }
        }
        r
    }

    /// The ring is full: no WQE can be taken until the oldest completes.
    pub(crate) fn is_full(&self) -> bool {
        self.count >= self.recs.len()
    }

    /// Moves the send cursor past every record (a local operation executed when taken).
    pub(crate) fn pass_all(&mut self) {
        self.next = self.count;
        self.off = 0;
    }

    /// Moves the send cursor past record `next` (executed when taken, or failed).
    pub(crate) fn pass_one(&mut self) {
        self.next += 1;
        self.off = 0;
    }

    /// Forgets the records (the send queue was flushed or emptied) and what the window learnt
    /// of the path; the PSNs stay.
    pub(crate) fn clear(&mut self) {
        self.new_path();
        self.head = 0;
        self.count = 0;
        self.next = 0;
        self.off = 0;
        self.una = self.psn;
        self.una_seen = self.psn;
        self.max_psn = self.psn;
        self.resent_from = None;
        self.gen = self.gen.wrapping_add(1);
        self.backoff = 0;
    }

    /// The PSN a modify set (`sq_psn`): nothing in flight, and a path learnt anew.
    pub(crate) fn set_psn(&mut self, p: u32) {
        self.new_path();
        self.psn = p & psn::MASK;
        self.una = self.psn;
        self.una_seen = self.psn;
        self.max_psn = self.psn;
    }

    /// The congestion window of a path nothing is known of: full (see [`MIN_WINDOW`]).
    fn new_path(&mut self) {
        self.cwnd = WINDOW;
        self.ssthresh = WINDOW;
        self.acked_above = 0;
        self.recover = None;
    }

    /// PSNs sent and not acknowledged.
    pub(crate) fn outstanding(&self) -> u32 {
        psn::diff(self.psn, self.una).max(0) as u32
    }

    /// Packets the requester may send now: its window, opened by what was acknowledged since
    /// it last looked, less what is in flight.
    pub(crate) fn room(&mut self) -> u32 {
        let acked = psn::diff(self.una, self.una_seen);
        if acked > 0 {
            self.grow(acked as u32);
            // (Only forward: the oldest PSN not acknowledged moves back when a READ answered
            // in part goes again, and its PSNs must not open the window twice.)
            self.una_seen = self.una;
        }
        self.recovered();
        self.cwnd.saturating_sub(self.outstanding())
    }

    /// Forgets the recovery point once what was in flight at the loss is acknowledged (PSNs
    /// are a circle: a point left behind would seem ahead again half a circle later).
    fn recovered(&mut self) {
        if self.recover.is_some_and(|r| psn::diff(self.una, r) >= 0) {
            self.recover = None;
        }
    }

    /// Packets the requester may have in flight (its congestion window).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn cwnd(&self) -> u32 {
        self.cwnd
    }

    /// `acked` more PSNs acknowledged: the window grows by each below the threshold, by one per
    /// window's worth above it (see [`MIN_WINDOW`]).
    fn grow(&mut self, mut acked: u32) {
        if self.cwnd < self.ssthresh {
            let by = acked.min(self.ssthresh - self.cwnd);
            self.cwnd += by;
            acked -= by;
        }
        self.acked_above = self.acked_above.saturating_add(acked);
        while self.cwnd < WINDOW && self.acked_above >= self.cwnd {
            self.acked_above -= self.cwnd;
            self.cwnd += 1;
        }
        if self.cwnd >= WINDOW {
            self.cwnd = WINDOW;
            self.acked_above = 0;
        }
    }

    /// The window after a loss: `ssthresh` becomes half of it, and it becomes `1 / divisor` of
    /// it (at least [`MIN_WINDOW`] each).
    fn shrink(&mut self, divisor: u32) {
        self.ssthresh = (self.cwnd / 2).max(MIN_WINDOW);
        self.cwnd = (self.cwnd / divisor).max(MIN_WINDOW);
        self.acked_above = 0;
        self.una_seen = self.una;
    }

    /// A packet was lost on the way (a sequence NAK that sends a round again): the window
    /// halves, unless a loss of the same window of data halved it already (see
    /// [`MIN_WINDOW`]).
    pub(crate) fn lost(&mut self) {
        self.recovered();
        if self.recover.is_some() {
            return;
        }
        self.recover = Some(self.max_psn);
        self.shrink(2);
    }

    /// What a READ may ask for now. The congestion window holds back what the requester sends
    /// itself; a READ's responses are the responder's to pace (and the requester's credits,
    /// `max_rd_atomic`, and its chunks of [`READ_CHUNK`] bound them). (Bounding READs by the
    /// congestion window too, and counting a READ's bytes asked for again as a loss, made READs
    /// between two QEMU guests run out of retries: not done until that is understood.)
    pub(crate) fn read_room(&self) -> u32 {
        WINDOW.saturating_sub(self.outstanding())
    }

    /// An acknowledgement timeout: the window shrinks (see [`MIN_WINDOW`]) and the timer backs
    /// off (see [`MAX_BACKOFF`]).
    pub(crate) fn timed_out(&mut self) {
        self.recover = Some(self.max_psn);
        self.shrink(4);
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
    }

    /// The acknowledged edge moved since the timer was armed: the backoff ends.
    pub(crate) fn progressed(&mut self) {
        self.backoff = 0;
    }

    /// Starts record `i` at the current PSN if it has not started.
    pub(crate) fn start(&mut self, i: usize) -> Rec {
        let mut r = self.rec(i);
        if !r.started {
            r.started = true;
            r.first_psn = self.psn;
            self.set_rec(i, r);
        }
        r
    }

    /// Resumes the READ at the send cursor from its first byte not placed, if the cursor is
    /// at its start but some of its answer is placed: going back to a record before it passes
    /// through it again, and it is asked for again from there, as [`Self::go_back`] asks for
    /// the record it lands in. (A responder that served the rest of it again from a later
    /// byte, as rxe does, drops a request for bytes before that: the READ would never be
    /// answered.) The PSNs of the bytes placed are passed over.
    pub(crate) fn resume_read(&mut self, mtu: u32) {
        let r = self.rec(self.next);
        // (One answered whole is asked for again whole: its answers are duplicates then.)
        if self.next < self.count
            && r.op == wop::RDMA_READ
            && r.started
            && self.off == 0
            && r.done < r.len
        {
            let done = r.done - r.done % mtu.max(1);
            if done > 0 {
                self.off = done;
                self.psn = psn::add(r.first_psn, done / mtu.max(1));
            }
        }
    }

    /// Passes over the record at the send cursor if it is a READ or an atomic whose answer is
    /// all in (going back passes through it): the responder executed its request, so asking
    /// again would only make it send the same answer again (to a slow responder, a queue of
    /// them). `false` if the cursor is elsewhere.
    pub(crate) fn pass_answered(&mut self) -> bool {
        let r = self.rec(self.next);
        if self.next >= self.count
            || !r.started
            || r.local
            || !r.waits_response()
            || !r.answered
            || self.off != 0
        {
            return false;
        }
        self.psn = psn::add(r.first_psn, r.npkts.max(1));
        if psn::diff(self.psn, self.max_psn) > 0 {
            self.max_psn = self.psn;
        }
        self.pass_one();
        true
    }

    /// Where the READ request of the turn `plan` of record `next` ends: its chunk's end, or,
    /// asked again from its first byte missing with bytes after it placed, that gap's end (the
    /// rest of the chunk counts as asked for: what else it misses is asked for by repairs,
    /// [`Self::take_repair`], always from the first byte missing on).
    fn read_end(&self, plan: &Plan, mtu: u32) -> u32 {
        let r = self.rec(self.next);
        if r.op != wop::RDMA_READ || self.off != r.done || r.ahead == 0 {
            return plan.off;
        }
        let gap = r.ahead.trailing_zeros().saturating_mul(mtu.max(1));
        plan.off.min(r.done.saturating_add(gap))
    }

    /// The turn `plan` of record `next` is under way: its PSNs are taken before a packet goes
    /// (the peer's answer may come, in softirq on this CPU, before the transmission returns).
    /// Returns where a READ's request ends ([`Self::read_end`]).
    pub(crate) fn take_turn(&mut self, plan: &Plan, mtu: u32) -> u32 {
        let read_end = self.read_end(plan, mtu);
        let mut r = self.rec(self.next);
        if r.op == wop::RDMA_READ && self.next < self.count && self.off <= r.done {
            // Asked for from its first byte missing (a go-back, the next chunk): what is
            // missing is counted afresh against this request's answer.
            r.repair = Repair::None;
            r.later = 0;
            r.asked_to = read_end;
            self.set_rec(self.next, r);
        }
        self.psn = psn::add(self.psn, plan.advance);
        if psn::diff(self.psn, self.max_psn) > 0 {
            self.max_psn = self.psn;
        }
        self.off = plan.off;
        if plan.whole {
            self.pass_one();
        }
        read_end
    }

    /// Sends again from PSN `p` (go-back-N): the record holding it becomes the one being sent;
    /// a READ is asked for again from its first byte not placed. Returns how many PSNs go
    /// again, or `None` if no record holds `p`.
    pub(crate) fn go_back(&mut self, p: u32, mtu: u32) -> Option<u64> {
        let i = self.find(self.count, |r| r.contains(p))?;
        let r = self.rec(i);
        let k = psn::diff(p, r.first_psn).max(0) as u32;
        let off = if r.is_single() {
            0
        } else {
            k.saturating_mul(mtu).min(r.len)
        };
        let resent = psn::diff(self.max_psn, p).max(0) as u64;
        let (p, off) = if r.waits_response() && r.answered {
            // At its start, where the cursor passes it ([`Self::pass_answered`]).
            (r.first_psn, 0)
        } else if r.op == wop::RDMA_READ {
            let done = r.done - r.done % mtu;
            (psn::add(r.first_psn, done / mtu), done)
        } else {
            (p, off)
        };
        self.next = i;
        self.off = off;
        self.psn = p;
        self.resent_from = Some(p);
        self.gen = self.gen.wrapping_add(1);
        Some(resent)
    }

    /// Whether a request to go back to `p` is stale: this round of sending again started at or
    /// before `p` and has sent `p` already.
    pub(crate) fn is_stale(&self, p: u32) -> bool {
        self.resent_from
            .is_some_and(|from| psn::diff(p, from) >= 0 && psn::diff(p, self.psn) < 0)
    }

    /// Moves the send cursor on to `p` (acknowledged while the requester was sending again what
    /// it had sent before): what the responder has is not sent a third time.
    pub(crate) fn skip_to(&mut self, p: u32, mtu: u32) {
        if psn::diff(p, self.psn) <= 0 {
            return;
        }
        match self.find(self.count, |r| r.contains(p)) {
            Some(i) => {
                let r = self.rec(i);
                if r.waits_response() {
                    // A READ or an atomic restarts whole (from what was placed): go no further.
                    return;
                }
                self.next = i;
                self.off = (psn::diff(p, r.first_psn).max(0) as u32)
                    .saturating_mul(mtu)
                    .min(r.len);
            }
            None => {
                // Past every started record: at the first one not started.
                self.next = self.find(self.count, |r| !r.started).unwrap_or(self.count);
                self.off = 0;
            }
        }
        self.psn = p;
        self.gen = self.gen.wrapping_add(1);
    }

    /// Whether `p` was sent and is not acknowledged (an acknowledgement for it means
    /// something).
    pub(crate) fn in_flight(&self, p: u32) -> bool {
        psn::diff(p, self.una) >= 0 && psn::diff(p, self.max_psn) < 0
    }

    /// The oldest unacknowledged PSN is `p` now, if that moves it on.
    pub(crate) fn advance_una(&mut self, p: u32) {
        if psn::diff(p, self.una) > 0 {
            self.una = p;
        }
    }

    /// The oldest unacknowledged PSN is `p` now (the first of a READ or an atomic still waiting
    /// may be behind where an acknowledgement put it).
    pub(crate) fn set_una(&mut self, p: u32) {
        self.una = p;
    }

    /// Everything up to `p` is acknowledged.
    pub(crate) fn acked(&mut self, p: u32) {
        self.una = psn::add(p, 1);
    }

    /// Where the requests sent for record `i` end: it is a READ whose bytes from that offset on
    /// have not been asked for (since the send cursor last went back before it).
    fn asked_end(&self, i: usize) -> u32 {
        match i.cmp(&self.next) {
            core::cmp::Ordering::Less => self.rec(i).len,
            core::cmp::Ordering::Equal => self.off,
            core::cmp::Ordering::Greater => 0,
        }
    }

    /// What the READ response packet at PSN `p` with `n` bytes is to record `i` (a READ whose
    /// PSNs hold `p`).
    pub(crate) fn classify_read(&self, i: usize, p: u32, n: u32, mtu: u32) -> ReadPacket {
        let r = self.rec(i);
        let mtu = mtu.max(1);
        let Ok(k) = u32::try_from(psn::diff(p, r.first_psn)) else {
            return ReadPacket::Duplicate;
        };
        let Some(off) = k.checked_mul(mtu) else {
            return ReadPacket::BadSize;
        };
        if r.len == 0 {
            // A READ of nothing: one empty response.
            return match (k, n, r.answered) {
                (0, 0, false) => ReadPacket::Place { off: 0 },
                (0, 0, true) => ReadPacket::Duplicate,
                _ => ReadPacket::BadSize,
            };
        }
        if off < r.done {
            return ReadPacket::Duplicate;
        }
        if off >= r.len {
            return ReadPacket::BadSize;
        }
        let b = k - r.done / mtu;
        if b >= READ_AHEAD {
            return ReadPacket::Beyond;
        }
        if r.ahead & (1u64 << b) != 0 {
            return ReadPacket::Duplicate;
        }
        if n != mtu.min(r.len - off) {
            return ReadPacket::BadSize;
        }
        ReadPacket::Place { off }
    }

    /// The packet at offset `off` of record `i` (a [`ReadPacket::Place`]) is placed: `done`
    /// moves on over it and the packets after it placed before, or it is kept in `ahead`.
    pub(crate) fn read_placed(&mut self, i: usize, off: u32, mtu: u32) {
        let mtu = mtu.max(1);
        let mut r = self.rec(i);
        let (k, base) = (off / mtu, r.done / mtu);
        r.seen_to = r.seen_to.max(off.saturating_add(mtu).min(r.len));
        if k == base {
            r.done = r.done.saturating_add(mtu).min(r.len);
            r.ahead >>= 1;
            while r.ahead & 1 != 0 && r.done < r.len {
                r.done = r.done.saturating_add(mtu).min(r.len);
                r.ahead >>= 1;
            }
            // What came past the next one missing is evidence it was lost; a request for
            // the old one missing does not cover it.
            r.later = u8::try_from(r.ahead.count_ones()).unwrap_or(u8::MAX);
            r.repair = Repair::None;
            // The last request's answer is all in, and packets came past the next byte
            // missing: that one was lost (the packets that showed it came before and do not
            // come again to count).
            if r.done >= r.asked_to && r.seen_to > r.done && self.asked_end(i) > r.done {
                r.repair = Repair::Due;
            }
        } else if let Some(bit) = k.checked_sub(base).filter(|&b| b < READ_AHEAD) {
            r.ahead |= 1u64 << bit;
        }
        r.answered = r.done >= r.len;
        self.heard = self.heard.wrapping_add(1);
        self.set_rec(i, r);
    }

    /// A packet for offset `off` of READ `i` came that was too far ahead to keep.
    pub(crate) fn read_beyond(&mut self, i: usize, off: u32, mtu: u32) {
        let mut r = self.rec(i);
        r.seen_to = r.seen_to.max(off.saturating_add(mtu.max(1)).min(r.len));
        self.set_rec(i, r);
    }

    /// An answer to a single-packet request (an atomic) came.
    pub(crate) fn answer_heard(&mut self) {
        self.heard = self.heard.wrapping_add(1);
    }

    /// A response packet for PSN `p` came (`ends`: it ends a response, as a READ's LAST or
    /// ONLY and an atomic's acknowledgement do): every READ asked for that still misses a
    /// packet before `p` counts it as evidence that packet was lost (a responder answers in
    /// order), and at [`REORDER`] of them, or at the end of a response past it, asking for
    /// its missing bytes again is due.
    pub(crate) fn note_response(&mut self, p: u32, ends: bool, mtu: u32) {
        let mtu = mtu.max(1);
        for j in 0..self.count {
            let mut r = self.rec(j);
            if !r.started || psn::diff(r.first_psn, p) > 0 {
                // Records are in PSN order: none from here on misses a packet before `p`.
                break;
            }
            if r.op != wop::RDMA_READ || r.local || r.answered {
                continue;
            }
            let missing = psn::add(r.first_psn, r.done / mtu);
            if psn::diff(p, missing) <= 0 {
                continue;
            }
            r.later = r.later.saturating_add(1);
            if r.repair == Repair::None
                && (r.later >= REORDER || ends)
                && self.asked_end(j) > r.done
            {
                r.repair = Repair::Due;
            }
            self.set_rec(j, r);
        }
    }

    /// Record `i`, a READ or an atomic, was acknowledged past (its answer cannot come any
    /// more): a READ's missing bytes are due to be asked for again unless they are. `true`
    /// if that is a READ's repair (an atomic goes back instead).
    pub(crate) fn answer_lost(&mut self, i: usize) -> bool {
        let mut r = self.rec(i);
        if r.op != wop::RDMA_READ {
            return false;
        }
        if r.repair == Repair::None && self.asked_end(i) > r.done {
            r.repair = Repair::Due;
            self.set_rec(i, r);
        }
        true
    }

    /// Whether a request for a READ's missing bytes is due.
    pub(crate) fn repair_due(&self) -> bool {
        self.find(self.count, |r| r.repair == Repair::Due).is_some()
    }

    /// The request for the bytes missing of the oldest READ that is due one: from its first
    /// byte missing to the first one placed after it (only the gap: a responder answers a
    /// part of a READ it served, rxe_resp.c's duplicate_request and ours alike), within its
    /// chunk and what was asked for. Every request for a READ starts at its first byte
    /// missing, which only moves on: rxe moves a READ's start to where it was last asked
    /// from and drops a request for bytes before that.
    pub(crate) fn take_repair(&mut self, mtu: u32) -> Option<RepairAsk> {
        let mtu = mtu.max(1);
        let index = self.find(self.count, |r| r.repair == Repair::Due)?;
        let mut r = self.rec(index);
        let off = r.done;
        let gap_end = if r.ahead == 0 {
            r.len
        } else {
            off.saturating_add(r.ahead.trailing_zeros().saturating_mul(mtu))
        };
        let end = read_chunk_end(off, r.len, mtu)
            .min(gap_end)
            .min(self.asked_end(index));
        r.repair = Repair::Asked;
        r.later = 0;
        r.asked_to = end;
        self.set_rec(index, r);
        (end > off && off % mtu == 0).then(|| RepairAsk {
            index,
            rec: r,
            off,
            end,
            psn: psn::add(r.first_psn, off / mtu),
        })
    }

    /// Ends the round of going back if everything sent again is acknowledged.
    pub(crate) fn finish_round(&mut self) {
        if self
            .resent_from
            .is_some_and(|from| psn::diff(self.una, from) > 0)
            && psn::diff(self.una, self.psn) >= 0
        {
            self.resent_from = None;
        }
    }
}
