// Releasing returns the block to the pool and consumes it: a second release (PyOpenCL's
// LogicError) does not compile.
use cl_pool::{MemoryPool, SimulatedAllocator};

fn main() {
    let pool = MemoryPool::new(SimulatedAllocator::new(usize::MAX));
    let block = pool.allocate(16).unwrap();
    block.release();
    block.release();
}
