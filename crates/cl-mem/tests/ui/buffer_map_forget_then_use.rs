// Forgetting a guard moves it: no slice of it survives the `mem::forget`.
use cl_mem::{Buffer, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: Queue, buf: Buffer) {
    let mut guard = buf.map::<u8, _>(&queue, cl_mem::MapFlags::WRITE, .., &[]).unwrap();
    let slice: &mut [u8] = &mut guard;
    std::mem::forget(guard);
    slice[0] = 1;
}
