// SPDX-License-Identifier: GPL-2.0

//! The layout of `include/uapi/rdma/ferroce-abi.h`, the ABI shared with the provider.
//!
//! Pure `core` code: also built on the host, where a test compiles the C header and checks
//! every offset and size here against it (`host-tests/`).

/// Byte offsets in `struct ferroce_queue_ctrl`, at the start of every shared queue.
pub(crate) const CTRL_PRODUCER: usize = 0;
pub(crate) const CTRL_CONSUMER: usize = 64;
pub(crate) const CTRL_NOTIFY: usize = 128;
pub(crate) const CTRL_FLAGS: usize = 132;
/// `FERROCE_QUEUE_ENTRIES`: the byte offset of entry 0.
pub(crate) const QUEUE_ENTRIES: usize = 256;

/// `ferroce_queue_ctrl.flags`.
pub(crate) const QUEUE_ERROR: u32 = 1 << 0;

/// `ferroce_queue_ctrl.flags`: a CQ lost a completion (overrun).
pub(crate) const QUEUE_OVERFLOW: u32 = 1 << 1;
/// `ferroce_queue_ctrl.flags`: new work needs the doorbell system call (POST_SEND for an SQ,
/// POST_RECV for an RQ).
pub(crate) const QUEUE_NEED_WAKEUP: u32 = 1 << 2;

/// `ferroce_queue_ctrl.notify` of a CQ: signal the next completion.
pub(crate) const CQ_NOTIFY_NEXT: u32 = 1;
/// `ferroce_queue_ctrl.notify` of a CQ: signal the next solicited completion.
pub(crate) const CQ_NOTIFY_SOLICITED: u32 = 2;

/// `sizeof(struct ferroce_send_wqe)`: the header before the SGEs or inline data.
pub(crate) const SEND_WQE_HEADER: usize = 64;
/// Where `wr.atomic_write.value` is in a send WQE's header.
pub(crate) const ATOMIC_WRITE_VALUE: usize = 48;
/// `sizeof(struct ferroce_recv_wqe)`: the header before the SGEs.
pub(crate) const RECV_WQE_HEADER: usize = 16;
/// `sizeof(struct ferroce_sge)`.
pub(crate) const SGE_SIZE: usize = 16;

/// `sizeof(struct ferroce_cqe)`.
pub(crate) const CQE_SIZE: usize = 64;

/// Byte offsets in the WQE headers (`struct ferroce_send_wqe`, `struct ferroce_recv_wqe`).
pub(crate) const WQE_WR_ID: usize = 0;
pub(crate) const SEND_WQE_OPCODE: usize = 8;

/// The status of a work completion: `enum ibv_wc_status`, whose numbers `enum ib_wc_status`
/// (kernel users) shares. A status stays this type through the driver; it becomes a number
/// only where a completion is written for its owner ([`Cqe::to_bytes`], the kernel's `ib_wc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum WcStatus {
    #[default]
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocEecOpErr = 3,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    BadRespErr = 7,
    LocAccessErr = 8,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
    LocRddViolErr = 14,
    RemInvRdReqErr = 15,
    RemAbortErr = 16,
    InvEecnErr = 17,
    InvEecStateErr = 18,
    FatalErr = 19,
    RespTimeoutErr = 20,
    GeneralErr = 21,
}

impl WcStatus {
    /// The number a completion carries (`ibv_wc.status`, `ib_wc.status`).
    pub(crate) const fn to_abi(self) -> u32 {
        self as u32
    }

    /// The status numbered `n`, `None` for a number `enum ibv_wc_status` does not have.
    pub(crate) const fn from_abi(n: u32) -> Option<Self> {
        use WcStatus::*;
        Some(match n {
            0 => Success,
            1 => LocLenErr,
            2 => LocQpOpErr,
            3 => LocEecOpErr,
            4 => LocProtErr,
            5 => WrFlushErr,
            6 => MwBindErr,
            7 => BadRespErr,
            8 => LocAccessErr,
            9 => RemInvReqErr,
            10 => RemAccessErr,
            11 => RemOpErr,
            12 => RetryExcErr,
            13 => RnrRetryExcErr,
            14 => LocRddViolErr,
            15 => RemInvRdReqErr,
            16 => RemAbortErr,
            17 => InvEecnErr,
            18 => InvEecStateErr,
            19 => FatalErr,
            20 => RespTimeoutErr,
            21 => GeneralErr,
            _ => return None,
        })
    }
}

/// `enum ibv_send_flags` (the kernel's `IB_SEND_*` have the same values). A fence needs
/// nothing: each WQE completes before the next starts.
pub(crate) mod send_flags {
    pub(crate) const SIGNALED: u32 = 1 << 1;
    pub(crate) const SOLICITED: u32 = 1 << 2;
    pub(crate) const INLINE: u32 = 1 << 3;
}

/// `enum ibv_wc_opcode`.
pub(crate) mod wc_opcode {
    pub(crate) const SEND: u32 = 0;
    pub(crate) const RDMA_WRITE: u32 = 1;
    pub(crate) const RDMA_READ: u32 = 2;
    pub(crate) const COMP_SWAP: u32 = 3;
    pub(crate) const FETCH_ADD: u32 = 4;
    pub(crate) const BIND_MW: u32 = 5;
    pub(crate) const LOCAL_INV: u32 = 6;
    pub(crate) const FLUSH: u32 = 8;
    pub(crate) const ATOMIC_WRITE: u32 = 9;
    /// A fast registration (kernel users only; `IB_WC_REG_MR`).
    pub(crate) const REG_MR: u32 = 10;
    pub(crate) const RECV: u32 = 128;
    pub(crate) const RECV_RDMA_WITH_IMM: u32 = 129;
}

/// `enum ibv_wc_flags` bits a CQE carries.
pub(crate) mod wc_flags {
    pub(crate) const GRH: u32 = 1 << 0;
    pub(crate) const WITH_IMM: u32 = 1 << 1;
    pub(crate) const IP_CSUM_OK: u32 = 1 << 2;
    pub(crate) const WITH_INV: u32 = 1 << 3;
}

/// The `enum ib_wc_flags` (kernel) form of a CQE's `enum ibv_wc_flags`: GRH and WITH_IMM keep
/// their bits, IP_CSUM_OK and WITH_INV swap theirs (ib_core: WITH_INVALIDATE 4, IP_CSUM_OK 8).
pub(crate) const fn kernel_wc_flags(ibv: u32) -> u32 {
    let kept = ibv & (wc_flags::GRH | wc_flags::WITH_IMM);
    let csum = if ibv & wc_flags::IP_CSUM_OK != 0 {
        1 << 3
    } else {
        0
    };
    let inv = if ibv & wc_flags::WITH_INV != 0 {
        1 << 2
    } else {
        0
    };
    kept | csum | inv
}

/// `enum ibv_wr_opcode`.
pub(crate) mod wr_opcode {
    pub(crate) const RDMA_WRITE: u32 = 0;
    pub(crate) const RDMA_WRITE_WITH_IMM: u32 = 1;
    pub(crate) const SEND: u32 = 2;
    pub(crate) const SEND_WITH_IMM: u32 = 3;
    pub(crate) const RDMA_READ: u32 = 4;
    pub(crate) const ATOMIC_CMP_AND_SWP: u32 = 5;
    pub(crate) const ATOMIC_FETCH_AND_ADD: u32 = 6;
    pub(crate) const LOCAL_INV: u32 = 7;
    pub(crate) const BIND_MW: u32 = 8;
    pub(crate) const SEND_WITH_INV: u32 = 9;
    /// `ibv_wr_flush` (RC): the responder makes a range or a region of its memory globally
    /// visible (or persistent).
    pub(crate) const FLUSH: u32 = 14;
    /// `ibv_wr_atomic_write` (RC): 8 bytes from the WQE stored in one piece at the target.
    pub(crate) const ATOMIC_WRITE: u32 = 15;
    /// Fast registration: kernel rings only (`IB_WR_REG_MR`); never valid from user space.
    pub(crate) const REG_MR: u32 = 0x20;
}

/// The completion opcode of a send work request's opcode, `None` for an unknown one.
pub(crate) fn wc_opcode_of(wr: u32) -> Option<u32> {
    use wr_opcode as w;
    Some(match wr {
        w::SEND | w::SEND_WITH_IMM | w::SEND_WITH_INV => wc_opcode::SEND,
        w::RDMA_WRITE | w::RDMA_WRITE_WITH_IMM => wc_opcode::RDMA_WRITE,
        w::RDMA_READ => wc_opcode::RDMA_READ,
        w::ATOMIC_CMP_AND_SWP => wc_opcode::COMP_SWAP,
        w::ATOMIC_FETCH_AND_ADD => wc_opcode::FETCH_ADD,
        w::LOCAL_INV => wc_opcode::LOCAL_INV,
        w::BIND_MW => wc_opcode::BIND_MW,
        w::ATOMIC_WRITE => wc_opcode::ATOMIC_WRITE,
        w::FLUSH => wc_opcode::FLUSH,
        w::REG_MR => wc_opcode::REG_MR,
        _ => return None,
    })
}

/// `struct ferroce_cqe`: the fields the kernel fills in (the rest are zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cqe {
    pub(crate) wr_id: u64,
    pub(crate) status: WcStatus,
    pub(crate) opcode: u32,
    pub(crate) vendor_err: u32,
    pub(crate) byte_len: u32,
    /// Big endian, as on the wire (or the invalidated rkey).
    pub(crate) imm_data: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: u32,
    pub(crate) pkey_index: u16,
    pub(crate) sl: u8,
    pub(crate) port_num: u8,
    /// Kernel CQs only: the token of the QP (`reserved1`); always 0 in a user's ring.
    pub(crate) kernel_qp: u64,
    /// Kernel CQs only: a datagram's GRH is an IPv4 (`Some(true)`) or IPv6 header, for
    /// `ib_wc.network_hdr_type` (`reserved0`: `enum rdma_network_type`); 0 in a user's ring.
    pub(crate) network: Option<bool>,
    /// Kernel CQs only: the 802.1Q VLAN a datagram came on, for `ib_wc.vlan_id` (`reserved1`
    /// after the QP token: the id with bit 15 set, 0 for none); 0 in a user's ring.
    pub(crate) vlan_id: Option<u16>,
    /// Not part of the entry: whether the message received had the Solicited Event bit
    /// (see [`Cqe::wakes_solicited`]).
    pub(crate) solicited: bool,
}

impl Cqe {
    /// Whether a CQ armed for solicited completions only signals this one: a receive of a
    /// message with the Solicited Event bit, or any unsuccessful completion (flushes
    /// included), as `ibv_req_notify_cq(3)` defines a solicited completion.
    pub(crate) fn wakes_solicited(&self) -> bool {
        self.solicited || self.status != WcStatus::Success
    }

    /// A flushed work request's completion.
    pub(crate) fn flushed(wr_id: u64, opcode: u32, qp_num: u32) -> Self {
        Cqe {
            wr_id,
            status: WcStatus::WrFlushErr,
            opcode,
            qp_num,
            port_num: 1,
            ..Cqe::default()
        }
    }

    /// The C layout, native byte order.
    pub(crate) fn to_bytes(self) -> [u8; CQE_SIZE] {
        let mut b = [0u8; CQE_SIZE];
        b[0..8].copy_from_slice(&self.wr_id.to_ne_bytes());
        let words = [
            self.status.to_abi(),
            self.opcode,
            self.vendor_err,
            self.byte_len,
            self.imm_data,
            self.qp_num,
            self.src_qp,
            self.wc_flags,
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        b[40..42].copy_from_slice(&self.pkey_index.to_ne_bytes());
        // slid (42..44) stays 0: RoCE has no LIDs.
        b[44] = self.sl;
        b[46] = self.port_num;
        b[47] = match self.network {
            None => 0,
            Some(true) => RDMA_NETWORK_IPV4,
            Some(false) => RDMA_NETWORK_IPV6,
        };
        b[48..56].copy_from_slice(&self.kernel_qp.to_ne_bytes());
        let vlan = self
            .vlan_id
            .map_or(0, |id| KERNEL_VLAN_PRESENT | (id & 0xfff));
        b[56..58].copy_from_slice(&vlan.to_ne_bytes());
        b
    }

    /// Reads an entry back (kernel CQs, which the kernel also consumes).
    pub(crate) fn from_bytes(b: &[u8; CQE_SIZE]) -> Self {
        let w = |i: usize| {
            u32::from_ne_bytes([b[8 + 4 * i], b[9 + 4 * i], b[10 + 4 * i], b[11 + 4 * i]])
        };
        let mut wr_id = [0u8; 8];
        wr_id.copy_from_slice(&b[0..8]);
        let mut qp = [0u8; 8];
        qp.copy_from_slice(&b[48..56]);
        Cqe {
            wr_id: u64::from_ne_bytes(wr_id),
            // A kernel CQ holds only the entries the kernel wrote: every status is known.
            status: WcStatus::from_abi(w(0)).unwrap_or(WcStatus::GeneralErr),
            opcode: w(1),
            vendor_err: w(2),
            byte_len: w(3),
            imm_data: w(4),
            qp_num: w(5),
            src_qp: w(6),
            wc_flags: w(7),
            pkey_index: u16::from_ne_bytes([b[40], b[41]]),
            sl: b[44],
            port_num: b[46],
            kernel_qp: u64::from_ne_bytes(qp),
            network: match b[47] {
                RDMA_NETWORK_IPV4 => Some(true),
                RDMA_NETWORK_IPV6 => Some(false),
                _ => None,
            },
            vlan_id: {
                let v = u16::from_ne_bytes([b[56], b[57]]);
                (v & KERNEL_VLAN_PRESENT != 0).then_some(v & 0xfff)
            },
            solicited: false,
        }
    }
}

/// A kernel CQE's VLAN field holds an id (in its low 12 bits).
const KERNEL_VLAN_PRESENT: u16 = 0x8000;

/// `enum rdma_network_type` values of a kernel CQE's network field.
pub(crate) const RDMA_NETWORK_IPV4: u8 = 2;
/// See [`RDMA_NETWORK_IPV4`].
pub(crate) const RDMA_NETWORK_IPV6: u8 = 3;

/// A send WQE header (`struct ferroce_send_wqe` without its SGEs or inline data), as kernel
/// users' work requests are written to their rings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SendWqe {
    pub(crate) wr_id: u64,
    pub(crate) opcode: u32,
    pub(crate) send_flags: u32,
    pub(crate) num_sge: u32,
    pub(crate) inline_len: u32,
    pub(crate) imm_data: u32,
    /// The opcode's part of the union: `rdma`, `atomic`, `ud` or (kernel only) `reg`.
    pub(crate) wr: WqeUnion,
}

/// The union of `struct ferroce_send_wqe`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum WqeUnion {
    #[default]
    None,
    Rdma {
        remote_addr: u64,
        rkey: u32,
    },
    Atomic {
        remote_addr: u64,
        compare_add: u64,
        swap: u64,
        rkey: u32,
    },
    /// `atomic_write`: `value` (memory order) for the aligned word at `remote_addr`.
    AtomicWrite {
        remote_addr: u64,
        rkey: u32,
        value: [u8; 8],
    },
    Ud {
        ah_num: u32,
        remote_qpn: u32,
        remote_qkey: u32,
        /// Kernel rings of QP1 only (`reserved`, bytes 44-45): the index of the P_Key to send
        /// with; ignored elsewhere (a user's ring may hold anything there).
        pkey_index: u16,
    },
    /// `flush`: `placement` (`IBV_FLUSH_GLOBAL`, `IBV_FLUSH_PERSISTENT`) of `length` bytes at
    /// `remote_addr` (`level` `IBV_FLUSH_RANGE`) or of the whole region (`IBV_FLUSH_MR`)
    /// under `rkey`.
    Flush {
        remote_addr: u64,
        length: u64,
        rkey: u32,
        placement: u8,
        level: u8,
    },
    Reg {
        mr_key: u32,
        key: u32,
        access: u32,
    },
    /// `bind_mw`: the window `mw_rkey` gets the key byte of `rkey` and `length` bytes at
    /// `addr` of the MR `mr_lkey` (none if `length` is 0), with `access`.
    Bind {
        addr: u64,
        length: u64,
        mw_rkey: u32,
        rkey: u32,
        mr_lkey: u32,
        access: u32,
    },
}

impl SendWqe {
    pub(crate) fn to_bytes(self) -> [u8; SEND_WQE_HEADER] {
        let mut b = [0u8; SEND_WQE_HEADER];
        let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(0, &self.wr_id.to_ne_bytes());
        put(8, &self.opcode.to_ne_bytes());
        put(12, &self.send_flags.to_ne_bytes());
        put(16, &self.num_sge.to_ne_bytes());
        put(20, &self.inline_len.to_ne_bytes());
        put(24, &self.imm_data.to_ne_bytes());
        match self.wr {
            WqeUnion::None => {}
            WqeUnion::Rdma { remote_addr, rkey } => {
                put(32, &remote_addr.to_ne_bytes());
                put(40, &rkey.to_ne_bytes());
            }
            WqeUnion::Atomic {
                remote_addr,
                compare_add,
                swap,
                rkey,
            } => {
                put(32, &remote_addr.to_ne_bytes());
                put(40, &compare_add.to_ne_bytes());
                put(48, &swap.to_ne_bytes());
                put(56, &rkey.to_ne_bytes());
            }
            WqeUnion::AtomicWrite {
                remote_addr,
                rkey,
                value,
            } => {
                put(32, &remote_addr.to_ne_bytes());
                put(40, &rkey.to_ne_bytes());
                put(ATOMIC_WRITE_VALUE, &value);
            }
            WqeUnion::Flush {
                remote_addr,
                length,
                rkey,
                placement,
                level,
            } => {
                put(32, &remote_addr.to_ne_bytes());
                put(40, &length.to_ne_bytes());
                put(48, &rkey.to_ne_bytes());
                put(52, &[placement, level]);
            }
            WqeUnion::Ud {
                ah_num,
                remote_qpn,
                remote_qkey,
                pkey_index,
            } => {
                put(32, &ah_num.to_ne_bytes());
                put(36, &remote_qpn.to_ne_bytes());
                put(40, &remote_qkey.to_ne_bytes());
                put(44, &pkey_index.to_ne_bytes());
            }
            WqeUnion::Reg {
                mr_key,
                key,
                access,
            } => {
                put(32, &mr_key.to_ne_bytes());
                put(36, &key.to_ne_bytes());
                put(40, &access.to_ne_bytes());
            }
            WqeUnion::Bind {
                addr,
                length,
                mw_rkey,
                rkey,
                mr_lkey,
                access,
            } => {
                put(32, &addr.to_ne_bytes());
                put(40, &length.to_ne_bytes());
                put(48, &mw_rkey.to_ne_bytes());
                put(52, &rkey.to_ne_bytes());
                put(56, &mr_lkey.to_ne_bytes());
                put(60, &access.to_ne_bytes());
            }
        }
        b
    }
}

/// The `wr_id` at the start of a send or receive WQE header.
impl SendWqe {
    /// Reads a send WQE's header as the provider (or `to_bytes`) wrote it. The union is read
    /// as the opcode says; an opcode without one, or an unknown opcode, reads as `None`.
    pub(crate) fn from_bytes(b: &[u8; SEND_WQE_HEADER]) -> Self {
        let u32_at = |at: usize| u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let u64_at = |at: usize| u64::from(u32_at(at)) | u64::from(u32_at(at + 4)) << 32;
        use wr_opcode as o;
        let opcode = u32_at(8);
        let wr = match opcode {
            o::RDMA_WRITE | o::RDMA_WRITE_WITH_IMM | o::RDMA_READ => WqeUnion::Rdma {
                remote_addr: u64_at(32),
                rkey: u32_at(40),
            },
            o::ATOMIC_CMP_AND_SWP | o::ATOMIC_FETCH_AND_ADD => WqeUnion::Atomic {
                remote_addr: u64_at(32),
                compare_add: u64_at(40),
                swap: u64_at(48),
                rkey: u32_at(56),
            },
            o::ATOMIC_WRITE => WqeUnion::AtomicWrite {
                remote_addr: u64_at(32),
                rkey: u32_at(40),
                value: {
                    let mut v = [0u8; 8];
                    v.copy_from_slice(&b[ATOMIC_WRITE_VALUE..ATOMIC_WRITE_VALUE + 8]);
                    v
                },
            },
            o::FLUSH => WqeUnion::Flush {
                remote_addr: u64_at(32),
                length: u64_at(40),
                rkey: u32_at(48),
                placement: b[52],
                level: b[53],
            },
            o::REG_MR => WqeUnion::Reg {
                mr_key: u32_at(32),
                key: u32_at(36),
                access: u32_at(40),
            },
            o::BIND_MW => WqeUnion::Bind {
                addr: u64_at(32),
                length: u64_at(40),
                mw_rkey: u32_at(48),
                rkey: u32_at(52),
                mr_lkey: u32_at(56),
                access: u32_at(60),
            },
            _ => WqeUnion::None,
        };
        SendWqe {
            wr_id: u64_at(0),
            opcode,
            send_flags: u32_at(12),
            num_sge: u32_at(16),
            inline_len: u32_at(20),
            imm_data: u32_at(24),
            wr,
        }
    }

    /// The UD destination in a send WQE's union (UD and GSI QPs' sends carry one).
    pub(crate) fn ud_of(b: &[u8; SEND_WQE_HEADER]) -> WqeUnion {
        let u32_at = |at: usize| u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        WqeUnion::Ud {
            ah_num: u32_at(32),
            remote_qpn: u32_at(36),
            remote_qkey: u32_at(40),
            pkey_index: u16::from_ne_bytes([b[44], b[45]]),
        }
    }
}

/// A scatter/gather element as the rings hold it (`struct ferroce_sge`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RingSge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

impl RingSge {
    pub(crate) fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; SGE_SIZE] = b.get(..SGE_SIZE)?.try_into().ok()?;
        let mut addr = [0u8; 8];
        addr.copy_from_slice(&b[0..8]);
        Some(RingSge {
            addr: u64::from_ne_bytes(addr),
            length: u32::from_ne_bytes([b[8], b[9], b[10], b[11]]),
            lkey: u32::from_ne_bytes([b[12], b[13], b[14], b[15]]),
        })
    }
}

/// The number of SGEs in a receive WQE's header.
pub(crate) fn recv_wqe_num_sge(hdr: &[u8; RECV_WQE_HEADER]) -> u32 {
    u32::from_ne_bytes([hdr[8], hdr[9], hdr[10], hdr[11]])
}

pub(crate) fn wqe_wr_id(hdr: &[u8; RECV_WQE_HEADER]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&hdr[WQE_WR_ID..WQE_WR_ID + 8]);
    u64::from_ne_bytes(b)
}

/// The SGEs a WQE of `wqe_size` bytes holds after a header of `header` bytes.
pub(crate) fn sge_room(wqe_size: u32, header: usize) -> u32 {
    ((wqe_size as usize).saturating_sub(header) / SGE_SIZE) as u32
}

/// A receive WQE header (`struct ferroce_recv_wqe` without its SGEs).
pub(crate) fn recv_wqe_header(wr_id: u64, num_sge: u32) -> [u8; RECV_WQE_HEADER] {
    let mut b = [0u8; RECV_WQE_HEADER];
    b[0..8].copy_from_slice(&wr_id.to_ne_bytes());
    b[8..12].copy_from_slice(&num_sge.to_ne_bytes());
    b
}

/// `struct ferroce_sge`.
pub(crate) fn sge_bytes(addr: u64, length: u32, lkey: u32) -> [u8; SGE_SIZE] {
    let mut b = [0u8; SGE_SIZE];
    b[0..8].copy_from_slice(&addr.to_ne_bytes());
    b[8..12].copy_from_slice(&length.to_ne_bytes());
    b[12..16].copy_from_slice(&lkey.to_ne_bytes());
    b
}

/// Whether a CQ armed with `notify` (`FERROCE_CQ_NOTIFY_*` bits, ORed in by each arming, so
/// NEXT wins over SOLICITED) signals a completion. Other bits mean nothing.
pub(crate) fn notify_fires(notify: u32, solicited: bool) -> bool {
    notify & CQ_NOTIFY_NEXT != 0 || (notify & CQ_NOTIFY_SOLICITED != 0 && solicited)
}

/// The bytes a queue of `num_entries` entries of `entry_size` bytes maps, if representable.
pub(crate) fn queue_bytes(num_entries: u32, entry_size: usize) -> Option<usize> {
    (num_entries as usize)
        .checked_mul(entry_size)?
        .checked_add(QUEUE_ENTRIES)
}

/// `struct ferroce_mmap_info`: where the provider maps a queue.
pub(crate) struct MmapInfo {
    pub(crate) offset: u64,
    pub(crate) size: u32,
    pub(crate) num_entries: u32,
}

impl MmapInfo {
    /// `sizeof(struct ferroce_mmap_info)`, also the size of the create/resize CQ responses.
    pub(crate) const SIZE: usize = 16;

    /// The C layout, native byte order (as the provider on the same host reads it).
    pub(crate) fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..8].copy_from_slice(&self.offset.to_ne_bytes());
        b[8..12].copy_from_slice(&self.size.to_ne_bytes());
        b[12..16].copy_from_slice(&self.num_entries.to_ne_bytes());
        b
    }
}

/// `struct ferroce_create_ah_resp`.
pub(crate) fn create_ah_resp(ah_num: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0..4].copy_from_slice(&ah_num.to_ne_bytes());
    b
}

/// `struct ferroce_create_qp_resp`: the SQ and RQ mappings and their entry sizes.
pub(crate) fn create_qp_resp(
    sq: &MmapInfo,
    rq: Option<&MmapInfo>,
    sq_wqe: u32,
    rq_wqe: u32,
) -> [u8; 40] {
    let mut b = [0u8; 40];
    b[0..16].copy_from_slice(&sq.to_bytes());
    if let Some(rq) = rq {
        b[16..32].copy_from_slice(&rq.to_bytes());
    }
    b[32..36].copy_from_slice(&sq_wqe.to_ne_bytes());
    b[36..40].copy_from_slice(&rq_wqe.to_ne_bytes());
    b
}

/// `struct ferroce_create_srq_resp`: the SRQ's mapping and its entry size.
pub(crate) fn create_srq_resp(mi: &MmapInfo, wqe_size: u32) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0..16].copy_from_slice(&mi.to_bytes());
    b[16..20].copy_from_slice(&wqe_size.to_ne_bytes());
    b
}

/// `sizeof(struct ferroce_alloc_ucontext_cmd)`, and of its response.
pub(crate) const ALLOC_UCONTEXT_CMD_SIZE: usize = 8;

/// The `FERROCE_UCTX_*` features this driver knows and can enable: none yet.
pub(crate) const UCTX_FEATURES: u64 = 0;

/// The features a user context has: those its provider asked for that the driver knows
/// (`struct ferroce_alloc_ucontext_cmd` and `_resp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ContextFeatures(pub(crate) u64);

impl ContextFeatures {
    /// The features granted for `cmd`, the provider's command (`None`: it sent none).
    pub(crate) fn granted(cmd: Option<&[u8; ALLOC_UCONTEXT_CMD_SIZE]>) -> Self {
        ContextFeatures(cmd.map_or(0, |b| u64::from_ne_bytes(*b)) & UCTX_FEATURES)
    }

    /// `struct ferroce_alloc_ucontext_resp`.
    pub(crate) fn resp(self) -> [u8; ALLOC_UCONTEXT_CMD_SIZE] {
        self.0.to_ne_bytes()
    }
}

/// `sizeof(struct ferroce_modify_srq_cmd)`.
pub(crate) const MODIFY_SRQ_CMD_SIZE: usize = 8;

/// `struct ferroce_modify_srq_cmd`: where user space wants a resized SRQ's new mapping
/// described (`mmap_info_addr`).
pub(crate) fn modify_srq_cmd(b: &[u8; MODIFY_SRQ_CMD_SIZE]) -> u64 {
    u64::from_ne_bytes(*b)
}

/// Send and receive WQE sizes (powers of two) for the given capabilities.
pub(crate) fn wqe_sizes(send_sge: u32, inline: u32, recv_sge: u32) -> (u32, u32) {
    let send_body = (send_sge as usize * SGE_SIZE).max(inline as usize);
    let send = (SEND_WQE_HEADER + send_body).next_power_of_two() as u32;
    let recv = (RECV_WQE_HEADER + recv_sge.max(1) as usize * SGE_SIZE).next_power_of_two() as u32;
    (send, recv)
}

/// How many entries a queue asked for `requested` entries gets: the next power of two.
pub(crate) fn ring_entries(requested: u32, max: u32) -> Option<u32> {
    if requested == 0 || requested > max {
        return None;
    }
    requested.checked_next_power_of_two()
}

/// The number of entries between a consumer index written by user space and the kernel's own
/// producer index, or `None` if the user's index is impossible (ahead of the producer or more
/// than a ring behind it).
pub(crate) fn pending(producer: u32, user_consumer: u32, num_entries: u32) -> Option<u32> {
    let n = producer.wrapping_sub(user_consumer);
    (n <= num_entries).then_some(n)
}
