//! Compile-fail proofs of the claims the pool's API makes (`tests/ui/*.rs`, one claim per file;
//! the expected errors are the `.stderr` files), and the thread-safety claims as positive checks.

use cl_pool::{ImmediateAllocator, MemoryPool, PoolBlock, PooledBuffer, SimulatedAllocator};

#[test]
fn pool_lifetime_claims_are_enforced_by_the_compiler() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

fn send_sync<T: Send + Sync>() {}

#[test]
fn pools_and_blocks_cross_threads() {
    send_sync::<MemoryPool<SimulatedAllocator>>();
    send_sync::<PoolBlock<SimulatedAllocator>>();
    send_sync::<MemoryPool<ImmediateAllocator>>();
    send_sync::<PooledBuffer<ImmediateAllocator>>();
    send_sync::<cl_pool::PinnedAllocator>();
}
