//! Port of PyOpenCL's `examples/image_filters_using_image2d_t.py`: gray scale, a Gaussian blur and
//! a brightness adjustment of an RGBA image through `image2d_t`s and a sampler, with the mean
//! intensity summed by a `__local`-memory reduction kernel. The input is a generated 48x32 image
//! instead of `noisyImage.jpg`, and each result prints a checksum instead of being saved as a PNG,
//! so the output can be compared with `tools/pyopencl-examples/image_filters.py` (the Python with
//! the same input; both print the same lines on PoCL, the Intel runtime and Oclgrind).
//!
//! Run: `cargo run -p cl-mem --example pyopencl_image_filters` (`CL_CTX=intel` or any selector).

// The Python's `astype` truncates; so do these casts.
#![allow(clippy::cast_possible_truncation)]

use cl_mem::AddressingMode::ClampToEdge;
use cl_mem::{create_some_context, Buffer, ChannelOrder, ChannelType, Error, FilterMode, Image};
use cl_mem::{ImageDesc, ImageFormat, LocalMemory, MemFlags, Program, Queue, Sampler};

const SRC: &str = "
__kernel void gray_scale(read_only const image2d_t src,
                                  write_only image2d_t dest,
                                   const sampler_t sampler){
  int2 pos = (int2)(get_global_id(0),get_global_id(1));
  uint4 pixel = read_imageui(src,sampler,pos);
  uint g=pixel.x*299/1000+pixel.y*578/1000+pixel.z*114/1000;
  write_imageui(dest,pos,(uint4)(g,g,g,255));
}
__kernel void brightness_adj(read_only const image2d_t src,
                                       write_only image2d_t dest,
                                       const sampler_t sampler,
                                       const float scalar,
                                       const float4 mean_intensity){
  int2 pos = (int2)(get_global_id(0),get_global_id(1));
  uint4 pixel = read_imageui(src,sampler,pos);
  uint4 new_pixel = convert_uint4((float4)scalar*(convert_float4(pixel)\
                                        -mean_intensity)+mean_intensity);
  uint4 overflow = convert_uint4(new_pixel>(uint4)255);
  write_imageui(dest,pos,select(new_pixel,(uint4)255,overflow));
}
__kernel void reduce_sum(__global int *in,
            __global int *reduce,
            __local int *buffer)
{
  uint gid = get_global_id(0);
  uint wid = get_group_id(0);
  uint lid = get_local_id(0);
  uint gs = get_local_size(0);
  buffer[lid] = in[gid];

  for(uint s = gs/2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if(lid < s) {
      buffer[lid] += buffer[lid+s];
    }
  }
  if(lid == 0) reduce[wid] = buffer[lid];
}
__kernel void gaussian_blur(read_only const image2d_t src,
                                       write_only image2d_t dest,
                                       const sampler_t sampler,
                                       read_only const image2d_t gauss_kernel,
                                       const short dim){
  int2 pos = (int2)(get_global_id(0),get_global_id(1));
  uint4 pixel=(uint4)0;
  float4 src_pixel,gauss_pixel;
  for(int i = -dim/2;i<dim/2;i++){
    for(int j = -dim/2;j<dim/2;j++){
      src_pixel=convert_float4(read_imageui(src,sampler,(int2)(i,j)+pos));
      gauss_pixel=convert_float4(read_imageui(gauss_kernel,sampler,(int2)(i+dim/2,j+dim/2)))/(float4)255;
      pixel=pixel+convert_uint4(src_pixel*gauss_pixel);
    }
  }
  uint4 overflow = convert_uint4(pixel>(uint4)255);
  write_imageui(dest,pos,select(pixel,(uint4)255,overflow));
}
";

/// The Python's `calc_kernel`: a `size` x `size` Gaussian, normalised to sum 1.
fn calc_kernel(size: usize, sigma: f64) -> Vec<f64> {
    let x2 = |i: usize| ((i as f64 - (size / 2) as f64) / (2f64.sqrt() * sigma)).powi(2);
    let ker: Vec<f64> = (0..size * size)
        .map(|i| (-x2(i / size) - x2(i % size)).exp())
        .collect();
    ker.iter().map(|k| k / ker.iter().sum::<f64>()).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = create_some_context()?;
    let device = context.devices()[0];
    let queue = Queue::new(&context, &device)?;
    let program = Program::build_from_source(&context, SRC, "")?;
    let reduce_sum = program.kernel("reduce_sum")?;
    // The Python takes `device.max_work_group_size`, more than this kernel allows on the H100
    // (1024 > 256): the kernel's own limit runs everywhere, and the sums are the same.
    let n_threads: usize =
        reduce_sum.work_group_info(&device, cl_raw::sys::CL_KERNEL_WORK_GROUP_SIZE)?;

    // The Python's `sum_arr`: sums `arr` on the device in groups of `n_threads`.
    let sum_arr = |mut arr: Vec<i32>| -> Result<i64, Error> {
        let n = arr.len().div_ceil(n_threads) * n_threads;
        arr.resize(n, 0);
        let arr_buf = Buffer::from_slice(&context, MemFlags::READ_ONLY, &arr)?;
        let reduce_buf = Buffer::new(&context, MemFlags::READ_WRITE, n / n_threads * 4)?;
        let local_buf = LocalMemory::of::<i32>(n_threads);
        let args = (&arr_buf, &reduce_buf, &local_buf);
        reduce_sum.call(&queue, &[n], Some(&[n_threads]), args)?;
        let reduce: Vec<i32> = reduce_buf.to_vec(&queue)?;
        Ok(reduce.iter().map(|&v| i64::from(v)).sum())
    };

    // The input: RGBA pixels (`[u8; 4]`, so the image has four channels), 48 wide, 32 high.
    let (w, h) = (48usize, 32usize);
    let px = |x: usize, y: usize| [x * 7 + y * 3, x * 5 + y * 11, x * x + y, 255].map(|v| v as u8);
    let image: Vec<[u8; 4]> = (0..w * h).map(|i| px(i % w, i / w)).collect();
    let src_buf = Image::from_slice(&context, &image, &[h, w], Default::default())?;
    let image_format = ImageFormat::new(ChannelOrder::Rgba, ChannelType::UnsignedInt8);
    let desc = ImageDesc::d2(w, h);
    let dest_buf = Image::new(&context, MemFlags::WRITE_ONLY, image_format, &desc)?;
    let sampler = Sampler::new(&context, false, ClampToEdge, FilterMode::Nearest)?;
    let save = |filter: &str| -> Result<u64, Error> {
        let dest: Vec<u8> = dest_buf.to_vec(&queue)?;
        let checksum = dest.iter().map(|&v| u64::from(v)).sum();
        println!(
            "{filter}: checksum {checksum}, first pixels {:?}",
            &dest[..8]
        );
        Ok(checksum)
    };

    let args = (&src_buf, &dest_buf, &sampler);
    program
        .kernel("gray_scale")?
        .call(&queue, &[w, h], None, args)?;
    assert_eq!(save("gray_scale")?, 948066); // PyOpenCL's checksum for this input

    let ker_dim = 7;
    let ker: Vec<[u8; 4]> = (calc_kernel(ker_dim, 1.0).iter())
        .map(|k| [k * 255.0, k * 255.0, k * 255.0, 255.0].map(|v| v as u8))
        .collect();
    let gauss_buf = Image::from_slice(&context, &ker, &[ker_dim, ker_dim], Default::default())?;
    let args = (&src_buf, &dest_buf, &sampler, &gauss_buf, &(ker_dim as i16));
    program
        .kernel("gaussian_blur")?
        .call(&queue, &[w, h], None, args)?;
    assert_eq!(save("gauss")?, 855109);

    // The mean of each colour channel, summed on the device, then a brightness adjustment. Its
    // kernel converts negative floats to `uint` (undefined in OpenCL C): no fixed checksum.
    let channel = |c: usize| sum_arr(image.iter().map(|p| i32::from(p[c])).collect());
    let mean = |c: usize| channel(c).map(|sum| (sum as f64 / (w * h) as f64) as f32);
    let pixel = [mean(0)?, mean(1)?, mean(2)?, 255.0];
    let args = (&src_buf, &dest_buf, &sampler, &1.5f32, &pixel);
    program
        .kernel("brightness_adj")?
        .call(&queue, &[w, h], None, args)?;
    save("brightness")?;
    Ok(())
}
