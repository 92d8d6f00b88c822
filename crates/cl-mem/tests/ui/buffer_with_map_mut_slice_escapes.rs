// The mutable slice of a scoped map cannot escape the closure, not even through a capture.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let mut outside: Option<&mut [u32]> = None;
    buf.with_map::<u32, _, _>(&queue, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, .., |s| outside = Some(s)).unwrap();
    let _ = outside;
}
