// SPDX-License-Identifier: GPL-2.0

//! Memory by keys: the ranges an lkey or an rkey opens (memory regions, memory windows), walks
//! along SGE lists that find each element's region when they get to it, and copies between
//! them. Both carriers of requests and the wire's transmit use them.

use core::sync::atomic::AtomicU64;
use kernel::{
    prelude::*,
    rdma::{access, object::MrKind, Device, Held, Piece, Qp},
};

use crate::{
    protocol::{
        abi::{self, RingSge, WcStatus},
        wqe::Message,
    },
    verbs::{device::Ferroce, mr},
};

/// Why a copy stopped.
#[derive(Clone, Copy)]
pub(crate) enum Fault {
    /// An element of the source failed its checks (key, PD, range, access).
    Source,
    /// An element of the destination failed its checks.
    Dest,
    /// The destination is shorter than the message.
    Length,
}

/// A range of a memory region, found and checked; the MR is held while the range is in use.
pub(crate) struct Range<'a> {
    pub(crate) mr: Held<'a, Ferroce, MrKind>,
    pub(crate) place: mr::Place,
    pub(crate) len: usize,
}

impl Range<'_> {
    /// The piece of the range `at` bytes in: up to `max` bytes, never past a page.
    pub(crate) fn piece(&self, at: usize, max: usize) -> Option<Piece<'_>> {
        if at >= self.len {
            return None;
        }
        mr::piece(&self.mr, &self.place, at, max.min(self.len - at))
    }

    /// The naturally aligned 8-byte word at the start of the range, for an atomic; `None` if
    /// it is not aligned in memory (it may be in the MR's address space).
    pub(crate) fn atomic_word(&self) -> Option<&AtomicU64> {
        self.piece(0, 8)
            .filter(|p| p.len() == 8)?
            .atomic_u64(0)
            .ok()
    }
}

/// Finds `len` bytes at `addr` under the rkey `key` for a remote access of `need` served by
/// `qp`: an MR of its PD, or a memory window of it (bound to `qp`, if of type 2).
pub(crate) fn find_remote(
    qp: &Qp<Ferroce>,
    key: u32,
    addr: u64,
    len: usize,
    need: u32,
) -> Option<Range<'_>> {
    find_for(
        qp.device(),
        qp.pd_id(),
        Some(qp.qp_num()),
        key,
        addr,
        len,
        need,
    )
}

/// Whether the rkey `key` opens memory `qp` serves to a remote access of `need` taken whole (a
/// FLUSH of a region): an MR of its PD or a window of it (which grants no FLUSH today: see
/// `mw.rs`), wherever it starts.
pub(crate) fn find_remote_region(qp: &Qp<Ferroce>, key: u32, need: u32) -> bool {
    let dev = qp.device();
    let start = match dev.mr(key) {
        Some(mr) => mr::start(&mr),
        None => crate::verbs::mw::bound_start(dev, key),
    };
    start.is_some_and(|start| find_remote(qp, key, start, 0, need).is_some())
}

/// Finds `len` bytes at `addr` under `key` for a QP of the PD `pd`, allowing `need`: an lkey,
/// or with `remote` (the serving QP's number) an rkey, which may name a memory window.
fn find_for(
    dev: &Device<Ferroce>,
    pd: usize,
    remote: Option<u32>,
    key: u32,
    addr: u64,
    len: usize,
    need: u32,
) -> Option<Range<'_>> {
    // An rkey's index names an MR or a window (one key space).
    let (mr, key, need) = match dev.mr(key) {
        Some(mr) => (mr, key, need),
        None => {
            let (mr_key, serial) =
                crate::verbs::mw::resolve(dev, pd, remote?, key, addr, len as u64, need)?;
            let mr = dev.mr(mr_key)?;
            // Still the MR bound (not a new one at its index), still open to windows, and
            // locally writable if the window writes (IBTA C10-73, C10-74, checked again now as
            // the MR's access may have changed since the bind).
            let writes = access::REMOTE_WRITE | access::REMOTE_ATOMIC;
            // A FLUSH's placement types, were a window to grant them (none does now), must be
            // the MR's too: a window must not make flushable what its MR does not.
            let flushes = need & (access::FLUSH_GLOBAL | access::FLUSH_PERSISTENT);
            let mr_need = access::MW_BIND
                | flushes
                | if need & writes != 0 {
                    access::LOCAL_WRITE
                } else {
                    0
                };
            if mr.data().serial != serial {
                return None;
            }
            (mr, mr_key, mr_need)
        }
    };
    if mr.pd_id() != pd {
        return None;
    }
    let place = mr::locate(&mr, key, addr, len as u64, need)?;
    Some(Range { mr, place, len })
}

/// A walk along a list of `struct ferroce_sge` (or one remote range written as one), finding
/// each element's MR when it gets to it. Elements of length 0 are skipped unchecked.
pub(crate) struct Walk<'a, 's> {
    dev: &'a Device<Ferroce>,
    pd: usize,
    /// The serving QP of a remote access (whose rkey may name a memory window).
    remote: Option<u32>,
    need: u32,
    sges: &'s [u8],
    next: usize,
    cur: Option<Range<'a>>,
    used: usize,
}

impl<'a, 's> Walk<'a, 's> {
    pub(crate) fn new(dev: &'a Device<Ferroce>, pd: usize, need: u32, sges: &'s [u8]) -> Self {
        Walk {
            dev,
            pd,
            remote: None,
            need,
            sges,
            next: 0,
            cur: None,
            used: 0,
        }
    }

    /// A walk over a remote range (one SGE) that `qp` serves: its rkey may name a memory
    /// window.
    pub(crate) fn remote(qp: &'a Qp<Ferroce>, need: u32, sges: &'s [u8]) -> Self {
        Walk {
            remote: Some(qp.qp_num()),
            ..Walk::new(qp.device(), qp.pd_id(), need, sges)
        }
    }

    /// Moves to an element with room left; `Ok(false)` at the end of the list, `Err` if the
    /// element fails its checks.
    fn settle(&mut self) -> Result<bool, ()> {
        loop {
            if self.cur.as_ref().is_some_and(|r| self.used < r.len) {
                return Ok(true);
            }
            let at = self.next * abi::SGE_SIZE;
            let Some(sge) = self.sges.get(at..).and_then(RingSge::from_bytes) else {
                self.cur = None;
                return Ok(false);
            };
            self.next += 1;
            // The MR of the element before is let go first.
            self.cur = None;
            self.used = 0;
            if sge.length == 0 {
                continue;
            }
            let range = find_for(
                self.dev,
                self.pd,
                self.remote,
                sge.lkey,
                sge.addr,
                sge.length as usize,
                self.need,
            );
            self.cur = Some(range.ok_or(())?);
        }
    }

    /// Moves `n` bytes on without copying (the elements passed are checked); `Err` if an
    /// element fails its checks or the list is shorter.
    pub(crate) fn skip(&mut self, mut n: usize) -> Result<(), Fault> {
        while n > 0 {
            if !self.settle().map_err(|()| Fault::Dest)? {
                return Err(Fault::Length);
            }
            let room = self.cur.as_ref().map_or(0, |r| r.len - self.used);
            let step = room.min(n);
            self.used += step;
            n -= step;
        }
        Ok(())
    }

    /// Copies the next `out.len()` bytes of the list into `out`.
    pub(crate) fn gather(&mut self, out: &mut [u8]) -> Result<(), Fault> {
        let mut done = 0;
        while done < out.len() {
            if !self.settle().map_err(|()| Fault::Source)? {
                return Err(Fault::Length);
            }
            let r = self.cur.as_ref().ok_or(Fault::Source)?;
            let piece = r.piece(self.used, out.len() - done).ok_or(Fault::Source)?;
            let n = piece.len();
            piece
                .read(0, &mut out[done..done + n])
                .map_err(|_| Fault::Source)?;
            self.used += n;
            done += n;
        }
        Ok(())
    }

    /// Checks every element (finding each MR once), without copying.
    pub(crate) fn check_all(mut self) -> Result<(), ()> {
        while self.settle()? {
            self.used = self.cur.as_ref().map_or(0, |r| r.len);
        }
        Ok(())
    }
}

/// Where a message's bytes come from.
pub(crate) enum Source<'a, 's> {
    Walk(Walk<'a, 's>),
    Bytes(&'s [u8]),
}

/// Bytes copied between chances to yield the CPU.
const COPY_CHUNK: usize = 1 << 20;

/// Copies `len` bytes from `src` to `dst`; yields the CPU every megabyte if it `may_sleep`.
pub(crate) fn place(
    dst: &mut Walk<'_, '_>,
    src: &mut Source<'_, '_>,
    len: usize,
    may_sleep: bool,
) -> Result<(), Fault> {
    let mut done = 0;
    let mut since_yield = 0;
    while done < len {
        if may_sleep && since_yield >= COPY_CHUNK {
            kernel::rdma::sw::context::cond_resched();
            since_yield = 0;
        }
        if !dst.settle().map_err(|()| Fault::Dest)? {
            return Err(Fault::Length);
        }
        let d = dst.cur.as_ref().ok_or(Fault::Dest)?;
        let to = d.piece(dst.used, len - done).ok_or(Fault::Dest)?;
        let n = match src {
            Source::Bytes(bytes) => {
                let n = to.len();
                let piece = bytes.get(done..done + n).ok_or(Fault::Source)?;
                to.write(0, piece).map_err(|_| Fault::Dest)?;
                n
            }
            Source::Walk(s) => {
                if !s.settle().map_err(|()| Fault::Source)? {
                    return Err(Fault::Source);
                }
                let r = s.cur.as_ref().ok_or(Fault::Source)?;
                let from = r.piece(s.used, to.len()).ok_or(Fault::Source)?;
                let n = from.len();
                to.copy_from(0, &from, 0, n).map_err(|_| Fault::Dest)?;
                s.used += n;
                n
            }
        };
        dst.used += n;
        done += n;
        since_yield += n;
    }
    Ok(())
}

/// One SGE over a remote range (or a local one), as a walk reads it.
pub(crate) fn one_sge(addr: u64, len: u64, key: u32) -> [u8; abi::SGE_SIZE] {
    abi::sge_bytes(addr, len as u32, key)
}

/// The requester's own check of a message's SGEs before anything goes out (IBTA 10.8.3): each
/// names memory of `qp`'s PD its lkey opens, for local writes too if the message brings data
/// back (a READ, an atomic). `Err` is the completion status, `LOC_PROT_ERR`.
pub(crate) fn check_local_sges(qp: &Qp<Ferroce>, m: &Message<'_>) -> Result<(), WcStatus> {
    let need = if m.writes_locally() {
        access::LOCAL_WRITE
    } else {
        0
    };
    Walk::new(qp.device(), qp.pd_id(), need, m.sges)
        .check_all()
        .map_err(|()| WcStatus::LocProtErr)
}
