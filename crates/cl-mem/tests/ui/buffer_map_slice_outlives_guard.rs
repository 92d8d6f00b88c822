// A slice borrowed from a map guard cannot outlive the guard (which unmaps on drop).
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let guard = buf.map::<u8, _>(&queue, cl_mem::ReadOnly, .., &[]).unwrap();
    let slice: &[u8] = &guard;
    drop(guard);
    let _ = slice[0];
}
