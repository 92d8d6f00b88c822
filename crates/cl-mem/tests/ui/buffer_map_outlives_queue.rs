// A map guard borrows the queue it unmaps on: it cannot outlive it.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(buf: Buffer) {
    let guard;
    {
        let queue = Queue::new(buf.context(), &buf.context().devices()[0]).unwrap();
        guard = buf.map::<u8, _>(&queue, cl_mem::ReadOnly, .., &[]).unwrap();
    }
    let _ = guard[0];
}
