// The buffer behind pinned memory is only reachable through `unsafe`: it stays mapped.
use cl_mem::{PinnedMemory, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue) {
    let pinned = PinnedMemory::<u32>::new(&queue, 16).unwrap();
    let _b = pinned.buffer();
}
