// A borrowed slice cannot go to a non-blocking transfer: it might be freed before the command
// completes.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let mut local = vec![0u8; 64];
    let pending = buf.enqueue_read(&queue, &mut local[..], &[]).unwrap();
    drop(local);
    let _ = pending.wait();
}
