// SPDX-License-Identifier: GPL-2.0

//! Host tests of the requester's send window (`rc/window.rs`): turns and READ chunks,
//! go-back-N, stale NAKs, moving on past what was acknowledged, the window after timeouts,
//! and all of it across the PSN wrap.

use crate::{
    abi::wr_opcode as wop,
    limits::READ_BURST,
    psn,
    window::{plan_turn, read_chunk_end, Plan, Rec, Window, MAX_BACKOFF, MIN_WINDOW, WINDOW},
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
        let i = w.next();
        let r = w.start(i);
        w.resume_read(MTU);
        let plan = plan_turn(&r, w.off(), MTU, budget);
        w.take_turn(&plan);
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
    let chunk = READ_BURST * MTU;
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
            advance: READ_BURST - 3,
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
    w.acked(39);
    // Each PSN acknowledged opens the window by one, from MIN_WINDOW.
    assert_eq!(w.room(), MIN_WINDOW + 40);
    w.progressed();
    assert_eq!(w.backoff(), 0);
    // A READ asks for what the responder paces: only the full window bounds it.
    assert_eq!(w.read_room(), WINDOW);
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
    w.take_turn(&p);
    // At the first READ: from byte 2 * MTU, at its third PSN, for the rest.
    let read = w.start(1);
    w.resume_read(MTU);
    assert_eq!(
        (w.next(), w.off(), w.psn()),
        (1, 2 * MTU, read.first_psn + 2)
    );
    let p = plan_turn(&read, w.off(), MTU, 32);
    assert_eq!((p.advance, p.whole), (4, true));
    w.take_turn(&p);
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
    // One answered whole is asked for whole again.
    let mut w = window(4, 0);
    send(&mut w, rec(wop::RDMA_WRITE, MTU), 32);
    send(&mut w, rec(wop::RDMA_READ, 2 * MTU), 32);
    let mut r = w.rec(1);
    r.done = 2 * MTU;
    w.set_rec(1, r);
    w.go_back(0, MTU);
    let first = w.start(0);
    let p = plan_turn(&first, w.off(), MTU, 32);
    w.take_turn(&p);
    w.start(1);
    w.resume_read(MTU);
    assert_eq!((w.off(), w.psn()), (0, 1));
}
