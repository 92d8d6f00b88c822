//! Pools over a multi-device context: one [`MemoryPool`] per device, or one shared by all.
//!
//! # Design: per device or shared
//!
//! A buffer belongs to a context, not a device: a block from any pool of the context can be a
//! kernel argument or a transfer on every device's queue, and `cl-mem`'s command record orders it
//! (a block last written on device A and used on device B waits for A's command; the driver moves
//! the bytes). Two layouts follow, both supported:
//!
//! - **One shared pool** ([`MemoryPool`] over an [`ImmediateAllocator`] on any of the context's
//!   queues): the fewest held bytes; a block freed by device A's work is reused by device B's.
//!   The immediate allocator places fresh blocks on *its* queue's device, so B's first use of a
//!   block moves it; statistics are for the whole context.
//! - **One pool per device** ([`DevicePools`]): every block is created (and, with the immediate
//!   allocator's forcing, resident) on the device that asked for it, a bin's held blocks stay on
//!   their device, and statistics are per device ([`DevicePools::stats`]). Blocks can still be used
//!   on the other devices (they are context buffers); they return to the pool they came from.
//!
//! PyOpenCL has only the first: its `MemoryPool(ImmediateAllocator(queue))` on a multi-device
//! context.

use cl_mem::{Context, Device, Error, MemFlags, Queue};

use crate::buffer::{ImmediateAllocator, PooledBuffer};
use crate::error::PoolError;
use crate::pool::MemoryPool;
use crate::stats::PoolStats;
use cl_mem::RawHandle;

/// One [`MemoryPool`] per device of a context, each over an [`ImmediateAllocator`] on that
/// device's queue; see the module documentation.
#[derive(Debug, Clone)]
pub struct DevicePools {
    context: Context,
    pools: Vec<(Device, MemoryPool<ImmediateAllocator>)>,
}

impl DevicePools {
    /// A pool per queue, for queues of one context on distinct devices.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for no queue, queues of several contexts or two queues on one
    /// device (checked first); as [`ImmediateAllocator::new`].
    pub fn new(queues: &[Queue], flags: MemFlags) -> Result<DevicePools, Error> {
        let first = queues.first().ok_or_else(|| {
            Error::InvalidArgument("per-device pools need at least one queue".into())
        })?;
        let context = first.context().clone();
        let mut pools: Vec<(Device, MemoryPool<ImmediateAllocator>)> = Vec::new();
        for q in queues {
            if q.context().as_raw() != context.as_raw() {
                return Err(Error::InvalidArgument(
                    "per-device pools need queues of one context".into(),
                ));
            }
            let device = *q.device();
            if pools.iter().any(|(d, _)| *d == device) {
                return Err(Error::InvalidArgument(
                    "two queues on one device: per-device pools take one queue per device".into(),
                ));
            }
            pools.push((device, MemoryPool::new(ImmediateAllocator::new(q, flags)?)));
        }
        Ok(DevicePools { context, pools })
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The devices, in the order of the queues given.
    pub fn devices(&self) -> impl Iterator<Item = &Device> {
        self.pools.iter().map(|(d, _)| d)
    }

    /// The pool of `device`, if it has one.
    pub fn pool(&self, device: &Device) -> Option<&MemoryPool<ImmediateAllocator>> {
        self.pools.iter().find(|(d, _)| d == device).map(|(_, p)| p)
    }

    /// Allocates `size` bytes from the pool of `queue`'s device.
    ///
    /// # Errors
    ///
    /// [`PoolError::Allocator`] with [`Error::InvalidArgument`] when the queue belongs to another
    /// context (a sub-device can be in several) or its device has no pool here; as
    /// [`MemoryPool::allocate`].
    pub fn allocate(&self, queue: &Queue, size: usize) -> Result<PooledBuffer, PoolError<Error>> {
        if queue.context().as_raw() != self.context.as_raw() {
            return Err(PoolError::Allocator(Error::InvalidArgument(
                "the queue belongs to another context than the pools".into(),
            )));
        }
        let pool = self.pool(queue.device()).ok_or_else(|| {
            PoolError::Allocator(Error::InvalidArgument(format!(
                "no pool for the queue's device '{}'",
                queue.device().name().unwrap_or_default().trim()
            )))
        })?;
        pool.allocate(size)
    }

    /// Statistics per device, in the order of [`devices`](Self::devices).
    pub fn stats(&self) -> Vec<(Device, PoolStats)> {
        self.pools.iter().map(|(d, p)| (*d, p.stats())).collect()
    }

    /// The statistics of every device summed (peaks are summed too: an upper bound).
    pub fn total_stats(&self) -> PoolStats {
        let mut t = PoolStats::default();
        for (_, p) in &self.pools {
            let s = p.stats();
            t.held_blocks += s.held_blocks;
            t.active_blocks += s.active_blocks;
            t.managed_bytes += s.managed_bytes;
            t.active_bytes += s.active_bytes;
            t.held_bytes += s.held_bytes;
            t.active_rounded_bytes += s.active_rounded_bytes;
            t.peak_managed_bytes += s.peak_managed_bytes;
            t.peak_active_bytes += s.peak_active_bytes;
            t.hits += s.hits;
            t.larger_bin_hits += s.larger_bin_hits;
            t.misses += s.misses;
            t.reclaims += s.reclaims;
            t.oom_events += s.oom_events;
            t.oom_failures += s.oom_failures;
            t.upstream_allocations += s.upstream_allocations;
            t.upstream_frees += s.upstream_frees;
            t.free_errors += s.free_errors;
            t.largest_held_block = t.largest_held_block.max(s.largest_held_block);
            t.tick += s.tick;
        }
        t
    }

    /// Frees the held blocks of every pool.
    pub fn free_held(&self) {
        for (_, p) in &self.pools {
            p.free_held();
        }
    }
}
