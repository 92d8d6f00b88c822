//! A 3x3 box blur of a 2-D float image through a sampler (clamped edges), checked on the host.
//! Devices without images (the H100's driver has them; a context over PoCL sub-devices does not)
//! get a typed `Unsupported` error, printed with what is missing.
//!
//! Run: `cargo run -p cl-mem --example image_blur` (`CL_CTX=intel` or any selector picks a device).

use cl_mem::{
    create_some_context, AddressingMode, ArrayImageOptions, Buffer, Error, FilterMode, Image,
    MemFlags, Program, Queue, Sampler,
};

const SRC: &str = "
__kernel void blur(__read_only image2d_t src, sampler_t s, __global float* dst) {
    int x = get_global_id(0), y = get_global_id(1);
    float acc = 0.0f;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
            acc += read_imagef(src, s, (int2)(x + dx, y + dy)).x;
    dst[y * get_global_size(0) + x] = acc / 9.0f;
}";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = create_some_context()?;
    let device = context.devices()[0];
    let queue = Queue::new(&context, &device)?;
    println!("device: {}", device.name()?);
    let (w, h) = (64usize, 48usize);
    let pixels: Vec<f32> = (0..w * h).map(|i| ((i * 7) % 13) as f32).collect();

    // An R/FLOAT image `w` wide and `h` high, from the pixels (numpy's shape order: rows first).
    let image = match Image::from_slice(&context, &pixels, &[h, w], ArrayImageOptions::default()) {
        Ok(image) => image,
        Err(e @ Error::Unsupported { .. }) => {
            println!("no images on this device: {e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let sampler = Sampler::new(
        &context,
        false,
        AddressingMode::ClampToEdge,
        FilterMode::Nearest,
    )?;
    let out = Buffer::new(&context, MemFlags::WRITE_ONLY, w * h * 4)?;

    let blur = Program::build_from_source(&context, SRC, "")?.kernel("blur")?;
    blur.call(&queue, &[w, h], None, (&image, &sampler, &out))?;
    let got: Vec<f32> = out.to_vec(&queue)?;

    // The same blur on the host, clamping at the edges like the sampler.
    let at = |x: isize, y: isize| {
        let x = x.clamp(0, w as isize - 1) as usize;
        let y = y.clamp(0, h as isize - 1) as usize;
        pixels[y * w + x]
    };
    for y in 0..h as isize {
        for x in 0..w as isize {
            let mut acc = 0.0f32;
            for dy in -1..=1 {
                for dx in -1..=1 {
                    acc += at(x + dx, y + dy);
                }
            }
            let want = acc / 9.0;
            let have = got[y as usize * w + x as usize];
            assert!((have - want).abs() < 1e-4, "({x}, {y}): {have} != {want}");
        }
    }
    println!(
        "blurred {w}x{h}: matches the host, centre value {:.3}",
        got[h / 2 * w + w / 2]
    );
    Ok(())
}
