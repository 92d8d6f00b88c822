//! Images: creation, pitches and info; transfers, fills, copies and maps of every type; bad input.

#![allow(
    clippy::cast_possible_truncation,
    reason = "test patterns are small indices cast to pixel values"
)]

use cl_mem::{ChannelOrder, ChannelType, ImageDesc, ImageFormat};

mod creation;
mod errors;
mod transfers;

fn descs() -> Vec<ImageDesc> {
    vec![
        ImageDesc::d1(7),
        ImageDesc::d1_array(5, 3),
        ImageDesc::d2(6, 4),
        ImageDesc::d2_array(4, 3, 2),
        ImageDesc::d3(4, 3, 5),
    ]
}

const R_U32: ImageFormat = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt32);

/// A recognisable value per pixel channel: `seed + index`.
fn pattern(n: usize, seed: f32) -> Vec<f32> {
    (0..n).map(|i| seed + i as f32).collect()
}

fn padded_grid(w: usize, h: usize, pitch: usize) -> (Vec<u32>, Vec<u32>) {
    let mut padded = vec![u32::MAX; pitch * h];
    for y in 0..h {
        for x in 0..w {
            padded[y * pitch + x] = (y * 10 + x) as u32;
        }
    }
    let tight = (0..h)
        .flat_map(|y| (0..w).map(move |x| (y * 10 + x) as u32))
        .collect();
    (padded, tight)
}
