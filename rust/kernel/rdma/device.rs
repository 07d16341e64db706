// SPDX-License-Identifier: GPL-2.0

//! RDMA devices (`struct ib_device`) and the driver ops table (`struct ib_device_ops`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    ah::{AddressVector, Ah},
    attr::{DeviceAttr, LinkLayer, PortAttr, PortEvent, PortImmutable},
    cq::{Cq, CqInitAttr},
    mmap,
    mr::{Mr, MrChange},
    pd::Pd,
    qp::{Qp, QpAttr, QpInitAttr},
    srq::{Srq, SrqAttr},
    ucontext::UContext,
    udata::Udata,
    wr::{RecvWr, SendWr, Wc},
};
use crate::{
    bindings,
    error::{code::*, from_result, to_result, Error, Result},
    init::PinInit,
    net::netdev::NetDevice,
    str::CStr,
    types::{ARef, Opaque},
    ThisModule,
};
use core::{marker::PhantomData, mem::size_of, ops::Deref, ptr::NonNull};
use macros::vtable;

/// An RDMA driver: its per-device data and the verbs it implements.
///
/// Each method maps to the `struct ib_device_ops` member of the same name; only the methods a
/// driver implements are filled in, so ib_core reports the others as unsupported. ib_core
/// serialises nothing for the driver: methods may run concurrently on any CPU.
///
/// `DRIVER_ID` must be unique to the driver: devices are found again through it.
#[vtable]
pub trait Driver: Sized + 'static {
    /// Data the driver keeps in each device.
    type Data: Send + Sync;
    /// Data the driver keeps in each user context.
    type UContextData: Send + Sync;
    /// Data the driver keeps in each protection domain.
    type PdData: Send + Sync;
    /// Data the driver keeps in each completion queue.
    type CqData: Send + Sync;
    /// Data the driver keeps in each memory region.
    type MrData: Send + Sync;
    /// Data the driver keeps in each address handle.
    type AhData: Send + Sync;
    /// Data the driver keeps in each queue pair.
    type QpData: Send + Sync;
    /// Data the driver keeps in each shared receive queue.
    type SrqData: Send + Sync;
    /// The driver's `enum rdma_driver_id`, which libibverbs matches providers against.
    const DRIVER_ID: bindings::rdma_driver_id;
    /// The uverbs ABI version the driver's provider must match.
    const ABI_VERSION: u32;

    /// Reports the device attributes (`query_device`).
    fn query_device(dev: &Device<Self>, udata: &mut Udata<'_>) -> Result<DeviceAttr>;

    /// Reports the attributes of `port` (`query_port`).
    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttr>;

    /// Reports the fixed properties of `port` (`get_port_immutable`).
    fn get_port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable>;

    /// Reports the link layer under `port` (`get_link_layer`); ib_core assumes InfiniBand when
    /// a driver does not say.
    fn get_link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Returns entry `index` of the P_Key table of `port` (`query_pkey`).
    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16>;

    /// Creates the driver data of a new protection domain (`alloc_pd`).
    fn alloc_pd(_dev: &Device<Self>, _udata: &mut Udata<'_>) -> Result<Self::PdData> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called as a protection domain is destroyed, before its data is dropped (`dealloc_pd`).
    /// ib_core has checked that no object uses it any more.
    fn dealloc_pd(_pd: &Pd<Self>) {}

    /// Creates the driver data of a queue pair on `pd` (`create_qp`) and its number (2 to
    /// 2^24 - 1). `init.cap` is what was asked for; the driver raises it to what it provides.
    fn create_qp(
        _pd: &Pd<Self>,
        _init: &mut QpInitAttr,
        _uctx: Option<&UContext<Self>>,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::QpData, u32)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Changes the attributes in `mask` and maybe the state (`modify_qp`).
    fn modify_qp(_qp: &Qp<Self>, _attr: &QpAttr, _mask: u32, _udata: &mut Udata<'_>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Reports the QP's attributes and creation attributes (`query_qp`).
    fn query_qp(_qp: &Qp<Self>) -> Result<(QpAttr, QpInitAttr)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called as a QP is destroyed, before its data is dropped (`destroy_qp`).
    fn destroy_qp(_qp: &Qp<Self>) {}

    /// The doorbell of a user QP: its send queue has new work (`post_send` with no work
    /// requests, from the `POST_SEND` write() command of a provider).
    fn ring_sq_doorbell(_qp: &Qp<Self>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Queues one send work request of a kernel user (`post_send`); ib_core's chain is
    /// queued in order, then [`Driver::ring_sq_doorbell`] runs once.
    fn post_send(_qp: &Qp<Self>, _wr: &SendWr<'_, Self>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Queues one receive work request of a kernel user (`post_recv`); ib_core's chain is
    /// queued in order, then [`Driver::ring_rq_doorbell`] runs once.
    fn post_recv(_qp: &Qp<Self>, _wr: &RecvWr<'_>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Queues one receive work request of a kernel user on an SRQ (`post_srq_recv`).
    fn post_srq_recv(_srq: &Srq<Self>, _wr: &RecvWr<'_>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Takes up to `out.len()` completions from a kernel user's CQ (`poll_cq`).
    fn poll_cq(_cq: &Cq<Self>, _out: &mut [Wc]) -> Result<usize> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Arms a kernel user's CQ for its next (or next solicited) completion (`req_notify_cq`);
    /// with `report_missed`, returns whether completions are already waiting.
    fn req_notify_cq(_cq: &Cq<Self>, _solicited_only: bool, _report_missed: bool) -> Result<bool> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// An MR over all of kernel memory (`get_dma_mr`), which `ib_alloc_pd` makes for every
    /// kernel PD: returns its data, lkey and rkey.
    fn get_dma_mr(_pd: &Pd<Self>, _access: u32) -> Result<(Self::MrData, u32, u32)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A fast-registration MR of up to `max_pages` pages (`alloc_mr`, `IB_MR_TYPE_MEM_REG`).
    fn alloc_mr(_pd: &Pd<Self>, _max_pages: u32) -> Result<(Self::MrData, u32, u32)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Starts mapping a fast-registration MR (`map_mr_sg`): its pages follow through
    /// [`Driver::map_mr_page`], after which [`Mr::iova`] and [`Mr::length`] describe it.
    fn map_mr_begin(_mr: &Mr<Self>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Adds the page at (DMA, here kernel virtual) address `addr` to the MR being mapped.
    fn map_mr_page(_mr: &Mr<Self>, _addr: u64) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The receive doorbell of a user QP: its receive queue has new work the kernel must look
    /// at now (`post_recv` with no work requests, from the `POST_RECV` write() command).
    fn ring_rq_doorbell(_qp: &Qp<Self>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver data of a basic shared receive queue on `pd` (`create_srq`). `attr`
    /// is what was asked for; the driver raises `max_wr` and `max_sge` to what it provides.
    fn create_srq(
        _pd: &Pd<Self>,
        _attr: &mut SrqAttr,
        _uctx: Option<&UContext<Self>>,
        _udata: &mut Udata<'_>,
    ) -> Result<Self::SrqData> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Resizes the SRQ and/or arms its limit, as `mask` ([`super::srq::mask`]) says
    /// (`modify_srq`). `uctx` is the calling process's context, `None` for kernel users.
    fn modify_srq(
        _srq: &Srq<Self>,
        _attr: &SrqAttr,
        _mask: u32,
        _uctx: Option<&UContext<Self>>,
        _udata: &mut Udata<'_>,
    ) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Reports the SRQ's attributes (`query_srq`).
    fn query_srq(_srq: &Srq<Self>) -> Result<SrqAttr> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called as an SRQ is destroyed, before its data is dropped (`destroy_srq`). ib_core has
    /// checked that no QP uses it any more.
    fn destroy_srq(_srq: &Srq<Self>) {}

    /// Creates the driver data of an address handle for `av` on `pd` (`create_ah` for kernel
    /// users, `create_user_ah` for processes). `sleepable` is false when the caller is atomic.
    fn create_ah(
        _pd: &Pd<Self>,
        _av: &AddressVector,
        _sleepable: bool,
        _udata: &mut Udata<'_>,
    ) -> Result<Self::AhData> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called as an address handle is destroyed, before its data is dropped (`destroy_ah`).
    fn destroy_ah(_ah: &Ah<Self>) {}

    /// Registers `length` bytes of user memory at `start`, addressed by peers from `iova`
    /// (`reg_user_mr`); returns the MR's data, lkey and rkey.
    fn reg_user_mr(
        _pd: &Pd<Self>,
        _start: u64,
        _length: u64,
        _iova: u64,
        _access: u32,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::MrData, u32, u32)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Re-registers a user MR (`rereg_user_mr`): returns a new MR (data, lkey, rkey) that
    /// replaces `mr`, on `pd`, with the fields `change` names replaced. ib_core then destroys
    /// `mr`; if this fails, `mr` stays as it was.
    fn rereg_user_mr(
        _mr: &Mr<Self>,
        _change: &MrChange,
        _pd: &Pd<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::MrData, u32, u32)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called as an MR is deregistered, before its data is dropped (`dereg_mr`).
    fn dereg_mr(_mr: &Mr<Self>) {}

    /// Creates the driver data of a new completion queue (`create_cq`) and returns it with the
    /// number of entries the CQ really holds (at least `attr.cqe`). `uctx` is the creating
    /// process's context, `None` for kernel users.
    fn create_cq(
        _dev: &Device<Self>,
        _attr: &CqInitAttr,
        _uctx: Option<&UContext<Self>>,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::CqData, u32)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called as a CQ is destroyed, before its data is dropped (`destroy_cq`). ib_core has
    /// checked that no QP uses it any more.
    fn destroy_cq(_cq: &Cq<Self>) {}

    /// Resizes a CQ to hold at least `cqe` entries, keeping the completions not yet polled
    /// (`resize_cq`); returns the new number of entries.
    fn resize_cq(
        _cq: &Cq<Self>,
        _cqe: u32,
        _uctx: Option<&UContext<Self>>,
        _udata: &mut Udata<'_>,
    ) -> Result<u32> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver data of a new user context (`alloc_ucontext`).
    fn alloc_ucontext(_dev: &Device<Self>, _udata: &mut Udata<'_>) -> Result<Self::UContextData> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }
}

/// Parameters of a new device.
pub struct DeviceParams<'a> {
    /// The device name (`rdma link add NAME`).
    pub name: &'a CStr,
    /// The net device the single port is bound to.
    pub netdev: &'a NetDevice,
    /// Node GUID, host byte order.
    pub node_guid: u64,
    /// Node description (truncated to 63 bytes).
    pub node_desc: &'a [u8],
    /// Number of completion vectors.
    pub num_comp_vectors: u32,
}

/// An RDMA device with the driver's data in the same allocation.
///
/// Devices are allocated by ib_core (`_ib_alloc_device`) and, once registered, owned by it: ib_core
/// frees them after unregistration, calling back into this layer (`dealloc_driver`) to drop
/// `data`. Drivers see devices only as `&Device<T>` inside ops and as [`DeviceRef`]s.
///
/// # Invariants
///
/// `ib` is the first field (ib_core requires `struct ib_device` at offset 0). `data` is
/// initialised whenever `ib.ops.dealloc_driver` is set, which happens only here.
#[repr(C)]
pub struct Device<T: Driver> {
    ib: Opaque<bindings::ib_device>,
    data: T::Data,
}

// SAFETY: ib_core calls device ops from any thread; `T::Data` is `Send + Sync`.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: See `Send`.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> Device<T> {
    /// # Safety
    ///
    /// `raw` must point to the `ib_device` of a live `Device<T>` that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `ib` is the first field of a `repr(C)` struct.
        unsafe { &*raw.cast() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// The driver's data.
    pub fn data(&self) -> &T::Data {
        &self.data
    }

    /// The device name.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array set at registration.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// The net device bound to `port`, if it is still bound.
    pub fn netdev(&self, port: u32) -> Option<ARef<NetDevice>> {
        // SAFETY: The device is alive; the returned netdev (if any) is held for us.
        let nd = unsafe { bindings::ib_device_get_netdev(self.as_raw(), port) };
        // SAFETY: `ib_device_get_netdev` returned a reference that we now own.
        NonNull::new(nd).map(|nd| unsafe { ARef::from_raw(nd.cast()) })
    }

    /// The speed and width of the Ethernet link under `port` (`ib_get_eth_speed`).
    ///
    /// Takes RTNL: must not be called from a netdev notifier.
    pub fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let (mut speed, mut width) = (0u16, 0u8);
        // SAFETY: The device is alive; the out-pointers are valid.
        to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// Tells ib_core's event handlers (and user space's async event queues) about `port`.
    pub fn dispatch_port_event(&self, port: u32, event: PortEvent) {
        let ev = bindings::ib_event {
            device: self.as_raw(),
            element: bindings::ib_event__bindgen_ty_1 { port_num: port },
            event: event as u32,
        };
        // SAFETY: `ev` is valid for the call; the device is registered or being registered.
        unsafe { bindings::ib_dispatch_event(&ev) };
    }

    /// Starts unregistering the device; ib_core finishes (and frees it) from a work item.
    ///
    /// Safe from a netdev notifier, under RTNL.
    pub fn unregister_queued(&self) {
        // SAFETY: The device is alive.
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
    }

    /// Unregisters and frees every device of this driver; returns when they are gone.
    pub fn unregister_all() {
        // SAFETY: Safe to call at any time; it waits for concurrent unregistrations.
        unsafe { bindings::ib_unregister_driver(T::DRIVER_ID) };
    }

    /// Finds the registered device bound to `netdev`.
    pub fn get_by_netdev(netdev: &NetDevice) -> Option<DeviceRef<T>> {
        // SAFETY: `netdev` is valid; a non-null result is a held registration reference.
        let raw = unsafe { bindings::ib_device_get_by_netdev(netdev.as_raw(), T::DRIVER_ID) };
        DeviceRef::new(raw)
    }

    /// Finds the registered device called `name`, of this driver only.
    pub fn get_by_name(name: &CStr) -> Option<DeviceRef<T>> {
        // SAFETY: `name` is NUL-terminated; a non-null result is a held registration reference.
        let raw = unsafe { bindings::ib_device_get_by_name(name.as_char_ptr(), T::DRIVER_ID) };
        DeviceRef::new(raw)
    }

    /// Allocates, initialises and registers a device.
    ///
    /// On success ib_core owns the device until it is unregistered (by `rdma link delete`,
    /// [`Device::unregister_queued`] or [`Device::unregister_all`]).
    pub fn register(
        module: &'static ThisModule,
        params: &DeviceParams<'_>,
        data: impl PinInit<T::Data, Error>,
    ) -> Result {
        // SAFETY: Allocates a zeroed, initialised `ib_device` followed by room for `data`.
        let raw = unsafe { bindings::_ib_alloc_device(size_of::<Self>()) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        let this = raw.cast::<Self>();
        // SAFETY: `data` is uninitialised memory inside the allocation, never moved (ib_core
        // allocations do not move).
        if let Err(e) = unsafe { data.__pinned_init(core::ptr::addr_of_mut!((*this).data)) } {
            // SAFETY: `dealloc_driver` is not set yet, so nothing reads `data`.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }
        // SAFETY: `raw` is valid and not yet visible to anybody else. From here on `data` is
        // initialised and `dealloc_driver` drops it, on every path that frees the device.
        unsafe {
            bindings::ib_set_device_ops(raw, &Self::OPS);
            (*raw).ops.owner = module.as_ptr();
            (*raw).node_type = bindings::RDMA_NODE_IB_CA as u8;
            (*raw).phys_port_cnt = 1;
            (*raw).num_comp_vectors = params.num_comp_vectors.max(1) as i32;
            (*raw).node_guid = params.node_guid.to_be();
            if T::HAS_RING_SQ_DOORBELL {
                // The provider's doorbell is a POST_SEND write() with no work requests.
                (*raw).uverbs_cmd_mask |=
                    1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
            }
            if T::HAS_RING_RQ_DOORBELL {
                // And the receive doorbell a POST_RECV write() with none.
                (*raw).uverbs_cmd_mask |=
                    1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_RECV;
            }
            let desc = &mut (*raw).node_desc;
            let n = params.node_desc.len().min(desc.len() - 1);
            for (d, s) in desc.iter_mut().zip(&params.node_desc[..n]) {
                *d = *s as _;
            }
            // The netdev's parent (e.g. a virtio NIC) makes the device's sysfs `device/net/`
            // name the netdev, as for hardware RoCE devices.
            (*raw).__bindgen_anon_1.dev.parent = params.netdev.parent_raw();
        }
        // SAFETY: `raw` is a valid, unregistered device; the netdev is valid.
        let ret = unsafe { bindings::ib_device_set_netdev(raw, params.netdev.as_raw(), 1) };
        // SAFETY: The name is NUL-terminated. A NULL DMA device selects ib_core's virtual DMA.
        let ret = to_result(ret).and_then(|()| {
            to_result(unsafe {
                bindings::ib_register_device(raw, params.name.as_char_ptr(), core::ptr::null_mut())
            })
        });
        if let Err(e) = ret {
            // SAFETY: Registration failed, so the device is still ours to free; this calls
            // `dealloc_driver`, which drops `data`.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }
        Ok(())
    }

    const OPS: bindings::ib_device_ops = bindings::ib_device_ops {
        driver_id: T::DRIVER_ID,
        uverbs_abi_ver: T::ABI_VERSION,
        alloc_pd: if T::HAS_ALLOC_PD {
            Some(Adapter::<T>::alloc_pd)
        } else {
            None
        },
        dealloc_pd: if T::HAS_ALLOC_PD {
            Some(Adapter::<T>::dealloc_pd)
        } else {
            None
        },
        alloc_ucontext: if T::HAS_ALLOC_UCONTEXT {
            Some(Adapter::<T>::alloc_ucontext)
        } else {
            None
        },
        create_qp: if T::HAS_CREATE_QP {
            Some(Adapter::<T>::create_qp)
        } else {
            None
        },
        destroy_qp: if T::HAS_CREATE_QP {
            Some(Adapter::<T>::destroy_qp)
        } else {
            None
        },
        modify_qp: if T::HAS_MODIFY_QP {
            Some(Adapter::<T>::modify_qp)
        } else {
            None
        },
        post_send: if T::HAS_RING_SQ_DOORBELL {
            Some(Adapter::<T>::post_send)
        } else {
            None
        },
        post_recv: if T::HAS_RING_RQ_DOORBELL {
            Some(Adapter::<T>::post_recv)
        } else {
            None
        },
        post_srq_recv: if T::HAS_POST_SRQ_RECV {
            Some(Adapter::<T>::post_srq_recv)
        } else {
            None
        },
        poll_cq: if T::HAS_POLL_CQ {
            Some(Adapter::<T>::poll_cq)
        } else {
            None
        },
        req_notify_cq: if T::HAS_REQ_NOTIFY_CQ {
            Some(Adapter::<T>::req_notify_cq)
        } else {
            None
        },
        get_dma_mr: if T::HAS_GET_DMA_MR {
            Some(Adapter::<T>::get_dma_mr)
        } else {
            None
        },
        alloc_mr: if T::HAS_ALLOC_MR {
            Some(Adapter::<T>::alloc_mr)
        } else {
            None
        },
        map_mr_sg: if T::HAS_MAP_MR_PAGE {
            Some(Adapter::<T>::map_mr_sg)
        } else {
            None
        },
        query_qp: if T::HAS_QUERY_QP {
            Some(Adapter::<T>::query_qp)
        } else {
            None
        },
        create_ah: if T::HAS_CREATE_AH {
            Some(Adapter::<T>::create_ah)
        } else {
            None
        },
        create_user_ah: if T::HAS_CREATE_AH {
            Some(Adapter::<T>::create_ah)
        } else {
            None
        },
        destroy_ah: if T::HAS_CREATE_AH {
            Some(Adapter::<T>::destroy_ah)
        } else {
            None
        },
        dereg_mr: if T::HAS_REG_USER_MR {
            Some(Adapter::<T>::dereg_mr)
        } else {
            None
        },
        reg_user_mr: if T::HAS_REG_USER_MR {
            Some(Adapter::<T>::reg_user_mr)
        } else {
            None
        },
        rereg_user_mr: if T::HAS_REREG_USER_MR {
            Some(Adapter::<T>::rereg_user_mr)
        } else {
            None
        },
        create_srq: if T::HAS_CREATE_SRQ {
            Some(Adapter::<T>::create_srq)
        } else {
            None
        },
        destroy_srq: if T::HAS_CREATE_SRQ {
            Some(Adapter::<T>::destroy_srq)
        } else {
            None
        },
        modify_srq: if T::HAS_MODIFY_SRQ {
            Some(Adapter::<T>::modify_srq)
        } else {
            None
        },
        query_srq: if T::HAS_QUERY_SRQ {
            Some(Adapter::<T>::query_srq)
        } else {
            None
        },
        create_cq: if T::HAS_CREATE_CQ {
            Some(Adapter::<T>::create_cq)
        } else {
            None
        },
        destroy_cq: if T::HAS_CREATE_CQ {
            Some(Adapter::<T>::destroy_cq)
        } else {
            None
        },
        mmap: if T::HAS_ALLOC_UCONTEXT {
            Some(Adapter::<T>::mmap)
        } else {
            None
        },
        mmap_free: if T::HAS_ALLOC_UCONTEXT {
            Some(Adapter::<T>::mmap_free)
        } else {
            None
        },
        resize_cq: if T::HAS_RESIZE_CQ {
            Some(Adapter::<T>::resize_cq)
        } else {
            None
        },
        dealloc_driver: Some(Adapter::<T>::dealloc_driver),
        dealloc_ucontext: if T::HAS_ALLOC_UCONTEXT {
            Some(Adapter::<T>::dealloc_ucontext)
        } else {
            None
        },
        get_link_layer: if T::HAS_GET_LINK_LAYER {
            Some(Adapter::<T>::get_link_layer)
        } else {
            None
        },
        get_port_immutable: Some(Adapter::<T>::get_port_immutable),
        query_device: Some(Adapter::<T>::query_device),
        query_pkey: Some(Adapter::<T>::query_pkey),
        query_port: Some(Adapter::<T>::query_port),
        size_ib_ah: size_of::<Ah<T>>(),
        size_ib_cq: size_of::<Cq<T>>(),
        size_ib_pd: size_of::<Pd<T>>(),
        size_ib_qp: size_of::<Qp<T>>(),
        size_ib_srq: size_of::<Srq<T>>(),
        size_ib_ucontext: size_of::<UContext<T>>(),
        // SAFETY: All other members are nullable pointers and integers, for which zero means
        // "not implemented".
        ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
    };
}

/// A held reference to a registered device: it cannot finish unregistering until dropped.
///
/// # Invariants
///
/// `ptr` is a `Device<T>` on which `ib_device_try_get` succeeded (by a lookup function).
pub struct DeviceRef<T: Driver> {
    ptr: NonNull<Device<T>>,
    _t: PhantomData<T>,
}

impl<T: Driver> DeviceRef<T> {
    fn new(raw: *mut bindings::ib_device) -> Option<Self> {
        let ptr = NonNull::new(raw)?;
        // Only devices registered through `Device::<T>::register` carry this callback; refuse
        // anything else that might share the driver id. The address is unique here: the
        // callback is instantiated once, in the crate that implements `T` (the kernel builds
        // each crate as a single codegen unit).
        // SAFETY: The device is held, so its ops are stable.
        let theirs = unsafe { (*raw).ops.dealloc_driver }.map(|f| f as usize);
        let ours = theirs == Some(Adapter::<T>::dealloc_driver as *const () as usize);
        if !ours {
            // SAFETY: Drops the reference the lookup took.
            unsafe { bindings::ib_device_put(raw) };
            return None;
        }
        // INVARIANT: A lookup function took the reference.
        Some(Self {
            ptr: ptr.cast(),
            _t: PhantomData,
        })
    }
}

impl<T: Driver> Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: The held reference keeps the device from being freed.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Driver> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold a reference.
        unsafe { bindings::ib_device_put(self.ptr.as_ptr().cast()) };
    }
}

/// A work request of an ib_core chain (`struct ib_send_wr`, `struct ib_recv_wr`).
trait Chained {
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
/// chain is a user QP's doorbell.
///
/// # Safety
///
/// `wr` must be null or the head of a chain of valid requests, and `bad_wr` valid for writes,
/// for the call.
unsafe fn post_chain<W: Chained>(
    wr: *const W,
    bad_wr: *mut *const W,
    mut post: impl FnMut(&W) -> Result,
    doorbell: impl FnOnce() -> Result,
) -> crate::ffi::c_int {
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
        (Err(e), _) | (Ok(()), Err(e)) => e.to_errno(),
        (Ok(()), Ok(())) => 0,
    }
}

/// The `extern "C"` callbacks of the ops table.
struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with valid `attr` and `udata` (or null udata).
    unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let a = T::query_device(dev, &mut udata)?;
            // SAFETY: `attr` is valid for writes for the call.
            a.write_to(unsafe { &mut *attr })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with a valid, zeroed `attr`.
    unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let a = T::query_port(dev, port)?;
            // SAFETY: `attr` is valid for writes for the call.
            a.write_to(unsafe { &mut *attr })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with a valid `imm`.
    unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let i = T::get_port_immutable(dev, port)?;
            // SAFETY: `imm` is valid for writes for the call.
            i.write_to(unsafe { &mut *imm })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>`.
    unsafe extern "C" fn get_link_layer(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> bindings::rdma_link_layer {
        // SAFETY: ib_core only calls ops of a live device.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        T::get_link_layer(dev, port) as u32
    }

    /// # Safety
    ///
    /// Called by ib_core for a `Device<T>` with a valid `pkey`.
    unsafe extern "C" fn query_pkey(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core only calls ops of a live device.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let v = T::query_pkey(dev, port, index)?;
            // SAFETY: `pkey` is valid for writes for the call.
            unsafe { *pkey = v };
            Ok(0)
        })
    }

    /// The user context of a uverbs call, from its udata (`rdma_udata_to_drv_context`).
    ///
    /// # Safety
    ///
    /// `udata` must be null or the `driver_udata` of a live `uverbs_attr_bundle`.
    unsafe fn uctx_of<'a>(udata: *mut bindings::ib_udata) -> Option<&'a UContext<T>> {
        if udata.is_null() {
            return None;
        }
        // SAFETY: `driver_udata` starts the bundle, whose context is the caller's, alive for
        // the call.
        Some(unsafe {
            UContext::<T>::from_raw(
                (*udata.cast::<bindings::uverbs_attr_bundle>())
                    .__bindgen_anon_1
                    .__bindgen_anon_1
                    .context,
            )
        })
    }

    /// # Safety
    ///
    /// Called by ib_core with a zeroed QP of `size_ib_qp` bytes whose `device`, `pd` and CQs are
    /// set, a valid `init` and a valid or null `udata`.
    unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: See above.
            let (pd, raw_init) = unsafe { (Pd::<T>::from_raw((*qp).pd), &mut *init) };
            let mut attr = QpInitAttr::from_raw(raw_init)?;
            // SAFETY: See above.
            let uctx = unsafe { Self::uctx_of(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let (data, qpn) = T::create_qp(pd, &mut attr, uctx, &mut udata)?;
            attr.write_cap(raw_init);
            // SAFETY: The QP is ours during the op; the slot is inside its allocation.
            unsafe {
                (*qp).qp_num = qpn;
                Qp::<T>::data_slot(qp).write(data);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP with a valid attribute.
    unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            let mask = mask as u32;
            // SAFETY: Valid for the call.
            let a = unsafe { QpAttr::from_raw(&*attr, mask) }?;
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            // SAFETY: The QP is alive for the call.
            T::modify_qp(unsafe { Qp::<T>::from_raw(qp) }, &a, mask, &mut udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP with valid (zeroed) output structures.
    unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: crate::ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The QP is alive for the call.
            let (a, i) = T::query_qp(unsafe { Qp::<T>::from_raw(qp) })?;
            // SAFETY: Valid for writes for the call.
            unsafe {
                a.write_to(&mut *attr);
                i.write_cap(&mut *init);
                (*init).sq_sig_type = if i.sq_sig_all {
                    bindings::ib_sig_type_IB_SIGNAL_ALL_WR
                } else {
                    bindings::ib_sig_type_IB_SIGNAL_REQ_WR
                };
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a QP whose `create_qp` succeeded.
    unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys each QP once, after `create_qp` succeeded.
        unsafe { Qp::<T>::destroy(qp, T::destroy_qp) };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP; `wr` is null for a user QP's doorbell.
    unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: The QP is alive for the call.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: `qp_type` is set before `create_qp` and never changes.
        let ud = matches!(
            unsafe { (*qp).qp_type },
            bindings::ib_qp_type_IB_QPT_UD | bindings::ib_qp_type_IB_QPT_GSI
        );
        let post = |w: &bindings::ib_send_wr| {
            if !T::HAS_POST_SEND {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: A kernel user's valid work request for this QP, alive for the call.
            unsafe { SendWr::<T>::from_raw(w, ud) }.and_then(|w| T::post_send(q, &w))
        };
        // SAFETY: ib_core passes a null or valid chain and a valid `bad_wr`. The queued
        // requests (or, for a user QP's doorbell, the ring's) take effect in the doorbell.
        unsafe { post_chain(wr, bad_wr, post, || T::ring_sq_doorbell(q)) }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live QP; `wr` is null for a user QP's doorbell.
    unsafe extern "C" fn post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: The QP is alive for the call.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        let post = |w: &bindings::ib_recv_wr| {
            if !T::HAS_POST_RECV {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: A kernel user's valid work request, alive for the call.
            unsafe { RecvWr::from_raw(w) }.and_then(|w| T::post_recv(q, &w))
        };
        // SAFETY: ib_core passes a null or valid chain and a valid `bad_wr`.
        unsafe { post_chain(wr, bad_wr, post, || T::ring_rq_doorbell(q)) }
    }

    /// # Safety
    ///
    /// Called by ib_core (for a kernel user) with a live SRQ and a chain of valid requests.
    unsafe extern "C" fn post_srq_recv(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> crate::ffi::c_int {
        // SAFETY: The SRQ is alive for the call.
        let s = unsafe { Srq::<T>::from_raw(srq) };
        let post = |w: &bindings::ib_recv_wr| {
            // SAFETY: A kernel user's valid work request, alive for the call.
            unsafe { RecvWr::from_raw(w) }.and_then(|w| T::post_srq_recv(s, &w))
        };
        // SAFETY: ib_core passes a valid chain and a valid `bad_wr`.
        unsafe { post_chain(wr, bad_wr, post, || Ok(())) }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live CQ with room for `num` completions at `wc`.
    unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        num: crate::ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> crate::ffi::c_int {
        // SAFETY: The CQ is alive for the call.
        let c = unsafe { Cq::<T>::from_raw(cq) };
        let num = usize::try_from(num).unwrap_or(0);
        let mut done = 0usize;
        let mut chunk = [Wc::default(); 16];
        while done < num {
            let want = (num - done).min(chunk.len());
            let n = match T::poll_cq(c, &mut chunk[..want]) {
                Ok(n) => n.min(want),
                Err(e) if done == 0 => return e.to_errno(),
                Err(_) => break,
            };
            for (i, w) in chunk[..n].iter().enumerate() {
                // SAFETY: `done + i < num`: inside the caller's array.
                w.write_to(unsafe { &mut *wc.add(done + i) });
            }
            done += n;
            if n < want {
                break;
            }
        }
        done as crate::ffi::c_int
    }

    /// # Safety
    ///
    /// Called by ib_core for a live CQ.
    unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> crate::ffi::c_int {
        let solicited = flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
        let missed = flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
        // SAFETY: The CQ is alive for the call.
        match T::req_notify_cq(unsafe { Cq::<T>::from_raw(cq) }, solicited, missed) {
            Ok(waiting) => waiting as crate::ffi::c_int,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live kernel PD of this driver.
    unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: crate::ffi::c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: The PD is alive for the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        match T::get_dma_mr(pd, access as u32).and_then(|(d, l, r)| Self::new_mr(d, l, r)) {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live kernel PD of this driver.
    unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return EOPNOTSUPP.to_ptr();
        }
        // SAFETY: The PD is alive for the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        match T::alloc_mr(pd, max_num_sg).and_then(|(d, l, r)| Self::new_mr(d, l, r)) {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Called by ib_core for a live fast-registration MR of this driver and a valid
    /// scatterlist.
    unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: crate::ffi::c_int,
        sg_offset: *mut crate::ffi::c_uint,
    ) -> crate::ffi::c_int {
        // SAFETY: The MR is alive for the call.
        if let Err(e) = T::map_mr_begin(unsafe { Mr::<T>::from_raw(mr) }) {
            return e.to_errno();
        }
        // SAFETY: Forwarded from ib_core; `set_page` is called with this MR.
        unsafe { bindings::ib_sg_to_pages(mr, sg, sg_nents, sg_offset, Some(Self::set_page)) }
    }

    /// # Safety
    ///
    /// Called by `ib_sg_to_pages` from `map_mr_sg`, for a live MR of this driver.
    unsafe extern "C" fn set_page(mr: *mut bindings::ib_mr, addr: u64) -> crate::ffi::c_int {
        // SAFETY: The MR is alive for the call.
        match T::map_mr_page(unsafe { Mr::<T>::from_raw(mr) }, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by ib_core with a zeroed SRQ of `size_ib_srq` bytes whose `device` and `pd` are
    /// set, a valid `init` and a valid or null `udata`.
    unsafe extern "C" fn create_srq(
        srq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: See above.
            let (pd, init) = unsafe { (Pd::<T>::from_raw((*srq).pd), &mut *init) };
            if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
                return Err(EOPNOTSUPP);
            }
            let mut attr = SrqAttr::from_raw(&init.attr);
            // SAFETY: See above.
            let uctx = unsafe { Self::uctx_of(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let data = T::create_srq(pd, &mut attr, uctx, &mut udata)?;
            attr.write_to(&mut init.attr);
            // SAFETY: The slot is inside the SRQ allocation and uninitialised.
            unsafe { Srq::<T>::data_slot(srq).write(data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live SRQ with a valid attribute and a valid or null `udata`.
    unsafe extern "C" fn modify_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: Valid for the call.
            let a = SrqAttr::from_raw(unsafe { &*attr });
            // SAFETY: `udata` is null or a uverbs call's driver udata.
            let uctx = unsafe { Self::uctx_of(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            // SAFETY: The SRQ is alive for the call.
            T::modify_srq(
                unsafe { Srq::<T>::from_raw(srq) },
                &a,
                mask,
                uctx,
                &mut udata,
            )?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live SRQ with a valid output attribute.
    unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The SRQ is alive for the call.
            let a = T::query_srq(unsafe { Srq::<T>::from_raw(srq) })?;
            // SAFETY: Valid for writes for the call.
            a.write_to(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for an SRQ whose `create_srq` succeeded and that nothing uses.
    unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys each SRQ once, after `create_srq` succeeded.
        unsafe { Srq::<T>::destroy(srq, T::destroy_srq) };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core with a zeroed AH of `size_ib_ah` bytes whose `device` and `pd` are set.
    unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The AH's PD is live for the call; `init` and its attribute are valid.
            let (pd, av, sleepable) = unsafe {
                (
                    Pd::<T>::from_raw((*ah).pd),
                    AddressVector::from_raw((*init).ah_attr)?,
                    (*init).flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0,
                )
            };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let data = T::create_ah(pd, &av, sleepable, &mut udata)?;
            // SAFETY: The slot is inside the AH allocation and uninitialised.
            unsafe { Ah::<T>::data_slot(ah).write(data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for an AH whose create op succeeded.
    unsafe extern "C" fn destroy_ah(ah: *mut bindings::ib_ah, _flags: u32) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys each AH once, after its create op succeeded.
        unsafe { Ah::<T>::destroy(ah, T::destroy_ah) };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core for a live PD of this driver.
    unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let r = (|| -> Result<*mut bindings::ib_mr> {
            // SAFETY: The PD is alive for the call.
            let pd = unsafe { Pd::<T>::from_raw(pd) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let (data, lkey, rkey) =
                T::reg_user_mr(pd, start, length, iova, access as u32, &mut udata)?;
            Self::new_mr(data, lkey, rkey)
        })();
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// Allocates an MR for ib_core (which leaves MR allocation to drivers).
    fn new_mr(data: T::MrData, lkey: u32, rkey: u32) -> Result<*mut bindings::ib_mr> {
        // SAFETY: ib_core expects a zeroed `ib_mr` (it fills in the rest).
        let mut ib: bindings::ib_mr = unsafe { core::mem::zeroed() };
        ib.lkey = lkey;
        ib.rkey = rkey;
        let mr = crate::alloc::KBox::new(Mr::<T>::new(ib, data), crate::alloc::flags::GFP_KERNEL)?;
        Ok(crate::alloc::KBox::into_raw(mr).cast())
    }

    /// # Safety
    ///
    /// Called by ib_core for a live user MR of this driver and a live PD of its device.
    unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: crate::ffi::c_int,
        start: u64,
        length: u64,
        iova: u64,
        access: crate::ffi::c_int,
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let r = (|| -> Result<*mut bindings::ib_mr> {
            let change = MrChange {
                flags: flags as u32,
                start,
                length,
                iova,
                access: access as u32,
            };
            // SAFETY: The MR and the PD are alive for the call.
            let (mr, pd) = unsafe { (Mr::<T>::from_raw(mr), Pd::<T>::from_raw(pd)) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let (data, lkey, rkey) = T::rereg_user_mr(mr, &change, pd, &mut udata)?;
            Self::new_mr(data, lkey, rkey)
        })();
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Called by ib_core once for an MR `reg_user_mr` returned.
    unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: The MR is alive until we free it below.
        T::dereg_mr(unsafe { Mr::<T>::from_raw(mr) });
        // SAFETY: `reg_user_mr` made it with `KBox::into_raw`; this is its only free.
        drop(unsafe { crate::alloc::KBox::from_raw(mr.cast::<Mr<T>>()) });
        0
    }

    /// # Safety
    ///
    /// Called by ib_core with a zeroed CQ of `size_ib_cq` bytes whose `device` is a `Device<T>`;
    /// `attrs` is null for kernel users.
    unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The CQ's device is live for the call.
            let dev = unsafe { Device::<T>::from_raw((*cq).device) };
            // SAFETY: `attr` is valid for the call.
            let a = unsafe { &*attr };
            let attr = CqInitAttr {
                cqe: a.cqe,
                comp_vector: a.comp_vector,
                flags: a.flags,
            };
            let (uctx, mut udata) = if attrs.is_null() {
                // SAFETY: No udata for kernel users.
                (None, unsafe { Udata::from_raw(core::ptr::null_mut()) })
            } else {
                // SAFETY: A user call's bundle names the live context of the caller, whose
                // device is `dev`; its driver udata is valid for the call.
                unsafe {
                    let hdr = &mut (*attrs).__bindgen_anon_1.__bindgen_anon_1;
                    (
                        Some(UContext::<T>::from_raw(hdr.context)),
                        Udata::from_raw(&mut hdr.driver_udata),
                    )
                }
            };
            let (data, cqe) = T::create_cq(dev, &attr, uctx, &mut udata)?;
            Cq::<T>::set_cqe_raw(cq, cqe)?;
            // SAFETY: The slot is inside the CQ allocation and uninitialised.
            unsafe { Cq::<T>::data_slot(cq).write(data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a CQ whose `create_cq` succeeded and that nothing uses.
    unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core destroys each CQ once, after `create_cq` succeeded.
        unsafe { Cq::<T>::destroy(cq, T::destroy_cq) };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core for a live CQ of this driver.
    unsafe extern "C" fn resize_cq(
        cq: *mut bindings::ib_cq,
        cqe: crate::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: `udata` is null or a uverbs call's driver udata.
            let uctx = unsafe { Self::uctx_of(udata) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            // SAFETY: The CQ is alive for the call.
            let new = T::resize_cq(unsafe { Cq::<T>::from_raw(cq) }, cqe, uctx, &mut udata)?;
            Cq::<T>::set_cqe_raw(cq, new)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core for a live context of this driver and a VMA of its uverbs file.
    unsafe extern "C" fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> crate::ffi::c_int {
        // SAFETY: Forwarded from ib_core.
        unsafe { mmap::mmap(uctx, vma) }
    }

    /// # Safety
    ///
    /// Called by ib_core once per mmap entry of this driver's contexts.
    unsafe extern "C" fn mmap_free(entry: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: Forwarded from ib_core.
        unsafe { mmap::mmap_free(entry) }
    }

    /// # Safety
    ///
    /// Called by ib_core with a zeroed PD of `size_ib_pd` bytes whose `device` is a `Device<T>`.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The PD's device is live for the call.
            let dev = unsafe { Device::<T>::from_raw((*pd).device) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let data = T::alloc_pd(dev, &mut udata)?;
            // SAFETY: The slot is inside the PD allocation and uninitialised.
            unsafe { Pd::<T>::data_slot(pd).write(data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a PD whose `alloc_pd` succeeded and that nothing uses.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        // SAFETY: ib_core deallocates each PD once, after `alloc_pd` succeeded.
        unsafe { Pd::<T>::destroy(pd, T::dealloc_pd) };
        0
    }

    /// # Safety
    ///
    /// Called by ib_core with a zeroed context of `size_ib_ucontext` bytes whose `device` is a
    /// `Device<T>`.
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> crate::ffi::c_int {
        from_result(|| {
            // SAFETY: The context's device is live for the call.
            let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
            // SAFETY: `udata` is valid or null for the call.
            let mut udata = unsafe { Udata::from_raw(udata) };
            let data = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: The slot is inside the context allocation and uninitialised.
            unsafe { UContext::<T>::data_slot(uctx).write(data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by ib_core once for a context whose `alloc_ucontext` succeeded.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: ib_core deallocates each context once, after `alloc_ucontext` succeeded.
        unsafe { UContext::<T>::destroy(uctx, |_| ()) };
    }

    /// # Safety
    ///
    /// Called by ib_core once, as the device is freed; `data` is initialised (type invariant).
    unsafe extern "C" fn dealloc_driver(ib: *mut bindings::ib_device) {
        // SAFETY: The invariant of `Device` says `data` is initialised; this is its only drop.
        unsafe {
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*ib.cast::<Device<T>>()).data))
        };
    }
}
