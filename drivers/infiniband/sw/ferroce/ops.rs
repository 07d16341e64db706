// SPDX-License-Identifier: GPL-2.0

//! The driver's entry points: `struct ib_device_ops` (the [`rdma::Driver`] implementation,
//! one table that hands each verb to the layer that does it), the software device's timers,
//! work items and packets (the [`SoftDriver`] implementation) and `rdma link add` (the
//! [`link::Link`] implementation).

use core::sync::atomic::{AtomicBool, AtomicU64};
use kernel::{
    alloc::KVVec,
    c_str,
    net::netdev::NetDevice,
    new_mutex, new_spinlock_irq,
    prelude::*,
    rdma::{
        self, device_cap,
        sw::{
            deferred::Deferred,
            link,
            wire::{RxPacket, Tunnel},
            SoftDriver,
        },
        AddressVector, AtomicCap, Cq, CqInitAttr, Device, DeviceAttr, DeviceParams, LinkLayer, Mr,
        MrChange, Mtu, MwType, Pd, PhysState, PortAttr, PortEvent, PortImmutable, PortState, Qp,
        QpAttr, QpInitAttr, RecvWr, SendWr, Srq, SrqAttr, UContext, Udata, Wc,
    },
    str::CStr,
    sync::Arc,
};

use crate::verbs::device::{
    active_mtu, port_is_active, DeviceData, Ferroce, ABI_VERSION, DRIVER_ID, PORT,
};
use crate::{
    engine::{executor, qp},
    protocol::{self, abi, count::ObjectCount, guid, keys::KeyTable, limits},
    verbs::{ah, cq, mcast, mr, mw, numbers::Counted, srq, stats},
};

impl abi::ContextFeatures {
    /// The features of a new user context: those its provider asks for
    /// (`struct ferroce_alloc_ucontext_cmd`, absent from older providers) that the driver
    /// knows, which the response reports back.
    fn negotiate(udata: &mut Udata<'_>) -> Result<Self> {
        let features = if udata.in_len() >= abi::ALLOC_UCONTEXT_CMD_SIZE {
            let mut cmd = [0u8; abi::ALLOC_UCONTEXT_CMD_SIZE];
            udata.read(&mut cmd)?;
            Self::granted(Some(&cmd))
        } else {
            udata.require_no_input()?;
            Self::granted(None)
        };
        udata.write(&features.resp())?;
        Ok(features)
    }
}

fn check_port(port: u32) -> Result {
    if port == PORT {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

#[vtable]
impl rdma::Driver for Ferroce {
    type Data = DeviceData;
    type UContextData = abi::ContextFeatures;
    type PdData = Counted;
    type CqData = cq::CqData;
    type MrData = mr::MrData;
    type AhData = ah::AhData;
    type QpData = qp::QpData;
    type SrqData = srq::SrqData;
    type MwData = mw::MwData;
    type QpDeferred = Deferred;
    const DRIVER_ID: u32 = DRIVER_ID;
    const ABI_VERSION: u32 = ABI_VERSION;

    fn query_device(dev: &Device<Self>, udata: &mut Udata<'_>) -> Result<DeviceAttr> {
        udata.require_no_input()?;
        let mac = dev
            .netdev(PORT)
            .and_then(|nd| nd.mac_address())
            .unwrap_or([0; 6]);
        Ok(DeviceAttr {
            sys_image_guid: guid::from_mac(mac),
            max_mr_size: limits::MAX_MR_SIZE,
            page_size_cap: kernel::page::PAGE_SIZE as u64,
            vendor_id: 0xffffff,
            device_cap_flags: device_cap::PORT_ACTIVE_EVENT
                | device_cap::SYS_IMAGE_GUID
                | device_cap::MEM_WINDOW
                | device_cap::MEM_WINDOW_TYPE_2B
                | device_cap::SRQ_RESIZE
                | device_cap::ATOMIC_WRITE
                | device_cap::FLUSH_GLOBAL
                | device_cap::MEM_MGT_EXTENSIONS,
            allow_user_unregister: true,
            max_qp: limits::MAX_QP,
            max_qp_wr: limits::MAX_QP_WR,
            max_send_sge: limits::MAX_SGE,
            max_recv_sge: limits::MAX_SGE,
            max_sge_rd: limits::MAX_SGE_RD,
            max_cq: limits::MAX_CQ,
            max_cqe: limits::MAX_CQE,
            max_mr: limits::MAX_MR,
            max_mw: limits::MAX_MW,
            max_pd: limits::MAX_PD,
            max_qp_rd_atom: limits::MAX_QP_RD_ATOM,
            max_res_rd_atom: limits::MAX_RES_RD_ATOM,
            max_qp_init_rd_atom: limits::MAX_QP_RD_ATOM,
            atomic_cap: Some(AtomicCap::Hca),
            max_ah: limits::MAX_AH,
            max_srq: limits::MAX_SRQ,
            max_srq_wr: limits::MAX_SRQ_WR,
            max_srq_sge: limits::MAX_SGE,
            max_fast_reg_page_list_len: limits::MAX_FAST_REG_PAGES,
            max_pkeys: limits::PKEY_TBL_LEN,
            max_mcast_grp: protocol::mcast::MAX_GROUPS as u32,
            max_mcast_qp_attach: protocol::mcast::MAX_QPS_PER_GROUP as u32,
            max_total_mcast_qp_attach: protocol::mcast::MAX_ATTACHMENTS as u32,
            local_ca_ack_delay: limits::LOCAL_CA_ACK_DELAY,
            ..DeviceAttr::default()
        })
    }

    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttr> {
        check_port(port)?;
        let netdev = dev.netdev(port).ok_or(ENODEV)?;
        let (state, phys_state) = if port_is_active(&netdev) {
            (PortState::Active, PhysState::LinkUp)
        } else if netdev.is_running() {
            (PortState::Down, PhysState::Polling)
        } else {
            (PortState::Down, PhysState::Disabled)
        };
        let active_mtu = active_mtu(&netdev);
        let (active_speed, active_width) = dev.eth_speed(port)?;
        Ok(PortAttr {
            state,
            phys_state,
            max_mtu: Mtu::Mtu4096,
            active_mtu,
            phys_mtu: netdev.mtu(),
            gid_tbl_len: limits::GID_TBL_LEN,
            port_cap_flags: 0,
            max_msg_sz: limits::MAX_MSG_SZ,
            pkey_tbl_len: limits::PKEY_TBL_LEN,
            max_vl_num: 1,
            active_speed,
            active_width,
        })
    }

    fn get_port_immutable(_dev: &Device<Self>, port: u32) -> Result<PortImmutable> {
        check_port(port)?;
        Ok(PortImmutable::roce_v2(
            limits::PKEY_TBL_LEN.into(),
            limits::GID_TBL_LEN,
        ))
    }

    const PORT_COUNTERS: &'static [rdma::Counter] = &stats::NAMES;

    fn read_port_counters(dev: &Device<Self>, port: u32, values: &mut [u64]) -> Result {
        check_port(port)?;
        dev.data().counters.read(values);
        Ok(())
    }

    fn get_link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16> {
        check_port(port)?;
        if index >= limits::PKEY_TBL_LEN {
            return Err(EINVAL);
        }
        Ok(dev.data().pkeys.get(index))
    }

    fn set_pkey(dev: &Device<Self>, port: u32, index: u16, pkey: u16) -> Result {
        check_port(port)?;
        let changed = dev.data().pkeys.set(index, pkey).map_err(|_| EINVAL)?;
        if changed {
            // ib_core reads the table again; QPs send with and check against the new entry
            // from their next packet on.
            dev.dispatch_port_event(PORT, PortEvent::PkeyChange);
        }
        Ok(())
    }

    fn alloc_pd(dev: &Device<Self>, udata: &mut Udata<'_>) -> Result<impl PinInit<Counted, Error>> {
        udata.require_no_input()?;
        Counted::take(&dev.data().pds, limits::MAX_PD)
    }

    fn create_qp(
        pd: &Pd<Self>,
        init: &mut QpInitAttr,
        uctx: Option<&UContext<Self>>,
        udata: &mut Udata<'_>,
    ) -> Result<(impl PinInit<qp::QpData, Error>, u32)> {
        qp::create(pd, init, uctx, udata)
    }

    fn modify_qp(q: &Qp<Self>, attr: &QpAttr, mask: u32, udata: &mut Udata<'_>) -> Result {
        qp::modify(q, attr, mask, udata)
    }

    fn query_qp(q: &Qp<Self>) -> Result<(QpAttr, QpInitAttr)> {
        qp::query(q)
    }

    fn alloc_mw(
        pd: &Pd<Self>,
        ty: MwType,
        udata: &mut Udata<'_>,
    ) -> Result<(impl PinInit<mw::MwData, Error>, u32)> {
        mw::alloc(pd, ty, udata)
    }

    fn destroy_qp(q: &Qp<Self>) {
        qp::destroy(q)
    }

    fn attach_mcast(q: &Qp<Self>, mgid: &[u8; 16]) -> Result {
        mcast::attach(q, mgid)
    }

    fn detach_mcast(q: &Qp<Self>, mgid: &[u8; 16]) -> Result {
        mcast::detach(q, mgid)
    }

    fn ring_sq_doorbell(q: &Qp<Self>) -> Result {
        executor::sq_doorbell(q)
    }

    fn ring_rq_doorbell(q: &Qp<Self>) -> Result {
        executor::rq_doorbell(q)
    }

    fn post_send(q: &Qp<Self>, wr: &SendWr<'_, Self>) -> Result {
        qp::post_send(q, wr)
    }

    fn post_recv(q: &Qp<Self>, wr: &RecvWr<'_>) -> Result {
        qp::post_recv(q, wr)
    }

    fn post_srq_recv(s: &Srq<Self>, wr: &RecvWr<'_>) -> Result {
        srq::post_recv(s, wr)
    }

    fn poll_cq(c: &Cq<Self>, out: &mut [Wc]) -> Result<usize> {
        cq::poll(c, out)
    }

    fn req_notify_cq(c: &Cq<Self>, solicited_only: bool, report_missed: bool) -> Result<bool> {
        cq::arm(c, solicited_only, report_missed)
    }

    fn get_dma_mr(
        pd: &Pd<Self>,
        access: u32,
    ) -> Result<(impl PinInit<mr::MrData, Error>, u32, u32)> {
        mr::get_dma(pd, access)
    }

    fn alloc_mr(
        pd: &Pd<Self>,
        max_pages: u32,
    ) -> Result<(impl PinInit<mr::MrData, Error>, u32, u32)> {
        mr::alloc_fast(pd, max_pages)
    }

    fn map_mr_begin(m: &Mr<Self>) -> Result {
        mr::map_begin(m)
    }

    fn map_mr_page(m: &Mr<Self>, addr: u64) -> Result {
        mr::map_page(m, addr)
    }

    fn create_srq(
        pd: &Pd<Self>,
        attr: &mut SrqAttr,
        uctx: Option<&UContext<Self>>,
        udata: &mut Udata<'_>,
    ) -> Result<impl PinInit<srq::SrqData, Error>> {
        srq::create(pd, attr, uctx, udata)
    }

    fn modify_srq(
        s: &Srq<Self>,
        attr: &SrqAttr,
        mask: u32,
        uctx: Option<&UContext<Self>>,
        udata: &mut Udata<'_>,
    ) -> Result {
        srq::modify(s, attr, mask, uctx, udata)
    }

    fn query_srq(s: &Srq<Self>) -> Result<SrqAttr> {
        srq::query(s)
    }

    fn create_ah(
        pd: &Pd<Self>,
        av: &AddressVector,
        sleepable: bool,
        udata: &mut Udata<'_>,
    ) -> Result<impl PinInit<ah::AhData, Error>> {
        ah::create(pd, av, sleepable, udata)
    }

    fn reg_user_mr(
        pd: &Pd<Self>,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
        udata: &mut Udata<'_>,
    ) -> Result<(impl PinInit<mr::MrData, Error>, u32, u32)> {
        mr::reg_user(pd, start, length, iova, access, udata)
    }

    fn rereg_user_mr(
        old: &Mr<Self>,
        change: &MrChange,
        pd: &Pd<Self>,
        udata: &mut Udata<'_>,
    ) -> Result<Option<(impl PinInit<mr::MrData, Error>, u32, u32)>> {
        mr::rereg_user(old, change, pd, udata)
    }

    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        uctx: Option<&UContext<Self>>,
        udata: &mut Udata<'_>,
    ) -> Result<(impl PinInit<cq::CqData, Error>, u32)> {
        cq::create(dev, attr, uctx, udata)
    }

    fn resize_cq(
        cq: &Cq<Self>,
        cqe: u32,
        uctx: Option<&UContext<Self>>,
        udata: &mut Udata<'_>,
    ) -> Result<u32> {
        cq::resize(cq, cqe, uctx, udata)
    }

    fn alloc_ucontext(
        _dev: &Device<Self>,
        udata: &mut Udata<'_>,
    ) -> Result<impl PinInit<abi::ContextFeatures, Error>> {
        abi::ContextFeatures::negotiate(udata)
    }
}

impl SoftDriver for Ferroce {
    // `engine/receive.rs` walks the packets of a train itself (`protocol/train.rs`).
    const WHOLE_TRAINS: bool = true;
    // What a train's payload costs (its placement and ICRC) runs beside the sender.
    const TRAINS_ON_ANOTHER_CPU: bool = true;

    fn qp_timer(q: &Qp<Self>) {
        crate::engine::rc::timer(q);
    }

    fn qp_work(q: &Qp<Self>) {
        executor::run_deferred(q)
    }

    fn receive(dev: &Device<Self>, packet: &RxPacket<'_>) {
        crate::engine::receive::receive(
            dev,
            packet.bytes(),
            packet.segment(),
            packet.vouched_for(),
            packet.vlan_id(),
        );
    }
}

impl link::Link for Ferroce {
    const TYPE: &'static CStr = c_str!("ferroce");

    fn newlink(name: &CStr, netdev: &NetDevice) -> Result {
        // A VLAN device too: its frames are tagged, and ib_core gives the port the GIDs of
        // its addresses (patch 0010).
        if !netdev.is_ethernet() {
            pr_err!("{}: {} is not an Ethernet device\n", name, netdev.name());
            return Err(EINVAL);
        }
        let mac = netdev.mac_address().ok_or(EINVAL)?;
        if Device::<Ferroce>::get_by_netdev(netdev).is_some() {
            pr_err!("{}: {} already has a ferroce device\n", name, netdev.name());
            return Err(EEXIST);
        }
        let mut desc = [0u8; 64];
        let text = format_node_desc(&mut desc, netdev.name().as_bytes());
        let params = DeviceParams {
            name,
            netdev,
            node_guid: guid::from_mac(mac),
            node_desc: text,
            num_comp_vectors: limits::NUM_COMP_VECTORS,
        };
        // One slot per MR plus the never-used index 0.
        let slots = KVVec::from_elem(0u16, limits::MAX_MR as usize + 1, GFP_KERNEL)?;
        let ah_slots = KVVec::from_elem(0u16, limits::MAX_AH as usize + 1, GFP_KERNEL)?;
        let qp_slots = KVVec::from_elem(0u16, limits::MAX_QP as usize + 1, GFP_KERNEL)?;
        let pds = Arc::new(ObjectCount::new(), GFP_KERNEL)?;
        let cqs = Arc::new(ObjectCount::new(), GFP_KERNEL)?;
        let srqs = Arc::new(ObjectCount::new(), GFP_KERNEL)?;
        let mws = Arc::new(ObjectCount::new(), GFP_KERNEL)?;
        let gsi_qp = Arc::new(AtomicBool::new(false), GFP_KERNEL)?;
        let mcast_table = mcast::new_table()?;
        // Key bytes are random (`numbers.rs`): a peer guesses neither a fresh device's first
        // rkey nor QP number, nor the next key of an index from the last.
        let mr_keys = Arc::pin_init(
            new_mutex!(KeyTable::new(slots), "ferroce:mr_keys"),
            GFP_KERNEL,
        )?;
        let qpns = Arc::pin_init(
            new_mutex!(KeyTable::new(qp_slots), "ferroce:qpns"),
            GFP_KERNEL,
        )?;
        let ah_nums = Arc::pin_init(
            new_spinlock_irq!(KeyTable::new(ah_slots), "ferroce:ah_nums"),
            GFP_KERNEL,
        )?;
        let ah_dests = Arc::pin_init(
            new_spinlock_irq!(kernel::rbtree::RBTree::new(), "ferroce:ah_dests"),
            GFP_KERNEL,
        )?;
        // The device's packets arrive here from now on; until it is registered they are
        // dropped (no device is found for the netdev). Fails (EBUSY, with a message naming the
        // other device) when another driver's device, such as rdma_rxe's, serves the netdev.
        let tunnel = Some(Tunnel::open::<Ferroce>(netdev, name)?);
        let data = try_pin_init!(DeviceData {
            port_active: AtomicBool::new(false),
            pds,
            cqs,
            srqs,
            mws,
            gsi_qp,
            mr_keys,
            mr_serials: AtomicU64::new(0),
            qp_serials: AtomicU64::new(0),
            qpns,
            ah_nums,
            ah_dests,
            counters: stats::Counters::new(),
            pkeys: protocol::pkey::Table::new(),
            mcast <- new_spinlock_irq!(mcast_table, "ferroce:mcast"),
            mcast_changes <- new_mutex!((), "ferroce:mcast_changes"),
            tunnel <- new_mutex!(tunnel, "ferroce:tunnel"),
            netdev <- new_spinlock_irq!(Some(netdev.to_owned()), "ferroce:netdev"),
        });
        match Device::<Ferroce>::register(&crate::THIS_MODULE, &params, data) {
            // ib_core's "name taken" is ENFILE; say what happened.
            Err(e) if e == ENFILE => return Err(EEXIST),
            r => r?,
        }
        if let Some(dev) = Device::<Ferroce>::get_by_netdev(netdev) {
            dev.data().sync_port_state(&dev, netdev);
        }
        pr_info!("{}: RoCEv2 device on {}\n", name, netdev.name());
        Ok(())
    }
}

/// "ferroce <netdev>", as the node description (`FERROCE_NODE_DESC`).
fn format_node_desc<'a>(buf: &'a mut [u8; 64], netdev: &[u8]) -> &'a [u8] {
    const PREFIX: &[u8] = b"ferroce ";
    let n = (PREFIX.len() + netdev.len()).min(buf.len() - 1);
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    buf[PREFIX.len()..n].copy_from_slice(&netdev[..n - PREFIX.len()]);
    &buf[..n]
}
