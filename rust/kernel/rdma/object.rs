// SPDX-License-Identifier: GPL-2.0

//! The shape every ib_core object shares here: the C object first, then the state this layer
//! keeps, then the driver's data, all in one allocation.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::driver::Driver;
use super::{device::Device, mmap::MmapContext, qp::QpCore, registry::Users};
use crate::{bindings, error::Error, error::Result, init::PinInit, sync::Arc, types::Opaque};
use core::ptr::addr_of_mut;

/// An ib_core object type (`struct ib_pd`, `struct ib_cq`, ...) that names its device.
///
/// # Safety
///
/// `device` must return the object's `device` pointer, which ib_core sets before any driver op
/// sees the object and never changes.
pub unsafe trait IbObject {
    /// # Safety
    ///
    /// `raw` must point to a live object.
    unsafe fn device(raw: *mut Self) -> *mut bindings::ib_device;
}

macro_rules! ib_object {
    ($($t:ident),*) => {$(
        // SAFETY: Every one of these structures has a `device` pointer set by ib_core.
        unsafe impl IbObject for bindings::$t {
            unsafe fn device(raw: *mut Self) -> *mut bindings::ib_device {
                // SAFETY: `raw` is live (the caller's promise).
                unsafe { (*raw).device }
            }
        }
    )*};
}
ib_object!(
    ib_ucontext,
    ib_pd,
    ib_cq,
    ib_mr,
    ib_mw,
    ib_ah,
    ib_qp,
    ib_srq
);

/// Calls an object's asynchronous event handler (`event_handler(&ev, context)`, the calling
/// convention of QPs, CQs and SRQs), if it has one.
///
/// # Safety
///
/// `handler` and `context` must be the live object's, `element` must name it and `device` must
/// be its device.
pub(crate) unsafe fn dispatch_object_event(
    handler: Option<unsafe extern "C" fn(*mut bindings::ib_event, *mut crate::ffi::c_void)>,
    context: *mut crate::ffi::c_void,
    device: *mut bindings::ib_device,
    element: bindings::ib_event__bindgen_ty_1,
    event: u32,
) {
    let mut ev = bindings::ib_event {
        device,
        element,
        event,
    };
    if let Some(handler) = handler {
        // SAFETY: `ev` is valid for the call; the handler is ib_core's or a ULP's, called as
        // ib_core calls it.
        unsafe { handler(&mut ev, context) };
    }
}

/// A kind of object: its C type, the state this layer keeps in it and the driver data `T`
/// keeps in it.
pub trait Kind {
    /// The ib_core structure.
    type Raw: IbObject;
    /// What this layer keeps in the object (nothing for most kinds), for driver `T`.
    type Core<T: Driver>: Send + Sync;
    /// The driver's data.
    type Data<T: Driver>: Send + Sync;
}

macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident: $raw:ident, $core:ty, $data:ident;)*) => {$(
        $(#[$doc])*
        pub enum $kind {}
        impl Kind for $kind {
            type Raw = bindings::$raw;
            type Core<T: Driver> = $core;
            type Data<T: Driver> = T::$data;
        }
    )*};
}

kinds! {
    /// A user context (see [`super::ucontext`]): the layer tracks its mmap entries.
    UContextKind: ib_ucontext, Arc<MmapContext>, UContextData;
    /// A protection domain (see [`super::pd`]).
    PdKind: ib_pd, (), PdData;
    /// A completion queue (see [`super::cq`]).
    CqKind: ib_cq, (), CqData;
    /// A memory region (see [`super::mr`]): published in its device's registry by key.
    MrKind: ib_mr, Users, MrData;
    /// A memory window (see [`super::mw`]): published in its device's registry by rkey.
    MwKind: ib_mw, Users, MwData;
    /// An address handle (see [`super::ah`]).
    AhKind: ib_ah, (), AhData;
    /// A queue pair (see [`super::qp`]): published in its device's registry by number, with
    /// the driver kind's deferred work ([`super::qp::DeferredWork`]).
    QpKind: ib_qp, QpCore<T>, QpData;
    /// A shared receive queue (see [`super::srq`]).
    SrqKind: ib_srq, (), SrqData;
}

/// An ib_core object of kind `K` with driver `T`'s data after it.
///
/// ib_core allocates most objects itself (`rdma_zalloc_drv_obj`, sized by the ops table's
/// `size_ib_*`) and never moves them; this layer initialises `core` and `data` in place when
/// the create op succeeds and drops them in the destroy op. The driver's data is pinned, so it
/// may hold locks and anything else that must not move. Everything the driver's data owns
/// (numbers, counts, pinned pages) is released by its `Drop`, so that an object whose creation
/// fails after the driver's part succeeded releases it too.
///
/// # Invariants
///
/// `ib` is first (ib_core requires it); `core` and `data` are initialised between the create op
/// returning success and the destroy op, and `data` does not move in that time.
#[repr(C)]
pub struct Object<T: Driver, K: Kind> {
    ib: Opaque<K::Raw>,
    // Visible to the layer's callbacks that find an object from a field of its core (timers).
    pub(super) core: K::Core<T>,
    data: K::Data<T>,
}

impl<T: Driver, K: Kind> Object<T, K> {
    /// # Safety
    ///
    /// `raw` must point to the C part of a live, initialised `Object<T, K>` that outlives `'a`.
    pub(crate) unsafe fn from_raw<'a>(raw: *mut K::Raw) -> &'a Self {
        // SAFETY: `ib` is the first field of a `repr(C)` struct.
        unsafe { &*raw.cast() }
    }

    /// An object this layer allocates itself (MRs): `ib`, then `core` and `data` in place.
    pub(crate) fn new(
        ib: K::Raw,
        core: K::Core<T>,
        data: impl PinInit<K::Data<T>, Error>,
    ) -> impl PinInit<Self, Error> {
        // SAFETY: The closure initialises every field of `slot` or, on failure, leaves nothing
        // initialised that needs dropping (`ib` is plain C data).
        unsafe {
            crate::init::pin_init_from_closure(move |slot: *mut Self| {
                addr_of_mut!((*slot).ib).write(Opaque::new(ib));
                Self::init_in_place(slot.cast(), core, data)
            })
        }
    }

    /// Initialises `core` and `data` of the object at `raw` (a create op of an object ib_core
    /// allocated): `data` first, which may fail, then `core`, which cannot.
    ///
    /// # Safety
    ///
    /// `raw` must head an `Object<T, K>` allocation that never moves, with `core` and `data`
    /// uninitialised. On success they are initialised; on failure they still are not.
    pub(crate) unsafe fn init_in_place(
        raw: *mut K::Raw,
        core: K::Core<T>,
        data: impl PinInit<K::Data<T>, Error>,
    ) -> Result {
        let this = raw.cast::<Self>();
        // SAFETY: The slot is inside the allocation, uninitialised and never moved (the
        // caller's promise); `__pinned_init` leaves it uninitialised if it fails.
        unsafe { data.__pinned_init(addr_of_mut!((*this).data))? };
        // SAFETY: As above; writing cannot fail.
        unsafe { addr_of_mut!((*this).core).write(core) };
        Ok(())
    }

    pub(crate) fn as_raw(&self) -> *mut K::Raw {
        self.ib.get()
    }

    /// The driver's data.
    pub fn data(&self) -> &K::Data<T> {
        &self.data
    }

    /// The state this layer keeps in the object.
    pub(crate) fn core(&self) -> &K::Core<T> {
        &self.core
    }

    /// The device the object belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: An object's device outlives it, and only `Device<T>` uses `T`'s ops table.
        unsafe { Device::from_raw(K::Raw::device(self.as_raw())) }
    }

    /// The destroy op of an object ib_core allocated: runs the driver's `hook` on the live
    /// object, then drops its data and the layer's state (ib_core frees the memory).
    ///
    /// # Safety
    ///
    /// `raw` must be an object whose create op succeeded; this must be its only destruction.
    pub(crate) unsafe fn destroy(raw: *mut K::Raw, hook: impl FnOnce(&Self)) {
        // SAFETY: The object is alive and initialised until its data is dropped below.
        hook(unsafe { Self::from_raw(raw) });
        let this = raw.cast::<Self>();
        // SAFETY: The create op initialised both; this is their only drop, in place (`data`
        // is pinned).
        unsafe {
            core::ptr::drop_in_place(addr_of_mut!((*this).data));
            core::ptr::drop_in_place(addr_of_mut!((*this).core));
        }
    }
}
