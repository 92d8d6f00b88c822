// A LocalBlock borrows its pool handle: it cannot outlive it.
use cl_pool::{MemoryPool, TestAllocator};

fn main() {
    let block;
    {
        let pool = MemoryPool::new(TestAllocator::new());
        block = pool.allocate_local(16).unwrap();
    }
    let _ = block.requested_bytes();
}
