// SPDX-License-Identifier: GPL-2.0

//! Work requests of kernel users (`struct ib_send_wr` and its extensions, `struct ib_recv_wr`)
//! and the completions they get back (`struct ib_wc`).
//!
//! User processes post work into rings the driver shares with them; kernel users call
//! `ib_post_send`/`ib_post_recv`/`ib_poll_cq`, which reach the driver through this module's
//! types. Everything a kernel user passes is borrowed for the call only.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{ah::Ah, driver::Driver, mr::Mr, qp::Qp};
use crate::{bindings, error::code::*, error::Result};

/// A scatter/gather element (`struct ib_sge`): for a software device, `addr` is a kernel
/// virtual address (ib_core's virtual DMA) or an address within the MR `lkey` names.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// The local key of the MR the memory belongs to.
    pub lkey: u32,
}

// The layout `Sge` borrows `struct ib_sge` with.
const _: () = {
    assert!(core::mem::size_of::<Sge>() == core::mem::size_of::<bindings::ib_sge>());
    assert!(core::mem::offset_of!(Sge, length) == core::mem::offset_of!(bindings::ib_sge, length));
    assert!(core::mem::offset_of!(Sge, lkey) == core::mem::offset_of!(bindings::ib_sge, lkey));
};

/// The SGE list of a work request.
///
/// # Safety
///
/// `list` must point to `num` valid `ib_sge`s (or be anything if `num` is 0) for `'a`.
unsafe fn sges<'a>(list: *const bindings::ib_sge, num: i32) -> Result<&'a [Sge]> {
    let num = usize::try_from(num).map_err(|_| EINVAL)?;
    if num == 0 {
        return Ok(&[]);
    }
    if list.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The caller's promise; `Sge` has the layout of `ib_sge` (checked above).
    Ok(unsafe { core::slice::from_raw_parts(list.cast::<Sge>(), num) })
}

/// A receive work request of a kernel user.
#[derive(Debug)]
pub struct RecvWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Where the message goes.
    pub sges: &'a [Sge],
}

impl<'a> RecvWr<'a> {
    /// # Safety
    ///
    /// `wr` must be valid for `'a`.
    pub(crate) unsafe fn from_raw(wr: &'a bindings::ib_recv_wr) -> Result<Self> {
        Ok(RecvWr {
            // SAFETY: Both union members are plain 64-bit values.
            wr_id: unsafe { wr.__bindgen_anon_1.wr_id },
            // SAFETY: The caller's promise covers the SGE list.
            sges: unsafe { sges(wr.sg_list, wr.num_sge) }?,
        })
    }
}

/// What a send work request does (`enum ib_wr_opcode` and the matching extension).
pub enum SendOp<'a, T: Driver> {
    /// SEND.
    Send,
    /// SEND with immediate data (big endian, as on the wire).
    SendWithImm(u32),
    /// SEND that invalidates the peer's `rkey`.
    SendWithInv(u32),
    /// RDMA WRITE.
    RdmaWrite {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate data (big endian).
    RdmaWriteWithImm {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: u32,
    },
    /// RDMA READ.
    RdmaRead {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare and swap.
    CmpSwap {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// The value compared.
        compare: u64,
        /// The value stored if equal.
        swap: u64,
    },
    /// Atomic fetch and add.
    FetchAdd {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// The value added.
        add: u64,
    },
    /// Invalidates a local `rkey`.
    LocalInv(u32),
    /// Fast registration: `mr` (from `alloc_mr`, mapped by `map_mr_sg`) gets `key` and `access`.
    RegMr {
        /// The MR.
        mr: &'a Mr<T>,
        /// Its new key (index unchanged, key byte chosen by the user).
        key: u32,
        /// Its new access flags.
        access: u32,
    },
}

/// The destination of a UD send.
pub struct UdDest<'a, T: Driver> {
    /// The address handle.
    pub ah: &'a Ah<T>,
    /// The remote QP number.
    pub remote_qpn: u32,
    /// The remote Q_Key.
    pub remote_qkey: u32,
    /// The index of the P_Key to send with (the general services QP only: ib_mad answers a
    /// MAD with the P_Key it came with; other QPs send with their own).
    pub pkey_index: u16,
}

/// A send work request of a kernel user.
pub struct SendWr<'a, T: Driver> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// `IB_SEND_*` flags (the values of `IBV_SEND_*`).
    pub send_flags: u32,
    /// What is sent, or where READ/atomic results go.
    pub sges: &'a [Sge],
    /// The operation.
    pub op: SendOp<'a, T>,
    /// Where a UD QP sends to (`None` on connected QPs).
    pub ud: Option<UdDest<'a, T>>,
}

/// `IB_SEND_INLINE`: the data is copied at post time.
pub const SEND_INLINE: u32 = bindings::ib_send_flags_IB_SEND_INLINE as u32;

impl<'a, T: Driver> SendWr<'a, T> {
    /// # Safety
    ///
    /// `wr` must be a valid work request for a QP of type `ud` (a UD QP) or a connected one,
    /// valid for `'a`, with the extension its opcode names.
    pub(crate) unsafe fn from_raw(wr: &'a bindings::ib_send_wr, ud: bool) -> Result<Self> {
        let p: *const bindings::ib_send_wr = wr;
        // SAFETY: Reading the extension the opcode names is the caller's promise: each starts
        // with the `ib_send_wr`.
        let rdma = || unsafe { &*p.cast::<bindings::ib_rdma_wr>() };
        // SAFETY: As above.
        let atomic = || unsafe { &*p.cast::<bindings::ib_atomic_wr>() };
        // SAFETY: Both union members are 32-bit values.
        let ex = unsafe { wr.ex.imm_data };
        let op = match wr.opcode {
            bindings::ib_wr_opcode_IB_WR_SEND => SendOp::Send,
            bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM => SendOp::SendWithImm(ex),
            bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV => SendOp::SendWithInv(ex),
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE => SendOp::RdmaWrite {
                remote_addr: rdma().remote_addr,
                rkey: rdma().rkey,
            },
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => SendOp::RdmaWriteWithImm {
                remote_addr: rdma().remote_addr,
                rkey: rdma().rkey,
                imm: ex,
            },
            bindings::ib_wr_opcode_IB_WR_RDMA_READ => SendOp::RdmaRead {
                remote_addr: rdma().remote_addr,
                rkey: rdma().rkey,
            },
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => SendOp::CmpSwap {
                remote_addr: atomic().remote_addr,
                rkey: atomic().rkey,
                compare: atomic().compare_add,
                swap: atomic().swap,
            },
            bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => SendOp::FetchAdd {
                remote_addr: atomic().remote_addr,
                rkey: atomic().rkey,
                add: atomic().compare_add,
            },
            bindings::ib_wr_opcode_IB_WR_LOCAL_INV => SendOp::LocalInv(ex),
            bindings::ib_wr_opcode_IB_WR_REG_MR => {
                // SAFETY: As above.
                let reg = unsafe { &*p.cast::<bindings::ib_reg_wr>() };
                if reg.mr.is_null() {
                    return Err(EINVAL);
                }
                SendOp::RegMr {
                    // SAFETY: A kernel user's fast-registration MR of this device, alive while
                    // the work request is outstanding.
                    mr: unsafe { Mr::<T>::from_raw(reg.mr) },
                    key: reg.key,
                    access: reg.access as u32,
                }
            }
            _ => return Err(EOPNOTSUPP),
        };
        let ud = if ud {
            // SAFETY: Every send work request of a UD QP is an `ib_ud_wr`.
            let u = unsafe { &*p.cast::<bindings::ib_ud_wr>() };
            if u.ah.is_null() {
                return Err(EINVAL);
            }
            Some(UdDest {
                // SAFETY: The AH of this device, alive while the work request is posted.
                ah: unsafe { Ah::<T>::from_raw(u.ah) },
                remote_qpn: u.remote_qpn,
                remote_qkey: u.remote_qkey,
                pkey_index: u.pkey_index,
            })
        } else {
            None
        };
        Ok(SendWr {
            // SAFETY: Both union members are plain 64-bit values.
            wr_id: unsafe { wr.__bindgen_anon_1.wr_id },
            send_flags: wr.send_flags as u32,
            // SAFETY: The caller's promise covers the SGE list.
            sges: unsafe { sges(wr.sg_list, wr.num_sge) }?,
            op,
            ud,
        })
    }

    /// Copies the data of an `IB_SEND_INLINE` work request into `dst`; returns its length.
    ///
    /// Fails with `EINVAL` if the data does not fit.
    pub fn copy_inline(&self, dst: &mut [u8]) -> Result<usize> {
        let mut at = 0usize;
        for sge in self.sges {
            let len = sge.length as usize;
            let end = at.checked_add(len).ok_or(EINVAL)?;
            if end > dst.len() {
                return Err(EINVAL);
            }
            // SAFETY: ib_core's contract with kernel users of a virtual-DMA device: an inline
            // SGE's address is the kernel virtual address of `length` readable bytes, valid
            // until the post returns. Only kernel users' requests become `SendWr`s: the layer
            // refuses chains posted to users' QPs (`post_chain`).
            unsafe {
                core::ptr::copy_nonoverlapping(
                    sge.addr as usize as *const u8,
                    dst.as_mut_ptr().add(at),
                    len,
                )
            };
            at = end;
        }
        Ok(at)
    }
}

/// A work request of an ib_core chain (`struct ib_send_wr`, `struct ib_recv_wr`).
pub(crate) trait Chained {
    fn next(&self) -> *const Self;
}

impl Chained for bindings::ib_send_wr {
    fn next(&self) -> *const Self {
        self.next
    }
}

impl Chained for bindings::ib_recv_wr {
    fn next(&self) -> *const Self {
        self.next
    }
}

/// Queues a kernel user's chain of work requests with `post`, in order, then runs `doorbell`
/// (if anything was queued): on a failure `bad_wr` names the first request not queued. A null
/// chain is a user queue's doorbell.
///
/// A chain for a user's queue (`user`) is refused (`EINVAL`, nothing posted): uverbs builds
/// such chains from its `POST_SEND`/`POST_RECV`/`POST_SRQ_RECV` commands out of values the
/// process chose, with user addresses where a kernel user's requests hold kernel addresses, and
/// users post through the rings they share with the driver instead. Refusing them here keeps
/// every driver from having to.
///
/// # Safety
///
/// `wr` must be null or the head of a chain of valid requests, and `bad_wr` valid for writes,
/// for the call.
pub(crate) unsafe fn post_chain<W: Chained>(
    user: bool,
    wr: *const W,
    bad_wr: *mut *const W,
    mut post: impl FnMut(&W) -> Result,
    doorbell: impl FnOnce() -> Result,
) -> crate::ffi::c_int {
    if user && !wr.is_null() {
        // SAFETY: Valid for writes (the caller's promise).
        unsafe { *bad_wr = wr };
        return EINVAL.to_errno();
    }
    let mut next = wr;
    let mut ret = Ok(());
    while !next.is_null() {
        // SAFETY: A member of the valid chain (the caller's promise).
        let w = unsafe { &*next };
        if let Err(e) = post(w) {
            ret = Err(e);
            break;
        }
        next = w.next();
    }
    if let Err(e) = ret {
        // SAFETY: Valid for writes (the caller's promise).
        unsafe { *bad_wr = next };
        if next == wr {
            return e.to_errno();
        }
    }
    match (ret, doorbell()) {
        (Err(e), _) => e.to_errno(),
        (Ok(()), Err(e)) => {
            // The doorbell refused what was queued (the QP left the states that take work
            // meanwhile): none of the chain was posted.
            // SAFETY: Valid for writes (the caller's promise).
            unsafe { *bad_wr = wr };
            e.to_errno()
        }
        (Ok(()), Ok(())) => 0,
    }
}

/// An opaque token for a QP that a completion names: it is only ever turned back into the
/// `ib_qp` pointer ib_core reports in `ib_wc.qp`, never dereferenced here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpToken(u64);

impl QpToken {
    /// The token of `qp`.
    pub fn of<T: Driver>(qp: &Qp<T>) -> Self {
        QpToken(qp.as_raw() as usize as u64)
    }

    /// The token's 64-bit value, to store in a kernel-only ring.
    pub fn to_bits(self) -> u64 {
        self.0
    }

    /// A token stored with [`QpToken::to_bits`].
    pub fn from_bits(bits: u64) -> Self {
        QpToken(bits)
    }
}

/// A completion for a kernel user (`struct ib_wc`), in ib_core's numbering (`enum
/// ib_wc_status`, `enum ib_wc_opcode`, `enum ib_wc_flags`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Wc {
    /// The work request's id.
    pub wr_id: u64,
    /// `IB_WC_*` status.
    pub status: u32,
    /// `IB_WC_*` opcode.
    pub opcode: u32,
    /// Driver-specific error detail.
    pub vendor_err: u32,
    /// Bytes received.
    pub byte_len: u32,
    /// The QP the work request was posted to.
    pub qp: QpToken,
    /// Immediate data (big endian) or the invalidated rkey.
    pub ex: u32,
    /// The sender's QP (UD).
    pub src_qp: u32,
    /// `IB_WC_*` flags.
    pub wc_flags: u32,
    /// P_Key index (UD).
    pub pkey_index: u16,
    /// Service level.
    pub sl: u8,
    /// Port.
    pub port_num: u32,
    /// With [`wc_flags::WITH_NETWORK_HDR_TYPE`]: what the GRH holds (`enum
    /// rdma_network_type`: IPv4 or IPv6 header for RoCEv2).
    pub network_hdr_type: u8,
    /// The 802.1Q VLAN a datagram came on (RoCE): ib_core finds the GID it was sent to among
    /// those of that VLAN's device (`ib_init_ah_attr_from_wc`), so ib_cm and rdma_cm answer
    /// over the same VLAN. Sets `IB_WC_WITH_VLAN`.
    pub vlan_id: Option<u16>,
}

impl Wc {
    pub(crate) fn write_to(&self, w: &mut bindings::ib_wc) {
        w.__bindgen_anon_1.wr_id = self.wr_id;
        w.status = self.status;
        w.opcode = self.opcode;
        w.vendor_err = self.vendor_err;
        w.byte_len = self.byte_len;
        w.qp = self.qp.0 as usize as *mut bindings::ib_qp;
        w.ex.imm_data = self.ex;
        w.src_qp = self.src_qp;
        w.slid = 0;
        w.wc_flags = (self.wc_flags
            | if self.vlan_id.is_some() {
                bindings::ib_wc_flags_IB_WC_WITH_VLAN
            } else {
                0
            }) as i32;
        w.pkey_index = self.pkey_index;
        w.sl = self.sl;
        w.dlid_path_bits = 0;
        w.port_num = self.port_num;
        w.smac = [0; 6];
        w.vlan_id = self.vlan_id.unwrap_or(0);
        w.network_hdr_type = self.network_hdr_type;
    }
}

/// `enum ib_wc_status` values.
pub mod wc_status {
    use crate::bindings;

    /// Flushed: the QP was in the error state.
    pub const WR_FLUSH_ERR: u32 = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR;
}

/// `enum ib_wc_opcode` values that differ from rdma-core's `enum ibv_wc_opcode`.
pub mod wc_opcode {
    use crate::bindings;

    /// A fast registration completed.
    pub const REG_MR: u32 = bindings::ib_wc_opcode_IB_WC_REG_MR;
}

/// `enum rdma_network_type`: what a RoCE datagram's GRH area holds.
pub mod network_type {
    use crate::bindings;

    /// An IPv4 header (in the last 20 bytes of the 40).
    pub const IPV4: u8 = bindings::rdma_network_type_RDMA_NETWORK_IPV4 as u8;
    /// An IPv6 header.
    pub const IPV6: u8 = bindings::rdma_network_type_RDMA_NETWORK_IPV6 as u8;
}

/// `enum ib_wc_flags`.
pub mod wc_flags {
    use crate::bindings;

    /// A GRH is present.
    pub const GRH: u32 = bindings::ib_wc_flags_IB_WC_GRH;
    /// Immediate data is present.
    pub const WITH_IMM: u32 = bindings::ib_wc_flags_IB_WC_WITH_IMM;
    /// An rkey was invalidated.
    pub const WITH_INVALIDATE: u32 = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE;
    /// The IP checksum was verified.
    pub const IP_CSUM_OK: u32 = bindings::ib_wc_flags_IB_WC_IP_CSUM_OK;
    /// `network_hdr_type` is set.
    pub const WITH_NETWORK_HDR_TYPE: u32 = bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
}
