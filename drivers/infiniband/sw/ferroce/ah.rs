// SPDX-License-Identifier: GPL-2.0

//! Address handles: a RoCEv2 address vector (resolved by ib_core) and the number UD work
//! requests will name it by.

use kernel::{
    prelude::*,
    rdma::{AddressVector, Ah, Pd, Udata},
};

use crate::{abi, device::Ferroce, limits};

/// Per-AH state.
pub(crate) struct AhData {
    /// Where UD sends through this AH go.
    #[expect(dead_code, reason = "read by the data path")]
    pub(crate) av: AddressVector,
    /// The AH number, from the device's AH table.
    pub(crate) num: u32,
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
    // A spinlock: kernel users may create AHs in atomic context.
    let num = pd
        .device()
        .data()
        .ah_nums
        .lock()
        .alloc()
        .map_err(|_| ENOMEM)?;
    let data = AhData { av: *av, num };
    if udata.is_user() {
        if let Err(e) = udata.write(&abi::create_ah_resp(num)) {
            pd.device().data().ah_nums.lock().free(num);
            return Err(e);
        }
    }
    Ok(data)
}

pub(crate) fn destroy(ah: &Ah<Ferroce>) {
    ah.device().data().ah_nums.lock().free(ah.data().num);
}
