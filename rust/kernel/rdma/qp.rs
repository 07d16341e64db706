// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`struct ib_qp`): creation attributes, the modify/query attributes and the
//! IBTA state machine.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    ah::AddressVector,
    cq::Cq,
    driver::{Adapter, Driver},
    object::{dispatch_object_event, Object, QpKind},
    pd::Pd,
    registry::{Published, Users},
    srq::Srq,
    ucontext::UContext,
    udata::Udata,
    wr::{post_chain, RecvWr, SendWr},
};
use crate::{
    bindings,
    error::{code::*, from_result, Result},
};
use core::ptr::addr_of;

/// A queue pair with the driver's data (`T::QpData`) in ib_core's allocation.
pub type Qp<T> = Object<T, QpKind>;

/// What a kind of driver keeps in each of its QPs beside the driver's data
/// ([`Driver::QpDeferred`]): set up once the QP is in place, before anything can find it, and
/// shut down as it is destroyed, after the driver's destroy hook and before its data is
/// dropped. Nothing (`()`) for a device whose hardware times and schedules its queues; a timer
/// and a work item for a software device (`sw::deferred::Deferred`).
///
/// A value from [`DeferredWork::new`] may be dropped without `init` having run (the driver's
/// data failed to initialise), and must then release nothing.
pub trait DeferredWork<T: Driver>: Send + Sync + Sized {
    /// The state before [`DeferredWork::init`]; holds nothing to release.
    fn new() -> Self;

    /// Sets up the state of `qp` in place.
    ///
    /// # Safety
    ///
    /// `qp` must be initialised, never move, and not be published yet; called once.
    unsafe fn init(qp: &Qp<T>);

    /// Stops what `init` set up for good, waiting for what runs. Sleeps.
    ///
    /// # Safety
    ///
    /// `init` must have run for the QP holding `self`.
    unsafe fn shutdown(&self);
}

impl<T: Driver> DeferredWork<T> for () {
    fn new() -> Self {}

    unsafe fn init(_qp: &Qp<T>) {}

    unsafe fn shutdown(&self) {}
}

/// The layer's part of a QP: its registry state and the driver kind's [`DeferredWork`].
pub struct QpCore<T: Driver> {
    users: Users,
    pub(crate) deferred: T::QpDeferred,
}

impl<T: Driver> QpCore<T> {
    fn new(users: Users) -> Self {
        QpCore {
            users,
            deferred: T::QpDeferred::new(),
        }
    }
}

impl<T: Driver> Published for QpCore<T> {
    fn users(&self) -> &Users {
        &self.users
    }
}

impl<T: Driver> Qp<T> {
    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: Set in `create_qp`, constant afterwards.
        unsafe { (*self.as_raw()).qp_num }
    }

    /// The CQ the send queue completes to.
    pub fn send_cq(&self) -> &Cq<T> {
        // SAFETY: ib_core sets `send_cq` before `create_qp` and holds a use count on it until
        // the QP is destroyed, so it outlives `&self`; all objects of a device share its
        // driver. It is not null: `create_qp` refuses QPs without both CQs.
        unsafe { Cq::from_raw((*self.as_raw()).send_cq) }
    }

    /// The CQ the receive queue (or the SRQ, for this QP's receives) completes to.
    pub fn recv_cq(&self) -> &Cq<T> {
        // SAFETY: As for `send_cq`.
        unsafe { Cq::from_raw((*self.as_raw()).recv_cq) }
    }

    /// Whether a user process (rather than a kernel ULP) owns the QP.
    pub fn is_user(&self) -> bool {
        // SAFETY: `uobject` is set by ib_core before the driver sees the QP and never changes.
        !unsafe { (*self.as_raw()).uobject }.is_null()
    }

    /// The shared receive queue the QP receives from, if it has one.
    pub fn srq(&self) -> Option<&Srq<T>> {
        // SAFETY: As for `send_cq`: set before `create_qp`, held until the QP is destroyed.
        let srq = unsafe { (*self.as_raw()).srq };
        // SAFETY: A non-null SRQ is live (see above).
        (!srq.is_null()).then(|| unsafe { Srq::from_raw(srq) })
    }

    /// Reports `event` to the QP's owner (the async event queue of a user QP).
    pub fn dispatch_event(&self, event: QpEvent) {
        let raw = self.as_raw();
        // SAFETY: ib_core sets the handler and its context before `create_qp` and never changes
        // them; the QP is alive for `&self`.
        unsafe {
            dispatch_object_event(
                (*raw).event_handler,
                (*raw).qp_context,
                (*raw).device,
                bindings::ib_event__bindgen_ty_1 { qp: raw },
                event as u32,
            )
        };
    }
}

/// Asynchronous events of a QP (`enum ib_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum QpEvent {
    /// The QP hit an error it cannot report in a completion and went to the error state.
    Fatal = bindings::ib_event_type_IB_EVENT_QP_FATAL,
    /// A responder detected a request error (invalid opcode, sequence).
    RequestError = bindings::ib_event_type_IB_EVENT_QP_REQ_ERR,
    /// A responder detected an access violation.
    AccessError = bindings::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
    /// The first packet arrived on a QP in RTR: communication is established.
    CommEstablished = bindings::ib_event_type_IB_EVENT_COMM_EST,
    /// The send queue drained (SQD with `en_sqd_async_notify`).
    SqDrained = bindings::ib_event_type_IB_EVENT_SQ_DRAINED,
    /// A QP on an SRQ went to the error state: it will take no more receive work requests.
    LastWqeReached = bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
}

/// QP transport types (`enum ib_qp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// The general services QP (QP1) ib_core's MAD layer creates on each port: a UD QP with
    /// the fixed number 1, for kernel users only.
    Gsi,
}

impl QpType {
    fn from_raw(t: u32) -> Result<Self> {
        match t {
            bindings::ib_qp_type_IB_QPT_RC => Ok(QpType::Rc),
            bindings::ib_qp_type_IB_QPT_UC => Ok(QpType::Uc),
            bindings::ib_qp_type_IB_QPT_UD => Ok(QpType::Ud),
            bindings::ib_qp_type_IB_QPT_GSI => Ok(QpType::Gsi),
            _ => Err(EOPNOTSUPP),
        }
    }

    fn raw(self) -> u32 {
        match self {
            QpType::Rc => bindings::ib_qp_type_IB_QPT_RC,
            QpType::Uc => bindings::ib_qp_type_IB_QPT_UC,
            QpType::Ud => bindings::ib_qp_type_IB_QPT_UD,
            QpType::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
        }
    }
}

/// QP states (`enum ib_qp_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum QpState {
    /// Reset.
    Reset = bindings::ib_qp_state_IB_QPS_RESET,
    /// Initialised.
    Init = bindings::ib_qp_state_IB_QPS_INIT,
    /// Ready to receive.
    Rtr = bindings::ib_qp_state_IB_QPS_RTR,
    /// Ready to send.
    Rts = bindings::ib_qp_state_IB_QPS_RTS,
    /// Send queue drained.
    Sqd = bindings::ib_qp_state_IB_QPS_SQD,
    /// Send queue error.
    Sqe = bindings::ib_qp_state_IB_QPS_SQE,
    /// Error.
    Err = bindings::ib_qp_state_IB_QPS_ERR,
}

impl QpState {
    fn from_raw(s: u32) -> Result<Self> {
        Ok(match s {
            bindings::ib_qp_state_IB_QPS_RESET => QpState::Reset,
            bindings::ib_qp_state_IB_QPS_INIT => QpState::Init,
            bindings::ib_qp_state_IB_QPS_RTR => QpState::Rtr,
            bindings::ib_qp_state_IB_QPS_RTS => QpState::Rts,
            bindings::ib_qp_state_IB_QPS_SQD => QpState::Sqd,
            bindings::ib_qp_state_IB_QPS_SQE => QpState::Sqe,
            bindings::ib_qp_state_IB_QPS_ERR => QpState::Err,
            _ => return Err(EINVAL),
        })
    }
}

/// Whether the IBTA state machine allows `cur` → `next` for `qp_type` with exactly the
/// attributes in `mask` (ib_core's `ib_modify_qp_is_ok`: required ones present, no others).
pub fn modify_is_ok(cur: QpState, next: QpState, qp_type: QpType, mask: u32) -> bool {
    // SAFETY: A pure function of its arguments.
    unsafe { bindings::ib_modify_qp_is_ok(cur as u32, next as u32, qp_type.raw(), mask) }
}

/// Attribute mask bits of `modify_qp`/`query_qp` (`enum ib_qp_attr_mask`).
#[allow(missing_docs)]
pub mod mask {
    use crate::bindings;
    pub const STATE: u32 = bindings::ib_qp_attr_mask_IB_QP_STATE;
    pub const CUR_STATE: u32 = bindings::ib_qp_attr_mask_IB_QP_CUR_STATE;
    pub const EN_SQD_ASYNC_NOTIFY: u32 = bindings::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY;
    pub const ACCESS_FLAGS: u32 = bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS;
    pub const PKEY_INDEX: u32 = bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX;
    pub const PORT: u32 = bindings::ib_qp_attr_mask_IB_QP_PORT;
    pub const QKEY: u32 = bindings::ib_qp_attr_mask_IB_QP_QKEY;
    pub const AV: u32 = bindings::ib_qp_attr_mask_IB_QP_AV;
    pub const PATH_MTU: u32 = bindings::ib_qp_attr_mask_IB_QP_PATH_MTU;
    pub const TIMEOUT: u32 = bindings::ib_qp_attr_mask_IB_QP_TIMEOUT;
    pub const RETRY_CNT: u32 = bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT;
    pub const RNR_RETRY: u32 = bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY;
    pub const RQ_PSN: u32 = bindings::ib_qp_attr_mask_IB_QP_RQ_PSN;
    pub const MAX_QP_RD_ATOMIC: u32 = bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC;
    pub const ALT_PATH: u32 = bindings::ib_qp_attr_mask_IB_QP_ALT_PATH;
    pub const MIN_RNR_TIMER: u32 = bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER;
    pub const SQ_PSN: u32 = bindings::ib_qp_attr_mask_IB_QP_SQ_PSN;
    pub const MAX_DEST_RD_ATOMIC: u32 = bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC;
    pub const PATH_MIG_STATE: u32 = bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE;
    pub const CAP: u32 = bindings::ib_qp_attr_mask_IB_QP_CAP;
    pub const DEST_QPN: u32 = bindings::ib_qp_attr_mask_IB_QP_DEST_QPN;
    pub const RATE_LIMIT: u32 = bindings::ib_qp_attr_mask_IB_QP_RATE_LIMIT;
}

/// Queue capacities (`struct ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default)]
pub struct QpCap {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// SGEs per send work request.
    pub max_send_sge: u32,
    /// SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Inline bytes per send work request.
    pub max_inline_data: u32,
}

/// The attributes a QP is created with (`struct ib_qp_init_attr`).
#[derive(Clone, Copy, Debug)]
pub struct QpInitAttr {
    /// Transport.
    pub qp_type: QpType,
    /// Capacities asked for; the driver raises them to what it really provides.
    pub cap: QpCap,
    /// Whether every send work request completes (rather than only signalled ones).
    pub sq_sig_all: bool,
    /// Whether the QP receives from a shared receive queue.
    pub has_srq: bool,
    /// Creation flags (`IB_QP_CREATE_*`).
    pub create_flags: u32,
}

impl QpInitAttr {
    pub(crate) fn from_raw(a: &bindings::ib_qp_init_attr) -> Result<Self> {
        Ok(QpInitAttr {
            qp_type: QpType::from_raw(a.qp_type)?,
            cap: QpCap {
                max_send_wr: a.cap.max_send_wr,
                max_recv_wr: a.cap.max_recv_wr,
                max_send_sge: a.cap.max_send_sge,
                max_recv_sge: a.cap.max_recv_sge,
                max_inline_data: a.cap.max_inline_data,
            },
            sq_sig_all: a.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
            has_srq: !a.srq.is_null(),
            create_flags: a.create_flags,
        })
    }

    pub(crate) fn write_cap(&self, a: &mut bindings::ib_qp_init_attr) {
        a.cap.max_send_wr = self.cap.max_send_wr;
        a.cap.max_recv_wr = self.cap.max_recv_wr;
        a.cap.max_send_sge = self.cap.max_send_sge;
        a.cap.max_recv_sge = self.cap.max_recv_sge;
        a.cap.max_inline_data = self.cap.max_inline_data;
    }
}

/// QP attributes, as `modify_qp` passes them and `query_qp` reports them.
#[derive(Clone, Copy, Debug)]
pub struct QpAttr {
    /// State.
    pub qp_state: QpState,
    /// Current state (as the caller believes it).
    pub cur_qp_state: QpState,
    /// Path MTU (`enum ib_mtu`).
    pub path_mtu: u32,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Destination QP number (RC, UC).
    pub dest_qp_num: u32,
    /// Remote access allowed (`IB_ACCESS_REMOTE_*`).
    pub qp_access_flags: u32,
    /// The primary path (RC, UC), when the mask has `AV` or for queries.
    pub av: Option<AddressVector>,
    /// P_Key index.
    pub pkey_index: u16,
    /// Whether to report SQ drained.
    pub en_sqd_async_notify: u8,
    /// Outstanding RDMA READ/atomic as requester.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READ/atomic as responder.
    pub max_dest_rd_atomic: u8,
    /// RNR NAK timer code.
    pub min_rnr_timer: u8,
    /// Port.
    pub port_num: u32,
    /// Local ACK timeout (4.096 us * 2^timeout).
    pub timeout: u8,
    /// Retries on timeout.
    pub retry_cnt: u8,
    /// Retries on RNR NAK (7: infinite).
    pub rnr_retry: u8,
    /// Capacities (query only).
    pub cap: QpCap,
}

impl QpAttr {
    /// Reads the attributes of a `modify_qp` call: only those `mask` names, since kernel
    /// callers (rdma_cm among them) need not initialise the others, which read as 0. The
    /// address vector must be a valid RoCE vector.
    ///
    /// # Safety
    ///
    /// `a` must be valid for reads of the fields `mask` names, for the call.
    pub(crate) unsafe fn from_raw(a: *const bindings::ib_qp_attr, mask: u32) -> Result<Self> {
        macro_rules! masked {
            ($bit:expr, $field:ident) => {
                if mask & $bit != 0 {
                    // SAFETY: Named by the mask, so initialised (the caller's promise); read
                    // through a raw place, never a reference to the partly initialised struct.
                    unsafe { (*a).$field }
                } else {
                    Default::default()
                }
            };
        }
        let av = if mask & mask::AV != 0 {
            // SAFETY: `ah_attr` is named by the mask.
            Some(unsafe { AddressVector::from_raw(addr_of!((*a).ah_attr)) }?)
        } else {
            None
        };
        Ok(QpAttr {
            qp_state: if mask & mask::STATE != 0 {
                QpState::from_raw(masked!(mask::STATE, qp_state))?
            } else {
                QpState::Reset
            },
            cur_qp_state: if mask & mask::CUR_STATE != 0 {
                QpState::from_raw(masked!(mask::CUR_STATE, cur_qp_state))?
            } else {
                QpState::Reset
            },
            path_mtu: masked!(mask::PATH_MTU, path_mtu),
            qkey: masked!(mask::QKEY, qkey),
            rq_psn: masked!(mask::RQ_PSN, rq_psn),
            sq_psn: masked!(mask::SQ_PSN, sq_psn),
            dest_qp_num: masked!(mask::DEST_QPN, dest_qp_num),
            qp_access_flags: masked!(mask::ACCESS_FLAGS, qp_access_flags) as u32,
            av,
            pkey_index: masked!(mask::PKEY_INDEX, pkey_index),
            en_sqd_async_notify: masked!(mask::EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify),
            max_rd_atomic: masked!(mask::MAX_QP_RD_ATOMIC, max_rd_atomic),
            max_dest_rd_atomic: masked!(mask::MAX_DEST_RD_ATOMIC, max_dest_rd_atomic),
            min_rnr_timer: masked!(mask::MIN_RNR_TIMER, min_rnr_timer),
            port_num: masked!(mask::PORT, port_num),
            timeout: masked!(mask::TIMEOUT, timeout),
            retry_cnt: masked!(mask::RETRY_CNT, retry_cnt),
            rnr_retry: masked!(mask::RNR_RETRY, rnr_retry),
            cap: QpCap::default(),
        })
    }

    /// Writes the attributes for a `query_qp` reply (the address vector's GRH fields and
    /// destination MAC; the source GID entry stays NULL, as ib_core set it: uverbs reports the
    /// index).
    pub(crate) fn write_to(&self, a: &mut bindings::ib_qp_attr) {
        a.qp_state = self.qp_state as u32;
        a.cur_qp_state = self.qp_state as u32;
        a.path_mtu = self.path_mtu;
        a.qkey = self.qkey;
        a.rq_psn = self.rq_psn;
        a.sq_psn = self.sq_psn;
        a.dest_qp_num = self.dest_qp_num;
        a.qp_access_flags = self.qp_access_flags as i32;
        a.pkey_index = self.pkey_index;
        a.en_sqd_async_notify = self.en_sqd_async_notify;
        a.max_rd_atomic = self.max_rd_atomic;
        a.max_dest_rd_atomic = self.max_dest_rd_atomic;
        a.min_rnr_timer = self.min_rnr_timer;
        a.port_num = self.port_num;
        a.timeout = self.timeout;
        a.retry_cnt = self.retry_cnt;
        a.rnr_retry = self.rnr_retry;
        a.cap.max_send_wr = self.cap.max_send_wr;
        a.cap.max_recv_wr = self.cap.max_recv_wr;
        a.cap.max_send_sge = self.cap.max_send_sge;
        a.cap.max_recv_sge = self.cap.max_recv_sge;
        a.cap.max_inline_data = self.cap.max_inline_data;
        if let Some(av) = &self.av {
            a.ah_attr.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
            a.ah_attr.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
            a.ah_attr.port_num = av.port_num;
            a.ah_attr.sl = av.sl;
            a.ah_attr.static_rate = av.static_rate;
            a.ah_attr.grh.dgid.raw = av.dgid;
            a.ah_attr.grh.flow_label = av.flow_label;
            a.ah_attr.grh.sgid_index = av.sgid_index;
            a.ah_attr.grh.hop_limit = av.hop_limit;
            a.ah_attr.grh.traffic_class = av.traffic_class;
            a.ah_attr.__bindgen_anon_1.roce.dmac = av.dmac;
        }
    }
}

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core with a zeroed QP of `size_ib_qp` bytes whose `device`, `pd` and CQs are
    /// set, a valid `init` and a valid or null `udata`.
    pub(crate) unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: See above.
            let (pd, raw_init) = unsafe { (Pd::<T>::from_raw((*qp).pd), &mut *init) };
            let mut attr = QpInitAttr::from_raw(raw_init)?;
            // ib_core lets kernel users create QPs without a send or a receive CQ; the QPs of
            // this layer always complete to both (`Qp::send_cq`, `Qp::recv_cq`).
            // SAFETY: ib_core set both before the op.
            if unsafe { (*qp).send_cq.is_null() || (*qp).recv_cq.is_null() } {
                return Err(EINVAL);
            }
            // SAFETY: See above.
            let uctx = unsafe { UContext::<T>::of_udata(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let (data, qpn) = T::create_qp(pd, &mut attr, uctx, &mut udata)?;
            // SAFETY: ib_core's QP allocation, never moved, its data slots uninitialised.
            unsafe {
                Qp::<T>::init_in_place(qp, QpCore::<T>::new(Users::new(qpn, (*qp).pd)), data)
            }?;
            attr.write_cap(raw_init);
            // SAFETY: The QP is ours during the op.
            unsafe { (*qp).qp_num = qpn };
            // SAFETY: The QP is initialised; `destroy_qp` retires it before it is freed, and
            // so does the failure path below.
            let q = unsafe { Qp::<T>::from_raw(qp) };
            // SAFETY: Initialised, in place for good, not published yet; once.
            unsafe { T::QpDeferred::init(q) };
            // SAFETY: See above.
            if let Err(e) = unsafe { q.device().registries().qps.publish(q) } {
                // SAFETY: Initialised above, unpublished, destroyed once (ib_core frees the
                // memory when the op fails); its deferred work was set up above, never used.
                unsafe { Qp::<T>::destroy(qp, |q| q.core().deferred.shutdown()) };
                return Err(e);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP with an attribute whose fields named by `mask` are
    /// valid.
    pub(crate) unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            let mask = mask as u32;
            // SAFETY: The fields the mask names are valid for the call.
            let a = unsafe { QpAttr::from_raw(attr, mask) }?;
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            // SAFETY: The QP is alive for the call.
            T::modify_qp(unsafe { Qp::<T>::from_raw(qp) }, &a, mask, &mut udata)?;
            Ok(0)
        })
    }

    /// `op` on the QP `qp` and the group `gid` (RoCE has no LIDs).
    ///
    /// # Safety
    ///
    /// `qp` is a live QP and `gid` a valid GID for the call.
    unsafe fn mcast_op(
        qp: *mut bindings::ib_qp,
        gid: *const bindings::ib_gid,
        op: fn(&Qp<T>, &[u8; 16]) -> Result,
    ) -> crate::ffi::c_int {
        // SAFETY: Valid for the call; every member of the GID union is plain bytes.
        let mgid = unsafe { (*gid).raw };
        from_result(|| {
            // SAFETY: The QP is alive for the call.
            op(unsafe { Qp::<T>::from_raw(qp) }, &mgid)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP with a valid GID.
    pub(crate) unsafe extern "C" fn attach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> crate::ffi::c_int {
        // SAFETY: As ib_core promises.
        unsafe { Self::mcast_op(qp, gid, T::attach_mcast) }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP with a valid GID.
    pub(crate) unsafe extern "C" fn detach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> crate::ffi::c_int {
        // SAFETY: As ib_core promises.
        unsafe { Self::mcast_op(qp, gid, T::detach_mcast) }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP with output structures valid for writes (uverbs
    /// allocates them without zeroing).
    pub(crate) unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: crate::ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The QP is alive for the call.
            let (a, i) = T::query_qp(unsafe { Qp::<T>::from_raw(qp) })?;
            // SAFETY: Valid for writes for the call. Every byte is zeroed first: uverbs copies
            // fields no driver writes (the alternate path, the address vector of a QP that has
            // none yet) to user space, and would leak stale kernel memory otherwise.
            unsafe {
                core::ptr::write_bytes(attr, 0, 1);
                core::ptr::write_bytes(init, 0, 1);
                a.write_to(&mut *attr);
                i.write_cap(&mut *init);
                // What the QP was created with, as ib_core keeps it (as rxe reports it).
                (*init).qp_type = (*qp).qp_type;
                (*init).send_cq = (*qp).send_cq;
                (*init).recv_cq = (*qp).recv_cq;
                (*init).srq = (*qp).srq;
                (*init).qp_context = (*qp).qp_context;
                (*init).port_num = a.port_num;
                (*init).sq_sig_type = if i.sq_sig_all {
                    bindings::ib_sig_type_IB_SIGNAL_ALL_WR
                } else {
                    bindings::ib_sig_type_IB_SIGNAL_REQ_WR
                };
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a QP whose `create_qp` succeeded.
    pub(crate) unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: The QP is alive until destroyed below.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        // Nobody finds it any more, and nobody holds it.
        q.device().registries().qps.retire(q);
        // SAFETY: ib_core destroys each QP once, after `create_qp` succeeded. The driver's
        // hook may still start deferred work (a software device's timer or work item); that
        // is shut down after the hook, before the data goes.
        unsafe {
            Qp::<T>::destroy(qp, |q| {
                T::destroy_qp(q);
                q.core().deferred.shutdown();
            })
        };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP; `wr` is null for a user QP's doorbell.
    pub(crate) unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: The QP is alive for the call.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: `qp_type` is set before `create_qp` and never changes.
        let ud = matches!(
            unsafe { (*qp).qp_type },
            bindings::ib_qp_type_IB_QPT_UD | bindings::ib_qp_type_IB_QPT_GSI
        );
        let post = |w: &bindings::ib_send_wr| {
            if !T::HAS_POST_SEND {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: A kernel user's valid work request for this QP, alive for the call
            // (`post_chain` refuses users' chains).
            unsafe { SendWr::<T>::from_raw(w, ud) }.and_then(|w| T::post_send(q, &w))
        };
        // SAFETY: ib_core passes a null or valid chain and a valid `bad_wr`. The queued
        // requests (or, for a user QP's doorbell, the ring's) take effect in the doorbell.
        unsafe { post_chain(q.is_user(), wr, bad_wr, post, || T::ring_sq_doorbell(q)) }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP; `wr` is null for a user QP's doorbell.
    pub(crate) unsafe extern "C" fn post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: The QP is alive for the call.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        let post = |w: &bindings::ib_recv_wr| {
            if !T::HAS_POST_RECV {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: A kernel user's valid work request, alive for the call (`post_chain`
            // refuses users' chains).
            unsafe { RecvWr::from_raw(w) }.and_then(|w| T::post_recv(q, &w))
        };
        // SAFETY: ib_core passes a null or valid chain and a valid `bad_wr`.
        unsafe { post_chain(q.is_user(), wr, bad_wr, post, || T::ring_rq_doorbell(q)) }
    }
}
