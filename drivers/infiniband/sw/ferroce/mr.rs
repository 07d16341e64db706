// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned through ib_umem, named by an lkey/rkey from the device's
//! key table (`keys.rs`).

use kernel::{
    prelude::*,
    rdma::{access, Mr, Pd, Udata, Umem},
};

use crate::{device::Ferroce, limits};

/// Per-MR state.
pub(crate) struct MrData {
    /// The pinned pages (used by the data path).
    #[expect(dead_code, reason = "read by the data path")]
    pub(crate) umem: Umem,
    #[expect(dead_code, reason = "read by the data path")]
    pub(crate) iova: u64,
    #[expect(dead_code, reason = "read by the data path")]
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
