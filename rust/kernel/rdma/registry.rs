// SPDX-License-Identifier: GPL-2.0

//! Lookup of a device's QPs by number and MRs by key from any context, without letting an
//! object be freed under the code that found it.
//!
//! ib_core destroys an object whenever its owner asks; the data path finds objects by the
//! numbers a peer names (a destination QP, an rkey), in the doorbell system call of another
//! process today and in softirq on packet input later. So each QP and MR is published in its
//! device's [`Registry`] as soon as its create op has succeeded, and unpublished at the start
//! of its destroy op, which then waits until every [`Held`] reference taken before is gone.
//! Held references are short-lived (one work request) and never held across sleeping.
//!
//! C header: [`include/linux/rbtree.h`](srctree/include/linux/rbtree.h)

use super::{
    driver::Driver,
    object::{Kind, Object},
};
use crate::{
    alloc::flags::GFP_KERNEL,
    bindings,
    error::{code::*, Result},
    init::PinInit,
    new_spinlock_irq, pin_init,
    rbtree::{RBTree, RBTreeNodeReservation},
    sync::SpinLockIrq,
};
use core::{
    marker::PhantomData,
    ops::Deref,
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicUsize, Ordering},
};
use macros::pin_data;

/// What this layer keeps in a QP or an MR for its device's registry: the index it is published
/// under, its protection domain and the number of [`Held`] references to it.
pub struct Users {
    index: u32,
    /// Changes only when an MR is re-registered to another PD in place.
    pd: AtomicUsize,
    count: AtomicU32,
}

/// The core of an object kind published in a registry: it holds the object's [`Users`].
pub trait Published: Send + Sync {
    /// The registry state of the object.
    fn users(&self) -> &Users;
}

impl Published for Users {
    fn users(&self) -> &Users {
        self
    }
}

impl Users {
    /// The state of an object to be published under `index`, of the PD at `pd`.
    pub(crate) fn new(index: u32, pd: *const bindings::ib_pd) -> Self {
        Users {
            index,
            pd: AtomicUsize::new(pd as usize),
            count: AtomicU32::new(0),
        }
    }

    /// An identity of the object's protection domain, equal for objects of the same PD.
    pub fn pd_id(&self) -> usize {
        self.pd.load(Ordering::Relaxed)
    }

    /// The object moved to the PD at `pd` (an MR re-registered in place).
    pub(crate) fn set_pd(&self, pd: *const bindings::ib_pd) {
        self.pd.store(pd as usize, Ordering::Relaxed);
    }
}

/// A device's objects of kind `K` (QPs or MRs), by index.
///
/// # Invariants
///
/// Every value in `map` is the address of a live `Object<T, K>` published under its key; such
/// an object is not freed before it has been removed and its `Users::count` has dropped to 0.
#[pin_data]
pub struct Registry<T: Driver, K: Kind>
where
    K::Core<T>: Published,
{
    #[pin]
    map: SpinLockIrq<RBTree<u32, usize>>,
    _p: PhantomData<fn() -> (T, K)>,
}

impl<T: Driver, K: Kind> Registry<T, K>
where
    K::Core<T>: Published,
{
    /// An empty registry.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            map <- new_spinlock_irq!(RBTree::new(), "rdma:registry"),
            _p: PhantomData,
        })
    }

    /// Publishes `obj` under its index; `EBUSY` if the index is taken. May sleep.
    ///
    /// # Safety
    ///
    /// `obj` must stay alive until [`Registry::retire`] has returned for it.
    pub(crate) unsafe fn publish(&self, obj: &Object<T, K>) -> Result {
        let index = obj.core().users().index;
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?
            .into_node(index, obj as *const Object<T, K> as usize);
        let mut map = self.map.lock();
        if map.get(&index).is_some() {
            return Err(EBUSY);
        }
        // INVARIANT: The caller keeps `obj` alive until `retire`.
        map.insert(node);
        Ok(())
    }

    /// Unpublishes `obj` (if it is published) and waits until nobody holds it. Sleeps.
    pub(crate) fn retire(&self, obj: &Object<T, K>) {
        let users = obj.core().users();
        let addr = obj as *const Object<T, K> as usize;
        let node = {
            let mut map = self.map.lock();
            match map.get(&users.index) {
                Some(&a) if a == addr => map.remove_node(&users.index),
                _ => None,
            }
        };
        // Freed outside the lock.
        drop(node);
        // Lookups take their reference under the map's lock, so after the removal above no new
        // one can start; those taken before end soon (they never sleep).
        while users.count.load(Ordering::Acquire) != 0 {
            // SAFETY: Destroy ops run in process context, where sleeping is allowed.
            unsafe { bindings::rdma_registry_wait() };
        }
    }

    /// The object published under `index`, held until the result is dropped. Any context.
    pub fn get(&self, index: u32) -> Option<Held<'_, T, K>> {
        let map = self.map.lock();
        let addr = *map.get(&index)?;
        let obj = addr as *const Object<T, K>;
        // SAFETY: By the type invariant the object is alive while it is in the map, and it is
        // (we hold the lock); the count keeps it alive after the lock is dropped.
        unsafe { (*obj).core().users().count.fetch_add(1, Ordering::Relaxed) };
        drop(map);
        // INVARIANT: The count was raised for this reference.
        NonNull::new(obj.cast_mut()).map(|obj| Held {
            obj,
            _registry: PhantomData,
        })
    }
}

/// A reference to a published object that keeps its destroy op from finishing.
///
/// # Invariants
///
/// `obj` is live and its `Users::count` counts this reference.
pub struct Held<'a, T: Driver, K: Kind>
where
    K::Core<T>: Published,
{
    obj: NonNull<Object<T, K>>,
    _registry: PhantomData<&'a Registry<T, K>>,
}

impl<T: Driver, K: Kind> Deref for Held<'_, T, K>
where
    K::Core<T>: Published,
{
    type Target = Object<T, K>;

    fn deref(&self) -> &Object<T, K> {
        // SAFETY: By the type invariant the object is live while `self` is.
        unsafe { self.obj.as_ref() }
    }
}

impl<T: Driver, K: Kind> Drop for Held<'_, T, K>
where
    K::Core<T>: Published,
{
    fn drop(&mut self) {
        // Release: what this reference did to the object happens before its destruction.
        self.core().users().count.fetch_sub(1, Ordering::Release);
    }
}

impl<T: Driver, K: Kind> Object<T, K>
where
    K::Core<T>: Published,
{
    /// An identity of the object's protection domain, equal for objects of the same PD.
    pub fn pd_id(&self) -> usize {
        self.core().users().pd_id()
    }
}
