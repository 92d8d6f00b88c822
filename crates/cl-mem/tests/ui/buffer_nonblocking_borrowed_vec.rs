// A shared borrow of a Vec is not owned host memory either.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let local = vec![0u8; 64];
    let _pending = buf.enqueue_write(&queue, &local, &[]).unwrap();
}
