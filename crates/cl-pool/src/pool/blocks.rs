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
    pub(super) bin: BinNumber,
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
        self.owner.inner().layout.alloc_size(self.bin)
    }

    /// The bin the block belongs to.
    pub fn bin(&self) -> BinNumber {
        self.bin
    }

    /// Returns the block to the pool now (PyOpenCL's `release()`); same as dropping it.
    pub fn release(self) {
        drop(self);
    }
}

#[cold]
pub(super) fn unreachable_block() -> ! {
    unreachable!("a PoolBlock's block is only taken by Drop, which no method can observe")
}

impl<A: Allocator> Drop for PoolBlock<A> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            let slot = match &self.owner {
                Owner::Slot(s) => Some(s),
                Owner::Pool(_) => None,
            };
            release(
                self.owner.inner(),
                slot,
                block,
                self.bin,
                self.requested,
                self.trace_id,
            );
        }
    }
}

/// What keeps an owned block's pool alive: the slot of the thread that allocated it (a
/// reference count on that thread's own cache line), or, when the thread had none (exiting), the
/// shared state itself.
pub(super) enum Owner<A: Allocator> {
    Slot(Arc<Slot<A>>),
    Pool(Arc<Inner<A>>),
}

impl<A: Allocator> Owner<A> {
    pub(super) fn inner(&self) -> &Arc<Inner<A>> {
        match self {
            Owner::Slot(s) => &s.inner,
            Owner::Pool(p) => p,
        }
    }
}

/// A handed-out block comes back: into the returning thread's cache when the caches are on (the
/// block's own slot when that is this thread's, without touching a reference count), else to the
/// shared bins.
#[inline]
pub(super) fn release<A: Allocator>(
    inner: &Arc<Inner<A>>,
    slot: Option<&Arc<Slot<A>>>,
    block: A::Block,
    bin: BinNumber,
    size: usize,
    trace_id: u64,
) {
    if trace_id != 0 && inner.recording.load(std::sync::atomic::Ordering::Relaxed) {
        lock(&inner.trace).push(crate::trace::TraceEvent::Free { id: trace_id });
    }
    let mut block = block;
    if inner.cache_on() {
        let r = match slot {
            Some(s) if cache::is_mine(s) => s.put(bin, size, block),
            _ => match cache::my_slot(inner) {
                Some(s) => s.put(bin, size, block),
                None => Err(block),
            },
        };
        match r {
            Ok(()) => return,
            Err(b) => block = b,
        }
    }
    inner.give_back(block, bin, size);
}

/// A block from [`MemoryPool::allocate_local`](super::MemoryPool::allocate_local): borrows its pool, returns to it on drop.
pub struct LocalBlock<'a, A: Allocator> {
    pub(super) inner: &'a Arc<Inner<A>>,
    pub(super) slot: Option<Arc<Slot<A>>>,
    pub(super) block: Option<A::Block>,
    pub(super) requested: usize,
    pub(super) bin: BinNumber,
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
        self.inner.layout.alloc_size(self.bin)
    }

    /// Returns the block to the pool now; same as dropping it.
    pub fn release(self) {
        drop(self);
    }
}

impl<A: Allocator> Drop for LocalBlock<'_, A> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            release(
                self.inner,
                self.slot.as_ref(),
                block,
                self.bin,
                self.requested,
                self.trace_id,
            );
        }
    }
}
