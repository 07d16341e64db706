// SPDX-License-Identifier: GPL-2.0

//! Memory windows (IBTA 10.6.7): an rkey of its own over part of a memory region, bound by a
//! BIND_MW work request executed in send-queue order (`ibv_bind_mw` posts one for type 1).
//!
//! Type 1 windows belong to their PD; binding one again with length 0 takes its access away.
//! Type 2 windows (2B) are bound to the QP that bound them, which alone serves their rkey, and
//! are freed by LOCAL_INV or a received SEND_WITH_INV. A window's rkey comes from the MRs' key
//! space, so an rkey's index names an MR or a window, never both; the key byte changes with
//! each bind (the binder chooses it). A window holds its MR by key, not by reference: once the
//! MR is deregistered (ferroce does not refuse that, as rxe does), the window reaches nothing.

use kernel::{
    new_spinlock_irq,
    prelude::*,
    rdma::{access, Device, MwType, Pd, Qp, Udata},
    sync::SpinLockIrq,
};

use crate::{
    protocol::{
        abi::{WcStatus, WqeUnion},
        limits,
    },
    verbs::{
        device::Ferroce,
        mr::Memory,
        numbers::{Counted, MemKey},
    },
};
use core::sync::atomic::Ordering;

/// What a window is bound to.
#[derive(Clone, Copy, Default)]
struct Binding {
    /// The window's rkey now (its index, and the key byte of the last bind).
    rkey: u32,
    /// The serial of the MR bound (`MrData::serial`): the MR its key finds must still be it.
    mr_serial: u64,
    /// A type 2 window is bound (valid); a type 1 window always is, with `length` 0 when it
    /// reaches nothing.
    valid: bool,
    mr_key: u32,
    addr: u64,
    length: u64,
    access: u32,
    /// The QP a type 2 window is bound to.
    qpn: u32,
}

/// Per-window state.
#[pin_data]
pub(crate) struct MwData {
    ty: MwType,
    #[pin]
    binding: SpinLockIrq<Binding>,
    /// Released with the key byte of the last bind.
    key: MemKey,
    _counted: Counted,
}

/// Access a window may grant (zero-based windows are not offered).
const SUPPORTED: u32 =
    access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;

/// A new window of type `ty` on `pd`, with its rkey.
pub(crate) fn alloc(
    pd: &Pd<Ferroce>,
    ty: MwType,
    udata: &mut Udata<'_>,
) -> Result<(impl PinInit<MwData, Error>, u32)> {
    udata.require_no_input()?;
    let dev = pd.device();
    let counted = Counted::take(&dev.data().mws, limits::MAX_MW)?;
    let key = MemKey::take(&dev.data().mr_keys)?;
    let rkey = key.get();
    let binding = Binding {
        rkey,
        // A type 1 window is valid from the start (reaching nothing), a type 2 one free.
        valid: ty == MwType::Type1,
        ..Binding::default()
    };
    let data = try_pin_init!(MwData {
        ty,
        binding <- new_spinlock_irq!(binding, "ferroce:mw"),
        key,
        _counted: counted,
    });
    Ok((data, rkey))
}

/// Executes a BIND_MW work request of `qp` (rxe's checks, IBTA C10-72 to C10-75); `Err` is the
/// completion status.
pub(crate) fn bind(qp: &Qp<Ferroce>, wr: &WqeUnion) -> Result<(), WcStatus> {
    let fail = Err(WcStatus::MwBindErr);
    let WqeUnion::Bind {
        addr,
        length,
        mw_rkey,
        rkey,
        mr_lkey,
        access: acc,
    } = *wr
    else {
        return fail;
    };
    let dev = qp.device();
    let Some(mw) = dev.mw(mw_rkey) else {
        return fail;
    };
    if mw.pd_id() != qp.pd_id() || acc & !SUPPORTED != 0 {
        return fail;
    }
    let ty = mw.data().ty;
    let mut mr_serial = 0;
    if length > 0 {
        // The MR: of the QP's PD, open to windows, writable if the window is, covering it.
        let Some(mr) = dev.mr(mr_lkey) else {
            return fail;
        };
        mr_serial = mr.data().serial;
        let data = mr.data();
        let mr_access = data.access.load(Ordering::Relaxed);
        let (start, len) = match &data.memory {
            Memory::User { umem, .. } => (data.iova, umem.len() as u64),
            _ => return fail,
        };
        let writes = access::REMOTE_WRITE | access::REMOTE_ATOMIC;
        if data.key.get() != mr_lkey
            || mr.pd_id() != qp.pd_id()
            || mr_access & access::MW_BIND == 0
            || (acc & writes != 0 && mr_access & access::LOCAL_WRITE == 0)
            || addr < start
            || addr
                .checked_add(length)
                .map_or(true, |end| end > start + len)
        {
            return fail;
        }
    } else if ty == MwType::Type2 {
        // o10-37.2.40: a type 2 window is not unbound by a bind.
        return fail;
    }
    let mut b = mw.data().binding.lock();
    // A type 1 window binds from the valid state, a type 2 one from the free state.
    if b.rkey != mw_rkey || (ty == MwType::Type2 && b.valid) {
        return fail;
    }
    mw.data().key.set_byte(rkey);
    *b = Binding {
        rkey: (mw_rkey & !0xff) | (rkey & 0xff),
        mr_serial,
        valid: true,
        mr_key: if length > 0 { mr_lkey } else { 0 },
        addr,
        length,
        access: acc,
        qpn: qp.qp_num(),
    };
    Ok(())
}

/// Invalidates the type 2 window named by `rkey` (LOCAL_INV, or a received SEND_WITH_INV for
/// `qp`); `false` if there is no such valid window of the QP's PD (type 1 windows cannot be
/// invalidated).
pub(crate) fn invalidate(qp: &Qp<Ferroce>, rkey: u32) -> bool {
    let Some(mw) = qp.device().mw(rkey) else {
        return false;
    };
    if mw.data().ty != MwType::Type2 || mw.pd_id() != qp.pd_id() {
        return false;
    }
    let mut b = mw.data().binding.lock();
    if b.rkey != rkey || !b.valid {
        return false;
    }
    *b = Binding {
        rkey: b.rkey,
        ..Binding::default()
    };
    true
}

/// Where the window whose rkey is `rkey` starts, if one is bound under it (for requests that
/// name it whole; [`resolve`] checks the rest).
pub(crate) fn bound_start(dev: &Device<Ferroce>, rkey: u32) -> Option<u64> {
    let b = *dev.mw(rkey)?.data().binding.lock();
    (b.valid && b.rkey == rkey).then_some(b.addr)
}

/// The MR key and serial behind the window `rkey` for a remote access of `need` to `len` bytes
/// at `addr` by the QP `qpn` of the PD `pd`, if the window is valid, of that PD (and bound to
/// that QP, for type 2), covers the range and grants the access.
pub(crate) fn resolve(
    dev: &Device<Ferroce>,
    pd: usize,
    qpn: u32,
    rkey: u32,
    addr: u64,
    len: u64,
    need: u32,
) -> Option<(u32, u64)> {
    let mw = dev.mw(rkey)?;
    if mw.pd_id() != pd {
        return None;
    }
    let ty = mw.data().ty;
    let b = *mw.data().binding.lock();
    let inside = addr >= b.addr
        && addr
            .checked_add(len)
            .is_some_and(|end| end <= b.addr + b.length);
    let ok = b.rkey == rkey
        && b.valid
        && b.length > 0
        && b.access & need == need
        && (ty == MwType::Type1 || b.qpn == qpn)
        && inside;
    ok.then_some((b.mr_key, b.mr_serial))
}
