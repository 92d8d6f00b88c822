// As `blocks_cannot_be_swapped`, for the thread-local blocks of `allocate_local`.
use cl_pool::{MemoryPool, SimulatedAllocator};

fn main() {
    let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
    let mut a = pool.allocate_local(1 << 20).unwrap();
    let mut b = pool.allocate_local(67).unwrap();
    std::mem::swap(a.block_mut(), b.block_mut());
}
