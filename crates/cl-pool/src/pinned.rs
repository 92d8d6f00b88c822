//! [`PinnedAllocator`]: pinned (`ALLOC_HOST_PTR`, mapped) host memory as a pool's blocks, for
//! staging buffers a program reuses. Pageable transfers go through cl-mem's staged path
//! (`TransferOptions`), which keeps its own pinned chunks.

use cl_mem::{Error, PinnedMemory, Queue};

use crate::allocator::{unless_zero, Allocator};

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
        unless_zero(size, || PinnedMemory::new(&self.queue, size))
    }

    fn free(&self, block: PinnedMemory<u8>) -> Result<(), Error> {
        drop(block);
        Ok(())
    }
}
