// SPDX-License-Identifier: GPL-2.0

//! Address handles: a RoCEv2 address vector (resolved by ib_core) and the number UD work
//! requests will name it by.

use kernel::{
    alloc::KVVec,
    prelude::*,
    rdma::{AddressVector, Pd, Udata},
    sync::SpinLockIrq,
};

use crate::{abi, device::Ferroce, keys::KeyTable, limits, numbers::Number};

/// Per-AH state.
pub(crate) struct AhData {
    /// Where UD sends through this AH go.
    #[expect(dead_code, reason = "read by the data path")]
    pub(crate) av: AddressVector,
    /// The AH number, from the device's AH table.
    pub(crate) num: Number<SpinLockIrq<KeyTable<KVVec<u16>>>>,
}

pub(crate) fn create(
    pd: &Pd<Ferroce>,
    av: &AddressVector,
    _sleepable: bool,
    udata: &mut Udata<'_>,
) -> Result<AhData> {
    udata.require_no_input()?;
    if av.port_num != 1 || u32::from(av.sgid_index) >= limits::GID_TBL_LEN || av.sl > 7 {
        return Err(EINVAL);
    }
    // A spinlock table: kernel users may create AHs in atomic context.
    let num = Number::take(&pd.device().data().ah_nums)?;
    if udata.is_user() {
        udata.write(&abi::create_ah_resp(num.get()))?;
    }
    Ok(AhData { av: *av, num })
}
