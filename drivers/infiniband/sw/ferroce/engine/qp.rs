// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the send and receive rings shared with the provider, the IBTA state machine and
//! the attributes every transition validates.

use kernel::{
    alloc::KVVec,
    new_spinlock_irq,
    prelude::*,
    rdma::{
        access, modify_is_ok, qp_mask as m, sw::wire::RouteCache, wr::SEND_INLINE, Mr, Mtu, Pd, Qp,
        QpAttr, QpCap, QpEvent, QpInitAttr, QpState, QpToken, QpType, RecvWr, SendOp, SendWr,
        UContext, Udata,
    },
    sync::{barrier::smp_mb, Arc, Mutex, SpinLockIrq},
};

use crate::{
    engine::{executor, rc},
    protocol::{
        abi::{self, Cqe, SendWqe, WqeUnion},
        keys::KeyTable,
        limits,
        refusal::Refusal,
    },
    verbs::{
        cq::{self, Notice},
        device::{active_mtu, Ferroce},
        mr,
        numbers::{GsiSlot, Number},
        wq::{produce_recv, sge_list, WorkQueue, WQE_BODY},
    },
};
use core::sync::atomic::{AtomicU16, AtomicU32, Ordering};

pub(crate) use crate::verbs::wq::{RECV_WQE_MAX, SEND_WQE_MAX};

/// What `modify_qp`, `query_qp`, the doorbells and the data path share: the attributes, the
/// rings and the state of the send queue's executor.
pub(crate) struct QpShared {
    pub(crate) attr: QpAttr,
    pub(crate) sq: WorkQueue,
    /// `None` when the QP receives from an SRQ.
    pub(crate) rq: Option<WorkQueue>,
    /// Whether the destination of an RC/UC QP is a GID of this device (checked when the
    /// address vector is set).
    pub(crate) peer_local: bool,
    /// The serial (`QpData::serial`) of the local QP that had the destination QP number when
    /// it was set: direct placement takes messages only from that QP, and sends only to it.
    /// A QP number comes back to another process once its QP is gone (after at most 255
    /// others of its index), and that process must not inherit the connection.
    pub(crate) peer_serial: Option<u64>,
    /// Some caller is executing the send queue (`run_sq`); others leave new work to it. While
    /// it runs, the WQE it executes stays in the ring (the consumer index advances when the
    /// WQE completes) and only it completes or flushes send work.
    pub(crate) sending: bool,
    /// The `sending` token was handed to the QP's work item.
    pub(crate) sq_to_work: bool,
    /// The send queue waits for the destination to post a receive (RNR), until kicked.
    pub(crate) rnr_wait: bool,
    /// Times the QP was kicked (a receive it waited for was posted): an executor that finds
    /// no receive WQE retries at once if a kick came meanwhile.
    pub(crate) kicks: u32,
    /// Times the QP went back to RESET: an executor that sees it changed completes nothing.
    pub(crate) resets: u32,
    /// The QP whose send queue waits for this QP's receive queue.
    pub(crate) rnr_waiter: Option<u32>,
    /// A requester is placing a message into the receive WQE it took from this QP's RQ; it
    /// completes it (`complete_recv`), and flushes the RQ after it if the QP entered ERR
    /// meanwhile, so that receive completions stay in order.
    pub(crate) receiving: bool,
    /// The wire state of a connected QP whose peer is elsewhere (rc.rs).
    pub(crate) conn: rc::Conn,
    /// The route of a connected QP's packets to its destination, kept between them; one per
    /// address vector (a new one replaces it with the destination), so a cache never holds
    /// another destination's route. `None` for UD and before an address vector is set.
    pub(crate) routes: Option<Arc<RouteCache>>,
}

/// What is left to do once a QP's lock is dropped: tell its CQs, report events, kick the QP
/// waiting for its receive queue, restart its send queue.
#[derive(Default)]
#[must_use]
pub(crate) struct After {
    pub(crate) notices: Notices,
    last_wqe: bool,
    sq_drained: bool,
    pub(crate) waiter: Option<u32>,
    restart: bool,
}

impl After {
    /// Does it; `may_sleep` if the caller is in process context with no lock held.
    pub(crate) fn run(self, qp: &Qp<Ferroce>, may_sleep: bool) {
        self.notices.deliver(qp);
        if self.last_wqe {
            // The QP takes no more WQEs from its SRQ (IBTA 10.3.1: "last WQE reached").
            qp.dispatch_event(QpEvent::LastWqeReached);
        }
        if self.sq_drained {
            qp.dispatch_event(QpEvent::SqDrained);
        }
        if let Some(waiter) = self.waiter.and_then(|n| qp.device().qp(n)) {
            executor::kick(&waiter, may_sleep);
        }
        if self.restart {
            executor::start_sq(qp, may_sleep);
        }
    }
}

/// What the QP's CQs are to be told once the QP lock is dropped.
#[derive(Default)]
#[must_use]
pub(crate) struct Notices {
    pub(crate) send: Notice,
    pub(crate) recv: Notice,
}

impl Notices {
    pub(crate) fn deliver(self, qp: &Qp<Ferroce>) {
        self.send.deliver(qp.send_cq());
        self.recv.deliver(qp.recv_cq());
    }
}

impl QpShared {
    /// Moves the QP to ERR (from modify or the data path) unless it is there: posted receive
    /// work completes flushed, and so does send work unless an executor is running, which
    /// flushes it; a QP waiting for this one's receives is to be kicked (and fail).
    pub(crate) fn enter_error(&mut self, qp: &Qp<Ferroce>, after: &mut After) {
        if self.attr.qp_state == QpState::Err {
            return;
        }
        self.attr.qp_state = QpState::Err;
        self.attr.cur_qp_state = QpState::Err;
        // Everything posted completes with a flush error, and so does everything posted from
        // now on: the RQ needs its doorbell for that. The flag is set before the RQ's
        // producer index is read (in `flush_rq`), with a full barrier between, as the
        // provider stores the index before it reads the flag: a receive posted meanwhile is
        // either flushed here or rung for. (A corrupt ring flushes nothing; the QP is in
        // error all the same.)
        if let Some(rq) = &self.rq {
            let _ = rq.set_flag(abi::QUEUE_NEED_WAKEUP, true);
        }
        smp_mb();
        if !self.sending {
            let _ = self.flush_sq(qp, &mut after.notices);
        }
        // A message the wire responder was receiving: its WQE completes flushed, first.
        if let Some(wr_id) = self.conn.take_held_recv(self.resets) {
            let cqe = flushed(qp, wr_id, abi::wc_opcode::RECV, qp.qp_num());
            if let Ok(n) = cq::post(qp.recv_cq(), &cqe) {
                after.notices.recv = after.notices.recv.or(n);
            }
        }
        if !self.receiving {
            let _ = self.flush_rq(qp, &mut after.notices);
            after.last_wqe = qp.srq().is_some();
        }
        after.waiter = self.rnr_waiter.take();
    }

    /// Completes every posted send WQE with a flush error (the QP is in ERR).
    pub(crate) fn flush_sq(&mut self, qp: &Qp<Ferroce>, notices: &mut Notices) -> Result {
        // The wire requester's records go with the WQEs they describe.
        self.conn.clear_requester();
        let qpn = qp.qp_num();
        self.sq.drain(|hdr: &[u8; abi::SEND_WQE_HEADER]| {
            let wr_id = abi::wqe_wr_id(hdr.first_chunk().unwrap_or(&[0; abi::RECV_WQE_HEADER]));
            let op = u32::from_ne_bytes(
                hdr[abi::SEND_WQE_OPCODE..][..4]
                    .try_into()
                    .unwrap_or([0; 4]),
            );
            // An unknown opcode still completes (as a send): the WQE is not executed.
            let opcode = abi::wc_opcode_of(op).unwrap_or(abi::wc_opcode::SEND);
            // A corrupt CQ ring is the owner's problem; the flush goes on.
            if let Ok(n) = cq::post(qp.send_cq(), &flushed(qp, wr_id, opcode, qpn)) {
                notices.send = notices.send.or(n);
            }
        })
    }

    /// Completes every posted receive WQE with a flush error (the QP is in ERR).
    pub(crate) fn flush_rq(&mut self, qp: &Qp<Ferroce>, notices: &mut Notices) -> Result {
        let Some(rq) = self.rq.as_mut() else {
            return Ok(());
        };
        let qpn = qp.qp_num();
        rq.drain(|hdr: &[u8; abi::RECV_WQE_HEADER]| {
            let wr_id = abi::wqe_wr_id(hdr);
            let cqe = flushed(qp, wr_id, abi::wc_opcode::RECV, qpn);
            if let Ok(n) = cq::post(qp.recv_cq(), &cqe) {
                notices.recv = notices.recv.or(n);
            }
        })
    }
}

/// A flushed work request's completion (naming the QP for a kernel CQ).
fn flushed(qp: &Qp<Ferroce>, wr_id: u64, opcode: u32, qpn: u32) -> Cqe {
    Cqe {
        kernel_qp: QpToken::of(qp).to_bits(),
        ..Cqe::flushed(wr_id, opcode, qpn)
    }
}

/// Per-QP state.
#[pin_data]
pub(crate) struct QpData {
    /// The QP's number, held while the QP exists.
    _number: QpNumber,
    /// Unique among the device's QPs ever created (numbers are reused, serials never).
    pub(crate) serial: u64,
    pub(crate) init: QpInitAttr,
    /// Taken in any context (kernel users post from softirq, packets arrive in softirq).
    #[pin]
    pub(crate) state: SpinLockIrq<QpShared>,
    /// The PSN of the next UD datagram sent on the wire (receivers do not check it).
    ud_psn: AtomicU32,
    /// The index of the QP's P_Key in the port's table (`attr.pkey_index`, read without the
    /// lock by the paths that send and check packets).
    pkey_index: AtomicU16,
}

impl QpData {
    pub(crate) fn qp_type(&self) -> QpType {
        self.init.qp_type
    }

    pub(crate) fn next_ud_psn(&self) -> u32 {
        self.ud_psn.fetch_add(1, Ordering::Relaxed) & crate::protocol::psn::MASK
    }

    /// The index of the QP's P_Key in the port's table.
    pub(crate) fn pkey_index(&self) -> u16 {
        self.pkey_index.load(Ordering::Relaxed)
    }
}

/// The P_Key `qp` sends with and checks packets against: the entry at its `pkey_index` now
/// (the administrator may change it under a live QP; 0, which matches nothing, if emptied).
pub(crate) fn own_pkey(qp: &Qp<Ferroce>) -> u16 {
    qp.device().data().pkeys.get(qp.data().pkey_index())
}

/// Whether `qp` takes a packet with the P_Key `pkey` (IBTA 10.9.3), and with which index of
/// the port's table: its own P_Key's, or for QP1 (which serves every partition of the port)
/// the first entry that matches.
pub(crate) fn admits_pkey(qp: &Qp<Ferroce>, pkey: u16) -> Option<u16> {
    if qp.data().qp_type() == QpType::Gsi {
        return qp.device().data().pkeys.find(pkey);
    }
    crate::protocol::pkey::matches(pkey, own_pkey(qp)).then(|| qp.data().pkey_index())
}

/// Where a QP's number comes from: QP1 is the general services QP; the others are numbered
/// from the device's table.
enum QpNumber {
    Gsi { _held: GsiSlot },
    Table(Number<Mutex<KeyTable<KVVec<u16>>>>),
}

impl QpNumber {
    fn get(&self) -> u32 {
        match self {
            QpNumber::Gsi { .. } => GSI_QPN,
            QpNumber::Table(n) => n.get(),
        }
    }
}

fn entries(wr: u32) -> Result<u32> {
    if wr > limits::MAX_QP_WR {
        return Err(EINVAL);
    }
    Ok(wr.max(1).next_power_of_two())
}

pub(crate) fn create(
    pd: &Pd<Ferroce>,
    init: &mut QpInitAttr,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result<(impl PinInit<QpData, Error>, u32)> {
    check_init(init, uctx, udata)?;
    let (sq, rq) = create_queues(init, uctx, udata)?;
    let attr = reset_attr(init.cap);
    let dev = pd.device().data();
    let number = if init.qp_type == QpType::Gsi {
        QpNumber::Gsi {
            _held: GsiSlot::take(&dev.gsi_qp)?,
        }
    } else {
        QpNumber::Table(Number::take(&dev.qpns)?)
    };
    let qpn = number.get();
    let init = *init;
    let conn = rc::Conn::new(init.cap.max_send_wr, init.qp_type == QpType::Rc)?;
    let serial = dev.qp_serials.fetch_add(1, Ordering::Relaxed);
    let data = try_pin_init!(QpData {
        _number: number,
        serial,
        init,
        state <- new_spinlock_irq!(
            QpShared {
                attr,
                sq,
                rq,
                peer_local: false,
                peer_serial: None,
                sending: false,
                sq_to_work: false,
                rnr_wait: false,
                kicks: 0,
                resets: 0,
                rnr_waiter: None,
                receiving: false,
                conn,
                routes: None,
            },
            "ferroce:qp"
        ),
        ud_psn: AtomicU32::new(0),
        pkey_index: AtomicU16::new(0),
    });
    Ok((data, qpn))
}

/// Checks what a new QP asks for against what ferroce creates; a QP with an SRQ asks for no
/// receive queue of its own.
fn check_init(
    init: &mut QpInitAttr,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result {
    if init.create_flags != 0 {
        return Err(EOPNOTSUPP);
    }
    // QP1 belongs to ib_core's MAD layer, one per port.
    if init.qp_type == QpType::Gsi && uctx.is_some() {
        return Err(EINVAL);
    }
    if init.has_srq {
        // Receives come from the SRQ: the QP has no receive queue of its own.
        init.cap.max_recv_wr = 0;
        init.cap.max_recv_sge = 0;
    }
    udata.require_no_input()?;
    let cap = init.cap;
    if cap.max_send_sge > limits::MAX_SGE
        || cap.max_recv_sge > limits::MAX_SGE
        || cap.max_inline_data > limits::MAX_INLINE_DATA
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// Creates a new QP's send queue and (without an SRQ) receive queue for `init.cap`, which
/// becomes what they hold; describes them to user space.
fn create_queues(
    init: &mut QpInitAttr,
    uctx: Option<&UContext<Ferroce>>,
    udata: &mut Udata<'_>,
) -> Result<(WorkQueue, Option<WorkQueue>)> {
    let cap = init.cap;
    let sq_entries = entries(cap.max_send_wr)?;
    let (sq_wqe, rq_wqe) = abi::wqe_sizes(cap.max_send_sge, cap.max_inline_data, cap.max_recv_sge);
    let sq = WorkQueue::new(uctx, sq_entries, sq_wqe)?;
    let rq = if init.has_srq {
        None
    } else {
        Some(WorkQueue::new(uctx, entries(cap.max_recv_wr)?, rq_wqe)?)
    };
    // No kernel thread watches the send queue: every post needs the doorbell.
    sq.set_flag(abi::QUEUE_NEED_WAKEUP, true)?;
    init.cap = QpCap {
        max_send_wr: sq_entries,
        max_recv_wr: rq.as_ref().map_or(0, |rq| rq.queue.num_entries),
        max_send_sge: abi::sge_room(sq_wqe, abi::SEND_WQE_HEADER).min(limits::MAX_SGE),
        max_recv_sge: rq.as_ref().map_or(0, |_| {
            abi::sge_room(rq_wqe, abi::RECV_WQE_HEADER).min(limits::MAX_SGE)
        }),
        max_inline_data: (sq_wqe - abi::SEND_WQE_HEADER as u32).min(limits::MAX_INLINE_DATA),
    };
    if uctx.is_some() {
        let rq_mi = rq.as_ref().map(|rq| rq.queue.mmap_info()).transpose()?;
        udata.write(&abi::create_qp_resp(
            &sq.queue.mmap_info()?,
            rq_mi.as_ref(),
            sq_wqe,
            rq.as_ref().map_or(0, |_| rq_wqe),
        ))?;
    }
    Ok((sq, rq))
}

/// The attributes of a new QP (in RESET) with the capabilities `cap`.
fn reset_attr(cap: QpCap) -> QpAttr {
    QpAttr {
        qp_state: QpState::Reset,
        cur_qp_state: QpState::Reset,
        path_mtu: Mtu::Mtu1024 as u32,
        qkey: 0,
        rq_psn: 0,
        sq_psn: 0,
        dest_qp_num: 0,
        qp_access_flags: 0,
        av: None,
        pkey_index: 0,
        en_sqd_async_notify: 0,
        max_rd_atomic: 0,
        max_dest_rd_atomic: 0,
        min_rnr_timer: 0,
        port_num: 1,
        timeout: 0,
        retry_cnt: 0,
        rnr_retry: 0,
        cap,
    }
}

/// The number of the general services QP (QP1); other QPs are numbered from 256 on (keys.rs).
const GSI_QPN: u32 = 1;

/// The access flags a QP takes. Both FLUSH placement types may be allowed: what a peer's FLUSH
/// may ask for is then up to the memory it names, and no memory grants persistence (pyverbs
/// and rdma-core's own tests allow both on every RC QP).
const ACCESS: u32 = access::LOCAL_WRITE
    | access::REMOTE_WRITE
    | access::REMOTE_READ
    | access::REMOTE_ATOMIC
    | access::FLUSH_GLOBAL
    | access::FLUSH_PERSISTENT;

/// Checks every attribute in `mask` against the limits; the state machine is checked by
/// ib_core's table.
fn check(qp: &Qp<Ferroce>, attr: &QpAttr, mask: u32) -> Result {
    let bad = |cond: bool| if cond { Err(EINVAL) } else { Ok(()) };
    if mask & (m::ALT_PATH | m::PATH_MIG_STATE | m::CAP | m::RATE_LIMIT) != 0 {
        // Automatic path migration, QP resizing and rate limits: not supported.
        return Err(EOPNOTSUPP);
    }
    if mask & m::PORT != 0 {
        bad(attr.port_num != 1)?;
    }
    if mask & m::PKEY_INDEX != 0 {
        bad(attr.pkey_index >= limits::PKEY_TBL_LEN)?;
    }
    if mask & m::ACCESS_FLAGS != 0 {
        bad(attr.qp_access_flags & !ACCESS != 0)?;
    }
    if mask & m::AV != 0 {
        let av = attr.av.as_ref().ok_or(EINVAL)?;
        bad(av.port_num != 1 || u32::from(av.sgid_index) >= limits::GID_TBL_LEN || av.sl > 7)?;
    }
    if mask & m::PATH_MTU != 0 {
        // No larger than what the netdev carries now.
        let active = qp
            .device()
            .netdev(1)
            .map_or(Mtu::Mtu256, |nd| active_mtu(&nd));
        bad(Mtu::from_raw(attr.path_mtu).ok_or(EINVAL)? > active)?;
    }
    if mask & m::TIMEOUT != 0 {
        bad(attr.timeout > 31)?;
    }
    if mask & m::RETRY_CNT != 0 {
        bad(attr.retry_cnt > 7)?;
    }
    if mask & m::RNR_RETRY != 0 {
        bad(attr.rnr_retry > 7)?;
    }
    if mask & m::MIN_RNR_TIMER != 0 {
        bad(attr.min_rnr_timer > 31)?;
    }
    if mask & m::RQ_PSN != 0 {
        bad(attr.rq_psn > 0xff_ffff)?;
    }
    if mask & m::SQ_PSN != 0 {
        bad(attr.sq_psn > 0xff_ffff)?;
    }
    if mask & m::DEST_QPN != 0 {
        bad(attr.dest_qp_num > 0xff_ffff)?;
    }
    if mask & m::MAX_QP_RD_ATOMIC != 0 {
        bad(u32::from(attr.max_rd_atomic) > limits::MAX_QP_RD_ATOM)?;
    }
    if mask & m::MAX_DEST_RD_ATOMIC != 0 {
        bad(u32::from(attr.max_dest_rd_atomic) > limits::MAX_QP_RD_ATOM)?;
    }
    Ok(())
}

pub(crate) fn modify(qp: &Qp<Ferroce>, attr: &QpAttr, mask: u32, udata: &mut Udata<'_>) -> Result {
    udata.require_no_input()?;
    // The attributes are checked before the QP lock (a spinlock): the check looks up the netdev.
    check(qp, attr, mask)?;
    // So is the destination: a GID of this device is served by direct placement.
    let peer_local = match (&attr.av, mask & m::AV != 0) {
        (Some(av), true) => Some(qp.device().gid_is_local(1, &av.dgid)),
        _ => None,
    };
    // A new destination gets a new route cache (it allocates, so not under the lock).
    let routes = match (&attr.av, mask & m::AV != 0) {
        (Some(_), true) if matches!(qp.data().qp_type(), QpType::Rc | QpType::Uc) => {
            Some(Arc::new(RouteCache::new()?, GFP_KERNEL)?)
        }
        _ => None,
    };
    // And which QP of this device has the destination number now (for direct placement).
    let peer_serial = (mask & m::DEST_QPN != 0).then(|| {
        qp.device()
            .qp(attr.dest_qp_num)
            .map(|peer| peer.data().serial)
    });
    let data = qp.data();
    let mut st = data.state.lock();
    let cur = st.attr.qp_state;
    if mask & m::CUR_STATE != 0 && attr.cur_qp_state != cur {
        return Err(EINVAL);
    }
    let next = if mask & m::STATE != 0 {
        attr.qp_state
    } else {
        cur
    };
    if !modify_is_ok(cur, next, data.init.qp_type, mask) {
        return Err(EINVAL);
    }
    take_attrs(&mut st.attr, attr, mask);
    data.pkey_index.store(st.attr.pkey_index, Ordering::Relaxed);
    // Packets built from now on go to the new destination, on its own route; those built
    // before keep the old one. (The old cache is freed, if last, outside the lock.)
    let old_routes = routes.map(|r| st.routes.replace(r));
    st.attr.qp_state = next;
    st.attr.cur_qp_state = next;
    set_conn(&mut st, mask);
    if let Some(local) = peer_local {
        st.peer_local = local;
    }
    if let Some(serial) = peer_serial {
        st.peer_serial = serial;
    }
    let mut after = After::default();
    if next != cur {
        enter_state(qp, &mut st, cur, next, &mut after);
    }
    drop(st);
    drop(old_routes);
    after.run(qp, qp.is_user());
    Ok(())
}

/// Takes into `a`, a QP's attributes, those of `attr` that `mask` names (the state aside).
fn take_attrs(a: &mut QpAttr, attr: &QpAttr, mask: u32) {
    macro_rules! take {
        ($bit:expr, $($field:ident),+) => {
            if mask & $bit != 0 {
                $(a.$field = attr.$field;)+
            }
        };
    }
    take!(m::PKEY_INDEX, pkey_index);
    take!(m::PORT, port_num);
    take!(m::QKEY, qkey);
    take!(m::ACCESS_FLAGS, qp_access_flags);
    take!(m::AV, av);
    take!(m::PATH_MTU, path_mtu);
    take!(m::TIMEOUT, timeout);
    take!(m::RETRY_CNT, retry_cnt);
    take!(m::RNR_RETRY, rnr_retry);
    take!(m::MIN_RNR_TIMER, min_rnr_timer);
    take!(m::RQ_PSN, rq_psn);
    take!(m::SQ_PSN, sq_psn);
    take!(m::DEST_QPN, dest_qp_num);
    take!(m::MAX_QP_RD_ATOMIC, max_rd_atomic);
    take!(m::MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
    take!(m::EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
}

/// Passes the PSNs and retry counts that `mask` set in the QP's attributes on to its
/// connection.
fn set_conn(st: &mut QpShared, mask: u32) {
    let a = &st.attr;
    let (rq_psn, sq_psn, retry_cnt, rnr_retry) = (a.rq_psn, a.sq_psn, a.retry_cnt, a.rnr_retry);
    if mask & m::RQ_PSN != 0 {
        st.conn.set_rq_psn(rq_psn);
    }
    if mask & m::SQ_PSN != 0 {
        st.conn.set_sq_psn(sq_psn);
    }
    if mask & (m::RETRY_CNT | m::RNR_RETRY) != 0 {
        st.conn.set_retries(retry_cnt, rnr_retry);
    }
}

/// What the move of a QP from the state `cur` to `next` (another) does, beside the state
/// itself (already `next` in `st.attr`).
fn enter_state(
    qp: &Qp<Ferroce>,
    st: &mut QpShared,
    cur: QpState,
    next: QpState,
    after: &mut After,
) {
    match next {
        QpState::Err => {
            // Entered as the data path enters it; `enter_error` sees the old state.
            st.attr.qp_state = cur;
            st.enter_error(qp, after);
        }
        QpState::Reset => {
            // Back to empty queues: posted work is dropped without completions, the WQE a
            // running executor holds included (it sees `resets` change), and so is a
            // receive being placed. A waiting requester is let go (to fail).
            st.resets = st.resets.wrapping_add(1);
            st.rnr_wait = false;
            st.conn.reset();
            after.waiter = st.rnr_waiter.take();
            let _ = st.sq.discard();
            if let Some(rq) = &mut st.rq {
                let _ = rq.discard();
                let _ = rq.set_flag(abi::QUEUE_NEED_WAKEUP, false);
            }
        }
        QpState::Sqd => {
            // SQD starts no new message; the SQ is drained once none is in flight. Direct
            // placement completes each message in the call that starts it, so that is at
            // once (a WQE an executor is placing right now completes before the event
            // is of use to anybody: the owner must still poll for it).
            after.sq_drained = st.attr.en_sqd_async_notify != 0;
        }
        // Back from SQD or SQE: work posted meanwhile runs now.
        QpState::Rts => after.restart = true,
        _ => {}
    }
}

/// The driver's part of destroying a QP (it is unpublished already): a QP waiting for this
/// one's receives is let go (to fail).
pub(crate) fn destroy(qp: &Qp<Ferroce>) {
    let waiter = qp.data().state.lock().rnr_waiter.take();
    After {
        waiter,
        ..After::default()
    }
    .run(qp, qp.is_user());
}

pub(crate) fn query(qp: &Qp<Ferroce>) -> Result<(QpAttr, QpInitAttr)> {
    let data = qp.data();
    let st = data.state.lock();
    let mut attr = st.attr;
    if !st.peer_local && matches!(data.init.qp_type, QpType::Rc | QpType::Uc) {
        // Where the wire has got to: the next PSN each side sends or expects.
        attr.sq_psn = st.conn.sq_psn();
        attr.rq_psn = st.conn.rq_psn();
    }
    Ok((attr, data.init))
}

/// The size of a management datagram (MAD), all that QP1 receives.
const MAD_SIZE: u32 = 256;

/// What a responder needs of its QP, read with the WQE it takes.
pub(crate) struct Responder {
    /// The receive WQE taken (its bytes are in the caller's buffer), if one was asked for.
    pub(crate) wqe_len: Option<usize>,
    /// The most SGEs a receive WQE of this QP may hold.
    pub(crate) max_sge: u32,
    /// RDMA READs and atomics the QP takes at a time (0: none).
    pub(crate) max_dest_rd_atomic: u8,
    /// The QP's resets when the WQE was taken (see `complete_recv`).
    pub(crate) resets: u32,
}

/// Checks that `dest` takes a message from the QP `from` (`from_type`; for a datagram, with
/// the Q_Key `qkey`; for a connected QP, sent from the GID `gids.0` to `gids.1`) and allows
/// `access`.
///
/// A connected QP takes messages only from the peer it is connected to, on this device: its
/// peer is local, its destination QP is `from` (the very QP that had that number when the
/// destination was set: `from_serial`), and its address vector names `from`'s GIDs the other
/// way round, which is what the wire checks of a packet (`rc::receive`). A QP connected
/// to another host, or to another GID, takes nothing by direct placement, whichever local QP
/// names it.
#[expect(clippy::too_many_arguments)]
fn takes(
    dest: &Qp<Ferroce>,
    st: &QpShared,
    from: u32,
    from_serial: u64,
    from_type: QpType,
    gids: Option<([u8; 16], [u8; 16])>,
    qkey: u32,
    access: u32,
) -> core::result::Result<(), Refusal> {
    let receiving = matches!(
        st.attr.qp_state,
        QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
    );
    let qp_type = dest.data().init.qp_type;
    let takes = match from_type {
        QpType::Rc | QpType::Uc => {
            qp_type == from_type
                && st.attr.dest_qp_num == from
                && st.peer_serial == Some(from_serial)
                && st.peer_local
                && st
                    .attr
                    .av
                    .as_ref()
                    .zip(gids)
                    .is_some_and(|(av, (sgid, dgid))| av.dgid == sgid && av.sgid == dgid)
        }
        // A UD QP and QP1 take datagrams from either (MADs are datagrams to QP1).
        QpType::Ud | QpType::Gsi => {
            matches!(qp_type, QpType::Ud | QpType::Gsi) && st.attr.qkey == qkey
        }
    };
    if !receiving || !takes {
        return Err(Refusal::Dropped);
    }
    if st.attr.qp_access_flags & access != access {
        return Err(Refusal::InvalidRequest);
    }
    Ok(())
}

/// Admits a message of a connected (RC, UC) QP `from` into `dest`: checks that `dest` takes
/// it and allows `access`, then, given a `buf`, takes its next receive WQE (from its RQ or
/// its SRQ) into it, to be completed with `complete_recv`. An RC requester finding no WQE is
/// recorded as the waiter to kick.
pub(crate) fn admit(
    dest: &Qp<Ferroce>,
    from: u32,
    from_serial: u64,
    from_type: QpType,
    gids: Option<([u8; 16], [u8; 16])>,
    access: u32,
    buf: Option<&mut [u8; RECV_WQE_MAX]>,
) -> core::result::Result<Responder, Refusal> {
    let data = dest.data();
    let mut guard = data.state.lock();
    let st = &mut *guard;
    takes(dest, st, from, from_serial, from_type, gids, 0, access)?;
    let mut resp = Responder {
        wqe_len: None,
        max_sge: st.attr.cap.max_recv_sge,
        max_dest_rd_atomic: st.attr.max_dest_rd_atomic,
        resets: st.resets,
    };
    let Some(buf) = buf else {
        return Ok(resp);
    };
    if st.receiving {
        // Another message is being placed here: only after a reset and a new connection
        // while the old peer's message is in flight. The new one is dropped.
        return Err(Refusal::Dropped);
    }
    if from_type == QpType::Rc {
        if let Some(rq) = st.rq.as_mut() {
            if rq.pending().map_err(|_| Refusal::RemoteOperational)? == 0 {
                // Ask for the doorbell, then look again: the provider stores its producer
                // index and then reads the flag, so a receive posted meanwhile is seen here
                // or rung for.
                let _ = rq.set_flag(abi::QUEUE_NEED_WAKEUP, true);
                smp_mb();
                if rq.pending().map_err(|_| Refusal::RemoteOperational)? == 0 {
                    st.rnr_waiter = Some(from);
                    return Err(Refusal::NoReceiveWqe);
                }
            }
        }
    }
    let taken = crate::engine::responder::take_receive_wqe(
        dest,
        st.rq.as_mut(),
        st.attr.cap.max_recv_sge,
        buf,
    )?;
    st.receiving = true;
    resp.wqe_len = Some(taken.len);
    resp.max_sge = taken.max_sge;
    Ok(resp)
}

/// Completes the receive WQE `admit` took, in order: the completion is dropped if the QP was
/// reset since (`resets`), and a flush a move to ERR left to this follows it. `fail` puts the
/// QP in error (an RC responder error), unless it was reset since: the failure was the old
/// connection's.
pub(crate) fn complete_recv(
    dest: &Qp<Ferroce>,
    cqe: &Cqe,
    resets: u32,
    fail: bool,
    may_sleep: bool,
) {
    let mut after = After::default();
    let mut st = dest.data().state.lock();
    st.receiving = false;
    let own_rq = st.rq.is_some();
    // A WQE of the QP's own RQ completes nowhere once the QP was reset (the RQ was emptied
    // without completions); one taken from an SRQ was the SRQ's, and completes.
    if st.resets == resets || !own_rq {
        if let Ok(n) = cq::post(dest.recv_cq(), cqe) {
            after.notices.recv = n;
        }
    }
    if fail && st.resets == resets {
        st.enter_error(dest, &mut after);
    }
    if st.attr.qp_state == QpState::Err {
        // What a move to ERR left to this receive: the flush of the WQEs after it, and
        // "last WQE reached", which must follow the last completion.
        let _ = st.flush_rq(dest, &mut after.notices);
        after.last_wqe = dest.srq().is_some();
    }
    drop(st);
    after.run(dest, may_sleep);
}

/// Places a datagram from the QP `from` (`from_type`, Q_Key `qkey`) into `dest`: if `dest`
/// takes it and has a receive WQE, `place` gets the WQE (its first bytes, as many as were
/// read) and returns its completion, which is posted before the WQE is let go, all under
/// `dest`'s lock, so that datagrams from many senders complete in the order of the WQEs.
/// `false` if the datagram was dropped.
#[expect(clippy::too_many_arguments)]
pub(crate) fn receive_datagram(
    dest: &Qp<Ferroce>,
    from: u32,
    from_type: QpType,
    qkey: u32,
    len: u32,
    buf: &mut [u8; RECV_WQE_MAX],
    place: impl FnOnce(&[u8], u32) -> Cqe,
    may_sleep: bool,
) -> bool {
    // QP1 takes MADs, which are 256 bytes: ib_mad posts receive buffers of that size (after
    // the GRH) and stops reposting once one completes in error, so a longer datagram would
    // take a buffer away for good. Anything but a MAD is dropped before it takes a WQE.
    if dest.data().qp_type() == QpType::Gsi && len != MAD_SIZE {
        return false;
    }
    let mut after = After::default();
    let mut guard = dest.data().state.lock();
    let st = &mut *guard;
    // (A datagram names no connection: the sender's serial does not matter.)
    if takes(dest, st, from, 0, from_type, None, qkey, 0).is_err() {
        return false;
    }
    let max_sge = st.attr.cap.max_recv_sge;
    let Ok(taken) = crate::engine::responder::take_receive_wqe(dest, st.rq.as_mut(), max_sge, buf)
    else {
        return false;
    };
    let cqe = place(&buf[..taken.len], taken.max_sge);
    if let Ok(n) = cq::post(dest.recv_cq(), &cqe) {
        after.notices.recv = n;
    }
    drop(guard);
    after.run(dest, may_sleep);
    true
}

/// Moves `qp` to ERR from the data path (a responder error).
pub(crate) fn fail(qp: &Qp<Ferroce>, may_sleep: bool) {
    fail_since(qp, None, may_sleep);
}

/// As [`fail`], unless the QP was reset since its reset count was `resets` (the failure was
/// its old connection's).
pub(crate) fn fail_since(qp: &Qp<Ferroce>, resets: Option<u32>, may_sleep: bool) {
    let mut after = After::default();
    let mut st = qp.data().state.lock();
    if resets.map_or(true, |r| r == st.resets) {
        st.enter_error(qp, &mut after);
    }
    drop(st);
    after.run(qp, may_sleep);
}

/// Queues a kernel user's send work request in the SQ ring, in the format user space writes.
pub(crate) fn post_send(qp: &Qp<Ferroce>, wr: &SendWr<'_, Ferroce>) -> Result {
    let data = qp.data();
    let mut st = data.state.lock();
    if !st.sq.queue.is_kernel()
        || matches!(
            st.attr.qp_state,
            QpState::Reset | QpState::Init | QpState::Rtr
        )
    {
        return Err(EINVAL);
    }
    let cap = st.attr.cap;
    let w = wr_opcode_and_union(wr)?;
    let mut body = [0u8; WQE_BODY];
    let (len, num_sge, inline_len) = if wr.send_flags & SEND_INLINE != 0 {
        let room = (cap.max_inline_data as usize).min(WQE_BODY);
        let n = wr.copy_inline(&mut body[..room])?;
        (n, 0, n as u32)
    } else {
        let len = sge_list(wr.sges, cap.max_send_sge, &mut body)?;
        (len, wr.sges.len() as u32, 0)
    };
    let header = SendWqe {
        wr_id: wr.wr_id,
        opcode: w.0,
        send_flags: wr.send_flags,
        num_sge,
        inline_len,
        imm_data: w.1,
        wr: w.2,
    }
    .to_bytes();
    st.sq.produce(&[&header, &body[..len]])
}

/// The WQE opcode, immediate/invalidate word and union of a kernel send work request.
fn wr_opcode_and_union(wr: &SendWr<'_, Ferroce>) -> Result<(u32, u32, WqeUnion)> {
    let (op, ex, un) = op_ex_and_union(&wr.op)?;
    // A UD (or GSI) QP's requests carry their destination (the layer saw to it); they send.
    let Some(dest) = wr.ud.as_ref() else {
        return Ok((op, ex, un));
    };
    if !matches!(wr.op, SendOp::Send | SendOp::SendWithImm(_)) {
        return Err(EINVAL);
    }
    Ok((
        op,
        ex,
        WqeUnion::Ud {
            ah_num: dest.ah.data().num.get(),
            remote_qpn: dest.remote_qpn,
            remote_qkey: dest.remote_qkey,
            pkey_index: dest.pkey_index,
        },
    ))
}

/// The WQE opcode, immediate/invalidate word and union of a kernel send operation (a UD
/// destination aside).
fn op_ex_and_union(op: &SendOp<'_, Ferroce>) -> Result<(u32, u32, WqeUnion)> {
    use abi::wr_opcode as o;
    Ok(match *op {
        SendOp::Send => (o::SEND, 0, WqeUnion::None),
        SendOp::SendWithImm(imm) => (o::SEND_WITH_IMM, imm, WqeUnion::None),
        SendOp::SendWithInv(rkey) => (o::SEND_WITH_INV, rkey, WqeUnion::None),
        SendOp::RdmaWrite { remote_addr, rkey } => {
            (o::RDMA_WRITE, 0, WqeUnion::Rdma { remote_addr, rkey })
        }
        SendOp::RdmaWriteWithImm {
            remote_addr,
            rkey,
            imm,
        } => (
            o::RDMA_WRITE_WITH_IMM,
            imm,
            WqeUnion::Rdma { remote_addr, rkey },
        ),
        SendOp::RdmaRead { remote_addr, rkey } => {
            (o::RDMA_READ, 0, WqeUnion::Rdma { remote_addr, rkey })
        }
        SendOp::CmpSwap {
            remote_addr,
            rkey,
            compare,
            swap,
        } => (
            o::ATOMIC_CMP_AND_SWP,
            0,
            atomic_union(remote_addr, rkey, compare, swap),
        ),
        SendOp::FetchAdd {
            remote_addr,
            rkey,
            add,
        } => (
            o::ATOMIC_FETCH_AND_ADD,
            0,
            atomic_union(remote_addr, rkey, add, 0),
        ),
        SendOp::LocalInv(rkey) => (o::LOCAL_INV, rkey, WqeUnion::None),
        SendOp::RegMr { mr, key, access } => (o::REG_MR, 0, reg_mr_union(mr, key, access)?),
    })
}

/// The union of an atomic on the word at `remote_addr` under `rkey`: `compare_add` is a
/// compare-and-swap's compare value or a fetch-and-add's addend.
fn atomic_union(remote_addr: u64, rkey: u32, compare_add: u64, swap: u64) -> WqeUnion {
    WqeUnion::Atomic {
        remote_addr,
        compare_add,
        swap,
        rkey,
    }
}

/// The union of a fast registration of `mr` (one from `alloc_mr`) under `key` with `access`.
fn reg_mr_union(mr: &Mr<Ferroce>, key: u32, access: u32) -> Result<WqeUnion> {
    let mr_key = mr::fast_reg_key(mr).ok_or(EINVAL)?;
    // The new key keeps the MR's index; only the key byte may change.
    if key >> 8 != mr_key >> 8 {
        return Err(EINVAL);
    }
    Ok(WqeUnion::Reg {
        mr_key,
        key,
        access,
    })
}

/// Queues a kernel user's receive work request in the RQ ring.
pub(crate) fn post_recv(qp: &Qp<Ferroce>, wr: &RecvWr<'_>) -> Result {
    let mut st = qp.data().state.lock();
    let max_sge = st.attr.cap.max_recv_sge;
    let reset = st.attr.qp_state == QpState::Reset;
    let rq = st.rq.as_mut().ok_or(EINVAL)?;
    if !rq.queue.is_kernel() || reset {
        return Err(EINVAL);
    }
    produce_recv(rq, wr, max_sge)
}
