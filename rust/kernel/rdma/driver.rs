// SPDX-License-Identifier: GPL-2.0

//! RDMA drivers: the verbs a driver implements ([`Driver`]) and the `struct ib_device_ops`
//! table this layer builds from them. The `extern "C"` callbacks of the table live next to the
//! objects they act on (`pd.rs`, `cq.rs`, `qp.rs`, ...), as methods of [`Adapter`].
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    ah::{AddressVector, Ah},
    attr::{DeviceAttr, LinkLayer, PortAttr, PortImmutable},
    cq::{Cq, CqInitAttr},
    device::Device,
    mr::{Mr, MrChange},
    mw::{Mw, MwType},
    pd::Pd,
    qp::{DeferredWork, Qp, QpAttr, QpInitAttr},
    srq::{Srq, SrqAttr},
    ucontext::UContext,
    udata::Udata,
    wr::{RecvWr, SendWr, Wc},
};
use crate::{
    bindings,
    error::{Error, Result},
    init::PinInit,
};
use core::{marker::PhantomData, mem::size_of};
use macros::vtable;

/// The size ib_core allocates (`kzalloc`) for an object of type `X`, checked at compile time:
/// kmalloc aligns objects to `ARCH_SLAB_MINALIGN` at least, and no more is promised.
pub(crate) const fn kzalloc_size<X>() -> usize {
    assert!(
        core::mem::align_of::<X>() <= bindings::ARCH_SLAB_MINALIGN,
        "object data needs more alignment than kmalloc guarantees"
    );
    size_of::<X>()
}

/// The default body of a driver method that creates something: never called (the ops table
/// leaves the op out when the driver does not implement the method), and a link error if it is.
fn unimplemented<R>() -> Result<R> {
    crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
}

/// An RDMA driver: its per-device data and the verbs it implements.
///
/// Each method maps to the `struct ib_device_ops` member of the same name; only the methods a
/// driver implements are filled in, so ib_core reports the others as unsupported. ib_core
/// serialises nothing for the driver: methods may run concurrently on any CPU.
///
/// The methods that create objects return an initialiser of the driver's data, which this
/// layer runs in place, inside ib_core's allocation of the object: the data is pinned and may
/// hold locks directly. Whatever the data owns (object numbers, counts, pinned memory) it
/// releases in its `Drop`, which runs on every path that ends the object: its destroy op, or a
/// failure of the layer or of ib_core after the driver's part succeeded. The `destroy`-style
/// methods are hooks on the live object just before its data is dropped.
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
    /// Data the driver keeps in each memory window.
    type MwData: Send + Sync;
    /// Data the driver keeps in each queue pair.
    type QpData: Send + Sync;
    /// Data the driver keeps in each shared receive queue.
    type SrqData: Send + Sync;
    /// What the layer keeps in each queue pair for the driver's kind: `()` for a device with
    /// hardware behind it, `sw::deferred::Deferred` (a timer and a work item) for a software
    /// device.
    type QpDeferred: DeferredWork<Self>;
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

    /// Sets entry `index` of `port`'s P_Key table to `pkey` (0: no P_Key), as the
    /// administrator asks through the port's `pkey_table` file in sysfs
    /// (`/sys/class/infiniband/DEV/ports/N/pkey_table`, which lists the table; writing
    /// `INDEX PKEY` to it, numbers in C notation, sets one entry). The driver raises
    /// [`PortEvent::PkeyChange`](crate::rdma::PortEvent::PkeyChange) if the table changed.
    /// Without this method the port has no such file. Sleeps.
    fn set_pkey(_dev: &Device<Self>, _port: u32, _index: u16, _pkey: u16) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The names of the port counters [`Driver::read_port_counters`] fills in.
    const PORT_COUNTERS: &'static [super::stats::Counter] = &[];

    /// Reads the counters of `port` into `values`, in the order of
    /// [`Driver::PORT_COUNTERS`] (`get_hw_stats`).
    fn read_port_counters(_dev: &Device<Self>, _port: u32, _values: &mut [u64]) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver data of a new protection domain (`alloc_pd`).
    fn alloc_pd(
        _dev: &Device<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<impl PinInit<Self::PdData, Error>> {
        unimplemented::<Self::PdData>()
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
    ) -> Result<(impl PinInit<Self::QpData, Error>, u32)> {
        unimplemented::<(Self::QpData, u32)>()
    }

    /// Changes the attributes in `mask` and maybe the state (`modify_qp`).
    fn modify_qp(_qp: &Qp<Self>, _attr: &QpAttr, _mask: u32, _udata: &mut Udata<'_>) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Reports the QP's attributes and creation attributes (`query_qp`).
    fn query_qp(_qp: &Qp<Self>) -> Result<(QpAttr, QpInitAttr)> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called as a QP is destroyed, before its data is dropped (`destroy_qp`). The QP's
    /// deferred work ([`Driver::QpDeferred`]) may still run while this runs; it is shut down
    /// right after.
    fn destroy_qp(_qp: &Qp<Self>) {}

    /// Attaches the UD QP `qp` to the multicast group `mgid` (`attach_mcast`: ib_core has
    /// checked that the QP is UD and the GID a multicast one; RoCE has no LIDs). Each
    /// successful attach is undone by one [`Driver::detach_mcast`] before the QP can be
    /// destroyed (ib_core counts them in the QP's use count). Sleeps; not called with RTNL
    /// held (ib_core's callers on RoCE ports do not hold it).
    fn attach_mcast(_qp: &Qp<Self>, _mgid: &[u8; 16]) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Undoes one [`Driver::attach_mcast`] of `qp` to `mgid` (`detach_mcast`); `EINVAL` if
    /// there is none. Sleeps.
    fn detach_mcast(_qp: &Qp<Self>, _mgid: &[u8; 16]) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

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
    fn get_dma_mr(
        _pd: &Pd<Self>,
        _access: u32,
    ) -> Result<(impl PinInit<Self::MrData, Error>, u32, u32)> {
        unimplemented::<(Self::MrData, u32, u32)>()
    }

    /// A fast-registration MR of up to `max_pages` pages (`alloc_mr`, `IB_MR_TYPE_MEM_REG`).
    fn alloc_mr(
        _pd: &Pd<Self>,
        _max_pages: u32,
    ) -> Result<(impl PinInit<Self::MrData, Error>, u32, u32)> {
        unimplemented::<(Self::MrData, u32, u32)>()
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
    ) -> Result<impl PinInit<Self::SrqData, Error>> {
        unimplemented::<Self::SrqData>()
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
    ) -> Result<impl PinInit<Self::AhData, Error>> {
        unimplemented::<Self::AhData>()
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
    ) -> Result<(impl PinInit<Self::MrData, Error>, u32, u32)> {
        unimplemented::<(Self::MrData, u32, u32)>()
    }

    /// Re-registers a user MR (`rereg_user_mr`) with the fields `change` names replaced: either
    /// in place (`None`: the driver changed `mr`'s data; the layer moves it to `pd` if
    /// `change` says so, and the keys stay), or as a new MR (data, lkey, rkey) on `pd` that
    /// replaces `mr`, which ib_core then destroys. If this fails, `mr` stays as it was.
    // (An `impl Trait` cannot be named by a type alias.)
    #[expect(clippy::type_complexity)]
    fn rereg_user_mr(
        _mr: &Mr<Self>,
        _change: &MrChange,
        _pd: &Pd<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<Option<(impl PinInit<Self::MrData, Error>, u32, u32)>> {
        unimplemented::<Option<(Self::MrData, u32, u32)>>()
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
    ) -> Result<(impl PinInit<Self::CqData, Error>, u32)> {
        unimplemented::<(Self::CqData, u32)>()
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
    fn alloc_ucontext(
        _dev: &Device<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<impl PinInit<Self::UContextData, Error>> {
        unimplemented::<Self::UContextData>()
    }

    /// Called as a user context is destroyed, before its data is dropped (`dealloc_ucontext`).
    fn dealloc_ucontext(_uctx: &UContext<Self>) {}

    /// Creates the driver data of a memory window of type `ty` on `pd` (`alloc_mw`) and returns
    /// it with the window's rkey, from the key space of the MRs (the layer publishes the window
    /// under the rkey's index).
    fn alloc_mw(
        _pd: &Pd<Self>,
        _ty: MwType,
        _udata: &mut Udata<'_>,
    ) -> Result<(impl PinInit<Self::MwData, Error>, u32)> {
        unimplemented::<(Self::MwData, u32)>()
    }

    /// Called as a memory window is deallocated, before its data is dropped (`dealloc_mw`);
    /// the data path no longer finds it.
    fn dealloc_mw(_mw: &Mw<Self>) {}
}

/// The `extern "C"` callbacks of the ops table; each object's module adds its own.
pub(crate) struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    pub(crate) const OPS: bindings::ib_device_ops = bindings::ib_device_ops {
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
        attach_mcast: if T::HAS_ATTACH_MCAST && T::HAS_DETACH_MCAST {
            Some(Adapter::<T>::attach_mcast)
        } else {
            None
        },
        detach_mcast: if T::HAS_ATTACH_MCAST && T::HAS_DETACH_MCAST {
            Some(Adapter::<T>::detach_mcast)
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
        alloc_hw_port_stats: if T::HAS_READ_PORT_COUNTERS {
            // ib_core refuses a device whose port has no counters to show.
            assert!(
                !T::PORT_COUNTERS.is_empty(),
                "read_port_counters without PORT_COUNTERS"
            );
            Some(Adapter::<T>::alloc_hw_port_stats)
        } else {
            None
        },
        get_hw_stats: if T::HAS_READ_PORT_COUNTERS {
            Some(Adapter::<T>::get_hw_stats)
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
        alloc_mw: if T::HAS_ALLOC_MW {
            Some(Adapter::<T>::alloc_mw)
        } else {
            None
        },
        dealloc_mw: if T::HAS_ALLOC_MW {
            Some(Adapter::<T>::dealloc_mw)
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
        port_groups: if T::HAS_SET_PKEY {
            &Adapter::<T>::PORT_GROUPS as *const _ as *mut _
        } else {
            core::ptr::null_mut()
        },
        query_port: Some(Adapter::<T>::query_port),
        size_ib_ah: kzalloc_size::<Ah<T>>(),
        size_ib_cq: kzalloc_size::<Cq<T>>(),
        size_ib_mw: kzalloc_size::<Mw<T>>(),
        size_ib_pd: kzalloc_size::<Pd<T>>(),
        size_ib_qp: kzalloc_size::<Qp<T>>(),
        size_ib_srq: kzalloc_size::<Srq<T>>(),
        size_ib_ucontext: kzalloc_size::<UContext<T>>(),
        // SAFETY: All other members are nullable pointers and integers, for which zero means
        // "not implemented".
        ..unsafe { core::mem::MaybeUninit::zeroed().assume_init() }
    };
}
