//! Image transfers of every type: reads and writes with pitches, fills, copies to and from buffers,
//! maps, and kernels sampling them.

use super::{descs, padded_grid, pattern, R_U32};
use crate::common::{image_queue, RGBA_F};
use cl_mem::{
    enqueue_copy, image_from_array, AddressingMode, ArrayImageOptions, Buffer, ChannelOrder,
    ChannelType, Error, FillColor, FilterMode, Image, ImageDesc, ImageFormat, ImageType, MapFlags,
    MemFlags, MemObject, Program, Queue, Rect, Sampler, Transfer, Version,
};
use cl_tests::{device_test, fail, skip, Expectation, TestDevice, TestResult};

/// Image to image, image to buffer at an offset and back, for one image type.
fn copy_round_trips(q: &Queue, desc: &ImageDesc) -> TestResult {
    let ctx = q.context();
    let e = desc.extent();
    let n = e.iter().product::<usize>();
    let data: Vec<u32> = (0..n as u32).map(|v| v * 3 + 1).collect();
    let src = Image::from_host(ctx, MemFlags::READ_WRITE, R_U32, desc, &data)?;
    // Image to image, whole.
    let dst = Image::new(ctx, MemFlags::READ_WRITE, R_U32, desc)?;
    enqueue_copy(q, &dst, &src, Transfer::default().rect(Rect::new(e)))?;
    assert_eq!(dst.to_vec::<u32>(q)?, data, "{}", desc.image_type);
    // Image to buffer at an offset, and back into a second image.
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 16 + n * 4)?;
    enqueue_copy(
        q,
        &buf,
        &src,
        Transfer::default().rect(Rect::new(e)).dst_offset(16),
    )?;
    let mut raw = vec![0u32; n];
    buf.read(q, &mut raw, Transfer::default().src_offset(16))?;
    assert_eq!(raw, data);
    let dst2 = Image::new(ctx, MemFlags::READ_WRITE, R_U32, desc)?;
    enqueue_copy(
        q,
        &dst2,
        &buf,
        Transfer::default().rect(Rect::new(e)).src_offset(16),
    )?;
    assert_eq!(dst2.to_vec::<u32>(q)?, data);
    Ok(())
}

const SAMPLE_SRC: &str = r#"
__kernel void sample2d(__read_only image2d_t img, sampler_t s, int normalized, __global float4* out) {
    int x = get_global_id(0), y = get_global_id(1);
    int w = get_image_width(img), h = get_image_height(img);
    float2 c = (float2)(x + 0.5f, y + 0.5f);
    if (normalized) c = c / (float2)(w, h);
    out[y * w + x] = read_imagef(img, s, c);
}
__kernel void sample3d(__read_only image3d_t img, sampler_t s, int normalized, __global float4* out) {
    int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    int w = get_image_width(img), h = get_image_height(img), d = get_image_depth(img);
    float4 c = (float4)(x + 0.5f, y + 0.5f, z + 0.5f, 0.0f);
    if (normalized) c = c / (float4)(w, h, d, 1.0f);
    out[(z * h + y) * w + x] = read_imagef(img, s, c);
}
"#;

device_test!(every_image_type_roundtrips);
fn every_image_type_roundtrips(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in descs() {
        let n = desc.extent().iter().product::<usize>() * 4;
        let data = pattern(n, 1.0);
        let img = Image::from_host(ctx, MemFlags::READ_WRITE, RGBA_F, &desc, &data)?;
        assert_eq!(img.desc().image_type, desc.image_type);
        let back: Vec<f32> = img.to_vec(&q)?;
        assert_eq!(back, data, "{}", desc.image_type);
        // Overwrite one pixel row of the last layer/slice and read it back alone.
        let e = img.desc().extent();
        let origin = [1, e[1] - 1, e[2] - 1];
        let region = [e[0] - 1, 1, 1];
        let row = pattern((e[0] - 1) * 4, 1000.0);
        img.write(
            &q,
            &row,
            Transfer::default().rect(Rect::new(region).dst_origin(origin)),
        )?;
        let mut got = vec![0f32; row.len()];
        img.read(
            &q,
            &mut got,
            Transfer::default().rect(Rect::new(region).src_origin(origin)),
        )?;
        assert_eq!(got, row, "{}", desc.image_type);
        // Pixel 0 is untouched.
        let mut first = [0f32; 4];
        img.read(
            &q,
            &mut first,
            Transfer::default().rect(Rect::new([1, 1, 1])),
        )?;
        assert_eq!(first, [1.0, 2.0, 3.0, 4.0]);
    }
    // 1-D buffer image: the image sees the buffer's bytes.
    let data = pattern(9 * 4, 3.0);
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &data)?;
    let img = Image::from_buffer(ctx, MemFlags::READ_WRITE, RGBA_F, &buf, &[9], None)?;
    assert_eq!(img.desc().image_type, ImageType::Image1dBuffer);
    assert_eq!(img.shape(), vec![9]);
    assert_eq!(img.to_vec::<f32>(&q)?, data);
    let px = [-1f32, -2.0, -3.0, -4.0];
    img.write(
        &q,
        &px,
        Transfer::default().rect(Rect::new([1, 1, 1]).dst_origin([8, 0, 0])),
    )?;
    let mut all = vec![0f32; 36];
    buf.read(&q, &mut all, &[])?;
    assert_eq!(&all[32..], &px);
    assert_eq!(img.info()?.buffer.as_ref(), Some(&buf));
    Ok(())
}

device_test!(non_blocking_transfers_own_their_host_memory);
fn non_blocking_transfers_own_their_host_memory(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in descs() {
        let n = desc.extent().iter().product::<usize>();
        let img = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &desc)?;
        let data: Vec<u32> = (0..n as u32).map(|v| v ^ 0x5a5a).collect();
        let written = img.enqueue_write(
            &q,
            data.clone(),
            Transfer::default().rect(Rect::new(desc.extent())),
        )?;
        let read = img.enqueue_read(
            &q,
            vec![0u32; n],
            Transfer::default()
                .rect(Rect::new(desc.extent()))
                .wait(&[written.event()]),
        )?;
        assert_eq!(written.wait()?, data);
        assert_eq!(read.wait()?, data, "{}", desc.image_type);
    }
    // A pending read dropped without waiting still completes before its memory goes.
    let img = Image::from_host(
        ctx,
        MemFlags::READ_WRITE,
        R_U32,
        &ImageDesc::d2(64, 64),
        &vec![7u32; 4096],
    )?;
    drop(img.enqueue_read(
        &q,
        vec![0u32; 4096],
        Transfer::default().rect(Rect::new([64, 64, 1])),
    )?);
    let short = img.enqueue_read(
        &q,
        vec![0u32; 4095],
        Transfer::default().rect(Rect::new([64, 64, 1])),
    );
    assert!(matches!(short, Err(Error::OutOfBounds { .. })), "{short:?}");
    Ok(())
}

device_test!(pitched_transfers_roundtrip);
fn pitched_transfers_roundtrip(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    let (w, h) = (3usize, 4usize);
    let (padded, tight) = padded_grid(w, h, 5);
    // Written with padded rows, read tight; read back padded: the padding is left alone.
    let img = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d2(w, h))?;
    img.write(
        &q,
        &padded,
        Transfer::default().rect(Rect::new([w, h, 1]).src_pitches(20, 0)),
    )?;
    assert_eq!(img.to_vec::<u32>(&q)?, tight);
    let mut out = vec![7u32; 5 * h];
    img.read(
        &q,
        &mut out,
        Transfer::default().rect(Rect::new([w, h, 1]).dst_pitches(20, 0)),
    )?;
    for y in 0..h {
        assert_eq!(&out[y * 5..y * 5 + w], &tight[y * w..y * w + w]);
        assert_eq!(&out[y * 5 + w..y * 5 + 5], &[7, 7]);
    }
    // 3-D: slices 6 values apart on the host.
    let img = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d3(2, 2, 3))?;
    let data: Vec<u32> = (0..18).collect();
    img.write(
        &q,
        &data,
        Transfer::default().rect(Rect::new([2, 2, 3]).src_pitches(8, 24)),
    )?;
    assert_eq!(
        img.to_vec::<u32>(&q)?,
        vec![0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]
    );
    let mut back = vec![0u32; 18];
    img.read(
        &q,
        &mut back,
        Transfer::default().rect(Rect::new([2, 2, 3]).dst_pitches(0, 24)),
    )?;
    assert_eq!(
        back,
        vec![0, 1, 2, 3, 0, 0, 6, 7, 8, 9, 0, 0, 12, 13, 14, 15, 0, 0]
    );
    Ok(())
}

device_test!(one_d_array_layer_pitch_is_honoured_by_transfers);
fn one_d_array_layer_pitch_is_honoured_by_transfers(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let data: Vec<u32> = (0..6).collect();
    let img = Image::from_host(
        q.context(),
        MemFlags::READ_WRITE,
        R_U32,
        &ImageDesc::d1_array(2, 3),
        &data,
    )?;
    // Read with layers 3 values (12 bytes) apart (clEnqueueReadImage's slice_pitch).
    let mut layers = vec![99u32; 9];
    img.read(
        &q,
        &mut layers,
        Transfer::default().rect(Rect::new([2, 3, 1]).dst_pitches(0, 12)),
    )?;
    assert_eq!(layers, vec![0, 1, 99, 2, 3, 99, 4, 5, 99]);
    Ok(())
}

device_test!(kernel_samples_2d_and_3d_images_exactly);
fn kernel_samples_2d_and_3d_images_exactly(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context().clone();
    let program = Program::build_from_source(&ctx, SAMPLE_SRC, "")?;
    let a2 =
        ndarray::Array3::from_shape_fn((5, 7, 4), |(y, x, c)| (y * 100 + x * 10 + c) as f32 + 0.25);
    let a3 = ndarray::Array4::from_shape_fn((3, 4, 5, 4), |(z, y, x, c)| {
        (z * 1000 + y * 100 + x * 10 + c) as f32 - 0.5
    });
    let opts = ArrayImageOptions {
        num_channels: Some(4),
        ..Default::default()
    };
    let img2 = image_from_array(&ctx, &a2, opts)?;
    let img3 = image_from_array(&ctx, &a3, opts)?;
    for normalized in [false, true] {
        for (name, img, expect) in [
            ("sample2d", &img2, a2.as_slice().unwrap_or_default()),
            ("sample3d", &img3, a3.as_slice().unwrap_or_default()),
        ] {
            let out = Buffer::new(&ctx, MemFlags::WRITE_ONLY, expect.len() * 4)?;
            let mut k = program.kernel(name)?;
            let sampler = Sampler::new(
                &ctx,
                normalized,
                AddressingMode::ClampToEdge,
                FilterMode::Nearest,
            )?;
            k.set_arg(0, img)?
                .set_arg(1, &sampler)?
                .set_arg(2, &i32::from(normalized))?
                .set_arg(3, &out)?;
            // The kernel holds its own reference: dropping ours before the enqueue is fine.
            drop(sampler);
            let global: Vec<usize> = img.shape();
            k.enqueue_nd_range(&q, &global, None, &[])?.wait()?;
            let mut got = vec![0f32; expect.len()];
            out.read(&q, &mut got, &[])?;
            if got != expect {
                return Err(fail(format!(
                    "{name} normalized={normalized}: first values {:?}, expected {:?}",
                    &got[..8],
                    &expect[..8]
                )));
            }
        }
    }
    Ok(())
}

device_test!(fill_sets_every_pixel_of_the_region);
fn fill_sets_every_pixel_of_the_region(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    if ctx.devices()[0].platform_version() < Version::V1_2 {
        return Err(skip("clEnqueueFillImage needs OpenCL 1.2"));
    }
    for desc in descs() {
        let e = desc.extent();
        let n = e.iter().product::<usize>();
        let img = Image::from_host(ctx, MemFlags::READ_WRITE, RGBA_F, &desc, &vec![0f32; n * 4])?;
        // Fill everything but the first pixel along x.
        let color = [1.5f32, -2.0, 3.25, 4.0];
        img.fill(
            &q,
            FillColor::Float(color),
            Transfer::default().rect(Rect::new([e[0] - 1, e[1], e[2]]).dst_origin([1, 0, 0])),
        )?;
        let back = img.to_vec::<f32>(&q)?;
        for (i, px) in back.chunks(4).enumerate() {
            let expect = if i % e[0] == 0 { [0.0; 4] } else { color };
            assert_eq!(px, expect, "{}: pixel {i}", desc.image_type);
        }
    }
    // Unsigned integers.
    let img = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d2(5, 3))?;
    img.fill(
        &q,
        FillColor::Uint([0xdead_beef, 0, 0, 0]),
        Transfer::default().rect(Rect::new([5, 3, 1])),
    )?;
    assert_eq!(img.to_vec::<u32>(&q)?, vec![0xdead_beef; 15]);
    // Normalized bytes: 1.0 is 255.
    let fmt = ImageFormat::new(ChannelOrder::Rgba, ChannelType::UnormInt8);
    let img = Image::new(ctx, MemFlags::READ_WRITE, fmt, &ImageDesc::d1(4))?;
    img.fill(
        &q,
        FillColor::Float([1.0, 0.0, 1.0, 0.0]),
        Transfer::default().rect(Rect::new([4, 1, 1])),
    )?;
    assert_eq!(img.to_vec::<u8>(&q)?, [255, 0, 255, 0].repeat(4));
    Ok(())
}

device_test!(copies_between_images_and_buffers);
/// Every image type but 1-D arrays (their buffer copies are one NVIDIA bug, tested on their own
/// below, so that the bug covers only them).
fn copies_between_images_and_buffers(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    for desc in descs()
        .into_iter()
        .filter(|d| d.image_type != ImageType::Image1dArray)
    {
        copy_round_trips(&q, &desc)?;
    }
    Ok(())
}

device_test!(
    copies_between_1d_image_arrays_and_buffers,
    expected = &[
        Expectation {
            platform: "nvidia",
            device: "",
            version: "580.",
            reason: "clEnqueueCopyImageToBuffer / clEnqueueCopyBufferToImage fail with CL_INVALID_VALUE for every 1-D image array",
            link: "docs/DEVICES.md#nvidia-gpu-machine",
            failure: "clEnqueueCopyImageToBuffer failed: CL_INVALID_VALUE",
            flaky: false,
        }
    ]
);
/// 1-D image arrays, and the enqueue_copy forms over one.
fn copies_between_1d_image_arrays_and_buffers(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in descs()
        .into_iter()
        .filter(|d| d.image_type == ImageType::Image1dArray)
    {
        copy_round_trips(&q, &desc)?;
    }
    // The enqueue_copy forms (whole images; 1-D ones included, which PyOpenCL refuses).
    let data: Vec<u32> = (0..12).collect();
    let a = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d1_array(4, 3))?;
    let b = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d1_array(4, 3))?;
    enqueue_copy(&q, &a, &data[..], &[])?;
    enqueue_copy(&q, &b, &a, &[])?;
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    enqueue_copy(
        &q,
        &buf,
        &b,
        Transfer {
            dst_offset: 16,
            ..Default::default()
        },
    )?;
    let c = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d2(4, 3))?;
    enqueue_copy(
        &q,
        &c,
        &buf,
        Transfer {
            src_offset: 16,
            ..Default::default()
        },
    )?;
    let mut back = vec![0u32; 12];
    enqueue_copy(&q, &mut back[..], &c, &[])?;
    assert_eq!(back, data);
    let r = enqueue_copy(
        &q,
        &a,
        &data[..],
        Transfer {
            byte_count: Some(4),
            ..Default::default()
        },
    );
    // The count picks 4 bytes of the host data: less than the whole image needs.
    assert!(matches!(r, Err(Error::OutOfBounds { .. })), "{r:?}");
    let d = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d2(4, 2))?;
    assert!(matches!(
        enqueue_copy(&q, &a, &d, &[]),
        Err(Error::InvalidArgument(_))
    ));
    // A sub-region of a 2-D image into the middle of a 3-D image's slice.
    let data: Vec<u32> = (0..24).collect();
    let a = Image::from_host(
        ctx,
        MemFlags::READ_WRITE,
        R_U32,
        &ImageDesc::d2(6, 4),
        &data,
    )?;
    let b = Image::from_host(
        ctx,
        MemFlags::READ_WRITE,
        R_U32,
        &ImageDesc::d3(4, 4, 3),
        &[0u32; 48],
    )?;
    enqueue_copy(
        &q,
        &b,
        &a,
        Transfer::default().rect(
            Rect::new([3, 2, 1])
                .src_origin([2, 1, 0])
                .dst_origin([1, 2, 1]),
        ),
    )?;
    let got = b.to_vec::<u32>(&q)?;
    for (i, v) in got.iter().enumerate() {
        let (x, y, z) = (i % 4, (i / 4) % 4, i / 16);
        let expect = if z == 1 && (1..4).contains(&x) && (2..4).contains(&y) {
            ((y - 2 + 1) * 6 + (x - 1 + 2)) as u32
        } else {
            0
        };
        assert_eq!(*v, expect, "({x}, {y}, {z})");
    }
    Ok(())
}

device_test!(maps_report_pitches_for_every_type);
fn maps_report_pitches_for_every_type(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in descs() {
        let e = desc.extent();
        let n = e.iter().product::<usize>();
        let data: Vec<u32> = (0..n as u32).collect();
        let img = Image::from_host(ctx, MemFlags::READ_WRITE, R_U32, &desc, &data)?;
        let t = desc.image_type;
        let intel = dev.platform_name().contains("Intel");
        img.map(&q, MapFlags::READ, &[], &e, &[], |m| -> TestResult {
            // The Intel CPU runtime maps 1-D images with a row pitch of 0 (docs/DEVICES.md); no
            // other runtime may.
            let one_d = matches!(t, ImageType::Image1d | ImageType::Image1dBuffer);
            assert!(
                m.row_pitch() >= e[0] * 4 || (one_d && intel && m.row_pitch() == 0),
                "{t}: row pitch {}",
                m.row_pitch()
            );
            match t {
                ImageType::Image1dArray => assert!(m.slice_pitch() >= m.row_pitch().min(e[0] * 4)),
                ImageType::Image2dArray | ImageType::Image3d => {
                    assert!(m.slice_pitch() >= e[0] * 4 * e[1])
                }
                _ => {}
            }
            assert!(m.bytes_mut().is_err());
            // Every row, through the pitches, holds its values.
            for z in 0..e[2] {
                for y in 0..e[1] {
                    let row = m.row::<u32>(y, z)?;
                    let start = (z * e[1] + y) * e[0];
                    assert_eq!(row, &data[start..start + e[0]], "{t}: row {y} slice {z}");
                }
            }
            Ok(())
        })??;
        // Write through a map of one row (the last), then read with a transfer.
        let origin = [0, e[1] - 1, e[2] - 1];
        img.map(
            &q,
            MapFlags::WRITE,
            &origin,
            &[e[0], 1, 1],
            &[],
            |m| -> TestResult {
                m.row_mut::<u32>(0, 0)?.fill(77);
                Ok(())
            },
        )??;
        let back = img.to_vec::<u32>(&q)?;
        assert!(back[n - e[0]..].iter().all(|&v| v == 77), "{t}: {back:?}");
        assert_eq!(&back[..n - e[0]], &data[..n - e[0]]);
    }
    // Nested conflicting maps are refused, not aliased.
    let img = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &ImageDesc::d1(4))?;
    let inner = img.map(&q, MapFlags::WRITE, &[], &[4], &[], |_| {
        img.map(&q, MapFlags::READ, &[], &[4], &[], |_| ())
    })?;
    assert!(matches!(inner, Err(Error::Mapped(_))), "{inner:?}");
    assert_eq!(img.mem_info()?.map_count, 0);
    Ok(())
}
