// The mapping itself cannot leave the closure.
use cl_mem::{Image, ImageMapping, MapFlags, Queue};

fn main() {}

#[allow(dead_code)]
fn check<'a>(queue: &Queue, image: &Image, out: &mut Option<&'a mut ImageMapping<'a>>) {
    image
        .map(queue, MapFlags::WRITE, &[], &[1], &[], |m| {
            *out = Some(m);
        })
        .unwrap();
}
