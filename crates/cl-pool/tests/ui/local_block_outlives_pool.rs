// A LocalBlock borrows its pool handle: it cannot outlive it.
use cl_pool::{MemoryPool, SimulatedAllocator};

fn main() {
    let block;
    {
        let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
        block = pool.allocate_local(16).unwrap();
    }
    let _ = block.requested_bytes();
}
