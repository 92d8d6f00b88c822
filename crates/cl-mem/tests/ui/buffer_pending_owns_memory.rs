// The memory of a non-blocking transfer belongs to the Pending until `wait` gives it back.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let host = vec![0u8; 64];
    let pending = buf.enqueue_read(&queue, host, &[]).unwrap();
    let _ = host[0];
    let _ = pending.wait();
}
