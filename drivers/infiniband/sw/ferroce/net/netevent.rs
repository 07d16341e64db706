// SPDX-License-Identifier: GPL-2.0

//! Net device events: a ferroce device follows its netdev's state and goes away with it.

use kernel::net::netdev::{Event, NetDevice, NotifierHandler};
use kernel::rdma::Device;

use crate::verbs::device::Ferroce;

pub(crate) struct NetEvents;

impl NotifierHandler for NetEvents {
    fn event(event: Event, netdev: &NetDevice) {
        let Some(dev) = Device::<Ferroce>::get_by_netdev(netdev) else {
            return;
        };
        match event {
            Event::Unregister => {
                dev.data().unbind();
                dev.unregister_queued();
            }
            Event::Up | Event::Down | Event::Change => dev.data().sync_port_state(&dev, netdev),
            // The active MTU and the GIDs are read from the netdev when asked for; ib_core
            // maintains the GID table itself.
            _ => {}
        }
    }
}
