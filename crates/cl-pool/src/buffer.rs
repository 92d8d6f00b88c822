//! OpenCL buffer allocators and pooled buffers (PyOpenCL's `DeferredAllocator`,
//! `ImmediateAllocator` and `PooledBuffer`, reference sections 3.4 and 3.5).
//!
//! Differences from PyOpenCL, each deliberate:
//!
//! - `ImmediateAllocator` forces the buffer with a migration on 1.2+ devices (as PyOpenCL) and with
//!   a *blocking* 4-byte write of a source it owns before (PyOpenCL issues a non-blocking write from
//!   a stack variable); a failed force releases the buffer (PyOpenCL leaks it).
//! - Pooled buffers are protected against cross-queue reuse (PyOpenCL's open issue #447): every
//!   block remembers the queues it was used on; handing it to a different queue enqueues a marker
//!   on each old queue, flushes it (the spec's condition for a wait across queues), and a barrier
//!   on the new one waiting for those markers (no event is kept, so
//!   none leaks); an allocator without a queue finishes the old queues instead.
//! - A [`PooledBuffer`] dereferences to its [`Buffer`], so transfers, fills, maps, kernel arguments
//!   (`&pooled`), migration (`&[&*pooled]`) and sub-buffers take it (PyOpenCL refuses
//!   it for migration and slicing, its issues #335 and section 9.11). It does not implement
//!   `cl_mem::MemObject` itself: that trait is `unsafe` and this crate has no `unsafe`.
//!   [`PoolBlock::slice`] gives a sub-buffer that cannot outlive the pooled block.
//! - **A pooled buffer's memory goes to the next owner only when nothing else reaches it**
//!   (PyOpenCL hands it out regardless). A clone or sub-buffer taken through `Deref`, an image
//!   over it, or a **kernel argument** (a `Kernel` keeps the buffer it was given until the
//!   argument is replaced or the kernel dropped) may outlive the block; at the next hand-out the
//!   allocator sees that ([`Buffer::is_unique`], a few loads) and gives the block other memory:
//!   its spare once nothing reaches that, else a new buffer, keeping the memory it gave up as the
//!   spare. Commands already enqueued do not count (the command record orders new work after
//!   them). So the pattern "cached kernel, fresh block per call" alternates two buffers and
//!   allocates nothing after its second call. The spare is the allocator's, not the pool's: the
//!   pool's byte counts and policies do not see it, it is freed with its block, and an
//!   allocation failure while replacing held memory is the hit's error (the block stays in the
//!   pool). Rejected: a `Deref` to a non-`Clone` view (a change of every transfer method's
//!   receiver across cl-mem, and kernels would still need this), a generation count touched on
//!   every hand-out, and freeing a block held by a kernel slot instead of keeping it (every call
//!   of the cached-kernel pattern would allocate).

use std::fmt;
use std::ops::Deref;

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use cl_mem::{
    AsBuffer, AsKernelArg, Buffer, Context, Error, MemFlags, MigrationFlags, Queue, Version,
};

use crate::allocator::{unless_zero, Allocator, AllocatorError};
use crate::pool::{LocalBlock, PoolBlock};
use cl_mem::RawHandle;

impl AllocatorError for Error {
    fn is_out_of_memory(&self) -> bool {
        Error::is_out_of_memory(self)
    }
}

/// A pooled buffer: a [`PoolBlock`] whose block is a [`BufferBlock`].
pub type PooledBuffer<A = ImmediateAllocator> = PoolBlock<A>;

/// A buffer held by a pool, with the queues it was last used on.
///
/// One pointer: a pool hit moves it from the thread's cache into the handle in a register and a
/// return moves it back, so a pooled buffer's handle is six words written once, never a
/// 56-byte block copied through memory (issue 12).
pub struct BufferBlock(Box<BlockParts>);

struct BlockParts {
    buffer: Buffer,
    queues: Vec<Queue>,
    /// The memory this block gave up at its last hand-out because something else could still
    /// reach it (see [`take_unreachable_memory`]); taken back once nothing does. Its `spare` is
    /// always `None`.
    spare: Option<Box<BlockParts>>,
}

impl BufferBlock {
    fn new(buffer: Buffer, queues: Vec<Queue>) -> BufferBlock {
        BufferBlock(Box::new(BlockParts {
            buffer,
            queues,
            spare: None,
        }))
    }
}

impl fmt::Debug for BufferBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferBlock")
            .field("buffer", &self.0.buffer)
            .field("queues", &self.0.queues.len())
            .field("spare", &self.0.spare.as_ref().map(|s| s.buffer.as_raw()))
            .finish()
    }
}

impl BufferBlock {
    /// Queues the block was used on since it was last handed out.
    pub fn queues(&self) -> &[Queue] {
        &self.0.queues
    }

    /// Records that work on `queue` uses the block; the next hand-out to another queue waits for
    /// it. Nothing is enqueued now.
    pub(crate) fn use_on_queue(&mut self, queue: &Queue) {
        if !self.0.queues.iter().any(|q| q == queue) {
            self.0.queues.push(queue.clone());
        }
    }

    /// Makes the block safe to use on `queue`: work on `queue` enqueued after this call waits for
    /// all work enqueued so far on the other queues the block was used on. Then the block belongs
    /// to `queue` alone.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from the marker, flush, barrier or finish calls.
    pub(crate) fn bind_to_queue(&mut self, queue: &Queue) -> Result<(), Error> {
        sync_to(&mut self.0.queues, Some(queue))
    }
}

impl Deref for BufferBlock {
    type Target = Buffer;

    fn deref(&self) -> &Buffer {
        &self.0.buffer
    }
}

impl BufferBlock {
    /// Releases the buffer and the spare, if any (the first error is returned, both are
    /// released either way).
    fn release(self) -> Result<(), Error> {
        let BlockParts { buffer, spare, .. } = *self.0;
        let first = buffer.release();
        let second = spare.map_or(Ok(()), |s| s.buffer.release());
        first.and(second)
    }
}

/// Readies a block for a hand-out: when something other than the block can still reach its
/// buffer (a clone, a sub-buffer, an image, a kernel argument slot: [`Buffer::is_unique`]), the
/// block's memory must not go to the new owner. The block then takes its spare if nothing
/// reaches that any more, else new memory from `allocate`, and keeps the memory it gave up as its
/// spare (an older spare still reached is released: its holders own it alone from then on).
///
/// The spare is what keeps the common "cached kernel, fresh block per call" pattern reusing
/// memory: the kernel's slot holds the previous call's memory until the argument is replaced, so
/// two memories alternate and no call allocates.
#[inline(always)]
fn ready_for_hand_out(
    block: &mut BufferBlock,
    allocate: impl FnOnce(usize) -> Result<Option<BufferBlock>, Error>,
) -> Result<(), Error> {
    if block.0.buffer.is_unique() {
        Ok(())
    } else {
        take_unreachable_memory(block, allocate)
    }
}

#[cold]
#[inline(never)]
fn take_unreachable_memory(
    block: &mut BufferBlock,
    allocate: impl FnOnce(usize) -> Result<Option<BufferBlock>, Error>,
) -> Result<(), Error> {
    let mut next = match block.0.spare.take() {
        Some(spare) if spare.buffer.is_unique() => spare,
        older => {
            // Nothing changes before the allocation succeeded: on an error the pool keeps the
            // block (with its spare) and tries again at the next hand-out.
            let fresh = allocate(block.0.buffer.size_bytes());
            match fresh {
                Ok(Some(b)) => {
                    drop(older);
                    b.0
                }
                Ok(None) => {
                    block.0.spare = older;
                    return Err(Error::InvalidArgument(
                        "a pooled buffer of zero bytes cannot be replaced".into(),
                    ));
                }
                Err(e) => {
                    block.0.spare = older;
                    return Err(e);
                }
            }
        }
    };
    std::mem::swap(&mut block.0, &mut next);
    block.0.spare = Some(next);
    Ok(())
}

/// Synchronises a block's old queues with `to` (or with the host when `None`), then records `to`.
#[inline(always)]
fn sync_to(queues: &mut Vec<Queue>, to: Option<&Queue>) -> Result<(), Error> {
    // The pool-hit fast path: already bound to `to` alone (or to nothing). No driver call, no
    // allocation: in-order semantics order the new work after the old.
    match (queues.as_slice(), to) {
        ([only], Some(to)) if only == to => Ok(()),
        ([], None) => Ok(()),
        _ => sync_to_slow(queues, to),
    }
}

#[cold]
#[inline(never)]
fn sync_to_slow(queues: &mut Vec<Queue>, to: Option<&Queue>) -> Result<(), Error> {
    // The old queues stay recorded until every call succeeded: a failed marker, flush, barrier
    // or finish leaves them there, so the next hand-out synchronises again (forgetting them
    // would let that hand-out's work overlap theirs).
    let others: Vec<&Queue> = queues
        .iter()
        .filter(|q| to.is_none_or(|t| *q != t))
        .collect();
    if !others.is_empty() {
        match to {
            Some(to) if to.device().platform_version() >= Version::V1_2 => {
                let mut markers = Vec::with_capacity(others.len());
                for p in &others {
                    markers.push(p.enqueue_marker(&[])?);
                    // The spec (clFlush): a command may wait on an event of another queue only
                    // once that queue is flushed; unflushed, the wait may never end.
                    p.flush()?;
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
    queues.clear();
    if let Some(to) = to {
        queues.push(to.clone());
    }
    Ok(())
}

fn check_flags(flags: MemFlags) -> Result<(), Error> {
    if flags.intersects(MemFlags::USE_HOST_PTR | MemFlags::COPY_HOST_PTR) {
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
        unless_zero(size, || {
            let buffer = Buffer::new(&self.context, self.flags, size)?;
            Ok(BufferBlock::new(buffer, Vec::new()))
        })
    }

    fn free(&self, block: BufferBlock) -> Result<(), Error> {
        block.release()
    }

    fn is_deferred(&self) -> bool {
        true
    }

    #[inline(always)]
    fn hand_out_existing_block(&self, block: &mut BufferBlock) -> Result<(), Error> {
        ready_for_hand_out(block, |size| self.allocate(size))?;
        // No queue of our own: wait on the host for the old queues (PyOpenCL's SVM rule).
        sync_to(&mut block.0.queues, None)
    }
}

/// How [`ImmediateAllocator`] forces a new buffer into existence on its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ForceMode {
    /// PyOpenCL's choice: [`ForceMode::Migrate`] on OpenCL 1.2+ devices and platforms,
    /// [`ForceMode::Write`] before.
    #[default]
    Auto,
    /// `clEnqueueMigrateMemObjects` with undefined contents (1.2+; not waited for, as PyOpenCL).
    Migrate,
    /// A blocking write of up to 4 zero bytes (any version).
    Write,
}

/// `clCreateBuffer` plus forcing the memory into existence on the queue's device (PyOpenCL's
/// `ImmediateAllocator`): a migration on OpenCL 1.2+ devices, a blocking 4-byte write before, so
/// out-of-memory is reported by the allocation, as a pool needs.
#[derive(Debug, Clone)]
pub struct ImmediateAllocator {
    queue: Queue,
    flags: MemFlags,
    force: ForceMode,
}

impl ImmediateAllocator {
    /// An allocator of `flags` buffers forced on `queue`'s device.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `USE_HOST_PTR` / `COPY_HOST_PTR`.
    pub fn new(queue: &Queue, flags: MemFlags) -> Result<Self, Error> {
        Self::with_force_mode(queue, flags, ForceMode::Auto)
    }

    /// As [`new`](Self::new), with an explicit way of forcing new buffers.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `USE_HOST_PTR` / `COPY_HOST_PTR`; [`Error::Unsupported`]
    /// for [`ForceMode::Migrate`] on a device or platform older than OpenCL 1.2.
    pub fn with_force_mode(
        queue: &Queue,
        flags: MemFlags,
        force: ForceMode,
    ) -> Result<Self, Error> {
        check_flags(flags)?;
        if force == ForceMode::Migrate {
            queue
                .device()
                .require_version(Version::V1_2, "clEnqueueMigrateMemObjects")?;
        }
        Ok(Self {
            queue: queue.clone(),
            flags,
            force,
        })
    }

    /// The force mode.
    pub fn force_mode(&self) -> ForceMode {
        self.force
    }

    /// The queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    fn force(&self, buffer: &Buffer) -> Result<(), Error> {
        let device = self.queue.device();
        let migrate = match self.force {
            ForceMode::Migrate => true,
            ForceMode::Write => false,
            ForceMode::Auto => {
                device.version() >= Version::V1_2 && device.platform_version() >= Version::V1_2
            }
        };
        if migrate {
            // PyOpenCL PR #389: migrate with undefined contents; not waited for, as in PyOpenCL
            // (allocation failure is reported at enqueue time). The event is released at once.
            cl_mem::enqueue_migrate_mem_objects(
                &self.queue,
                &[buffer],
                MigrationFlags::CONTENT_UNDEFINED,
                &[],
            )?;
        } else {
            // Blocking: the source lives on this stack frame only (PyOpenCL's pre-1.2 write is
            // non-blocking from a stack variable).
            let zero = [0u8; 4];
            let n = buffer.size_bytes().min(4);
            buffer.write(&self.queue, &zero[..n], &[])?;
        }
        Ok(())
    }
}

impl Allocator for ImmediateAllocator {
    type Block = BufferBlock;
    type Error = Error;

    fn allocate(&self, size: usize) -> Result<Option<BufferBlock>, Error> {
        unless_zero(size, || {
            let buffer = Buffer::new(self.queue.context(), self.flags, size)?;
            // On failure `buffer` is dropped, i.e. released (PyOpenCL leaks it).
            self.force(&buffer)?;
            Ok(BufferBlock::new(buffer, vec![self.queue.clone()]))
        })
    }

    fn free(&self, block: BufferBlock) -> Result<(), Error> {
        block.release()
    }

    #[inline(always)]
    fn hand_out_existing_block(&self, block: &mut BufferBlock) -> Result<(), Error> {
        ready_for_hand_out(block, |size| self.allocate(size))?;
        sync_to(&mut block.0.queues, Some(&self.queue))
    }
}

impl<A: Allocator<Block = BufferBlock>> PoolBlock<A> {
    /// Records that work on `queue` uses this buffer: the next hand-out of the block to another
    /// queue waits for it (nothing is enqueued now). Buffers need it no more (their command
    /// record orders a new owner's commands after the old ones); it keeps the block's
    /// [`queues`](BufferBlock::queues) saying so.
    pub fn use_on_queue(&mut self, queue: &Queue) {
        self.block_mut().use_on_queue(queue);
    }

    /// The *requested* bytes read into a new vector of `T` (the pool's buffer may be larger:
    /// its bin's size), after every command enqueued before on `queue`; see
    /// [`Buffer::to_vec`].
    ///
    /// # Errors
    ///
    /// As [`Buffer::read`].
    pub fn to_vec<T: cl_mem::Pod>(&self, queue: &Queue) -> Result<Vec<T>, Error> {
        read_requested(&self.block().0.buffer, self.requested_bytes(), queue)
    }

    /// Makes the block safe to use on `queue`: work on `queue` enqueued after this call waits for
    /// all work enqueued so far on the other queues the block was used on; then the block
    /// belongs to `queue` alone (PyOpenCL's `bind_to_queue`).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from the marker, flush, barrier or finish calls.
    pub fn bind_to_queue(&mut self, queue: &Queue) -> Result<(), Error> {
        self.block_mut().bind_to_queue(queue)
    }
}

/// A sub-buffer of a pooled buffer that cannot outlive it (see [`PoolBlock::slice`]).
#[derive(Debug)]
pub struct PooledSlice<'a> {
    buffer: Buffer,
    _block: PhantomData<&'a BufferBlock>,
}

impl Deref for PooledSlice<'_> {
    type Target = Buffer;

    fn deref(&self) -> &Buffer {
        &self.buffer
    }
}

impl<A: Allocator<Block = BufferBlock>> PoolBlock<A> {
    /// A sub-buffer over `range` of the *requested* bytes, borrowing the pooled block so it cannot
    /// be used after the block returns to the pool (PyOpenCL cannot slice pooled buffers, its
    /// issue #335).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfBounds`] past the requested size, [`Error::InvalidArgument`] for an empty
    /// range, and as [`Buffer::sub_buffer`] (alignment, versions, the driver).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<PooledSlice<'_>, Error> {
        let len = self.requested_bytes();
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => len,
        };
        if end <= start {
            return Err(Error::InvalidArgument(format!(
                "empty slice {start}..{end} of a pooled buffer"
            )));
        }
        if end > len {
            return Err(Error::OutOfBounds {
                what: "pooled buffer slice",
                offset: start,
                len: end - start,
                size: len,
            });
        }
        Ok(PooledSlice {
            buffer: self
                .block()
                .0
                .buffer
                .sub_buffer(start, end - start, MemFlags::empty())?,
            _block: PhantomData,
        })
    }
}

impl<A: Allocator<Block = BufferBlock>> Deref for PoolBlock<A> {
    type Target = Buffer;

    fn deref(&self) -> &Buffer {
        &self.block().0.buffer
    }
}

impl<A: Allocator<Block = BufferBlock>> AsRef<Buffer> for PoolBlock<A> {
    fn as_ref(&self) -> &Buffer {
        self
    }
}

// Pooled buffers stand for their buffers wherever cl-mem takes one: `enqueue_copy`, `copy_from`,
// image copies (`AsBuffer`) and `Kernel::set_arg` (`AsKernelArg`). Both traits are safe to
// implement: they hand out a reference to a buffer whose own implementations keep the promises.

impl<A: Allocator<Block = BufferBlock>> AsBuffer for PoolBlock<A> {
    fn as_buffer(&self) -> &Buffer {
        self
    }
}

impl<A: Allocator<Block = BufferBlock>> AsKernelArg for PoolBlock<A> {
    type Arg = Buffer;

    fn as_kernel_arg(&self) -> &Buffer {
        self
    }
}

/// The whole `T`s of the first `requested` bytes of a pooled `buffer`, read after every command
/// enqueued before on `queue` (the `to_vec` of [`PoolBlock`] and [`LocalBlock`]).
fn read_requested<T: cl_mem::Pod>(
    buffer: &Buffer,
    requested: usize,
    queue: &Queue,
) -> Result<Vec<T>, Error> {
    let len = requested.checked_div(std::mem::size_of::<T>()).unwrap_or(0);
    buffer.read_vec_of(queue, len)
}

impl<A: Allocator<Block = BufferBlock>> LocalBlock<'_, A> {
    /// The *requested* bytes read into a new vector of `T`, as [`PoolBlock::to_vec`].
    ///
    /// # Errors
    ///
    /// As [`Buffer::read`].
    pub fn to_vec<T: cl_mem::Pod>(&self, queue: &Queue) -> Result<Vec<T>, Error> {
        read_requested(&self.block().0.buffer, self.requested_bytes(), queue)
    }
}

impl<A: Allocator<Block = BufferBlock>> AsBuffer for LocalBlock<'_, A> {
    fn as_buffer(&self) -> &Buffer {
        &self.block().0.buffer
    }
}

impl<A: Allocator<Block = BufferBlock>> AsKernelArg for LocalBlock<'_, A> {
    type Arg = Buffer;

    fn as_kernel_arg(&self) -> &Buffer {
        &self.block().0.buffer
    }
}

impl AsBuffer for PooledSlice<'_> {
    fn as_buffer(&self) -> &Buffer {
        &self.buffer
    }
}

impl AsKernelArg for PooledSlice<'_> {
    type Arg = Buffer;

    fn as_kernel_arg(&self) -> &Buffer {
        &self.buffer
    }
}

impl AsBuffer for BufferBlock {
    fn as_buffer(&self) -> &Buffer {
        &self.0.buffer
    }
}

impl AsKernelArg for BufferBlock {
    type Arg = Buffer;

    fn as_kernel_arg(&self) -> &Buffer {
        &self.0.buffer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hit moves the handle out of `allocate` and a return moves the block back into the
    /// cache. The block is one pointer and the handle five words, written once by the hit; the
    /// 56-byte block (and before it the 88-byte `Buffer`, with three `memcpy` calls) made
    /// copies through memory that stalled on store forwarding (issue 12).
    #[test]
    fn pooled_buffer_handle_is_copied_inline() {
        assert_eq!(std::mem::size_of::<BufferBlock>(), 8);
        assert_eq!(std::mem::size_of::<Option<BufferBlock>>(), 8);
        assert_eq!(std::mem::size_of::<PooledBuffer>(), 40);
        assert!(std::mem::size_of::<Result<PooledBuffer, crate::PoolError<Error>>>() <= 128);
    }
}
