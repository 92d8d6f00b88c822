// Dropping a pooled buffer while a slice of it is alive does not compile.
use cl_pool::{ImmediateAllocator, MemoryPool};

fn main() {}

#[allow(dead_code)]
fn check(pool: MemoryPool<ImmediateAllocator>) {
    let block = pool.allocate(1024).unwrap();
    let slice = block.slice(0..64).unwrap();
    drop(block);
    let _ = slice.size_bytes();
}
