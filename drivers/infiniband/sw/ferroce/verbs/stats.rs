// SPDX-License-Identifier: GPL-2.0

//! The device's port counters (`rdma statistic show`, `ports/1/hw_counters/`).
//!
//! Messages count for both paths (direct placement between QPs of the device and the RoCEv2
//! wire); packets, retransmissions, NAKs and ICRC errors for the wire only.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{c_str, rdma::Counter};

/// One counter.
#[derive(Clone, Copy)]
pub(crate) enum Stat {
    /// Messages a requester completed successfully.
    SentMsgs,
    /// Their bytes.
    SentBytes,
    /// Messages (and RDMA READ responses) placed into a responder's memory.
    RcvdMsgs,
    /// Their bytes.
    RcvdBytes,
    /// Sends that found no receive WQE and wait for one (RNR).
    RnrWaits,
    /// Requests a responder refused with a NAK (access, invalid request, operation error).
    Naks,
    /// Messages (or packets) a responder dropped (not in a receiving state, not connected to
    /// the requester, wrong Q_Key, no receive WQE for UD/UC, no such QP).
    Dropped,
    /// Packets sent on the wire (retransmissions included).
    SentPkts,
    /// Packets received from the wire and taken by a QP.
    RcvdPkts,
    /// Packets sent again (go-back-N after a timeout, a NAK or an RNR NAK).
    Retransmits,
    /// Retransmission timeouts of a requester.
    Timeouts,
    /// NAKs and RNR NAKs a requester received.
    NaksRcvd,
    /// Packets a responder took for out of sequence (it NAKs the first of a run).
    SeqErrors,
    /// Duplicate requests a responder acknowledged or answered again.
    DupRequests,
    /// Packets dropped for a bad ICRC, a malformed header or a P_Key the QP does not take.
    BadPkts,
    /// Well-formed packets for no QP of the device (a late packet of a destroyed connection,
    /// or a guess). Every packet the port hands the device counts once in `bad_pkts`,
    /// `no_qp_pkts` or `rcvd_pkts`.
    NoQpPkts,
    /// Reply packets a responder sent from the QP's work item, not from the softirq of the
    /// request that asked for them: READ responses paced, and the replies queued behind them
    /// (`reply.rs`).
    PacedPkts,
    /// Packets that could not be sent for want of memory (no skb): lost as on the wire, and
    /// recovered as a lost packet is; the rest of that send turn or READ response part was
    /// not sent either.
    TxLost,
    /// Trains sent: datagrams of several packets that the IP stack cut apart (`wire.rs`);
    /// their packets count in `sent_pkts`.
    SentTrains,
    /// Trains received whole (`train.rs`, from a veth): one UDP datagram each, whose pieces
    /// each count as a packet the port handed over (a datagram whose own headers are bad
    /// counts once in `bad_pkts`, and not here).
    RcvdTrains,
    /// The pieces of those trains.
    RcvdTrainPkts,
    /// Packets (and local messages) dropped because their P_Key does not match the receiving
    /// QP's (IBTA's P_Key violations, `pkey.rs`); packets from the wire count in `bad_pkts`
    /// too.
    PkeyViolations,
}

const COUNT: usize = Stat::PkeyViolations as usize + 1;

/// The names, in the order of [`Stat`].
pub(crate) static NAMES: [Counter; COUNT] = [
    Counter::new(c_str!("sent_msgs")),
    Counter::new(c_str!("sent_bytes")),
    Counter::new(c_str!("rcvd_msgs")),
    Counter::new(c_str!("rcvd_bytes")),
    Counter::new(c_str!("rnr_waits")),
    Counter::new(c_str!("naks")),
    Counter::new(c_str!("dropped")),
    Counter::new(c_str!("sent_pkts")),
    Counter::new(c_str!("rcvd_pkts")),
    Counter::new(c_str!("retransmits")),
    Counter::new(c_str!("timeouts")),
    Counter::new(c_str!("naks_rcvd")),
    Counter::new(c_str!("seq_errors")),
    Counter::new(c_str!("dup_requests")),
    Counter::new(c_str!("bad_pkts")),
    Counter::new(c_str!("no_qp_pkts")),
    Counter::new(c_str!("paced_pkts")),
    Counter::new(c_str!("tx_lost")),
    Counter::new(c_str!("sent_trains")),
    Counter::new(c_str!("rcvd_trains")),
    Counter::new(c_str!("rcvd_train_pkts")),
    Counter::new(c_str!("pkey_violations")),
];

/// The counters of a device (it has one port).
pub(crate) struct Counters([AtomicU64; COUNT]);

impl Counters {
    pub(crate) fn new() -> Self {
        Counters([const { AtomicU64::new(0) }; COUNT])
    }

    pub(crate) fn add(&self, stat: Stat, n: u64) {
        self.0[stat as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// Copies the values into `out` (as many as both hold).
    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(&self.0) {
            *o = c.load(Ordering::Relaxed);
        }
    }
}
