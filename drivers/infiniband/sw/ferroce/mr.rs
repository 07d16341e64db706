// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned through ib_umem, named by an lkey/rkey from the device's
//! key table (`keys.rs`).

use kernel::{
    prelude::*,
    rdma::{access, rereg, Mr, MrChange, Pd, Udata, Umem},
};

use crate::{device::Ferroce, limits};

/// Per-MR state.
pub(crate) struct MrData {
    /// The pinned pages (used by the data path).
    #[expect(dead_code, reason = "read by the data path")]
    pub(crate) umem: Umem,
    /// The user address and length registered (what a re-registration keeps).
    start: u64,
    length: u64,
    pub(crate) iova: u64,
    pub(crate) access: u32,
    pub(crate) key: u32,
}

/// The access flags ferroce honours; optional ones (relaxed ordering) may be asked for and are
/// ignored, as their definition allows.
const SUPPORTED: u32 = access::LOCAL_WRITE
    | access::REMOTE_WRITE
    | access::REMOTE_READ
    | access::REMOTE_ATOMIC
    | access::OPTIONAL;

pub(crate) fn reg_user(
    pd: &Pd<Ferroce>,
    start: u64,
    length: u64,
    iova: u64,
    access: u32,
    udata: &mut Udata<'_>,
) -> Result<(MrData, u32, u32)> {
    udata.require_no_input()?;
    if access & !SUPPORTED != 0 {
        // Memory windows, zero-based, huge-page and flush access: not supported.
        return Err(EOPNOTSUPP);
    }
    if length == 0 || length > limits::MAX_MR_SIZE || iova.checked_add(length).is_none() {
        return Err(EINVAL);
    }
    let dev = pd.device();
    let umem = Umem::get(dev, start, length, access)?;
    let key = dev.data().mr_keys.lock().alloc().map_err(|_| ENOMEM)?;
    Ok((
        MrData {
            umem,
            start,
            length,
            iova,
            access,
            key,
        },
        key,
        key,
    ))
}

pub(crate) fn dereg(mr: &Mr<Ferroce>) {
    mr.device().data().mr_keys.lock().free(mr.data().key);
}

/// Re-registration: a new MR with the old one's memory, access or PD replaced as `change`
/// says. The old MR stays intact until ib_core destroys it after this succeeds, so a failed
/// re-registration changes nothing; the new MR has new keys, so a peer holding the old rkey
/// cannot reach it.
pub(crate) fn rereg_user(
    mr: &Mr<Ferroce>,
    change: &MrChange,
    pd: &Pd<Ferroce>,
    udata: &mut Udata<'_>,
) -> Result<(MrData, u32, u32)> {
    let old = mr.data();
    let (start, length, iova) = if change.flags & rereg::TRANS != 0 {
        (change.start, change.length, change.iova)
    } else {
        (old.start, old.length, old.iova)
    };
    let access = if change.flags & rereg::ACCESS != 0 {
        change.access
    } else {
        old.access
    };
    reg_user(pd, start, length, iova, access, udata)
}
