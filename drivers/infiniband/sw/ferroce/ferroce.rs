// SPDX-License-Identifier: GPL-2.0

//! ferroce: a software RoCEv2 RDMA device.
//!
//! This is the module shell: it loads and unloads cleanly.  The RDMA device
//! (`rdma link add NAME type ferroce netdev DEV`) is registered through the
//! `kernel::rdma` abstractions, which come with the device work.

use kernel::prelude::*;

module! {
    type: Ferroce,
    name: "ferroce",
    author: "ferroce developers",
    description: "Software RoCEv2 RDMA device",
    license: "GPL",
}

struct Ferroce;

impl kernel::Module for Ferroce {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("loaded\n");
        Ok(Ferroce)
    }
}

impl Drop for Ferroce {
    fn drop(&mut self) {
        pr_info!("unloaded\n");
    }
}
