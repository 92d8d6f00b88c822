//! OpenCL buffer allocators and pooled buffers (PyOpenCL's `DeferredAllocator`,
//! `ImmediateAllocator` and `PooledBuffer`, reference sections 3.4 and 3.5).
//!
//! Differences from PyOpenCL, each deliberate:
//!
//! - `ImmediateAllocator` forces the buffer with a *blocking* 4-byte write of a source it owns
//!   (PyOpenCL issues a non-blocking write from a stack variable on pre-1.2 devices, a migration on
//!   1.2+; cl-mem has no migration yet); a failed force releases the buffer (PyOpenCL leaks it).
//! - Pooled buffers are protected against cross-queue reuse (PyOpenCL's open issue #447): every
//!   block remembers the queues it was used on; handing it to a different queue enqueues a marker
//!   on each old queue and a barrier on the new one waiting for those markers (no event is kept, so
//!   none leaks); an allocator without a queue finishes the old queues instead.
//! - A [`PooledBuffer`] dereferences to its [`Buffer`], so transfers, fills, maps, kernel arguments,
//!   migration and sub-buffers take it (PyOpenCL refuses it for migration and slicing).

use std::fmt;
use std::ops::Deref;

use cl_mem::{Buffer, Context, Error, MemFlags, Queue};

use crate::allocator::{Allocator, AllocatorError};
use crate::pool::PoolBlock;

impl AllocatorError for Error {
    fn is_out_of_memory(&self) -> bool {
        Error::is_out_of_memory(self)
    }
}

/// A pooled buffer: a [`PoolBlock`] whose block is a [`BufferBlock`].
pub type PooledBuffer<A = ImmediateAllocator> = PoolBlock<A>;

/// A buffer held by a pool, with the queues it was last used on.
pub struct BufferBlock {
    buffer: Buffer,
    queues: Vec<Queue>,
}

impl fmt::Debug for BufferBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferBlock")
            .field("buffer", &self.buffer)
            .field("queues", &self.queues.len())
            .finish()
    }
}

impl BufferBlock {
    /// The buffer.
    pub fn buffer(&self) -> &Buffer {
        &self.buffer
    }

    /// Queues the block was used on since it was last handed out.
    pub fn queues(&self) -> &[Queue] {
        &self.queues
    }

    /// Records that work on `queue` uses the block; the next hand-out to another queue waits for
    /// it. Nothing is enqueued now.
    pub fn use_on_queue(&mut self, queue: &Queue) {
        if !self.queues.iter().any(|q| q == queue) {
            self.queues.push(queue.clone());
        }
    }

    /// Makes the block safe to use on `queue`: work on `queue` enqueued after this call waits for
    /// all work enqueued so far on the other queues the block was used on. Then the block belongs
    /// to `queue` alone.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from the marker, barrier or finish calls.
    pub fn bind_to_queue(&mut self, queue: &Queue) -> Result<(), Error> {
        sync_to(&mut self.queues, Some(queue))
    }
}

impl Deref for BufferBlock {
    type Target = Buffer;

    fn deref(&self) -> &Buffer {
        &self.buffer
    }
}

/// Synchronises a block's old queues with `to` (or with the host when `None`), then records `to`.
fn sync_to(queues: &mut Vec<Queue>, to: Option<&Queue>) -> Result<(), Error> {
    let others: Vec<Queue> = queues
        .drain(..)
        .filter(|q| to.is_none_or(|t| q != t))
        .collect();
    if !others.is_empty() {
        match to {
            Some(to) if to.device().platform_version() >= cl_mem::Version::V1_2 => {
                let mut markers = Vec::with_capacity(others.len());
                for p in &others {
                    markers.push(p.enqueue_marker(&[])?);
                }
                let refs: Vec<&cl_mem::Event> = markers.iter().collect();
                // A barrier, not PyOpenCL's marker: it also orders out-of-order queues. The events
                // are dropped (released) here: nothing leaks per hand-off.
                to.enqueue_barrier(&refs)?;
            }
            _ => {
                for p in &others {
                    p.finish()?;
                }
            }
        }
    }
    if let Some(to) = to {
        queues.push(to.clone());
    }
    Ok(())
}

fn check_flags(flags: MemFlags) -> Result<(), Error> {
    if flags.intersects(MemFlags::HOST_PTR_FLAGS) {
        Err(Error::InvalidArgument(
            "cannot specify USE_HOST_PTR or COPY_HOST_PTR flags".into(),
        ))
    } else {
        Ok(())
    }
}

/// Plain `clCreateBuffer` (PyOpenCL's `DeferredAllocator`): the driver may allocate lazily and
/// report out-of-memory long after, so a pool over it warns.
#[derive(Debug, Clone)]
pub struct DeferredAllocator {
    context: Context,
    flags: MemFlags,
}

impl DeferredAllocator {
    /// An allocator of `flags` buffers in `context`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `USE_HOST_PTR` / `COPY_HOST_PTR` (PyOpenCL's "cannot specify
    /// USE_HOST_PTR or COPY_HOST_PTR flags").
    pub fn new(context: &Context, flags: MemFlags) -> Result<Self, Error> {
        check_flags(flags)?;
        Ok(Self {
            context: context.clone(),
            flags,
        })
    }

    /// The context.
    pub fn context(&self) -> &Context {
        &self.context
    }
}

impl Allocator for DeferredAllocator {
    type Block = BufferBlock;
    type Error = Error;

    fn allocate(&self, size: usize) -> Result<Option<BufferBlock>, Error> {
        if size == 0 {
            return Ok(None);
        }
        let buffer = Buffer::new(&self.context, self.flags, size)?;
        Ok(Some(BufferBlock {
            buffer,
            queues: Vec::new(),
        }))
    }

    fn free(&self, block: BufferBlock) -> Result<(), Error> {
        block.buffer.release()
    }

    fn is_deferred(&self) -> bool {
        true
    }

    fn hand_out_existing_block(&self, block: &mut BufferBlock) -> Result<(), Error> {
        // No queue of our own: wait on the host for the old queues (PyOpenCL's SVM rule).
        sync_to(&mut block.queues, None)
    }
}

/// `clCreateBuffer` plus forcing the memory into existence on the queue's device (PyOpenCL's
/// `ImmediateAllocator`): a migration on OpenCL 1.2+ devices, a blocking 4-byte write before, so
/// out-of-memory is reported by the allocation, as a pool needs.
#[derive(Debug, Clone)]
pub struct ImmediateAllocator {
    queue: Queue,
    flags: MemFlags,
}

impl ImmediateAllocator {
    /// An allocator of `flags` buffers forced on `queue`'s device.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `USE_HOST_PTR` / `COPY_HOST_PTR`.
    pub fn new(queue: &Queue, flags: MemFlags) -> Result<Self, Error> {
        check_flags(flags)?;
        Ok(Self {
            queue: queue.clone(),
            flags,
        })
    }

    /// The queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    fn force(&self, buffer: &Buffer) -> Result<(), Error> {
        // PyOpenCL uses clEnqueueMigrateMemObjects on 1.2+ devices; cl-mem has no migration yet,
        // so every version takes the pre-1.2 path: a 4-byte write, blocking because its source
        // lives on this stack frame only (PyOpenCL's write is non-blocking from a stack variable).
        let zero = [0u8; 4];
        let n = buffer.size_bytes().min(4);
        buffer.write_bytes(&self.queue, 0, &zero[..n], &[])?;
        Ok(())
    }
}

impl Allocator for ImmediateAllocator {
    type Block = BufferBlock;
    type Error = Error;

    fn allocate(&self, size: usize) -> Result<Option<BufferBlock>, Error> {
        if size == 0 {
            return Ok(None);
        }
        let buffer = Buffer::new(self.queue.context(), self.flags, size)?;
        // On failure `buffer` is dropped, i.e. released (PyOpenCL leaks it).
        self.force(&buffer)?;
        Ok(Some(BufferBlock {
            buffer,
            queues: vec![self.queue.clone()],
        }))
    }

    fn free(&self, block: BufferBlock) -> Result<(), Error> {
        block.buffer.release()
    }

    fn hand_out_existing_block(&self, block: &mut BufferBlock) -> Result<(), Error> {
        sync_to(&mut block.queues, Some(&self.queue))
    }
}

impl<A: Allocator<Block = BufferBlock>> PoolBlock<A> {
    /// The buffer (also reachable through `Deref`).
    pub fn buffer(&self) -> &Buffer {
        &self.block().buffer
    }

    /// Records that work on `queue` uses this buffer (see [`BufferBlock::use_on_queue`]).
    pub fn use_on_queue(&mut self, queue: &Queue) {
        self.block_mut().use_on_queue(queue);
    }

    /// Orders `queue` after the buffer's other queues (see [`BufferBlock::bind_to_queue`]).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from the marker, barrier or finish calls.
    pub fn bind_to_queue(&mut self, queue: &Queue) -> Result<(), Error> {
        self.block_mut().bind_to_queue(queue)
    }
}

impl<A: Allocator<Block = BufferBlock>> Deref for PoolBlock<A> {
    type Target = Buffer;

    fn deref(&self) -> &Buffer {
        self.buffer()
    }
}

impl<A: Allocator<Block = BufferBlock>> AsRef<Buffer> for PoolBlock<A> {
    fn as_ref(&self) -> &Buffer {
        self.buffer()
    }
}
