// A read map gives `&[T]` only.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let mut guard = buf.map::<u8, _>(&queue, cl_mem::ReadOnly, .., &[]).unwrap();
    guard[0] = 1;
}
