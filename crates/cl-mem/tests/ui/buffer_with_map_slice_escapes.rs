// The slice of a scoped map cannot escape the closure.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let escaped = buf.with_map::<u8, _, _>(&queue, cl_mem::ReadOnly, .., |s| s).unwrap();
    let _ = escaped[0];
}
