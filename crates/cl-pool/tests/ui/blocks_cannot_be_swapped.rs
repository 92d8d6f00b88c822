// Two pool handles' blocks swapped would each go back to the other's bin, and a later
// `allocate(1 MiB)` would hand out a 67-byte block: the block is not handed out mutably.
use cl_pool::{MemoryPool, SimulatedAllocator};

fn main() {
    let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
    let mut a = pool.allocate(1 << 20).unwrap();
    let mut b = pool.allocate(67).unwrap();
    std::mem::swap(a.block_mut(), b.block_mut());
}
