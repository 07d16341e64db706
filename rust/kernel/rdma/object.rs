// SPDX-License-Identifier: GPL-2.0

//! The shape every ib_core object shares here: the C object first, the driver's data after it
//! in the same allocation.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver};
use crate::{bindings, types::Opaque};

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
ib_object!(ib_ucontext, ib_pd, ib_cq, ib_mr, ib_ah, ib_qp, ib_srq);

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

/// A kind of object: its C type and the driver data `T` keeps in it.
pub trait Kind {
    /// The ib_core structure.
    type Raw: IbObject;
    /// The driver's data.
    type Data<T: Driver>: Send + Sync;
}

/// A user context (see [`super::ucontext`]).
pub enum UContextKind {}
impl Kind for UContextKind {
    type Raw = bindings::ib_ucontext;
    type Data<T: Driver> = T::UContextData;
}

/// A protection domain (see [`super::pd`]).
pub enum PdKind {}
impl Kind for PdKind {
    type Raw = bindings::ib_pd;
    type Data<T: Driver> = T::PdData;
}

/// A completion queue (see [`super::cq`]).
pub enum CqKind {}
impl Kind for CqKind {
    type Raw = bindings::ib_cq;
    type Data<T: Driver> = T::CqData;
}

/// A memory region (see [`super::mr`]).
pub enum MrKind {}
impl Kind for MrKind {
    type Raw = bindings::ib_mr;
    type Data<T: Driver> = T::MrData;
}

/// An address handle (see [`super::ah`]).
pub enum AhKind {}
impl Kind for AhKind {
    type Raw = bindings::ib_ah;
    type Data<T: Driver> = T::AhData;
}

/// A queue pair (see [`super::qp`]).
pub enum QpKind {}
impl Kind for QpKind {
    type Raw = bindings::ib_qp;
    type Data<T: Driver> = T::QpData;
}

/// A shared receive queue (see [`super::srq`]).
pub enum SrqKind {}
impl Kind for SrqKind {
    type Raw = bindings::ib_srq;
    type Data<T: Driver> = T::SrqData;
}

/// An ib_core object of kind `K` with driver `T`'s data after it.
///
/// ib_core allocates most objects itself (`rdma_zalloc_drv_obj`, sized by the ops table's
/// `size_ib_*`); this layer writes `data` when the create op succeeds and drops it in the
/// destroy op.
///
/// # Invariants
///
/// `ib` is first (ib_core requires it) and `data` is initialised between the create op
/// returning success and the destroy op.
#[repr(C)]
pub struct Object<T: Driver, K: Kind> {
    ib: Opaque<K::Raw>,
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

    /// Builds an object this layer allocates itself (MRs).
    pub(crate) fn new(ib: K::Raw, data: K::Data<T>) -> Self {
        Object {
            ib: Opaque::new(ib),
            data,
        }
    }

    pub(crate) fn as_raw(&self) -> *mut K::Raw {
        self.ib.get()
    }

    /// The driver's data.
    pub fn data(&self) -> &K::Data<T> {
        &self.data
    }

    /// The device the object belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: An object's device outlives it, and only `Device<T>` uses `T`'s ops table.
        unsafe { Device::from_raw(K::Raw::device(self.as_raw())) }
    }

    /// The destroy op of an object ib_core allocated: runs the driver's `hook` on the live
    /// object, then drops its data (ib_core frees the memory).
    ///
    /// # Safety
    ///
    /// `raw` must be an object whose create op succeeded; this must be its only destruction.
    pub(crate) unsafe fn destroy(raw: *mut K::Raw, hook: impl FnOnce(&Self)) {
        // SAFETY: The object is alive and initialised until its data is dropped below.
        hook(unsafe { Self::from_raw(raw) });
        // SAFETY: The create op initialised the data; this is its only drop.
        unsafe { core::ptr::drop_in_place(Self::data_slot(raw)) };
    }

    /// Where the data of the object at `raw` goes.
    pub(crate) fn data_slot(raw: *mut K::Raw) -> *mut K::Data<T> {
        // SAFETY: Only the address is computed; `raw` heads an `Object<T, K>` allocation.
        unsafe { core::ptr::addr_of_mut!((*raw.cast::<Self>()).data) }
    }
}
