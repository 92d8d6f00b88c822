// A map guard borrows its buffer: it cannot outlive it.
use cl_mem::{Buffer, MemFlags, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue) {
    let guard;
    {
        let buf = Buffer::new(queue.context(), MemFlags::READ_WRITE, 64).unwrap();
        guard = buf.map_read::<u8>(&queue, .., &[]).unwrap();
    }
    let _ = guard[0];
}
