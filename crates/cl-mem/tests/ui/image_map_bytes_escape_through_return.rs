// The mapped bytes cannot be returned from the map's closure either.
use cl_mem::{Image, MapFlags, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: &Queue, image: &Image) {
    let row = image
        .map(queue, MapFlags::READ, &[], &[1], &[], |m| m.row::<u32>(0, 0).unwrap())
        .unwrap();
    let _ = row[0];
}
