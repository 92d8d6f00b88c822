// A map guard borrows its buffer: it cannot outlive it.
use cl_mem::{Buffer, MemFlags, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue) {
    let guard;
    {
        let buf = Buffer::new(queue.context(), MemFlags::READ_WRITE, 64).unwrap();
        guard = buf.map::<u8, _>(&queue, cl_mem::ReadOnly, .., &[]).unwrap();
    }
    let _ = guard[0];
}
