// A slice of a pooled buffer borrows it: it cannot be used after the block returns to the pool.
use cl_pool::{ImmediateAllocator, MemoryPool};

fn main() {}

#[allow(dead_code)]
fn check(pool: MemoryPool<ImmediateAllocator>) {
    let slice;
    {
        let block = pool.allocate(1024).unwrap();
        slice = block.slice(0..64).unwrap();
    }
    let _ = slice.size_bytes();
}
