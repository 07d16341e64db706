// SPDX-License-Identifier: GPL-2.0

//! What the reliable transport (IBTA 9.7) reads from and writes into acknowledgements, and
//! the time its timers stand for: the AETH syndrome (ACK with a credit count, RNR NAK with a
//! timer code, NAK with an error code), the RNR NAK timer table, the credit count table and
//! the local ACK timeout.
//!
//! Pure `core` code, tested on the host (`host-tests/`); the RC engine uses it.

/// Why a responder refused a request (the low five bits of a NAK syndrome, IBTA 9.7.5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NakCode {
    /// A request arrived out of order: the requester resends from the expected PSN.
    PsnSequenceError = 0,
    /// The request cannot be carried out (an opcode out of sequence, a message too long for
    /// the receive, an operation the QP does not allow).
    InvalidRequest = 1,
    /// An R_Key, address or access right that does not hold.
    RemoteAccessError = 2,
    /// The responder failed for a reason of its own (e.g. a receive WQE it cannot use).
    RemoteOperationalError = 3,
    /// An RD request the responder will not serve (RD only; ferroce never sends it).
    InvalidRdRequest = 4,
}

/// An AETH syndrome (IBTA 9.7.5.2): bit 7 reserved (0), bits 6-5 the kind, bits 4-0 its
/// argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Syndrome {
    /// The requests up to the PSN are done; `credits` is a code of [`credits`] (end-to-end
    /// flow control), [`CREDITS_INVALID`] when the responder does not count.
    Ack { credits: u8 },
    /// Receiver not ready: no receive WQE; retry after the time `timer` codes
    /// ([`rnr_timer_ns`]).
    RnrNak { timer: u8 },
    /// The request at the PSN failed.
    Nak(NakCode),
}

const KIND_MASK: u8 = 0xe0;
const KIND_ACK: u8 = 0x00;
const KIND_RNR_NAK: u8 = 0x20;
const KIND_NAK: u8 = 0x60;
const ARG_MASK: u8 = 0x1f;

/// The credit code that says "no credit count": what a responder that does not do end-to-end
/// flow control (an SRQ, rdma_rxe, ferroce) puts in every ACK; the requester then sends
/// without a credit limit.
pub(crate) const CREDITS_INVALID: u8 = 0x1f;

impl Syndrome {
    /// Decodes an AETH syndrome byte; `None` for a reserved kind or NAK code.
    pub(crate) fn from_byte(b: u8) -> Option<Syndrome> {
        let arg = b & ARG_MASK;
        Some(match b & KIND_MASK {
            KIND_ACK => Syndrome::Ack { credits: arg },
            KIND_RNR_NAK => Syndrome::RnrNak { timer: arg },
            KIND_NAK => Syndrome::Nak(match arg {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                _ => return None,
            }),
            _ => return None,
        })
    }

    /// The syndrome byte; a credit count or timer code keeps its low five bits.
    pub(crate) fn to_byte(self) -> u8 {
        match self {
            Syndrome::Ack { credits } => KIND_ACK | credits & ARG_MASK,
            Syndrome::RnrNak { timer } => KIND_RNR_NAK | timer & ARG_MASK,
            Syndrome::Nak(code) => KIND_NAK | code as u8,
        }
    }
}

/// The RNR NAK timer codes (IBTA 9.7.5.2.8, `enum ib_rnr_timeout`), in units of 10 us: code 0
/// is the longest, 655.36 ms; codes 1 to 31 run from 0.01 ms to 491.52 ms in steps of about
/// half a power of two.
const RNR_TIMER_10US: [u32; 32] = [
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
];

/// How long an RNR NAK with timer `code` (or a QP's `min_rnr_timer`) tells the requester to
/// wait before it retries, in nanoseconds. Only the low five bits of `code` count.
pub(crate) fn rnr_timer_ns(code: u8) -> u64 {
    let units = RNR_TIMER_10US
        .get(usize::from(code & ARG_MASK))
        .copied()
        .unwrap_or(0);
    u64::from(units) * 10_000
}

/// The credit counts of the AETH's credit codes 0 to 30 (IBTA end-to-end flow control): the same
/// half-power-of-two steps as the RNR timer, 0 to 32768 receive WQEs.
#[cfg_attr(not(test), allow(dead_code))]
const CREDITS: [u16; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

/// How many more messages the responder has receive WQEs for, by an ACK's credit `code`;
/// `None` for [`CREDITS_INVALID`]: no limit. Only the low five bits of `code` count.
// The requester does not limit itself by credits yet (rxe and SRQ responders send none); the
// table is host-tested for when it does.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn credits(code: u8) -> Option<u32> {
    CREDITS
        .get(usize::from(code & ARG_MASK))
        .map(|&c| u32::from(c))
}

/// The local ACK timeout (the requester's transport timer) a QP's `timeout` attribute codes,
/// in nanoseconds: 4.096 us * 2^timeout, from 8.192 us (1) to about 2.4 hours (31). `None` for
/// 0: wait forever (never retry on a timeout). The attribute is five bits; larger values count
/// as 31.
pub(crate) fn ack_timeout_ns(timeout: u8) -> Option<u64> {
    (timeout != 0).then(|| 4096u64 << timeout.min(31))
}
