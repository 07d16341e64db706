// SPDX-License-Identifier: GPL-2.0

//! A responder's replies on the wire (RC): acknowledgements, atomic acknowledgements and RDMA
//! READ responses, sent in the order of the requests they answer.
//!
//! One READ request of 60 bytes asks for up to [`limits::READ_BURST`] response packets. They
//! are not all sent by the softirq that received the request: replies wait in the QP's
//! [`ReplyQueue`] (a bounded ring, in request order), and one sender at a time (the queue's
//! `sending` token) sends them, at most [`SOFTIRQ_PACKETS`] per received packet; then the QP's
//! work item takes the token and sends [`WORK_PACKETS`] per run, queueing itself again until
//! the queue is empty. So the work one received packet causes in softirq is bounded, and a
//! requester that asks for many READs waits for its answers instead of taking the CPU.
//!
//! A reply that finds the queue empty and nobody sending goes out at once (acknowledgements of
//! SENDs and WRITEs cost no more than before); behind a READ it waits its turn, since a later
//! acknowledgement must not overtake a READ's response (the requester would take the READ's
//! response for lost). The queue stays in PSN order: a reply to a duplicate request is put
//! where its PSN goes. Plain acknowledgements queued in a row are merged (the later one
//! acknowledges what the earlier did); when the ring is full a reply is dropped, as the wire
//! may drop it (the requester times out and asks again, and a duplicate READ is served from
//! what the responder remembers, `rc.rs`), but a NAK has the last [`NAK_ROOM`] slots to
//! itself.
//!
//! A duplicate READ (the requester went back) replaces the READ responses queued from its PSN
//! on, so a requester that asks again, or anybody who replays its requests, does not make the
//! responder send the same packets twice over.
//!
//! A responder that enters the error state still sends what it queued, up to the NAK that put
//! it there (IBTA: the NAK goes out, then the QP is in error); only a reset empties the queue.

use kernel::{
    alloc::KVec,
    prelude::*,
    rdma::{access, sw::wire::RouteCache, AddressVector, Qp, QpState},
    sync::Arc,
};

use crate::verbs::memory;
use crate::{
    engine::{
        qp::{After, QpShared},
        rc,
    },
    net::wire::{self, TxError},
    protocol::{
        bth::Bth,
        eth::Aeth,
        limits,
        opcode::{self, op},
        packet::Headers,
        psn,
        transport::{self, NakCode, Syndrome},
    },
    verbs::{device::Ferroce, memory::Walk, stats::Stat},
};

/// Reply packets one received packet may send from softirq; the QP's work item sends the rest.
const SOFTIRQ_PACKETS: u32 = 16;
/// Reply packets one run of the QP's work item sends before it queues itself again (other
/// QPs' work runs in between).
const WORK_PACKETS: u32 = 256;
/// Replies a queue holds: a READ or an atomic for every request a requester may have
/// outstanding ([`limits::MAX_QP_RD_ATOM`]), NAKs and acknowledgements between them.
const QUEUE: usize = 2 * limits::MAX_QP_RD_ATOM as usize;
/// Slots of a queue only NAKs take: a NAK is never dropped for a queue full of responses
/// (a lost sequence-error NAK is not sent again until the requester times out).
const NAK_ROOM: usize = 8;

/// What a responder sends back for a request.
#[derive(Clone, Copy)]
pub(crate) enum Reply {
    None,
    Ack {
        psn: u32,
        syndrome: u8,
        msn: u32,
    },
    /// The response to the READ of `len` bytes at `va` asked for at `psn`; `mid`: it continues
    /// one cut short (its first packet is not a FIRST).
    Read {
        psn: u32,
        va: u64,
        rkey: u32,
        len: u32,
        msn: u32,
        mid: bool,
    },
    Atomic {
        psn: u32,
        orig: u64,
        msn: u32,
    },
    /// An ATOMIC_WRITE or a FLUSH done: an RDMA READ response ONLY without payload.
    ReadAck {
        psn: u32,
        msn: u32,
    },
}

/// An acknowledgement of everything up to `psn`.
pub(crate) fn ack(psn: u32, msn: u32) -> Reply {
    Reply::Ack {
        psn,
        syndrome: Syndrome::Ack {
            credits: transport::CREDITS_INVALID,
        }
        .to_byte(),
        msn,
    }
}

/// A NAK of the request at `psn`.
pub(crate) fn nak(psn: u32, code: NakCode, msn: u32) -> Reply {
    Reply::Ack {
        psn,
        syndrome: Syndrome::Nak(code).to_byte(),
        msn,
    }
}

/// The part of a READ response still to send: from the packet `psn`, carrying the bytes from
/// `va` on (`left` of them to the end of the READ), at most `pkts` packets before the
/// requester has to ask again.
#[derive(Clone, Copy)]
struct ReadPart {
    psn: u32,
    va: u64,
    rkey: u32,
    left: u32,
    msn: u32,
    /// The next packet is not the response's first.
    mid: bool,
    pkts: u32,
}

/// A queued reply.
#[derive(Clone, Copy)]
enum Queued {
    Read(ReadPart),
    Other(Reply),
}

impl Queued {
    /// The PSN of the next packet it sends.
    fn psn(&self) -> u32 {
        match *self {
            Queued::Read(r) => r.psn,
            Queued::Other(
                Reply::Ack { psn, .. }
                | Reply::Atomic { psn, .. }
                | Reply::ReadAck { psn, .. }
                | Reply::Read { psn, .. },
            ) => psn,
            Queued::Other(Reply::None) => 0,
        }
    }

    fn is_nak(&self) -> bool {
        matches!(self, Queued::Other(Reply::Ack { syndrome, .. })
            if !matches!(Syndrome::from_byte(*syndrome), Some(Syndrome::Ack { .. })))
    }

    fn is_plain_ack(&self) -> bool {
        matches!(self, Queued::Other(Reply::Ack { syndrome, .. })
            if matches!(Syndrome::from_byte(*syndrome), Some(Syndrome::Ack { .. })))
    }

    /// The one-packet answer to a one-packet request (an atomic, an ATOMIC_WRITE, a FLUSH).
    fn is_single_answer(&self) -> bool {
        matches!(
            self,
            Queued::Other(Reply::Atomic { .. } | Reply::ReadAck { .. })
        )
    }
}

/// What a received packet's handler does with its reply (see [`ReplyQueue::offer`]).
pub(crate) enum Offer {
    /// Nothing to send.
    Nothing,
    /// Send it now: nothing is queued before it.
    Now(Reply),
    /// Queued; the caller took the token and calls [`send_queued`] once it dropped the lock.
    Send,
    /// Queued behind the replies a sender is sending.
    Queued,
    /// Dropped: the queue is full.
    Dropped,
}

/// A responder's replies waiting to be sent (under the QP's lock).
pub(crate) struct ReplyQueue {
    ring: KVec<Queued>,
    head: usize,
    len: usize,
    /// Somebody sends the queue's replies (the token): a received packet's handler, or the
    /// QP's work item.
    sending: bool,
    /// The token was handed to the QP's work item.
    to_work: bool,
}

impl ReplyQueue {
    /// The queue of an RC QP (`rc`); other QPs send no replies and get an empty one.
    pub(crate) fn new(rc: bool) -> Result<Self> {
        Ok(ReplyQueue {
            ring: KVec::from_elem(
                Queued::Other(Reply::None),
                if rc { QUEUE } else { 0 },
                GFP_KERNEL,
            )?,
            head: 0,
            len: 0,
            sending: false,
            to_work: false,
        })
    }

    /// Forgets the queued replies (the QP went back to RESET, or a NAK ended what it says). A
    /// sender still holding the token finds the queue empty and gives it back.
    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    fn at(&self, i: usize) -> Option<&Queued> {
        self.ring.get((self.head + i) % self.ring.len().max(1))
    }

    fn at_mut(&mut self, i: usize) -> Option<&mut Queued> {
        let n = self.ring.len().max(1);
        self.ring.get_mut((self.head + i) % n)
    }

    /// Takes the reply of a received request (`mtu`: the QP's path MTU): says whether to send
    /// it now, queue it and send the queue (the caller now holds the token), or leave it to
    /// the sender. Replies that would have to wait are queued, even when nobody sends yet, so
    /// they keep their order.
    pub(crate) fn offer(&mut self, reply: Reply, mtu: u32) -> Offer {
        let queued = match reply {
            Reply::None => return Offer::Nothing,
            Reply::Read {
                psn,
                va,
                rkey,
                len,
                msn,
                mid,
            } => Queued::Read(ReadPart {
                psn,
                va,
                rkey,
                left: len,
                msn,
                mid,
                pkts: len.div_ceil(mtu.max(1)).clamp(1, limits::READ_BURST),
            }),
            other => {
                if !self.sending && self.len == 0 {
                    return Offer::Now(other);
                }
                Queued::Other(other)
            }
        };
        // Where its PSN goes: at the end, unless it answers a duplicate request.
        let mut at = self.len;
        while at > 0
            && self
                .at(at - 1)
                .is_some_and(|q| psn::diff(q.psn(), queued.psn()) > 0)
        {
            at -= 1;
        }
        let merge = at == self.len
            && at > 0
            && queued.is_plain_ack()
            && self.at(at - 1).is_some_and(|q| q.is_plain_ack());
        // The answer to a one-packet request asked again while its answer waits: one answer
        // (replays of a duplicate do not add up).
        let again = at > 0
            && queued.is_single_answer()
            && self
                .at(at - 1)
                .is_some_and(|q| q.is_single_answer() && q.psn() == queued.psn());
        if merge || again {
            if let Some(last) = self.at_mut(at - 1) {
                *last = queued;
            }
        } else {
            let room = if queued.is_nak() {
                self.ring.len()
            } else {
                self.ring.len().saturating_sub(NAK_ROOM)
            };
            if self.len >= room {
                return Offer::Dropped;
            }
            self.len += 1;
            let mut i = self.len - 1;
            while i > at {
                let Some(&prev) = self.at(i - 1) else { break };
                if let Some(slot) = self.at_mut(i) {
                    *slot = prev;
                }
                i -= 1;
            }
            if let Some(slot) = self.at_mut(at) {
                *slot = queued;
            }
        }
        if self.sending {
            return Offer::Queued;
        }
        self.sending = true;
        Offer::Send
    }

    /// A duplicate READ at `from` asks again for the responses from `from` on: the READ
    /// responses queued for PSNs at or after it go (other replies stay, in order).
    pub(crate) fn cut_reads_from(&mut self, from: u32) {
        let mut kept = 0;
        for i in 0..self.len {
            let Some(&q) = self.at(i) else { break };
            let q = match q {
                Queued::Read(r) if psn::diff(r.psn, from) >= 0 => continue,
                Queued::Read(mut r) => {
                    // Sent up to before `from`: it stops there.
                    let upto = psn::diff(from, r.psn) as u32;
                    r.pkts = r.pkts.min(upto);
                    Queued::Read(r)
                }
                other => other,
            };
            if let Some(slot) = self.at_mut(kept) {
                *slot = q;
            }
            kept += 1;
        }
        self.len = kept;
    }

    /// A duplicate READ at `from` asks again for `len` bytes, a part of what is left of a READ
    /// (a requester asking for a gap alone): the READ responses queued for those PSNs go, so
    /// that asking for overlapping parts does not queue the same packets many times over. A
    /// queued part that reaches past both ends of it stays whole.
    pub(crate) fn cut_reads_in(&mut self, from: u32, len: u32, mtu: u32) {
        let mtu = mtu.max(1);
        let n = len.div_ceil(mtu).max(1);
        let mut kept = 0;
        for i in 0..self.len {
            let Some(&q) = self.at(i) else { break };
            let q = match q {
                Queued::Read(mut r) => {
                    // Where the queued part starts and ends, from `from` on.
                    let start = psn::diff(r.psn, from);
                    let end = start.saturating_add(r.pkts as i32);
                    let n = n as i32;
                    if start >= 0 && end <= n {
                        continue;
                    }
                    if (0..n).contains(&start) {
                        // Starts inside: it goes on after it.
                        let d = (n - start) as u32;
                        let bytes = d.saturating_mul(mtu).min(r.left);
                        r.psn = psn::add(r.psn, d);
                        r.va = r.va.wrapping_add(bytes.into());
                        r.left -= bytes;
                        r.pkts -= d;
                        r.mid = true;
                    } else if start < 0 && end > 0 && end <= n {
                        // Ends inside: it stops before it.
                        r.pkts = (-start) as u32;
                    }
                    Queued::Read(r)
                }
                other => other,
            };
            if let Some(slot) = self.at_mut(kept) {
                *slot = q;
            }
            kept += 1;
        }
        self.len = kept;
    }

    /// Takes the next packets to send, at most `budget` of them (`budget` > 0): a part of the
    /// READ response in front, or the reply in front; and how many packets that is.
    fn take(&mut self, budget: u32, mtu: u32) -> Option<(Queued, u32)> {
        let front = *self.at(0).filter(|_| self.len > 0)?;
        match front {
            Queued::Read(r) => {
                let n = r.pkts.min(budget);
                let mut rest = r;
                for _ in 0..n {
                    let chunk = mtu.min(rest.left);
                    rest.psn = psn::add(rest.psn, 1);
                    rest.va = rest.va.wrapping_add(chunk.into());
                    rest.left -= chunk;
                    rest.mid = true;
                }
                rest.pkts -= n;
                if rest.pkts == 0 {
                    self.pop();
                } else if let Some(slot) = self.at_mut(0) {
                    *slot = Queued::Read(rest);
                }
                Some((Queued::Read(ReadPart { pkts: n, ..r }), n))
            }
            other => {
                self.pop();
                Some((other, 1))
            }
        }
    }

    fn pop(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) % self.ring.len().max(1);
            self.len -= 1;
        }
    }
}

/// Where a responder's replies go, read under the lock.
pub(crate) struct Back {
    av: AddressVector,
    /// Where the QP keeps the way to `av` (`QpShared::routes`).
    routes: Option<Arc<RouteCache>>,
    dest_qpn: u32,
    mtu: u32,
    /// The QP's P_Key.
    pkey: u16,
}

impl Back {
    /// The peer of `qp` (whose shared state is `st`), if it has one (`mtu`: the path MTU in
    /// bytes).
    pub(crate) fn of(qp: &Qp<Ferroce>, st: &QpShared, mtu: u32) -> Option<Back> {
        st.attr.av.map(|av| Back {
            av,
            routes: st.routes.clone(),
            dest_qpn: st.attr.dest_qp_num,
            mtu,
            pkey: crate::engine::qp::own_pkey(qp),
        })
    }
}

/// Sends the queued replies of `qp`, whose token the caller holds (it took it from
/// [`ReplyQueue::offer`], or it is the QP's work item, to which the token was handed): a few
/// packets in softirq, more in the work item (`in_work`), then the work item goes on.
pub(crate) fn send_queued(qp: &Qp<Ferroce>, in_work: bool) {
    let budget = if in_work {
        WORK_PACKETS
    } else {
        SOFTIRQ_PACKETS
    };
    let mut sent = 0u32;
    loop {
        let mut st = qp.data().state.lock();
        let mtu = rc::mtu_of(&st);
        let back = Back::of(qp, &st, mtu);
        // (In ERR the queue drains: it ends with the NAK that put the QP there.)
        let reset = matches!(st.attr.qp_state, QpState::Reset | QpState::Init);
        let q = &mut st.conn.out;
        if reset || back.is_none() {
            q.clear();
        }
        let Some(back) = back.filter(|_| q.len > 0) else {
            q.sending = false;
            return;
        };
        if sent >= budget {
            // The rest from process context: the work item takes the token.
            q.to_work = true;
            drop(st);
            qp.queue_work();
            return;
        }
        let Some((what, n)) = q.take(budget - sent, back.mtu) else {
            q.sending = false;
            return;
        };
        drop(st);
        sent += n;
        if in_work {
            qp.device().data().counters.add(Stat::PacedPkts, n.into());
        }
        match what {
            Queued::Other(reply) => send(qp, &back, reply),
            Queued::Read(r) => {
                if !send_read(qp, &back, &r) {
                    // NAKed (remote access error): the responder is in error, as for a
                    // request refused when it came, and the NAK is its last word: what is
                    // queued behind answers later requests.
                    let mut after = After::default();
                    let mut st = qp.data().state.lock();
                    st.conn.out.clear();
                    st.enter_error(qp, &mut after);
                    drop(st);
                    after.run(qp, in_work);
                }
            }
        }
    }
}

/// The QP's work item found the token handed to it: sends on.
pub(crate) fn send_deferred(qp: &Qp<Ferroce>) {
    let mine = core::mem::take(&mut qp.data().state.lock().conn.out.to_work);
    if mine {
        send_queued(qp, true);
    }
}

fn bth(back: &Back, opc: u8, p: u32) -> Bth {
    Bth {
        opcode: opcode::RC | opc,
        pkey: back.pkey,
        dest_qp: back.dest_qpn,
        psn: p,
        ..Bth::default()
    }
}

fn ack_syndrome() -> u8 {
    Syndrome::Ack {
        credits: transport::CREDITS_INVALID,
    }
    .to_byte()
}

/// Sends one reply now (a READ response is sent from the queue only).
pub(crate) fn send(qp: &Qp<Ferroce>, back: &Back, reply: Reply) {
    let dev = qp.device();
    let Some(netdev) = dev.data().netdev() else {
        return;
    };
    let route = wire::route(&back.av, wire::src_port(qp.qp_num(), back.dest_qpn));
    let h = match reply {
        // READ responses always go through the queue ([`ReplyQueue::offer`]).
        Reply::None | Reply::Read { .. } => return,
        Reply::Ack { psn, syndrome, msn } => Headers {
            bth: bth(back, op::ACKNOWLEDGE, psn),
            aeth: Some(Aeth { syndrome, msn }),
            ..Headers::default()
        },
        Reply::Atomic { psn, orig, msn } => Headers {
            bth: bth(back, op::ATOMIC_ACKNOWLEDGE, psn),
            aeth: Some(Aeth {
                syndrome: ack_syndrome(),
                msn,
            }),
            atomic_ack: Some(orig),
            ..Headers::default()
        },
        Reply::ReadAck { psn, msn } => Headers {
            bth: bth(back, op::RDMA_READ_RESPONSE_ONLY, psn),
            aeth: Some(Aeth {
                syndrome: ack_syndrome(),
                msn,
            }),
            ..Headers::default()
        },
    };
    let _ = wire::transmit::<()>(dev, &netdev, back.routes.as_deref(), &route, &h, 0, |_| {
        Ok(())
    });
}

/// Sends the packets of a READ response part (in trains where they can go so), the data read
/// through the rkey again (it may have been deregistered since the request was checked: then a
/// NAK goes instead, and this returns `false`).
fn send_read(qp: &Qp<Ferroce>, back: &Back, r: &ReadPart) -> bool {
    let dev = qp.device();
    let Some(netdev) = dev.data().netdev() else {
        return true;
    };
    let route = wire::route(&back.av, wire::src_port(qp.qp_num(), back.dest_qpn));
    let remote = memory::one_sge(r.va, r.left.into(), r.rkey);
    let mut from = Walk::remote(qp, access::REMOTE_READ, &remote);
    // The part's packets, within what is left of the READ (a READ of no bytes is one packet).
    let count = r.pkts.min(r.left.div_ceil(back.mtu).max(1)) as usize;
    // The `n`-th packet of the part: its headers and payload length.
    let packet = |n: usize| -> (Headers, usize) {
        let n = n as u32;
        let left = r.left - n * back.mtu;
        let chunk = back.mtu.min(left);
        let (f, l) = (!r.mid && n == 0, chunk == left);
        let opc = match (f, l) {
            (true, true) => op::RDMA_READ_RESPONSE_ONLY,
            (true, false) => op::RDMA_READ_RESPONSE_FIRST,
            (false, false) => op::RDMA_READ_RESPONSE_MIDDLE,
            (false, true) => op::RDMA_READ_RESPONSE_LAST,
        };
        let h = Headers {
            bth: bth(back, opc, psn::add(r.psn, n)),
            aeth: (f || l).then_some(Aeth {
                syndrome: ack_syndrome(),
                msn: r.msn,
            }),
            ..Headers::default()
        };
        (h, chunk as usize)
    };
    let mut fill = |_: usize, out: &mut [u8]| from.gather(out);
    let mut n = 0;
    while n < count {
        let cars = wire::cars(&route, n, count, packet).max(1);
        let routes = back.routes.as_deref();
        // `Err((sent, why))`: `sent` packets from the `n`-th on went out, the rest did not.
        let sent = if cars > 1 {
            let p = |i| packet(n + i);
            wire::transmit_train(dev, &netdev, routes, &route, cars, p, |i, out| {
                fill(n + i, out)
            })
        } else {
            let (h, len) = packet(n);
            wire::transmit(dev, &netdev, routes, &route, &h, len, |out| fill(n, out))
                .map_err(|e| (0, e))
        };
        match sent {
            Ok(()) => {}
            // A packet could not be built (and `from` may be anywhere in the bytes not
            // sent): the part ends here, as if the rest were lost on the wire; the requester
            // asks again for what is missing.
            Err((_, TxError::Lost)) => return true,
            Err((before, TxError::Fill(_))) => {
                // At the first PSN not sent, which the requester waits for.
                let at = psn::add(r.psn, (n + before) as u32);
                let n = Headers {
                    bth: bth(back, op::ACKNOWLEDGE, at),
                    aeth: Some(Aeth {
                        syndrome: Syndrome::Nak(NakCode::RemoteAccessError).to_byte(),
                        msn: r.msn,
                    }),
                    ..Headers::default()
                };
                let _ = wire::transmit::<()>(dev, &netdev, routes, &route, &n, 0, |_| Ok(()));
                dev.data().counters.add(Stat::Naks, 1);
                return false;
            }
        }
        n += cars;
    }
    true
}
