//! The handles a caller holds: [`PoolBlock`] (owning a pool handle) and [`LocalBlock`]
//! (borrowing the pool).

use std::fmt;

use crate::allocator::Allocator;
use crate::bins::BinNumber;

use std::sync::Arc;

use super::cache::{self, Slot};
use super::engine::*;

/// A block handed out by a [`MemoryPool`](super::MemoryPool); returns to the pool on drop.
///
/// Reports both the requested size ([`requested_bytes`](Self::requested_bytes)) and the size of
/// the block ([`allocated_bytes`](Self::allocated_bytes)). Releasing twice, PyOpenCL's
/// `LogicError`, cannot happen: [`release`](Self::release) takes `self`.
pub struct PoolBlock<A: Allocator> {
    pub(super) owner: Owner<A>,
    pub(super) block: Option<A::Block>,
    pub(super) requested: usize,
    pub(super) bin: WideBin,
    pub(super) trace_id: u64,
}

impl<A: Allocator> fmt::Debug for PoolBlock<A>
where
    A::Block: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBlock")
            .field("block", &self.block)
            .field("requested", &self.requested)
            .field("allocated", &self.allocated_bytes())
            .finish()
    }
}

impl<A: Allocator> PoolBlock<A> {
    /// The underlying block.
    pub fn block(&self) -> &A::Block {
        // `block` is Some from construction until drop/release, which take `self`.
        match &self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The underlying block, mutably: crate-private, because two handles' blocks swapped
    /// (`mem::swap(a.block_mut(), b.block_mut())`) would be returned to each other's bins and a
    /// later `allocate` would hand out a block smaller than asked. Callers get narrow access
    /// instead ([`PoolBlock::as_mut_slice`], the queue and map methods of buffer and SVM blocks).
    pub(crate) fn block_mut(&mut self) -> &mut A::Block {
        match &mut self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The block's contents as a mutable slice, for blocks that are slices (host and pinned
    /// memory). A slice cannot be swapped for another block.
    pub fn as_mut_slice<T>(&mut self) -> &mut [T]
    where
        A::Block: std::ops::DerefMut<Target = [T]>,
    {
        self.block_mut()
    }

    /// The size asked for.
    pub fn requested_bytes(&self) -> usize {
        self.requested
    }

    /// The size of the block (`alloc_size` of its bin; at least `requested_bytes`, at least 1).
    pub fn allocated_bytes(&self) -> usize {
        self.owner.layout().alloc_size(self.bin.get())
    }

    /// The bin the block belongs to.
    pub fn bin(&self) -> BinNumber {
        self.bin.get()
    }

    /// Returns the block to the pool now (PyOpenCL's `release()`); same as dropping it.
    pub fn release(self) {
        drop(self);
    }
}

/// A handle's bin number, stored a word wide. LLVM copies a handle as whole words; a 4-byte bin
/// beside 4 bytes of padding was written as two 4-byte stores and read straight back as one
/// 8-byte load, which cannot be forwarded from them: a store-forwarding stall on every hit
/// (`perf annotate` of criterion's `pool_host/hit_local`, 2026-11-26).
#[derive(Clone, Copy)]
pub(super) struct WideBin(u64);

impl WideBin {
    #[inline]
    pub(super) fn new(bin: BinNumber) -> Self {
        WideBin(u64::from(bin))
    }

    #[inline]
    pub(super) fn get(self) -> BinNumber {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "always made by `new` from a `BinNumber`"
        )]
        {
            self.0 as BinNumber
        }
    }
}

#[cold]
pub(super) fn unreachable_block() -> ! {
    unreachable!("a PoolBlock's block is only taken by Drop, which no method can observe")
}

impl<A: Allocator> Drop for PoolBlock<A> {
    #[inline]
    fn drop(&mut self) {
        if self.block.is_none() {
            return;
        }
        match std::mem::replace(&mut self.owner, Owner::Gone) {
            Owner::Pool(inner) => release(
                &inner,
                &mut self.block,
                self.bin.get(),
                self.requested,
                self.trace_id,
            ),
            Owner::Slot(slot) => {
                // The slot's lease keeps the pool alive while this block is; the pool itself is
                // only reached (one reference count) when the block must go to the shared bins.
                if let Err(slot) = slot_release(
                    slot,
                    &mut self.block,
                    self.bin.get(),
                    self.requested,
                    self.trace_id,
                ) {
                    if let (Some(inner), Some(block)) = (slot.lease(), self.block.take()) {
                        inner.give_back(block, self.bin.get(), self.requested);
                    }
                    slot.returned();
                }
            }
            Owner::Gone => {}
        }
    }
}

/// What keeps an owned block's pool alive: the slot of the thread that allocated it (its lease on
/// the pool, counted under that slot's lock), or, without one, a pool handle.
pub(super) enum Owner<A: Allocator> {
    Slot(Arc<Slot<A>>),
    Pool(Arc<Inner<A>>),
    /// Taken by `Drop` (never seen by a method).
    Gone,
}

impl<A: Allocator> Owner<A> {
    fn layout(&self) -> crate::bins::BinLayout {
        match self {
            Owner::Slot(s) => s.layout,
            Owner::Pool(p) => p.layout,
            Owner::Gone => unreachable!("a block's owner is taken only by its Drop"),
        }
    }
}

/// The owned block in `block`, of `slot`, comes back through the returning thread's cache; `Err`
/// when it must go to the shared bins instead (the block left in place, the slot's lease count
/// still to be dropped).
#[inline]
fn slot_release<A: Allocator>(
    slot: Arc<Slot<A>>,
    block: &mut Option<A::Block>,
    bin: BinNumber,
    size: usize,
    trace_id: u64,
) -> Result<(), Arc<Slot<A>>> {
    if trace_id != 0 {
        trace_free(&slot, trace_id);
    }
    cache::put_owned(slot, bin, size, block)
}

#[cold]
fn trace_free<A: Allocator>(slot: &Slot<A>, trace_id: u64) {
    // Recording (rare): the pool is reached through the lease.
    if let Some(inner) = slot.lease() {
        if inner.recording.load(std::sync::atomic::Ordering::Relaxed) {
            lock(&inner.trace).push(crate::trace::TraceEvent::Free { id: trace_id });
        }
    }
}

/// The handed-out block in `block` comes back: into the returning thread's cache when the caches
/// are on, else to the shared bins.
#[inline]
pub(super) fn release<A: Allocator>(
    inner: &Arc<Inner<A>>,
    block: &mut Option<A::Block>,
    bin: BinNumber,
    size: usize,
    trace_id: u64,
) {
    if trace_id != 0 && inner.recording.load(std::sync::atomic::Ordering::Relaxed) {
        lock(&inner.trace).push(crate::trace::TraceEvent::Free { id: trace_id });
    }
    if inner.cache_on() && cache::put_cached(inner, bin, size, block) {
        return;
    }
    if let Some(b) = block.take() {
        inner.give_back(b, bin, size);
    }
}

/// A block from [`MemoryPool::allocate_local`](super::MemoryPool::allocate_local): borrows its pool, returns to it on drop.
pub struct LocalBlock<'a, A: Allocator> {
    pub(super) inner: &'a Arc<Inner<A>>,
    pub(super) block: Option<A::Block>,
    pub(super) requested: usize,
    pub(super) bin: WideBin,
    pub(super) trace_id: u64,
}

impl<A: Allocator> fmt::Debug for LocalBlock<'_, A>
where
    A::Block: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBlock")
            .field("block", &self.block)
            .field("requested", &self.requested)
            .field("allocated", &self.allocated_bytes())
            .finish()
    }
}

impl<A: Allocator> LocalBlock<'_, A> {
    /// The underlying block.
    pub fn block(&self) -> &A::Block {
        match &self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The underlying block, mutably: crate-private, as [`PoolBlock::block_mut`].
    pub(crate) fn block_mut(&mut self) -> &mut A::Block {
        match &mut self.block {
            Some(b) => b,
            None => unreachable_block(),
        }
    }

    /// The block's contents as a mutable slice; see [`PoolBlock::as_mut_slice`].
    pub fn as_mut_slice<T>(&mut self) -> &mut [T]
    where
        A::Block: std::ops::DerefMut<Target = [T]>,
    {
        self.block_mut()
    }

    /// The size asked for.
    pub fn requested_bytes(&self) -> usize {
        self.requested
    }

    /// The size of the block.
    pub fn allocated_bytes(&self) -> usize {
        self.inner.layout.alloc_size(self.bin.get())
    }

    /// Returns the block to the pool now; same as dropping it.
    pub fn release(self) {
        drop(self);
    }
}

impl<A: Allocator> Drop for LocalBlock<'_, A> {
    fn drop(&mut self) {
        if self.block.is_some() {
            release(
                self.inner,
                &mut self.block,
                self.bin.get(),
                self.requested,
                self.trace_id,
            );
        }
    }
}
