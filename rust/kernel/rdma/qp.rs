// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`struct ib_qp`): creation attributes, the modify/query attributes and the
//! IBTA state machine.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    ah::AddressVector,
    cq::Cq,
    device::Driver,
    object::{dispatch_object_event, Object, QpKind},
    srq::Srq,
};
use crate::{bindings, error::code::*, error::Result};

/// A queue pair with the driver's data (`T::QpData`) in ib_core's allocation.
pub type Qp<T> = Object<T, QpKind>;

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
        // driver.
        unsafe { Cq::from_raw((*self.as_raw()).send_cq) }
    }

    /// The CQ the receive queue (or the SRQ, for this QP's receives) completes to.
    pub fn recv_cq(&self) -> &Cq<T> {
        // SAFETY: As for `send_cq`.
        unsafe { Cq::from_raw((*self.as_raw()).recv_cq) }
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
    /// Reads the attributes of a `modify_qp` call; the address vector only if `AV` is in
    /// `mask` (and then it must be a valid RoCE vector).
    ///
    /// # Safety
    ///
    /// `a` must be valid for the call.
    pub(crate) unsafe fn from_raw(a: &bindings::ib_qp_attr, mask: u32) -> Result<Self> {
        let av = if mask & mask::AV != 0 {
            // SAFETY: `ah_attr` is part of the valid attribute.
            Some(unsafe { AddressVector::from_raw(&a.ah_attr) }?)
        } else {
            None
        };
        Ok(QpAttr {
            qp_state: if mask & mask::STATE != 0 {
                QpState::from_raw(a.qp_state)?
            } else {
                QpState::Reset
            },
            cur_qp_state: if mask & mask::CUR_STATE != 0 {
                QpState::from_raw(a.cur_qp_state)?
            } else {
                QpState::Reset
            },
            path_mtu: a.path_mtu,
            qkey: a.qkey,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            dest_qp_num: a.dest_qp_num,
            qp_access_flags: a.qp_access_flags as u32,
            av,
            pkey_index: a.pkey_index,
            en_sqd_async_notify: a.en_sqd_async_notify,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
            port_num: a.port_num,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            cap: QpCap::default(),
        })
    }

    /// Writes the attributes for a `query_qp` reply (the address vector's GRH fields and
    /// destination MAC; ib_core fills in the source GID entry).
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
