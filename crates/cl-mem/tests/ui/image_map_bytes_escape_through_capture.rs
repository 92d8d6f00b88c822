// The mapped bytes cannot be stored outside the map's closure: they are unmapped when it returns.
use cl_mem::{Image, MapFlags, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: &Queue, image: &Image) {
    let mut leaked: Option<&[u8]> = None;
    image
        .map(queue, MapFlags::READ, &[], &[1], &[], |m| {
            leaked = Some(m.bytes());
        })
        .unwrap();
    let _ = leaked;
}
