// SPDX-License-Identifier: GPL-2.0

//! ferroce: a software RoCEv2 RDMA device.
//!
//! `rdma link add NAME type ferroce netdev DEV` creates an RDMA device bound to the Ethernet
//! device DEV (this module's alias makes the command load it); `rdma link delete NAME`, removing
//! DEV, or unloading the module removes it. The driver is written against the safe
//! `kernel::rdma` abstractions only.

use kernel::{
    net::netdev::Notifier,
    prelude::*,
    rdma::{self, sw::link},
};

// The layers, each importing only those before it (a host test checks it).
mod engine;
mod net;
mod protocol;
mod verbs;
// The entry points ib_core and `rdma link` call.
mod ops;

use verbs::device::Ferroce;

module! {
    type: FerroceModule,
    name: "ferroce",
    author: "ferroce developers",
    description: "Software RoCEv2 RDMA device",
    license: "GPL",
    alias: ["rdma-link-ferroce"],
}

struct FerroceModule {
    // Options so that `drop` can tear down in order: no new links, then no devices, then no
    // netdev events.
    link: Option<Pin<KBox<link::Registration<Ferroce>>>>,
    notifier: Option<Pin<KBox<Notifier<net::netevent::NetEvents>>>>,
}

impl kernel::Module for FerroceModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let notifier = KBox::pin_init(Notifier::register(), GFP_KERNEL)?;
        let link = KBox::pin_init(link::Registration::register(), GFP_KERNEL)?;
        Ok(FerroceModule {
            link: Some(link),
            notifier: Some(notifier),
        })
    }
}

impl Drop for FerroceModule {
    fn drop(&mut self) {
        drop(self.link.take());
        rdma::Device::<Ferroce>::unregister_all();
        drop(self.notifier.take());
    }
}
