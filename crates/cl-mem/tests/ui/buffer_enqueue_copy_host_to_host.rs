// enqueue_copy has no host-to-host form (PyOpenCL raises TypeError at run time).
use cl_mem::{enqueue_copy, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue) {
    let src = [1u32; 4];
    let mut dst = [0u32; 4];
    let _ = enqueue_copy(&queue, &mut dst[..], &src[..], &[]);
}
