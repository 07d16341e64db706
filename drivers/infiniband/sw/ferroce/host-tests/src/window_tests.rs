// SPDX-License-Identifier: GPL-2.0

//! Host tests of the requester's send window (`rc/window.rs`): turns and READ chunks,
//! go-back-N, stale NAKs, moving on past what was acknowledged, the congestion window after
//! timeouts and losses, and all of it across the PSN wrap.

use crate::{
    abi::wr_opcode as wop,
    limits::READ_BURST,
    psn,
    window::{
        plan_turn, read_chunk_end, Plan, ReadPacket, Rec, Repair, RepairAsk, Window, MAX_BACKOFF,
        MIN_WINDOW, READ_AHEAD, READ_CHUNK, REORDER, WINDOW,
    },
};

const MTU: u32 = 1024;

fn window(slots: usize, first_psn: u32) -> Window<Vec<Rec>> {
    let mut w = Window::new(vec![Rec::default(); slots]);
    w.set_psn(first_psn);
    w
}

fn rec(op: u32, len: u32) -> Rec {
    Rec {
        op,
        len,
        npkts: if op == wop::ATOMIC_FETCH_AND_ADD {
            1
        } else {
            len.div_ceil(MTU).max(1)
        },
        signaled: true,
        ..Rec::default()
    }
}

/// Takes a WQE and sends it whole, `budget` packets a turn, as the executor does with
/// nothing in the way; returns the turns.
fn send(w: &mut Window<Vec<Rec>>, r: Rec, budget: u32) -> Vec<Plan> {
    assert!(w.push(r));
    send_on(w, budget)
}

/// Sends from the cursor until every record is sent whole.
fn send_on(w: &mut Window<Vec<Rec>>, budget: u32) -> Vec<Plan> {
    let mut turns = Vec::new();
    while w.next() < w.count() {
        if w.pass_answered() {
            continue;
        }
        let i = w.next();
        let r = w.start(i);
        w.resume_read(MTU);
        let plan = plan_turn(&r, w.off(), MTU, budget);
        w.take_turn(&plan, MTU);
        turns.push(plan);
    }
    turns
}

#[test]
fn turns_send_bursts_and_the_last_one_finishes() {
    let r = Rec {
        len: 10 * MTU - 1,
        ..rec(wop::RDMA_WRITE, 0)
    };
    let p = plan_turn(&r, 0, MTU, 4);
    assert_eq!(
        p,
        Plan {
            pkts: 4,
            advance: 4,
            off: 4 * MTU,
            whole: false
        }
    );
    let p = plan_turn(&r, 8 * MTU, MTU, 4);
    assert_eq!(
        p,
        Plan {
            pkts: 2,
            advance: 2,
            off: 10 * MTU - 1,
            whole: true
        }
    );
    // An empty message is one packet; a budget of 0 still sends one.
    let p = plan_turn(&rec(wop::SEND, 0), 0, MTU, 0);
    assert_eq!(
        p,
        Plan {
            pkts: 1,
            advance: 1,
            off: 0,
            whole: true
        }
    );
    // An atomic is one packet and one PSN.
    let p = plan_turn(&rec(wop::ATOMIC_FETCH_AND_ADD, 8), 0, MTU, 32);
    assert_eq!(
        p,
        Plan {
            pkts: 1,
            advance: 1,
            off: 8,
            whole: true
        }
    );
}

#[test]
fn reads_are_asked_for_in_chunks_at_fixed_offsets() {
    let chunk = READ_CHUNK * MTU;
    let len = 2 * chunk + 5;
    assert_eq!(read_chunk_end(0, len, MTU), chunk);
    assert_eq!(read_chunk_end(chunk - 1, len, MTU), chunk);
    assert_eq!(read_chunk_end(chunk, len, MTU), 2 * chunk);
    assert_eq!(read_chunk_end(2 * chunk, len, MTU), len);
    // From the middle of a chunk (asked again after a loss): to that chunk's end.
    let r = rec(wop::RDMA_READ, len);
    let p = plan_turn(&r, 3 * MTU, MTU, 1);
    assert_eq!(
        p,
        Plan {
            pkts: 1,
            advance: READ_CHUNK - 3,
            off: chunk,
            whole: false
        }
    );
    let p = plan_turn(&r, 2 * chunk, MTU, 1);
    assert_eq!(
        p,
        Plan {
            pkts: 1,
            advance: 1,
            off: len,
            whole: true
        }
    );
    // A request asks for a chunk whatever the budget (a request asked again in part lies
    // within the one the responder remembers); no longer than what a responder answers.
    assert_eq!(plan_turn(&r, 0, MTU, 1).off, chunk);
    assert!(READ_CHUNK <= READ_BURST);
    // No overflow near the 2 GiB maximum.
    let big = rec(wop::RDMA_READ, 1 << 31);
    let p = plan_turn(&big, (1 << 31) - 10, 4096, 1);
    assert_eq!(p.off, 1 << 31);
    assert!(p.whole);
}

#[test]
fn go_back_resends_from_the_record_holding_the_psn() {
    let mut w = window(8, 100);
    for _ in 0..3 {
        send(&mut w, rec(wop::RDMA_WRITE, 4 * MTU), 32);
    }
    assert_eq!((w.psn(), w.max_psn(), w.outstanding()), (112, 112, 12));
    let gen = w.gen();
    // A sequence-error NAK for 105: the second WRITE from its second packet.
    assert_eq!(w.go_back(105, MTU), Some(7));
    assert_eq!((w.next(), w.off(), w.psn()), (1, MTU, 105));
    assert_ne!(w.gen(), gen, "a turn started before must see the jump");
    // Another NAK for the same PSN before it went again: stale; for one behind the cursor
    // after it went again: stale too; ahead of the cursor: not.
    assert!(!w.is_stale(104));
    let turns = send_on(&mut w, 2);
    assert_eq!(turns.iter().map(|t| t.pkts).sum::<u32>(), 7);
    assert_eq!(w.psn(), 112, "the cursor is back where it was");
    assert!(w.is_stale(105));
    assert!(w.is_stale(111));
    assert!(!w.is_stale(112));
    // PSNs nobody holds: nothing happens.
    assert_eq!(w.go_back(99, MTU), None);
    assert_eq!(w.go_back(112, MTU), None);
}

#[test]
fn go_back_into_a_read_restarts_at_the_first_byte_missing() {
    let mut w = window(4, 10);
    send(&mut w, rec(wop::RDMA_READ, 5 * MTU), 32);
    assert_eq!(w.psn(), 15, "a READ request takes its responses' PSNs");
    let mut r = w.rec(0);
    r.done = 2 * MTU + 100;
    w.set_rec(0, r);
    // Whatever PSN of the READ the loss is seen at, it asks again from byte 2 * MTU.
    assert_eq!(w.go_back(14, MTU), Some(1));
    assert_eq!((w.next(), w.off(), w.psn()), (0, 2 * MTU, 12));
    let p = plan_turn(&w.rec(0), w.off(), MTU, 32);
    assert_eq!((p.pkts, p.advance, p.whole), (1, 3, true));
}

#[test]
fn an_atomic_goes_again_whole() {
    let mut w = window(4, 7);
    send(&mut w, rec(wop::RDMA_WRITE, 2 * MTU), 32);
    send(&mut w, rec(wop::ATOMIC_FETCH_AND_ADD, 8), 32);
    assert_eq!(w.go_back(9, MTU), Some(1));
    assert_eq!((w.next(), w.off(), w.psn()), (1, 0, 9));
}

#[test]
fn the_window_works_across_the_psn_wrap() {
    let mut w = window(4, psn::MASK - 1);
    send(&mut w, rec(wop::SEND, 4 * MTU), 32);
    let r = w.rec(0);
    assert_eq!((r.first_psn, r.last_psn()), (psn::MASK - 1, 1));
    assert!(r.contains(psn::MASK) && r.contains(0) && r.contains(1));
    assert!(!r.contains(2) && !r.contains(psn::MASK - 2));
    assert_eq!((w.psn(), w.outstanding()), (2, 4));
    assert!(w.in_flight(psn::MASK - 1) && w.in_flight(1));
    assert!(!w.in_flight(2) && !w.in_flight(psn::MASK - 2));
    assert_eq!(w.go_back(0, MTU), Some(2));
    assert_eq!((w.off(), w.psn()), (2 * MTU, 0));
    send_on(&mut w, 32);
    assert!(w.is_stale(psn::MASK) == false && w.is_stale(0) && w.is_stale(1));
    w.acked(1);
    w.finish_round();
    assert_eq!((w.una(), w.outstanding()), (2, 0));
    assert!(
        !w.is_stale(0),
        "the round ended once all of it was acknowledged"
    );
}

#[test]
fn an_ack_past_the_cursor_moves_it_on() {
    let mut w = window(8, 0);
    for _ in 0..3 {
        send(&mut w, rec(wop::RDMA_WRITE, 4 * MTU), 32);
    }
    w.go_back(1, MTU);
    let gen = w.gen();
    // The responder had up to 6 after all: sending goes on from 7, in the second record.
    w.skip_to(7, MTU);
    assert_eq!((w.next(), w.off(), w.psn()), (1, 3 * MTU, 7));
    assert_ne!(w.gen(), gen);
    // Behind the cursor: no move.
    w.skip_to(5, MTU);
    assert_eq!(w.psn(), 7);
    // Past every record: at the first one not started (none: all of them are).
    w.skip_to(12, MTU);
    assert_eq!((w.next(), w.off(), w.psn()), (3, 0, 12));
}

#[test]
fn moving_on_stops_at_a_read() {
    let mut w = window(8, 0);
    send(&mut w, rec(wop::RDMA_WRITE, 2 * MTU), 32);
    send(&mut w, rec(wop::RDMA_READ, 4 * MTU), 32);
    w.go_back(0, MTU);
    let before = (w.next(), w.off(), w.psn());
    w.skip_to(4, MTU);
    assert_eq!(
        (w.next(), w.off(), w.psn()),
        before,
        "a READ restarts whole"
    );
}

#[test]
fn the_window_shrinks_after_timeouts_and_opens_with_acks() {
    let mut w = window(16, 0);
    assert_eq!(w.room(), WINDOW);
    send(&mut w, rec(wop::RDMA_WRITE, 40 * MTU), 64);
    assert_eq!(w.room(), WINDOW - 40);
    w.timed_out();
    assert_eq!(w.backoff(), 1);
    // A quarter of the window, less what is in flight.
    assert_eq!(w.room(), WINDOW / 4 - 40);
    w.timed_out();
    // Not below zero.
    assert_eq!(w.room(), 0);
    w.timed_out();
    w.timed_out();
    assert_eq!(w.backoff(), MAX_BACKOFF);
    assert_eq!(w.cwnd(), MIN_WINDOW);
    w.acked(39);
    // At the threshold (MIN_WINDOW too): one more per window acknowledged, 40 PSNs open it by
    // four (8 + 9 + 10 + 11 of them).
    assert_eq!(w.room(), MIN_WINDOW + 4);
    w.progressed();
    assert_eq!(w.backoff(), 0);
    // A READ asks for what the responder paces: only the full window bounds it.
    assert_eq!(w.read_room(), WINDOW);
}

/// Sends `n` one-packet SENDs and acknowledges them all; returns the window then.
fn send_and_ack(w: &mut Window<Vec<Rec>>, n: u32) -> u32 {
    for _ in 0..n {
        send(w, rec(wop::SEND, MTU), 64);
        let last = psn::add(w.psn(), psn::MASK);
        w.acked(last);
        w.pop();
        w.room();
    }
    w.cwnd()
}

#[test]
fn the_window_halves_on_a_loss_and_grows_back_as_tcp_does() {
    let mut w = window(4, psn::MASK - 100);
    assert_eq!(w.cwnd(), WINDOW);
    // A sequence NAK: half.
    w.lost();
    assert_eq!(w.cwnd(), WINDOW / 2);
    // Above the threshold (WINDOW / 2): one more per window's worth acknowledged.
    assert_eq!(send_and_ack(&mut w, WINDOW / 2 - 1), WINDOW / 2);
    assert_eq!(send_and_ack(&mut w, 1), WINDOW / 2 + 1);
    // Losses of the same window of data: one halving for all of them.
    send(&mut w, rec(wop::RDMA_WRITE, 10 * MTU), 64);
    w.lost();
    w.lost();
    assert_eq!(w.cwnd(), WINDOW / 4);
    // A loss once that window is acknowledged halves it again; never below MIN_WINDOW.
    for _ in 0..10 {
        let last = psn::add(w.psn(), psn::MASK);
        w.acked(last);
        w.lost();
    }
    w.pop();
    assert_eq!(w.cwnd(), MIN_WINDOW);
    // A timeout from a small window: the threshold is MIN_WINDOW too.
    w.timed_out();
    assert_eq!(w.cwnd(), MIN_WINDOW);
    // Slow start below the threshold: after a timeout from a full window, a quarter of it,
    // then one more per PSN acknowledged up to half of it, then one per window.
    w.clear();
    assert_eq!(w.cwnd(), WINDOW);
    assert_eq!(w.room(), WINDOW);
    w.timed_out();
    assert_eq!(w.cwnd(), WINDOW / 4);
    assert_eq!(send_and_ack(&mut w, WINDOW / 4), WINDOW / 2);
    assert_eq!(send_and_ack(&mut w, WINDOW / 2 - 1), WINDOW / 2);
    assert_eq!(send_and_ack(&mut w, 1), WINDOW / 2 + 1);
    // A recovery point left behind is forgotten: a loss half a PSN circle later halves the
    // window again.
    w.lost();
    let halved = w.cwnd();
    send_and_ack(&mut w, (1 << 23) + 100);
    let grown = w.cwnd();
    w.lost();
    assert!(
        w.cwnd() < grown && halved < WINDOW,
        "{halved} {grown} {}",
        w.cwnd()
    );
    // A PSN set by a modify starts the path anew.
    w.lost();
    w.set_psn(psn::MASK - 1000);
    assert_eq!(w.cwnd(), WINDOW);
    w.lost();
    assert_eq!(w.cwnd(), WINDOW / 2);
    w.clear();
    // Back to the full window at most, however much is acknowledged (from WINDOW / 2 + 1,
    // the sum of WINDOW / 2 + 1 ..= WINDOW - 1 PSNs, 24,384 for 256).
    send_and_ack(&mut w, 100 * WINDOW);
    assert_eq!(w.cwnd(), WINDOW);
    assert_eq!(send_and_ack(&mut w, 2 * WINDOW), WINDOW);
}

#[test]
fn records_are_a_ring() {
    let mut w = window(3, 0);
    for len in [1, 2, 3] {
        assert!(w.push(rec(wop::SEND, len)));
    }
    assert!(w.is_full());
    assert!(!w.push(rec(wop::SEND, 4)));
    assert_eq!(w.pop().len, 1);
    assert!(w.push(rec(wop::SEND, 4)));
    let lens: Vec<u32> = (0..w.count()).map(|i| w.rec(i).len).collect();
    assert_eq!(lens, [2, 3, 4]);
    assert_eq!(w.find(3, |r| r.len == 4), Some(2));
    assert_eq!(w.find(2, |r| r.len == 4), None);
    w.clear();
    assert_eq!((w.count(), w.next(), w.outstanding()), (0, 0, 0));
    // A window with no room for records takes none, and never divides by zero.
    let mut none = window(0, 0);
    assert!(!none.push(rec(wop::SEND, 1)));
    assert_eq!(none.pop(), Rec::default());
}

#[test]
fn una_only_moves_on_where_asked() {
    let mut w = window(4, 50);
    send(&mut w, rec(wop::RDMA_WRITE, 3 * MTU), 32);
    w.advance_una(49);
    assert_eq!(w.una(), 50);
    w.advance_una(52);
    assert_eq!(w.una(), 52);
    w.set_una(51);
    assert_eq!(w.una(), 51);
    assert_eq!(w.waiting_responses(), 0);
    send(&mut w, rec(wop::RDMA_READ, MTU), 32);
    send(&mut w, rec(wop::ATOMIC_FETCH_AND_ADD, 8), 32);
    assert_eq!(w.waiting_responses(), 2);
}

#[test]
fn a_read_passed_through_again_resumes_where_its_answer_stopped() {
    let mut w = window(8, 100);
    send(&mut w, rec(wop::RDMA_WRITE, 2 * MTU), 32);
    send(&mut w, rec(wop::RDMA_READ, 6 * MTU), 32);
    send(&mut w, rec(wop::RDMA_READ, 3 * MTU), 32);
    assert_eq!(w.psn(), 111);
    // The first READ has 2.5 MTUs of its answer, the second none; the WRITE's second packet
    // was lost.
    let mut r = w.rec(1);
    r.done = 2 * MTU + 512;
    w.set_rec(1, r);
    w.go_back(101, MTU);
    let first = w.start(0);
    let p = plan_turn(&first, w.off(), MTU, 32);
    w.take_turn(&p, MTU);
    // At the first READ: from byte 2 * MTU, at its third PSN, for the rest.
    let read = w.start(1);
    w.resume_read(MTU);
    assert_eq!(
        (w.next(), w.off(), w.psn()),
        (1, 2 * MTU, read.first_psn + 2)
    );
    let p = plan_turn(&read, w.off(), MTU, 32);
    assert_eq!((p.advance, p.whole), (4, true));
    w.take_turn(&p, MTU);
    // The second READ, nothing placed: whole, from its first PSN.
    let second = w.start(2);
    w.resume_read(MTU);
    assert_eq!((w.next(), w.off(), w.psn()), (2, 0, second.first_psn));
    // A READ whose answer is all in but its last bytes resumes at the last packet.
    let mut r = w.rec(2);
    r.done = 3 * MTU - 1;
    w.set_rec(2, r);
    w.resume_read(MTU);
    assert_eq!((w.off(), w.psn()), (2 * MTU, second.first_psn + 2));
    // One answered whole is not asked for again: the cursor passes it, PSNs and all.
    let mut w = window(4, 0);
    send(&mut w, rec(wop::RDMA_WRITE, MTU), 32);
    send(&mut w, rec(wop::RDMA_READ, 2 * MTU), 32);
    send(&mut w, rec(wop::ATOMIC_FETCH_AND_ADD, 8), 32);
    for i in 1..3 {
        let mut r = w.rec(i);
        r.done = r.len;
        r.answered = true;
        w.set_rec(i, r);
    }
    w.go_back(0, MTU);
    let turns = send_on(&mut w, 32);
    assert_eq!(turns.len(), 1, "only the WRITE goes again");
    assert_eq!((w.next(), w.psn()), (3, 4));
}

/// Sends one READ of `pkts` packets whole and returns the window.
fn one_read(pkts: u32) -> Window<Vec<Rec>> {
    let mut w = window(4, 1000);
    send(&mut w, rec(wop::RDMA_READ, pkts * MTU - 100), 32);
    w
}

/// A READ response packet for record `i`, as the completer takes it; returns what it was.
fn answer(w: &mut Window<Vec<Rec>>, i: usize, k: u32, ends: bool) -> ReadPacket {
    let r = w.rec(i);
    let p = psn::add(r.first_psn, k);
    let n = MTU.min(r.len.saturating_sub(k * MTU));
    let what = w.classify_read(i, p, n, MTU);
    match what {
        ReadPacket::Place { off } => {
            w.read_placed(i, off, MTU);
            w.note_response(p, ends, MTU);
        }
        ReadPacket::Beyond => {
            w.read_beyond(i, k * MTU, MTU);
            w.note_response(p, ends, MTU);
        }
        _ => {}
    }
    what
}

#[test]
fn read_responses_out_of_order_are_placed_and_done_moves_over_them() {
    let mut w = one_read(10);
    assert_eq!(answer(&mut w, 0, 0, false), ReadPacket::Place { off: 0 });
    assert_eq!(
        answer(&mut w, 0, 2, false),
        ReadPacket::Place { off: 2 * MTU }
    );
    assert_eq!(
        answer(&mut w, 0, 3, false),
        ReadPacket::Place { off: 3 * MTU }
    );
    let r = w.rec(0);
    assert_eq!((r.done, r.ahead), (MTU, 0b110));
    // Placed before, in order or not: dropped.
    assert_eq!(answer(&mut w, 0, 0, false), ReadPacket::Duplicate);
    assert_eq!(answer(&mut w, 0, 3, false), ReadPacket::Duplicate);
    // The one missing fills the gap: done moves over all three.
    assert_eq!(answer(&mut w, 0, 1, false), ReadPacket::Place { off: MTU });
    let r = w.rec(0);
    assert_eq!((r.done, r.ahead, r.answered), (4 * MTU, 0, false));
    // The last packet is the READ's rest; any other size, or a packet past the end, fails it.
    let r = w.rec(0);
    let last = psn::add(r.first_psn, 9);
    assert_eq!(w.classify_read(0, last, MTU, MTU), ReadPacket::BadSize);
    assert_eq!(
        w.classify_read(0, psn::add(r.first_psn, 5), 100, MTU),
        ReadPacket::BadSize
    );
    assert_eq!(
        w.classify_read(0, psn::add(r.first_psn, 10), MTU, MTU),
        ReadPacket::BadSize
    );
    assert_eq!(
        w.classify_read(0, last, MTU - 100, MTU),
        ReadPacket::Place { off: 9 * MTU }
    );
    for k in (4..10).rev() {
        answer(&mut w, 0, k, false);
    }
    let r = w.rec(0);
    assert_eq!((r.done, r.ahead, r.answered), (r.len, 0, true));
    // Too far past the first missing to be kept.
    let mut w = one_read(200);
    assert_eq!(answer(&mut w, 0, READ_AHEAD, false), ReadPacket::Beyond);
    assert_eq!(
        answer(&mut w, 0, READ_AHEAD - 1, false),
        ReadPacket::Place {
            off: (READ_AHEAD - 1) * MTU
        }
    );
}

#[test]
fn a_gap_is_asked_for_alone_once_packets_past_it_show_it_lost() {
    let mut w = one_read(20);
    let first = w.rec(0).first_psn;
    answer(&mut w, 0, 0, false);
    answer(&mut w, 0, 1, false);
    // 2 and 3 lost; 4 and 5 came: not yet evidence enough (they may have been overtaken).
    for k in 4..(4 + u32::from(REORDER) - 1) {
        answer(&mut w, 0, k, false);
        assert!(!w.repair_due());
    }
    answer(&mut w, 0, 4 + u32::from(REORDER) - 1, false);
    assert!(w.repair_due());
    let ask = w.take_repair(MTU).expect("a repair");
    assert_eq!(
        ask,
        RepairAsk {
            index: 0,
            rec: w.rec(0),
            off: 2 * MTU,
            end: 4 * MTU,
            psn: psn::add(first, 2)
        }
    );
    // Asked: more evidence does not ask again (the answer is on its way, behind the rest).
    assert_eq!(w.rec(0).repair, Repair::Asked);
    answer(&mut w, 0, 10, true);
    assert!(!w.repair_due() && w.take_repair(MTU).is_none());
    // The send cursor did not move.
    assert_eq!((w.next(), w.psn()), (1, psn::add(first, 20)));
    // The repair's answer came: done moves to the next gap (7), with 10 past it.
    answer(&mut w, 0, 2, false);
    answer(&mut w, 0, 3, true);
    // 10 came past it, after the request for 2..4 was all answered: 7 was lost, and 7..10
    // is due at once.
    let r = w.rec(0);
    assert_eq!((r.done, r.repair), (7 * MTU, Repair::Due));
    let ask = w.take_repair(MTU).expect("a repair");
    assert_eq!((ask.off, ask.end), (7 * MTU, 10 * MTU));
}

#[test]
fn the_next_gap_is_due_once_a_repair_is_answered() {
    // Holes at 2, 6 and 12; the rest came (12 past 64 ahead: seen, not kept).
    let mut w = one_read(100);
    for k in (0..100).filter(|k| ![2, 6, 12].contains(k)) {
        answer(&mut w, 0, k, k == 99);
    }
    let ask = w.take_repair(MTU).expect("the first gap");
    assert_eq!((ask.off, ask.end), (2 * MTU, 3 * MTU));
    answer(&mut w, 0, 2, true);
    let ask = w.take_repair(MTU).expect("the second gap, at once");
    assert_eq!((ask.off, ask.end), (6 * MTU, 7 * MTU));
    answer(&mut w, 0, 6, true);
    let ask = w.take_repair(MTU).expect("the third gap");
    assert_eq!((ask.off, ask.end), (12 * MTU, 13 * MTU));
    answer(&mut w, 0, 12, true);
    // Up to 66 was kept; 67.. came too far ahead: the rest is asked for.
    let r = w.rec(0);
    assert_eq!(r.done, (2 + READ_AHEAD) * MTU);
    let ask = w.take_repair(MTU).expect("what was dropped");
    assert_eq!((ask.off, ask.end), (r.done, r.len));
    for k in (2 + READ_AHEAD)..100 {
        answer(&mut w, 0, k, k == 99);
    }
    assert!(w.rec(0).answered);
    // While a repair's answer is still coming, the hole after its first packet waits.
    let mut w = one_read(20);
    for k in [0, 1, 5, 6, 7] {
        answer(&mut w, 0, k, false);
    }
    let ask = w.take_repair(MTU).expect("2..5");
    assert_eq!((ask.off, ask.end), (2 * MTU, 5 * MTU));
    answer(&mut w, 0, 2, false);
    assert!(!w.repair_due());
}

#[test]
fn a_read_of_nothing_takes_one_empty_response() {
    let mut w = window(4, 5);
    send(&mut w, rec(wop::RDMA_READ, 0), 32);
    assert_eq!(w.classify_read(0, 5, 0, MTU), ReadPacket::Place { off: 0 });
    assert_eq!(w.classify_read(0, 5, 1, MTU), ReadPacket::BadSize);
    w.read_placed(0, 0, MTU);
    assert!(w.rec(0).answered);
    assert_eq!(w.classify_read(0, 5, 0, MTU), ReadPacket::Duplicate);
}

#[test]
fn going_back_into_an_answered_read_passes_it() {
    let mut w = window(4, 100);
    send(&mut w, rec(wop::RDMA_READ, 4 * MTU), 32);
    send(&mut w, rec(wop::RDMA_WRITE, 2 * MTU), 32);
    for k in 0..4 {
        answer(&mut w, 0, k, k == 3);
    }
    assert!(w.rec(0).answered);
    // A timeout or a NAK at a PSN of the READ: the cursor lands at its start and passes it;
    // the WRITE goes again at its own PSNs.
    w.go_back(102, MTU);
    assert_eq!((w.next(), w.off(), w.psn()), (0, 0, 100));
    let turns = send_on(&mut w, 32);
    assert_eq!(turns.len(), 1);
    assert_eq!(w.psn(), 106);
}

#[test]
fn a_lost_tail_is_asked_for_when_a_later_answer_comes() {
    let mut w = window(4, 0);
    send(&mut w, rec(wop::RDMA_READ, 8 * MTU), 32);
    send(&mut w, rec(wop::RDMA_READ, 2 * MTU), 32);
    for k in 0..6 {
        answer(&mut w, 0, k, false);
    }
    // 6 and 7 (the LAST) lost; the next READ's ONLY... its FIRST and LAST come.
    answer(&mut w, 1, 0, false);
    assert!(!w.repair_due());
    answer(&mut w, 1, 1, true);
    let ask = w.take_repair(MTU).expect("a repair");
    assert_eq!(
        (ask.index, ask.off, ask.end, ask.psn),
        (0, 6 * MTU, 8 * MTU, 6)
    );
    // An acknowledgement past a READ whose answer did not come: its rest is due.
    let mut w = window(4, 0);
    send(&mut w, rec(wop::RDMA_READ, 3 * MTU), 32);
    send(&mut w, rec(wop::RDMA_WRITE, MTU), 32);
    answer(&mut w, 0, 0, false);
    assert!(w.answer_lost(0));
    let ask = w.take_repair(MTU).expect("a repair");
    assert_eq!((ask.off, ask.end), (MTU, 3 * MTU));
}

#[test]
fn nothing_is_asked_for_that_was_not_asked_for_before() {
    // The send cursor went back before the READ: its bytes are asked for as it passes.
    let mut w = window(4, 0);
    send(&mut w, rec(wop::RDMA_WRITE, MTU), 32);
    send(&mut w, rec(wop::RDMA_READ, 8 * MTU), 32);
    answer(&mut w, 1, 0, false);
    w.go_back(0, MTU);
    for k in 2..6 {
        answer(&mut w, 1, k, true);
    }
    assert!(!w.repair_due());
    assert!(w.answer_lost(1));
    assert!(!w.repair_due());
    // A turn from the first byte missing counts what is missing afresh.
    send_on(&mut w, 32);
    assert_eq!(w.rec(1).later, 0);
}

/// rxe's responder, as far as asking a READ again goes (rxe_resp.c): READ requests served in
/// order, each a resource remembered by its PSNs; a request again (a duplicate) for bytes
/// before where that READ was last asked from is dropped.
struct RxeModel {
    /// Per record: where its READ was last asked from.
    va_org: Vec<Option<u32>>,
    /// Requests to serve, in order: (record, from, to).
    queue: std::collections::VecDeque<(usize, u32, u32)>,
    dropped: u32,
}

impl RxeModel {
    fn ask(&mut self, i: usize, off: u32, end: u32) {
        if self.va_org[i].is_some_and(|org| off < org) {
            self.dropped += 1;
            return;
        }
        self.va_org[i] = Some(off);
        self.queue.push_back((i, off, end));
    }

    /// The next response packet: (record, packet, ends).
    fn next(&mut self) -> Option<(usize, u32, bool)> {
        let (i, off, end) = self.queue.pop_front()?;
        let ends = off + MTU >= end;
        if !ends {
            self.queue.push_front((i, off + MTU, end));
        }
        Some((i, off / MTU, ends))
    }
}

#[test]
fn reads_complete_against_rxe_under_loss() {
    let mut seed = 0x2545_f491_u64;
    let mut rand = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    for round in 0..200 {
        let loss = 1 + round % 20;
        let mut w = window(8, psn::MASK - 30);
        let mut rxe = RxeModel {
            va_org: vec![None; 8],
            queue: Default::default(),
            dropped: 0,
        };
        let lens = [40 * MTU - 7, MTU, 3 * MTU, 64 * MTU, 70 * MTU + 1];
        for &len in &lens {
            assert!(w.push(rec(wop::RDMA_READ, len)));
        }
        let mut timeouts = 0;
        let mut served = 0u32;
        for _tick in 0..20_000 {
            // The executor: repairs first, then the cursor.
            while let Some(ask) = w.take_repair(MTU) {
                rxe.ask(ask.index, ask.off, ask.end);
            }
            while w.next() < w.count() {
                if w.pass_answered() {
                    continue;
                }
                let i = w.next();
                let r = w.start(i);
                w.resume_read(MTU);
                if w.off() > r.done {
                    break;
                }
                let plan = plan_turn(&r, w.off(), MTU, 32);
                let off = w.off();
                let end = w.take_turn(&plan, MTU);
                rxe.ask(i, off, end);
            }
            match rxe.next() {
                Some((i, k, ends)) => {
                    served += 1;
                    if rand() % 100 >= loss {
                        answer(&mut w, i, k, ends);
                    }
                }
                None => {
                    let Some(i) = w.find(w.count(), |r| !r.answered) else {
                        break;
                    };
                    // Nothing comes: the acknowledgement timeout goes back to what is missing.
                    timeouts += 1;
                    let r = w.rec(i);
                    w.timed_out();
                    w.go_back(psn::add(r.first_psn, r.done / MTU), MTU);
                }
            }
        }
        for i in 0..lens.len() {
            let r = w.rec(i);
            assert!(
                r.answered && r.done == r.len,
                "round {round}: READ {i} {r:?}"
            );
        }
        assert_eq!(rxe.dropped, 0, "round {round}: rxe dropped a request");
        // What the responder served: the packets needed, those lost (and asked for again),
        // and little else (a slow responder's time goes into answers the requester uses).
        let needed: u32 = lens.iter().map(|l| l.div_ceil(MTU)).sum();
        assert!(
            served * 100 <= needed * (100 + 3 * loss) + 64,
            "round {round}: served {served} packets for {needed} at {loss}% loss"
        );
        // Timeouts only where nothing past a loss shows it (a lost tail, a lost repair).
        assert!(
            timeouts <= 2 + loss / 2,
            "round {round}: {timeouts} timeouts at {loss}% loss"
        );
    }
}
