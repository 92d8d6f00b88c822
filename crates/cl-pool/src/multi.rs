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
//!   their device, and statistics are per device (each pool's, [`DevicePools::pools`]). Blocks can still be used
//!   on the other devices (they are context buffers); they return to the pool they came from.
//!
//! PyOpenCL has only the first: its `MemoryPool(ImmediateAllocator(queue))` on a multi-device
//! context.

use cl_mem::{Context, Device, Error, MemFlags, Queue};

use crate::buffer::{ImmediateAllocator, PooledBuffer};
use crate::error::PoolError;
use crate::pool::MemoryPool;
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

    /// The pools, one per device, in the order of the queues given: look one up by device
    /// (`pools().iter().find(|(d, _)| d == device)`), read each one's statistics, free their
    /// held blocks.
    pub fn pools(&self) -> &[(Device, MemoryPool<ImmediateAllocator>)] {
        &self.pools
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
        let pool = self.pools.iter().find(|(d, _)| d == queue.device());
        let (_, pool) = pool.ok_or_else(|| {
            PoolError::Allocator(Error::InvalidArgument(format!(
                "no pool for the queue's device '{}'",
                queue.device().name().unwrap_or_default().trim()
            )))
        })?;
        pool.allocate(size)
    }
}
