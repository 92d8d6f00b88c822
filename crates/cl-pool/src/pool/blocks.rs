//! The handles a caller holds: [`PoolBlock`] (owning a pool handle) and [`LocalBlock`]
//! (borrowing the pool).

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crate::allocator::Allocator;
use crate::bins::BinNumber;
use crate::trace::TraceEvent;

use super::cache::{self, Spare};
use super::engine::Inner;

/// A block handed out by a [`MemoryPool`](super::MemoryPool); returns to the pool on drop.
///
/// Reports both the requested size ([`requested_bytes`](Self::requested_bytes)) and the size of
/// the block ([`allocated_bytes`](Self::allocated_bytes)). Releasing twice, PyOpenCL's
/// `LogicError`, cannot happen: [`release`](Self::release) takes `self`.
pub struct PoolBlock<A: Allocator> {
    /// The pool (`None` only once `Drop` took it).
    pub(super) pool: Option<Arc<Inner<A>>>,
    pub(super) block: Option<A::Block>,
    pub(super) requested: usize,
    pub(super) bin: WideBin,
    pub(super) trace_id: u64,
}

/// What both handles share, written once: their `Debug` and the accessors of the block they hold.
macro_rules! handle_common {
    ($name:literal, $handle:ty) => {
        impl<A: Allocator> fmt::Debug for $handle
        where
            A::Block: fmt::Debug,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct($name)
                    .field("block", &self.block)
                    .field("requested", &self.requested)
                    .field("allocated", &self.allocated_bytes())
                    .finish()
            }
        }

        impl<A: Allocator> $handle {
            /// The underlying block.
            pub fn block(&self) -> &A::Block {
                // `block` is Some from construction until drop/release, which take `self`.
                match &self.block {
                    Some(b) => b,
                    None => unreachable_block(),
                }
            }

            /// The underlying block, mutably: crate-private, because two handles' blocks swapped
            /// (`mem::swap(a.block_mut(), b.block_mut())`) would be returned to each other's
            /// bins and a later `allocate` would hand out a block smaller than asked. Callers
            /// get narrow access instead (`as_mut_slice`, the queue and map methods of buffer
            /// and SVM blocks).
            pub(crate) fn block_mut(&mut self) -> &mut A::Block {
                match &mut self.block {
                    Some(b) => b,
                    None => unreachable_block(),
                }
            }

            /// The block's contents as a mutable slice, for blocks that are slices (host and
            /// pinned memory). A slice cannot be swapped for another block.
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

            /// This new handle, its trace id set, after the allocator's hand-out hook for a block
            /// of the shared bins (`hit`). A hook that fails (or panics) drops the handle, which
            /// returns the block on top of this thread's cache (or of its shared bin), so the next
            /// request gets it again (PyOpenCL's LIFO). A block of the thread's cache runs the
            /// hook in its place there (`ThreadCache::take`), uncounted.
            pub(super) fn handed_out(
                mut self,
                pool: &super::MemoryPool<A>,
                hit: bool,
            ) -> Result<Self, crate::PoolError<A::Error>> {
                if hit {
                    let hook = pool
                        .inner
                        .allocator
                        .hand_out_existing_block(self.block_mut());
                    if let Err(e) = hook {
                        drop(self);
                        return Err(crate::PoolError::Allocator(e));
                    }
                }
                self.trace_id = pool.trace_alloc(self.requested);
                Ok(self)
            }
        }
    };
}

handle_common!("PoolBlock", PoolBlock<A>);
handle_common!("LocalBlock", LocalBlock<'_, A>);

impl<A: Allocator> PoolBlock<A> {
    /// The size of the block (`alloc_size` of its bin; at least `requested_bytes`, at least 1).
    pub fn allocated_bytes(&self) -> usize {
        self.pool
            .as_ref()
            .map_or(0, |p| p.layout.alloc_size(self.bin.get()))
    }

    /// Returns the block to the pool now (PyOpenCL's `release()`); same as dropping it.
    pub fn release(self) {
        drop(self);
    }
}

/// A handle's bin number, stored a word wide: a 4-byte bin beside 4 bytes of padding is written
/// as a 4-byte store and read back by the handle's 8-byte copies, which cannot be forwarded from
/// it (a store-forwarding stall on every hit).
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
        if let Some(pool) = self.pool.take() {
            release(
                pool,
                &mut self.block,
                self.bin.get(),
                self.requested,
                self.trace_id,
            );
        }
    }
}

/// A handed-out block comes back (PyOpenCL's `free(block, size)`): into the returning thread's
/// cache, else onto its shared bin. `p` names the pool: an owned block's handle (which the cache
/// keeps as a spare) or a local block's borrowed one. The block is moved once, from its handle
/// (`block`) to where it goes. The common case makes no call ([`cache::put_fast`]).
#[inline]
pub(super) fn release<A: Allocator, P: Spare<A>>(
    p: P,
    block: &mut Option<A::Block>,
    bin: BinNumber,
    size: usize,
    trace_id: u64,
) {
    if trace_id != 0 {
        release_slow(trace_id, p, block, bin, size);
    } else if let Err(p) = cache::put_fast(p, block, bin, size) {
        release_slow(0, p, block, bin, size);
    }
}

/// [`release`] where it may call: a trace to record (first), a cache to find or sync, a limit.
#[inline(never)]
fn release_slow<A: Allocator, P: Spare<A>>(
    trace_id: u64,
    p: P,
    block: &mut Option<A::Block>,
    bin: BinNumber,
    size: usize,
) {
    if trace_id != 0 {
        trace_free(p.borrow(), trace_id);
    }
    let extra = match cache::with(p, |tc, p| {
        if !tc.put(p.borrow(), block, bin, size) {
            if let Some(b) = block.take() {
                p.borrow().put_shared(&tc.stripe, b, bin, size);
            }
        }
        p.into_spare().and_then(|h| tc.keep_spare(h))
    }) {
        Ok(extra) => extra,
        Err(p) => {
            // No cache on this thread now: the shared bin, counted in a lent stripe.
            if let Some(b) = block.take() {
                let inner: &Inner<A> = p.borrow();
                inner.lend_stripe(|st| inner.put_shared(st, b, bin, size));
            }
            p.into_spare()
        }
    };
    // Possibly the last handle: dropped with no cache borrowed.
    drop(extra);
}

#[cold]
fn trace_free<A: Allocator>(inner: &Inner<A>, trace_id: u64) {
    if inner.hot.recording.load(Relaxed) {
        inner.trace.lock().push(TraceEvent::Free { id: trace_id });
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

impl<A: Allocator> LocalBlock<'_, A> {
    /// The size of the block.
    pub fn allocated_bytes(&self) -> usize {
        self.inner.layout.alloc_size(self.bin.get())
    }
}

impl<A: Allocator> Drop for LocalBlock<'_, A> {
    fn drop(&mut self) {
        release(
            self.inner,
            &mut self.block,
            self.bin.get(),
            self.requested,
            self.trace_id,
        );
    }
}
