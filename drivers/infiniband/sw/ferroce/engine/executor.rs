// SPDX-License-Identifier: GPL-2.0

//! The send queue's executor: one loop for every QP. Whoever finds work and nobody executing
//! it (a doorbell, a kernel user's post, an acknowledgement that opens the window, a timer, a
//! receive posted for a sender that waited) takes the queue's token (`QpShared::sending`) and
//! runs [`run`]; it asks the QP's carrier, under the QP's lock, what to do next, does it
//! outside the lock, and gives the token back in one place, under the lock that found
//! nothing more to do. The carriers:
//!
//! - the wire (an RC or UC QP whose peer is elsewhere): turns of packets of the records of the
//!   requester's send window ([`super::rc`]);
//! - direct placement (a connected QP whose peer is on this device, and every UD QP and QP1,
//!   whose datagrams go out on the wire or into a local QP): one whole WQE at a time
//!   ([`super::placement`]).

use kernel::{
    prelude::*,
    rdma::{Qp, QpState, QpToken, QpType},
};

use crate::{
    engine::{
        placement,
        qp::{After, Notices, QpShared, SEND_WQE_MAX},
        rc::{self, requester},
        reply,
    },
    protocol::abi::{self, Cqe, WcStatus},
    verbs::{cq, device::Ferroce},
};

/// The provider (or a kernel user's post) published send work. In RTS it is executed now, in
/// the caller's context, unless another caller is executing the queue already (which then
/// takes it too). In ERR and SQE it is flushed at once; before RTS it is refused (`EINVAL`)
/// and dropped. In SQD it waits.
pub(crate) fn sq_doorbell(qp: &Qp<Ferroce>) -> Result {
    let mut notices = Notices::default();
    let mut st = qp.data().state.lock();
    let r = match st.attr.qp_state {
        // In SQE (a UD/UC send failed) as in ERR, new send work completes flushed (IBTA 10.8.3).
        QpState::Err | QpState::Sqe if !st.sending => st.flush_sq(qp, &mut notices),
        QpState::Err | QpState::Sqe | QpState::Sqd => st.sq.pending().map(|_| ()),
        QpState::Rts => {
            st.sq.pending()?;
            // A new doorbell retries a send that waited for a receive too (an SRQ's receives
            // come without a doorbell), also one a running executor is about to park.
            st.rnr_wait = false;
            st.kicks = st.kicks.wrapping_add(1);
            if !st.sending {
                st.sending = true;
                drop(st);
                if !qp.is_user() && kernel::rdma::sw::context::in_interrupt() {
                    // A kernel user posting from softirq (or with it disabled): the work,
                    // however long, is not done there; the QP's work item takes the token.
                    defer_sq(qp);
                    return Ok(());
                }
                // A user's doorbell is a system call of the QP's owner: its own time, which
                // it stops spending if it is killed.
                run(qp, qp.is_user(), Budget::Owner);
                return Ok(());
            }
            Ok(())
        }
        // The SQ takes no work before RTS (IBTA 10.8.2): the post fails, so what was published
        // for it is dropped now rather than executed once the QP reaches RTS.
        _ => st.sq.discard().and(Err(EINVAL)),
    };
    drop(st);
    notices.deliver(qp);
    r
}

/// The provider posted receive work while the RQ asked for the doorbell: the QP is in ERR
/// (flush it), or a sender waits for a receive WQE (kick it). In other states there is
/// nothing to do but check the ring.
pub(crate) fn rq_doorbell(qp: &Qp<Ferroce>) -> Result {
    let mut after = After::default();
    let mut st = qp.data().state.lock();
    let r = match (&st.rq, st.attr.qp_state) {
        (None, _) => Err(EINVAL),
        (Some(_), QpState::Err) if !st.receiving => st.flush_rq(qp, &mut after.notices),
        (Some(rq), _) => rq.pending().map(|_| ()),
    };
    if st.attr.qp_state != QpState::Err {
        after.waiter = st.rnr_waiter.take();
        if let Some(rq) = &st.rq {
            // The waiter retries now; if it runs dry again, it asks again.
            let _ = rq.set_flag(abi::QUEUE_NEED_WAKEUP, false);
        }
    }
    drop(st);
    after.run(qp, qp.is_user());
    r
}

/// A receive the QP's send queue waited for was posted (or the destination failed): retry its
/// sends now.
pub(crate) fn kick(qp: &Qp<Ferroce>, may_sleep: bool) {
    let mut st = qp.data().state.lock();
    st.kicks = st.kicks.wrapping_add(1);
    st.rnr_wait = false;
    if st.sending || st.attr.qp_state != QpState::Rts {
        return;
    }
    st.sending = true;
    drop(st);
    // Until the queue is empty or waits again: nothing else would resume it (the owner may
    // wait for completions without ringing again). The kicker's system call lends its time
    // to its connected peer (a worker will take this over).
    run(qp, may_sleep, Budget::UntilDone);
}

/// Starts executing the send queue if work waits and nobody executes it (a move back to RTS).
pub(crate) fn start_sq(qp: &Qp<Ferroce>, may_sleep: bool) {
    let mut st = qp.data().state.lock();
    if st.sending || st.attr.qp_state != QpState::Rts || st.sq.pending().unwrap_or(0) == 0 {
        return;
    }
    st.sending = true;
    drop(st);
    run(qp, may_sleep, Budget::UntilDone);
}

/// Hands the send queue's token (`sending`, which the caller holds) to the QP's work item.
fn defer_sq(qp: &Qp<Ferroce>) {
    qp.data().state.lock().sq_to_work = true;
    qp.queue_work();
}

/// The QP's work item: sends the responder's replies and executes the send queue, where
/// their tokens were handed to it (`run_sq` could not execute the queue where it was asked
/// to; a responder's replies are paced, `reply.rs`).
pub(crate) fn run_deferred(qp: &Qp<Ferroce>) {
    reply::send_deferred(qp);
    let sq = core::mem::take(&mut qp.data().state.lock().sq_to_work);
    if sq {
        run(qp, true, Budget::UntilDone);
    }
}

/// How long an executor goes on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    /// The owner's own system call: until done, or until the owner is killed (its QP goes
    /// with it).
    Owner,
    /// Until done: nothing else would resume the queue.
    UntilDone,
}

/// What the executor does next, as the QP's carrier decides it under the QP's lock.
pub(crate) enum Step {
    /// Nothing it may do now (the queue is empty or waits: window, RNR, fence, READ credits,
    /// the oldest to complete; or the QP left RTS): it gives its token back.
    Stop,
    /// Something completed or was taken: what follows the lock runs, and it looks again.
    Again,
    /// Send a turn of packets of a record of the wire's send window.
    Send(requester::Turn, rc::Rec),
    /// Execute the WQE at the head of the queue by direct placement (`len` bytes of it read;
    /// the QP's resets and kicks when it was read).
    Place {
        req: placement::Requester,
        len: usize,
        resets: u32,
        kicks: u32,
    },
}

/// Executes the send queue in the caller's context until it is empty, must wait, or the QP
/// leaves RTS. The caller holds the token (`sending`); this gives it back. No lock is held
/// while a WQE executes or a turn is sent; completions are delivered after each. Where it
/// `may_sleep`, it yields the CPU between steps.
pub(crate) fn run(qp: &Qp<Ferroce>, may_sleep: bool, budget: Budget) {
    if kernel::rdma::sw::context::irqs_disabled() {
        // A kernel user posted with interrupts off (ib_mad does, under its queue's lock):
        // nothing may be transmitted here. The QP's work item executes the queue (the token
        // passes on to it).
        defer_sq(qp);
        return;
    }
    let data = qp.data();
    let qp_type = data.init.qp_type;
    let uc = qp_type == QpType::Uc;
    let wire = matches!(qp_type, QpType::Rc | QpType::Uc) && !data.state.lock().peer_local;
    let mut wqe = [0u8; SEND_WQE_MAX];
    loop {
        let mut after = After::default();
        let mut guard = data.state.lock();
        let step = if matches!(guard.attr.qp_state, QpState::Err | QpState::Sqe) {
            // Whatever is left completes flushed; from now on doorbells flush.
            let _ = guard.flush_sq(qp, &mut after.notices);
            Step::Stop
        } else if budget == Budget::Owner
            && may_sleep
            && kernel::rdma::sw::context::fatal_signal_pending()
        {
            // The owner is killed: its QP goes with it.
            Step::Stop
        } else if wire {
            requester::next_step(qp, &mut guard, uc, &mut wqe, &mut after)
        } else {
            direct_step(qp, &mut guard, &mut wqe, may_sleep)
        };
        match step {
            Step::Stop => {
                guard.sending = false;
                drop(guard);
                after.run(qp, may_sleep);
                return;
            }
            Step::Again => {
                drop(guard);
                after.run(qp, may_sleep);
                continue;
            }
            Step::Send(turn, rec) => {
                drop(guard);
                requester::send(qp, &turn, &rec, &wqe, uc, &mut after);
            }
            Step::Place {
                req,
                len,
                resets,
                kicks,
            } => {
                drop(guard);
                let outcome = placement::execute(qp, &req, &wqe[..len]);
                placed(qp, outcome, resets, kicks, &mut after);
            }
        }
        after.run(qp, may_sleep);
        if may_sleep {
            kernel::rdma::sw::context::cond_resched();
        }
    }
}

/// Direct placement's next step: the WQE at the head of the queue, in RTS, unless the queue
/// waits for the destination to post a receive (RNR) until kicked.
fn direct_step(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    wqe: &mut [u8; SEND_WQE_MAX],
    may_sleep: bool,
) -> Step {
    let data = qp.data();
    let pending = if st.attr.qp_state == QpState::Rts {
        st.sq.pending().unwrap_or(0)
    } else {
        0
    };
    let len = (st.sq.wqe_size as usize).min(SEND_WQE_MAX);
    if pending == 0 || st.rnr_wait || st.sq.peek(0, &mut wqe[..len]).is_err() {
        return Step::Stop;
    }
    let req = placement::Requester {
        qpn: qp.qp_num(),
        serial: data.serial,
        peer_serial: st.peer_serial,
        qp_type: data.init.qp_type,
        dest_qpn: st.attr.dest_qp_num,
        peer_local: st.peer_local,
        gids: st.attr.av.as_ref().map(|av| (av.sgid, av.dgid)),
        cap: st.attr.cap,
        sig_all: data.init.sq_sig_all,
        rnr_retry: st.attr.rnr_retry,
        qkey: st.attr.qkey,
        may_sleep,
    };
    Step::Place {
        req,
        len,
        resets: st.resets,
        kicks: st.kicks,
    }
}

/// A WQE executed by direct placement: it completes (a failed RC WQE puts the QP in error,
/// IBTA 10.8.3.1; a failed UD or UC send the send queue only, SQE, 10.8.3.2: the rest
/// flushes, receives go on, and a move back to RTS recovers it, as ib_mad does for QP1), or
/// the queue waits for the destination's receive (RNR) unless a kick came meanwhile. If the
/// QP was reset meanwhile, the WQE is gone, and with it its completion.
fn placed(
    qp: &Qp<Ferroce>,
    outcome: placement::Outcome,
    resets: u32,
    kicks: u32,
    after: &mut After,
) {
    let data = qp.data();
    let mut st = data.state.lock();
    if st.resets != resets {
        return;
    }
    let (cqe, signaled) = match outcome {
        placement::Outcome::Rnr => {
            if st.kicks == kicks {
                st.rnr_wait = true;
            }
            return;
        }
        placement::Outcome::Done { cqe, signaled } => (cqe, signaled),
    };
    let _ = st.sq.consume(1);
    if signaled || cqe.status != WcStatus::Success {
        let cqe = Cqe {
            kernel_qp: QpToken::of(qp).to_bits(),
            ..cqe
        };
        if let Ok(n) = cq::post(qp.send_cq(), &cqe) {
            after.notices.send = n;
        }
    }
    if cqe.status != WcStatus::Success {
        if data.init.qp_type == QpType::Rc {
            st.enter_error(qp, after);
        } else if matches!(st.attr.qp_state, QpState::Rts | QpState::Sqd) {
            st.attr.qp_state = QpState::Sqe;
            st.attr.cur_qp_state = QpState::Sqe;
        }
    }
}
