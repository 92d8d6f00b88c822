// `f64` is no image channel type: reading a float image as `f64` would reinterpret pairs of
// floats as doubles, so `read_array::<f64>` does not compile (typed reads take `ImageElement`s,
// and a mismatched `ImageElement` is a run-time `InvalidArgument`).
use cl_mem::{Image, Queue};

fn main() {}

#[allow(dead_code)]
fn check(queue: &Queue, image: &Image) {
    let _ = image.read_array::<f64>(queue, &[], &[4], &[]);
}
