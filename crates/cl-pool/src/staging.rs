//! A pinned-host staging pool and a pageable host-to-device path through it (issue 8).
//!
//! Pageable host memory cannot be DMA'd directly: drivers copy it through their own pinned
//! bounce buffers, which on NVIDIA limits PyOpenCL's pageable writes to 7-10 GB/s against 54 GB/s
//! from pinned memory. [`write_staged`] cuts the source into chunks, copies each into a pinned
//! block of a [`MemoryPool`] over [`PinnedAllocator`] (binned like the device pool, so the blocks
//! are reused across calls), and writes it from there, the copy of chunk `i + 1` overlapping the
//! device write of chunk `i` (two threads: the caller copies, a scoped thread writes).
//!
//! Whether it wins depends on the driver: on CPU runtimes (PoCL, Intel) a "device" write is a
//! memcpy and staging only adds one; on a discrete GPU it should lift pageable writes toward the
//! pinned rate, bounded by the host memcpy rate. The benches `staged_write/<bytes>` and
//! `buffer_write/<bytes>` measure both; keep using it only where it wins.

use std::sync::mpsc;

use cl_mem::{Buffer, Error, PinnedMemory, Queue};

use crate::allocator::Allocator;
use crate::error::PoolError;
use crate::pool::MemoryPool;

/// Pinned (`ALLOC_HOST_PTR`, mapped) host memory blocks, mapped on one queue.
#[derive(Debug, Clone)]
pub struct PinnedAllocator {
    queue: Queue,
}

impl PinnedAllocator {
    /// Pinned memory of `queue`'s context, mapped (and later unmapped) on `queue`.
    pub fn new(queue: &Queue) -> Self {
        Self {
            queue: queue.clone(),
        }
    }
}

impl Allocator for PinnedAllocator {
    type Block = PinnedMemory<u8>;
    type Error = Error;

    fn allocate(&self, size: usize) -> Result<Option<PinnedMemory<u8>>, Error> {
        if size == 0 {
            return Ok(None);
        }
        PinnedMemory::new(&self.queue, size).map(Some)
    }

    fn free(&self, block: PinnedMemory<u8>) -> Result<(), Error> {
        drop(block);
        Ok(())
    }
}

/// A pool of pinned staging blocks.
pub type StagingPool = MemoryPool<PinnedAllocator>;

/// Writes pageable `data` to `dst` at `offset_bytes` through pinned blocks of `staging`, `chunk`
/// bytes at a time, overlapping the host copy of one chunk with the device write of the previous.
/// Blocking: returns when every byte is written.
///
/// # Errors
///
/// [`PoolError::Allocator`] with [`Error::OutOfBounds`] when the range does not fit `dst`, or
/// [`Error::InvalidArgument`] for `chunk == 0` (both checked first); otherwise what the staging
/// pool or the writes report (the first error stops the transfer; chunks already written stay).
///
/// # Panics
///
/// Never; a panic of the writer thread (there is no code that panics in it) would be reported as
/// an error.
pub fn write_staged(
    queue: &Queue,
    dst: &Buffer,
    offset_bytes: usize,
    data: &[u8],
    staging: &StagingPool,
    chunk: usize,
) -> Result<(), PoolError<Error>> {
    if chunk == 0 {
        return Err(PoolError::Allocator(Error::InvalidArgument(
            "staging chunk size must be positive".into(),
        )));
    }
    if offset_bytes
        .checked_add(data.len())
        .is_none_or(|end| end > dst.size_bytes())
    {
        return Err(PoolError::Allocator(Error::OutOfBounds {
            what: "staged write",
            offset: offset_bytes,
            len: data.len(),
            size: dst.size_bytes(),
        }));
    }
    if data.is_empty() {
        return Ok(());
    }
    // A ring of up to three pinned blocks circulates between this thread (copy into a block)
    // and a writer thread (write from it, hand it back): one being written, one queued, one being
    // filled. They are taken from the pool before the writer starts and returned at the end, so
    // no driver call of this thread runs concurrently with the writer's on the same queue
    // (Oclgrind crashes on that, though the spec allows it).
    let ring = data.len().div_ceil(chunk).min(3);
    let blocks = (0..ring)
        .map(|_| staging.allocate(chunk))
        .collect::<Result<Vec<_>, _>>()?;
    type Block = crate::PoolBlock<PinnedAllocator>;
    let (free_tx, free_rx) = mpsc::channel::<Block>();
    for b in blocks {
        // The receiver is alive: cannot fail.
        let _ = free_tx.send(b);
    }
    std::thread::scope(|s| {
        let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Block, usize)>(1);
        let writer = s.spawn(move || -> Result<(), Error> {
            for (off, block, len) in work_rx {
                let r = dst.write_bytes(queue, offset_bytes + off, &block.block()[..len], &[]);
                // Handing the block back fails only when the filler stopped: then it is dropped,
                // which returns it to the pool.
                let _ = free_tx.send(block);
                r?;
            }
            Ok(())
        });
        for (i, part) in data.chunks(chunk).enumerate() {
            let Ok(mut block) = free_rx.recv() else {
                break; // the writer stopped on an error, reported below
            };
            block.block_mut()[..part.len()].copy_from_slice(part);
            if work_tx.send((i * chunk, block, part.len())).is_err() {
                break; // likewise
            }
        }
        drop(work_tx);
        let written = writer.join().unwrap_or_else(|_| {
            Err(Error::InvalidArgument(
                "the staging writer thread panicked".into(),
            ))
        });
        written.map_err(PoolError::Allocator)
    })
    // The ring's blocks return to the pool as `free_rx` is dropped here.
}

/// Reads `out.len()` bytes of `src` from `offset_bytes` into pageable `out` through pinned blocks
/// of `staging`, `chunk` bytes at a time, overlapping the device read of one chunk with the host
/// copy of the previous. Blocking.
///
/// # Errors
///
/// As [`write_staged`].
///
/// # Panics
///
/// Never; a panic of the reader thread would be reported as an error.
pub fn read_staged(
    queue: &Queue,
    src: &Buffer,
    offset_bytes: usize,
    out: &mut [u8],
    staging: &StagingPool,
    chunk: usize,
) -> Result<(), PoolError<Error>> {
    if chunk == 0 {
        return Err(PoolError::Allocator(Error::InvalidArgument(
            "staging chunk size must be positive".into(),
        )));
    }
    let total = out.len();
    if offset_bytes
        .checked_add(total)
        .is_none_or(|end| end > src.size_bytes())
    {
        return Err(PoolError::Allocator(Error::OutOfBounds {
            what: "staged read",
            offset: offset_bytes,
            len: total,
            size: src.size_bytes(),
        }));
    }
    if total == 0 {
        return Ok(());
    }
    let ring = total.div_ceil(chunk).min(3);
    let blocks = (0..ring)
        .map(|_| staging.allocate(chunk))
        .collect::<Result<Vec<_>, _>>()?;
    type Block = crate::PoolBlock<PinnedAllocator>;
    let (free_tx, free_rx) = mpsc::channel::<Block>();
    for b in blocks {
        let _ = free_tx.send(b);
    }
    std::thread::scope(|s| {
        let (done_tx, done_rx) = mpsc::sync_channel::<(usize, Block, usize)>(1);
        let reader = s.spawn(move || -> Result<(), Error> {
            let mut off = 0;
            while off < total {
                let len = chunk.min(total - off);
                let Ok(mut block) = free_rx.recv() else {
                    break; // the copier stopped
                };
                src.read_bytes(
                    queue,
                    offset_bytes + off,
                    &mut block.block_mut()[..len],
                    &[],
                )?;
                if done_tx.send((off, block, len)).is_err() {
                    break;
                }
                off += len;
            }
            Ok(())
        });
        for (off, block, len) in done_rx {
            out[off..off + len].copy_from_slice(&block.block()[..len]);
            // Fails only when the reader stopped: the block then returns to the pool on drop.
            let _ = free_tx.send(block);
        }
        reader
            .join()
            .unwrap_or_else(|_| {
                Err(Error::InvalidArgument(
                    "the staging reader thread panicked".into(),
                ))
            })
            .map_err(PoolError::Allocator)
    })
}
