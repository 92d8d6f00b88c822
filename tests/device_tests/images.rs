//! Images, samplers and pipes (`cl-mem` issue 4) on every selected device: every image type
//! created and round-tripped (descriptor and legacy paths, copied and owned host data, pitches),
//! kernels sampling images made with `image_from_array`, fills, copies, maps, the bad-input suite,
//! unsupported formats, sampler info, and pipes (packets passed between two kernels where the
//! device has pipes, a typed unsupported error where it does not).

#![expect(
    clippy::cast_possible_truncation,
    reason = "test patterns are small indices cast to pixel values"
)]

use cl_mem::RawHandle;
use cl_mem::Rect;
use cl_mem::{
    enqueue_copy, image_from_array, supported_image_formats, AddressingMode, ArrayImageOptions,
    Buffer, ChannelOrder, ChannelType, Context, Error, FillColor, FilterMode, Image, ImageAccess,
    ImageDesc, ImageFormat, ImagePitches, ImageType, Kernel, MapAccess, MemFlags, MemObject,
    MemObjectType, Pipe, Program, Queue, Sampler, SamplerProperty, Transfer, Version,
};
use cl_tests::{fail, skip, DeviceTest, TestDevice, TestResult};

/// The suite's tests, in the order they run.
pub fn tests() -> Vec<DeviceTest> {
    vec![
        DeviceTest {
            name: "release_and_into_raw_leak_no_context_reference",
            run: release_and_into_raw_leak_no_context_reference,
        },
        DeviceTest {
            name: "supported_formats_are_listed_per_type",
            run: supported_formats_are_listed_per_type,
        },
        DeviceTest {
            name: "every_image_type_roundtrips",
            run: every_image_type_roundtrips,
        },
        DeviceTest {
            name: "non_blocking_transfers_own_their_host_memory",
            run: non_blocking_transfers_own_their_host_memory,
        },
        DeviceTest {
            name: "legacy_calls_create_2d_and_3d_images",
            run: legacy_calls_create_2d_and_3d_images,
        },
        DeviceTest {
            name: "owned_host_image_uses_its_memory",
            run: owned_host_image_uses_its_memory,
        },
        DeviceTest {
            name: "host_row_pitch_is_honoured_at_creation",
            run: host_row_pitch_is_honoured_at_creation,
        },
        DeviceTest {
            name: "used_host_row_pitch_is_honoured",
            run: used_host_row_pitch_is_honoured,
        },
        DeviceTest {
            name: "host_slice_pitch_is_honoured_at_creation",
            run: host_slice_pitch_is_honoured_at_creation,
        },
        DeviceTest {
            name: "pitched_transfers_roundtrip",
            run: pitched_transfers_roundtrip,
        },
        DeviceTest {
            name: "one_d_array_layer_pitch_is_honoured_at_creation",
            run: one_d_array_layer_pitch_is_honoured_at_creation,
        },
        DeviceTest {
            name: "one_d_array_layer_pitch_is_honoured_by_transfers",
            run: one_d_array_layer_pitch_is_honoured_by_transfers,
        },
        DeviceTest {
            name: "one_d_array_layer_count_is_right",
            run: one_d_array_layer_count_is_right,
        },
        DeviceTest {
            name: "image_info_matches_creation",
            run: image_info_matches_creation,
        },
        DeviceTest {
            name: "image_info_reports_pitches",
            run: image_info_reports_pitches,
        },
        DeviceTest {
            name: "image_from_array_reads_back_equal",
            run: image_from_array_reads_back_equal,
        },
        DeviceTest {
            name: "kernel_samples_2d_and_3d_images_exactly",
            run: kernel_samples_2d_and_3d_images_exactly,
        },
        DeviceTest {
            name: "fill_sets_every_pixel_of_the_region",
            run: fill_sets_every_pixel_of_the_region,
        },
        DeviceTest {
            name: "copies_between_images_and_buffers",
            run: copies_between_images_and_buffers,
        },
        DeviceTest {
            name: "copies_between_1d_image_arrays_and_buffers",
            run: copies_between_1d_image_arrays_and_buffers,
        },
        DeviceTest {
            name: "maps_report_pitches_for_every_type",
            run: maps_report_pitches_for_every_type,
        },
        DeviceTest {
            name: "bad_image_inputs_are_typed_errors",
            run: bad_image_inputs_are_typed_errors,
        },
        DeviceTest {
            name: "unsupported_formats_are_reported",
            run: unsupported_formats_are_reported,
        },
        DeviceTest {
            name: "sampler_reports_its_properties",
            run: sampler_reports_its_properties,
        },
        DeviceTest {
            name: "pipe_passes_packets_between_kernels",
            run: pipe_passes_packets_between_kernels,
        },
    ]
}

const RGBA_F: ImageFormat = ImageFormat::RGBA_FLOAT;
const R_U32: ImageFormat = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt32);

/// A queue on a fresh context, or a skip when the device has no images.
fn image_queue(dev: &TestDevice) -> Result<Queue, cl_tests::TestError> {
    if !dev.device.image_support()? {
        return Err(skip(
            "the device has no image support (CL_DEVICE_IMAGE_SUPPORT false)",
        ));
    }
    Ok(dev.queue())
}

/// A recognisable value per pixel channel: `seed + index`.
fn pattern(n: usize, seed: f32) -> Vec<f32> {
    (0..n).map(|i| seed + i as f32).collect()
}

fn descs() -> Vec<ImageDesc> {
    vec![
        ImageDesc::d1(7),
        ImageDesc::d1_array(5, 3),
        ImageDesc::d2(6, 4),
        ImageDesc::d2_array(4, 3, 2),
        ImageDesc::d3(4, 3, 5),
    ]
}

fn supported_formats_are_listed_per_type(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for t in ImageType::ALL {
        let formats = supported_image_formats(ctx, MemFlags::READ_WRITE, t)?;
        // The spec's minimum list has RGBA/FLOAT for read-write 2-D and 3-D images; every type
        // on these CPU runtimes lists it.
        assert!(!formats.is_empty(), "{t}: no formats");
        assert!(formats.contains(&RGBA_F), "{t}: {formats:?}");
        for f in &formats {
            assert!(f.to_string().starts_with("ImageFormat("), "{f}");
            if f.channel_order.name().is_some() && f.channel_type.name().is_some() {
                let size = f.itemsize()?;
                assert!((1..=16).contains(&size), "{f}: {size}");
            }
        }
    }
    let ro = supported_image_formats(ctx, MemFlags::READ_ONLY, ImageType::Image2d)?;
    assert!(ro.contains(&ImageFormat::new(
        ChannelOrder::Rgba,
        ChannelType::UnormInt8
    )));
    Ok(())
}

fn every_image_type_roundtrips(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in descs() {
        let n = desc.extent().iter().product::<usize>() * 4;
        let data = pattern(n, 1.0);
        let img = Image::from_host(ctx, MemFlags::READ_WRITE, RGBA_F, &desc, &data)?;
        assert_eq!(img.image_type(), desc.image_type);
        let back: Vec<f32> = img.to_vec(&q)?;
        assert_eq!(back, data, "{}", desc.image_type);
        // Overwrite one pixel row of the last layer/slice and read it back alone.
        let e = img.extent();
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
    let img = Image::from_buffer(ctx, MemFlags::READ_WRITE, RGBA_F, &buf, 9)?;
    assert_eq!(img.image_type(), ImageType::Image1dBuffer);
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

fn legacy_calls_create_2d_and_3d_images(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in [ImageDesc::d2(5, 3), ImageDesc::d3(3, 2, 4)] {
        let data = pattern(desc.extent().iter().product::<usize>() * 4, 0.5);
        let img =
            Image::new_through_legacy_calls(ctx, MemFlags::READ_WRITE, RGBA_F, &desc, Some(&data))?;
        assert_eq!(img.to_vec::<f32>(&q)?, data);
        assert_eq!(
            img.mem_type()?,
            if desc.image_type == ImageType::Image2d {
                MemObjectType::Image2d
            } else {
                MemObjectType::Image3d
            }
        );
        let empty =
            Image::new_through_legacy_calls::<f32>(ctx, MemFlags::READ_WRITE, RGBA_F, &desc, None)?;
        assert_eq!(empty.shape(), img.shape());
    }
    let e = Image::new_through_legacy_calls::<f32>(
        ctx,
        MemFlags::READ_WRITE,
        RGBA_F,
        &ImageDesc::d1(4),
        None,
    );
    assert!(matches!(e, Err(Error::Unsupported { .. })), "{e:?}");
    Ok(())
}

fn owned_host_image_uses_its_memory(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    let desc = ImageDesc::d2(8, 4);
    let data: Vec<u32> = (0..32).collect();
    let img = Image::from_owned_host(ctx, MemFlags::READ_WRITE, R_U32, &desc, data.clone())?;
    assert!(img.flags().contains(MemFlags::USE_HOST_PTR));
    assert_eq!(img.to_vec::<u32>(&q)?, data);
    img.write(
        &q,
        &[100u32, 101, 102],
        Transfer::default().rect(Rect::new([3, 1, 1]).dst_origin([2, 1, 0])),
    )?;
    let back = img.to_vec::<u32>(&q)?;
    assert_eq!(&back[10..13], &[100, 101, 102]);
    // The host memory lives as long as the OpenCL object: a clone keeps it usable after the
    // first handle is gone.
    let clone = img.clone();
    drop(img);
    assert_eq!(clone.to_vec::<u32>(&q)?[12], 102);
    Ok(())
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

fn host_row_pitch_is_honoured_at_creation(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    // A 3 x 4 image from rows padded to 5 values (20 bytes).
    let (padded, tight) = padded_grid(3, 4, 5);
    let desc = ImageDesc::d2(3, 4).with_pitches(ImagePitches::new(20, 0));
    let img = Image::from_host(q.context(), MemFlags::READ_WRITE, R_U32, &desc, &padded)?;
    assert_eq!(img.to_vec::<u32>(&q)?, tight);
    Ok(())
}

fn used_host_row_pitch_is_honoured(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    // USE_HOST_PTR memory cannot be repacked: the driver must read the padded rows itself.
    let (padded, tight) = padded_grid(3, 4, 5);
    let desc = ImageDesc::d2(3, 4).with_pitches(ImagePitches::new(20, 0));
    let img = Image::from_owned_host(q.context(), MemFlags::READ_WRITE, R_U32, &desc, padded)?;
    assert_eq!(
        img.to_vec::<u32>(&q)?,
        tight,
        "USE_HOST_PTR rows read with image_row_pitch 20"
    );
    Ok(())
}

fn host_slice_pitch_is_honoured_at_creation(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    // A 2 x 2 x 3 image whose slices are 6 values (24 bytes) apart.
    let desc = ImageDesc::d3(2, 2, 3).with_pitches(ImagePitches::new(8, 24));
    let data: Vec<u32> = (0..18).collect();
    let img = Image::from_host(q.context(), MemFlags::READ_WRITE, R_U32, &desc, &data)?;
    assert_eq!(
        img.to_vec::<u32>(&q)?,
        vec![0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]
    );
    Ok(())
}

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

fn one_d_array_layer_pitch_is_honoured_at_creation(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    // 3 layers of 2 values, 4 values (16 bytes) apart: the slice pitch of a 1-D array is "the size
    // in bytes of each image" (clCreateImage).
    let desc = ImageDesc::d1_array(2, 3).with_pitches(ImagePitches::new(0, 16));
    let data: Vec<u32> = (0..12).collect();
    let img = Image::from_host(q.context(), MemFlags::READ_WRITE, R_U32, &desc, &data)?;
    assert_eq!(img.to_vec::<u32>(&q)?, vec![0, 1, 4, 5, 8, 9]);
    Ok(())
}

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

fn one_d_array_layer_count_is_right(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    // PyOpenCL's create_image(ctx, flags, fmt, (8, 3), is_array=True) makes 1 layer (bug); here 3.
    let desc = ImageDesc::from_shape(&[8, 3], true, false)?;
    let img = Image::new(ctx, MemFlags::READ_WRITE, RGBA_F, &desc)?;
    let info = img.info()?;
    assert_eq!(info.array_size, 3);
    assert_eq!(info.width, 8);
    assert_eq!(img.shape(), vec![8, 3]);
    assert_eq!(img.mem_type()?, MemObjectType::Image1dArray);
    Ok(())
}

fn image_info_matches_creation(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in descs() {
        let img = Image::new(ctx, MemFlags::READ_ONLY, RGBA_F, &desc)?;
        let info = img.info()?;
        assert_eq!(info.format, RGBA_F);
        assert_eq!(info.element_size, 16);
        assert_eq!(info.width, desc.width);
        match desc.image_type {
            ImageType::Image2d | ImageType::Image2dArray | ImageType::Image3d => {
                assert_eq!(info.height, desc.height)
            }
            _ => assert!(info.height <= 1, "{info:?}"),
        }
        if desc.image_type == ImageType::Image3d {
            assert_eq!(info.depth, desc.depth);
        }
        if desc.image_type.is_array() {
            assert_eq!(info.array_size, desc.array_size);
        }
        assert_eq!(info.buffer, None);
        assert_eq!(info.num_mip_levels, 0);
        assert_eq!(info.num_samples, 0);
        assert_eq!(img.mem_flags()?, MemFlags::READ_ONLY);
        assert_eq!(
            img.size_bytes_packed(),
            desc.extent().iter().product::<usize>() * 16
        );
        // Adopting the raw handle reads the same description back.
        // SAFETY: a valid image handle; `from_raw_retained` takes its own reference.
        let again = unsafe { Image::from_raw_retained(img.as_raw()) }?;
        assert_eq!(again, img);
        assert_eq!(again.shape(), img.shape());
        assert_eq!(again.format(), RGBA_F);
        assert_eq!(again.image_type(), desc.image_type);
        // Through the untyped memory handle and back.
        let mem: cl_mem::Memory = again.into();
        assert_eq!(
            mem.mem_type()?,
            MemObjectType::from_raw(desc.image_type.to_raw())
        );
        let back = Image::try_from(mem).map_err(|m| fail(format!("{m:?} is not an image")))?;
        assert_eq!(back, img);
    }
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    assert!(Image::try_from(cl_mem::Memory::from(buf)).is_err());
    Ok(())
}

/// `Image::release` and `Image::into_raw` give the image's own reference away but must drop the
/// context reference the wrapper holds (an earlier `mem::forget(self)` leaked one per call).
fn release_and_into_raw_leak_no_context_reference(dev: &TestDevice) -> TestResult {
    let ctx = image_queue(dev)?.context().clone();
    let before = ctx.reference_count()?;
    let desc = ImageDesc::d2(8, 4);
    Image::new(&ctx, MemFlags::READ_WRITE, RGBA_F, &desc)?.release()?;
    assert_eq!(ctx.reference_count()?, before, "after release()");
    let raw = Image::new(&ctx, MemFlags::READ_WRITE, RGBA_F, &desc)?.into_raw();
    // SAFETY: `raw` is the one reference `into_raw` gave away; adopting it releases it on drop.
    drop(unsafe { Image::from_raw(raw) }?);
    assert_eq!(
        ctx.reference_count()?,
        before,
        "after into_raw() + from_raw()"
    );
    Ok(())
}

fn image_info_reports_pitches(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    // CL_IMAGE_ROW_PITCH and CL_IMAGE_SLICE_PITCH are "calculated" pitches: at least a packed row
    // (slice) even when none was given at creation.
    for desc in descs() {
        let img = Image::new(q.context(), MemFlags::READ_WRITE, RGBA_F, &desc)?;
        let info = img.info()?;
        assert!(
            info.row_pitch >= desc.width * 16,
            "CL_IMAGE_ROW_PITCH {} below a packed row: {desc:?}: {info:?}",
            info.row_pitch
        );
        match desc.image_type {
            ImageType::Image1dArray => assert!(info.slice_pitch >= info.row_pitch, "{info:?}"),
            ImageType::Image2dArray | ImageType::Image3d => {
                assert!(info.slice_pitch >= info.row_pitch * desc.height, "{info:?}")
            }
            _ => {}
        }
    }
    Ok(())
}

fn image_from_array_reads_back_equal(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    // float32 (4, 6): a 6 x 4 R/FLOAT image (PyOpenCL's example).
    let a = ndarray::Array2::from_shape_fn((4, 6), |(r, c)| (r * 6 + c) as f32);
    let img = image_from_array(ctx, &a, ArrayImageOptions::default())?;
    assert_eq!(img.shape(), vec![6, 4]);
    assert_eq!(
        img.format(),
        ImageFormat::new(ChannelOrder::R, ChannelType::Float)
    );
    assert_eq!(img.mem_flags()? & MemFlags::READ_ONLY, MemFlags::READ_ONLY);
    let back = img.read_array::<f32>(&q, &[], &img.extent(), &[])?;
    assert_eq!(back.shape(), &[4, 6]);
    assert_eq!(back.as_slice(), a.as_slice());
    // The same from a flat slice and its shape, no ndarray.
    let flat: Vec<f32> = (0..24u8).map(f32::from).collect();
    let img = Image::from_slice(ctx, &flat, &[4, 6], ArrayImageOptions::default())?;
    assert_eq!(img.shape(), vec![6, 4]);
    assert_eq!(img.to_vec::<f32>(&q)?, flat);
    assert!(matches!(
        Image::from_slice(ctx, &flat, &[5, 6], ArrayImageOptions::default()),
        Err(Error::InvalidArgument(m)) if m.contains("holds 30 values, the slice 24")
    ));
    // (2, 3, 5, 4) u8 with 4 channels, normalized: a 5 x 3 x 2 RGBA/UNORM_INT8 3-D image.
    let b = ndarray::Array4::from_shape_fn((2, 3, 5, 4), |(z, y, x, c)| {
        (z * 60 + y * 20 + x * 4 + c) as u8
    });
    let opts = ArrayImageOptions {
        num_channels: Some(4),
        access: ImageAccess::ReadWrite,
        norm_int: true,
    };
    let img = image_from_array(ctx, &b, opts)?;
    assert_eq!(img.shape(), vec![5, 3, 2]);
    assert_eq!(
        img.format(),
        ImageFormat::new(ChannelOrder::Rgba, ChannelType::UnormInt8)
    );
    let back = img.read_array::<u8>(&q, &[], &img.extent(), &[])?;
    assert_eq!(back.shape(), b.shape());
    assert_eq!(back.as_slice(), b.as_slice());
    // Vector elements: [i16; 4] per pixel -> RGBA/SIGNED_INT16, 1-D.
    let c = ndarray::Array1::from_shape_fn(7, |i| [i as i16, -(i as i16), 2, i16::MIN]);
    let img = image_from_array(ctx, &c, ArrayImageOptions::default())?;
    assert_eq!(
        img.format(),
        ImageFormat::new(ChannelOrder::Rgba, ChannelType::SignedInt16)
    );
    assert_eq!(img.image_type(), ImageType::Image1d);
    let back = img.read_array::<[i16; 4]>(&q, &[], &[7], &[])?;
    assert_eq!(back.as_slice(), c.as_slice());
    // write_array over a region, read back.
    let patch = ndarray::Array2::from_shape_fn((2, 3), |(r, cc)| 100.0 + (r * 3 + cc) as f32);
    let img = image_from_array(
        ctx,
        &a,
        ArrayImageOptions {
            access: ImageAccess::ReadWrite,
            ..Default::default()
        },
    )?;
    img.write_array(&q, &[1, 2], &patch, &[])?;
    let back = img.read_array::<f32>(&q, &[1, 2], &[3, 2], &[])?;
    assert_eq!(back.as_slice(), patch.as_slice());
    // Half floats.
    let h = ndarray::Array2::from_shape_fn((2, 2), |(r, cc)| {
        half::f16::from_f32((r * 2 + cc) as f32 * 0.5)
    });
    match image_from_array(ctx, &h, ArrayImageOptions::default()) {
        Ok(img) => {
            assert_eq!(img.format().channel_type, ChannelType::HalfFloat);
            assert_eq!(
                img.read_array::<half::f16>(&q, &[], &[2, 2], &[])?
                    .as_slice(),
                h.as_slice()
            );
        }
        // R/HALF_FLOAT is optional, but only a device that does not list it may refuse it.
        Err(Error::Unsupported { .. }) => {
            let listed =
                cl_mem::supported_image_formats(ctx, MemFlags::READ_ONLY, ImageType::Image2d)?
                    .contains(&ImageFormat::new(ChannelOrder::R, ChannelType::HalfFloat));
            assert!(
                !listed,
                "R/HALF_FLOAT is in the device's format list but image_from_array refused it"
            );
        }
        Err(e) => return Err(e.into()),
    }
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
            let mut k = Kernel::new(&program, name)?;
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

fn fill_sets_every_pixel_of_the_region(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    if ctx.platform_version() < Version::V1_2 {
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
        img.map(&q, MapAccess::Read, &[], &e, &[], |m| -> TestResult {
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
            MapAccess::Write,
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
    let inner = img.map(&q, MapAccess::Write, &[], &[4], &[], |_| {
        img.map(&q, MapAccess::Read, &[], &[4], &[], |_| ())
    })?;
    assert!(matches!(inner, Err(Error::Mapped(_))), "{inner:?}");
    assert_eq!(img.mem_map_count()?, 0);
    Ok(())
}

fn bad_image_inputs_are_typed_errors(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    let inv = |r: Result<Image, Error>, what: &str| match r {
        Err(Error::InvalidArgument(_)) => Ok(()),
        other => Err(fail(format!(
            "{what}: expected InvalidArgument, got {other:?}"
        ))),
    };
    let d2 = ImageDesc::d2(4, 4);
    // Creation.
    inv(
        Image::new(ctx, MemFlags::COPY_HOST_PTR, RGBA_F, &d2),
        "host flag without data",
    )?;
    inv(
        Image::new(
            ctx,
            MemFlags::READ_WRITE,
            RGBA_F,
            &d2.with_pitches(ImagePitches::new(64, 0)),
        ),
        "pitches without data",
    )?;
    inv(
        Image::new(ctx, MemFlags::READ_WRITE, RGBA_F, &ImageDesc::d2(0, 4)),
        "zero width",
    )?;
    inv(
        Image::new(ctx, MemFlags::READ_ONLY | MemFlags::WRITE_ONLY, RGBA_F, &d2),
        "two access flags",
    )?;
    inv(
        Image::new(ctx, MemFlags::READ_WRITE, RGBA_F, &ImageDesc::d1_buffer(4)),
        "1-D buffer without buffer",
    )?;
    let limits = dev.device.image_limits()?;
    inv(
        Image::new(
            ctx,
            MemFlags::READ_WRITE,
            RGBA_F,
            &ImageDesc::d2(limits.max_2d[0] + 1, 1),
        ),
        "too wide",
    )?;
    inv(
        Image::new(
            ctx,
            MemFlags::READ_WRITE,
            RGBA_F,
            &ImageDesc::d1_array(4, limits.max_array_size + 1),
        ),
        "too many layers",
    )?;
    let mut odd = ImageDesc::d2(4, 4);
    odd.depth = 2;
    inv(
        Image::new(ctx, MemFlags::READ_WRITE, RGBA_F, &odd),
        "depth on a 2-D image",
    )?;
    inv(
        Image::from_host(ctx, MemFlags::USE_HOST_PTR, RGBA_F, &d2, &[0f32; 64]),
        "borrowed USE_HOST_PTR",
    )?;
    inv(
        Image::from_host(
            ctx,
            MemFlags::READ_WRITE,
            RGBA_F,
            &d2.with_pitches(ImagePitches::new(32, 0)),
            &[0f32; 64],
        ),
        "row pitch too small",
    )?;
    inv(
        Image::from_host(
            ctx,
            MemFlags::READ_WRITE,
            RGBA_F,
            &d2.with_pitches(ImagePitches::new(0, 256)),
            &[0f32; 64],
        ),
        "slice pitch on 2-D",
    )?;
    match Image::from_host(ctx, MemFlags::READ_WRITE, RGBA_F, &d2, &[0f32; 63]) {
        Err(Error::OutOfBounds {
            len: 256,
            size: 252,
            ..
        }) => {}
        other => return Err(fail(format!("short host data: {other:?}"))),
    }
    assert!(matches!(
        ImageDesc::from_shape(&[4, 4, 4, 4], false, false),
        Err(Error::InvalidArgument(_))
    ));
    let small = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    match Image::from_buffer(ctx, MemFlags::READ_WRITE, RGBA_F, &small, 5) {
        Err(Error::OutOfBounds {
            len: 80, size: 64, ..
        }) => {}
        other => return Err(fail(format!("1-D buffer image past its buffer: {other:?}"))),
    }
    // Transfers.
    let img = Image::new(ctx, MemFlags::READ_WRITE, RGBA_F, &d2)?;
    let mut out = [0f32; 64];
    let oob = |r: Result<cl_mem::Event, Error>, what: &str| match r {
        Err(Error::OutOfBounds { .. }) => Ok(()),
        other => Err(fail(format!("{what}: expected OutOfBounds, got {other:?}"))),
    };
    oob(
        img.read(
            &q,
            &mut out,
            Transfer::default().rect(Rect::new([4, 4, 1]).src_origin([1, 0, 0])),
        ),
        "region past x",
    )?;
    oob(
        img.read(
            &q,
            &mut out,
            Transfer::default().rect(Rect::new([1, 1, 1]).src_origin([0, 0, 1])),
        ),
        "z origin on 2-D",
    )?;
    oob(
        img.read(
            &q,
            &mut out[..63],
            Transfer::default().rect(Rect::new([4, 4, 1])),
        ),
        "short host slice",
    )?;
    oob(
        img.write(
            &q,
            &out[..60],
            Transfer::default().rect(Rect::new([4, 4, 1])),
        ),
        "short write data",
    )?;
    // Image reads have no host origin (the host slice is sliced instead).
    assert!(matches!(
        img.read(
            &q,
            &mut out,
            Transfer::default().rect(Rect::new([1, 1, 1]).dst_origin([1, 0, 0]))
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        img.read(&q, &mut out, Transfer::default().rect(Rect::new([0, 1, 1]))),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        img.fill(
            &q,
            FillColor::Uint([1; 4]),
            Transfer::default().rect(Rect::new([4, 4, 1]))
        ),
        Err(Error::InvalidArgument(_))
    ));
    oob(
        img.fill(
            &q,
            FillColor::Float([1.0; 4]),
            Transfer::default().rect(Rect::new([2, 2, 1]).dst_origin([3, 3, 0])),
        ),
        "fill past the edge",
    )?;
    let other = Image::new(ctx, MemFlags::READ_WRITE, R_U32, &d2)?;
    assert!(matches!(
        enqueue_copy(
            &q,
            &other,
            &img,
            Transfer::default().rect(Rect::new([4, 4, 1]))
        ),
        Err(Error::InvalidArgument(_))
    ));
    let same = Image::new(ctx, MemFlags::READ_WRITE, RGBA_F, &ImageDesc::d2(2, 2))?;
    oob(
        enqueue_copy(
            &q,
            &same,
            &img,
            Transfer::default().rect(Rect::new([4, 4, 1])),
        ),
        "copy past the destination",
    )?;
    oob(
        enqueue_copy(
            &q,
            &small,
            &img,
            Transfer::default().rect(Rect::new([4, 4, 1])),
        ),
        "copy past the buffer",
    )?;
    oob(
        enqueue_copy(
            &q,
            &img,
            &small,
            Transfer::default()
                .rect(Rect::new([4, 1, 1]))
                .src_offset(16),
        ),
        "copy from past the buffer",
    )?;
    let m = img.map(&q, MapAccess::Read, &[2, 2], &[3, 3], &[], |_| ());
    assert!(matches!(m, Err(Error::OutOfBounds { .. })), "{m:?}");
    // Arrays.
    let f64s = ndarray::Array2::<u8>::zeros((4, 4));
    let r = image_from_array(ctx, &f64s.t(), ArrayImageOptions::default());
    assert!(
        matches!(r, Err(Error::InvalidArgument(_))),
        "transposed: {r:?}"
    );
    let r = image_from_array(
        ctx,
        &ndarray::Array2::<f32>::zeros((4, 4)),
        ArrayImageOptions {
            norm_int: true,
            ..Default::default()
        },
    );
    assert!(
        matches!(r, Err(Error::InvalidArgument(_))),
        "norm f32: {r:?}"
    );
    let r = image_from_array(
        ctx,
        &ndarray::Array2::<f32>::zeros((4, 3)),
        ArrayImageOptions {
            num_channels: Some(4),
            ..Default::default()
        },
    );
    assert!(
        matches!(r, Err(Error::InvalidArgument(_))),
        "channels: {r:?}"
    );
    let r = image_from_array(
        ctx,
        &ndarray::Array4::<f32>::zeros((2, 2, 2, 2)),
        ArrayImageOptions::default(),
    );
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "4-D: {r:?}");
    // A queue of another context; host access flags.
    let other_q = dev.queue();
    assert!(matches!(
        img.read(
            &other_q,
            &mut out,
            Transfer::default().rect(Rect::new([4, 4, 1]))
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        img.fill(
            &other_q,
            FillColor::Float([0.0; 4]),
            Transfer::default().rect(Rect::new([1, 1, 1]))
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        img.map(&other_q, MapAccess::Read, &[], &[1], &[], |_| ()),
        Err(Error::InvalidArgument(_))
    ));
    let other_buf = Buffer::new(other_q.context(), MemFlags::READ_WRITE, 1024)?;
    assert!(matches!(
        enqueue_copy(
            &q,
            &other_buf,
            &img,
            Transfer::default().rect(Rect::new([1, 1, 1]))
        ),
        Err(Error::InvalidArgument(_))
    ));
    let wo = Image::new(
        ctx,
        MemFlags::READ_WRITE | MemFlags::HOST_WRITE_ONLY,
        RGBA_F,
        &d2,
    )?;
    assert!(matches!(
        wo.read(&q, &mut out, Transfer::default().rect(Rect::new([1, 1, 1]))),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        wo.map(&q, MapAccess::Read, &[], &[1], &[], |_| ()),
        Err(Error::InvalidArgument(_))
    ));
    wo.write(
        &q,
        &[1f32; 4],
        Transfer::default().rect(Rect::new([1, 1, 1])),
    )?;
    let ro = Image::new(
        ctx,
        MemFlags::READ_WRITE | MemFlags::HOST_NO_ACCESS,
        RGBA_F,
        &d2,
    )?;
    assert!(matches!(
        ro.write(
            &q,
            &[1f32; 4],
            Transfer::default().rect(Rect::new([1, 1, 1]))
        ),
        Err(Error::InvalidArgument(_))
    ));
    // Nothing above leaked a mapping or a reference.
    assert_eq!(img.mem_map_count()?, 0);
    assert_eq!(img.mem_reference_count()?, 1);
    Ok(())
}

fn unsupported_formats_are_reported(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    let supported = supported_image_formats(ctx, MemFlags::READ_WRITE, ImageType::Image2d)?;
    let mut refused = 0;
    let mut created = 0;
    for order in 0x10B0..=0x10C3u32 {
        for ty in 0x10D0..=0x10E0u32 {
            let f = ImageFormat::new(ChannelOrder::from_raw(order), ChannelType::from_raw(ty));
            let r = Image::new(ctx, MemFlags::READ_WRITE, f, &ImageDesc::d2(4, 4));
            if supported.contains(&f) {
                match r {
                    Ok(img) => {
                        assert_eq!(img.format(), f);
                        created += 1;
                    }
                    Err(e) => return Err(fail(format!("{f} is listed as supported but: {e}"))),
                }
            } else {
                match r {
                    Err(Error::Unsupported {
                        feature: "image format",
                        ..
                    }) => refused += 1,
                    Err(Error::InvalidArgument(_)) if f.itemsize().is_err() => refused += 1,
                    other => return Err(fail(format!("{f} is not listed but: {other:?}"))),
                }
            }
        }
    }
    assert_eq!(
        created,
        supported.iter().filter(|f| f.itemsize().is_ok()).count()
    );
    assert!(refused > 0);
    // RGB with a non-packed type: PyOpenCL's image_from_array makes the driver fail; here a
    // typed error unless the device lists it.
    let rgb = ndarray::Array3::<f32>::zeros((2, 2, 3));
    let r = image_from_array(
        ctx,
        &rgb,
        ArrayImageOptions {
            num_channels: Some(3),
            ..Default::default()
        },
    );
    let listed = supported_image_formats(ctx, MemFlags::READ_ONLY, ImageType::Image2d)?
        .contains(&ImageFormat::new(ChannelOrder::Rgb, ChannelType::Float));
    assert!(listed == r.is_ok(), "RGB/FLOAT listed={listed}: {r:?}");
    Ok(())
}

fn sampler_reports_its_properties(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx: &Context = q.context();
    let s = Sampler::new(ctx, true, AddressingMode::Repeat, FilterMode::Linear)?;
    assert!(s.normalized_coords()?);
    assert_eq!(s.addressing_mode()?, AddressingMode::Repeat);
    assert_eq!(s.filter_mode()?, FilterMode::Linear);
    assert_eq!(s.reference_count()?, 1);
    assert_eq!(s.context()?.as_raw(), ctx.as_raw());
    let c = s.clone();
    assert_eq!(s.reference_count()?, 2);
    drop(c);
    let p = Sampler::with_properties(ctx, &[SamplerProperty::NormalizedCoords(false)])?;
    assert!(!p.normalized_coords()?);
    assert_eq!(p.addressing_mode()?, AddressingMode::Clamp);
    assert_eq!(p.filter_mode()?, FilterMode::Nearest);
    if ctx.platform_version() >= Version::V3_0 {
        let props = s.properties()?;
        assert_eq!(props.last(), Some(&0));
        assert!(
            props.chunks(2).any(|kv| kv == [0x1153, 0x1133]),
            "{props:?}"
        );
    } else {
        assert!(matches!(s.properties(), Err(Error::Unsupported { .. })));
    }
    let twice = Sampler::with_properties(
        ctx,
        &[
            SamplerProperty::NormalizedCoords(false),
            SamplerProperty::NormalizedCoords(true),
        ],
    );
    assert!(matches!(twice, Err(Error::InvalidArgument(_))));
    let unnormalized_repeat = Sampler::new(
        ctx,
        false,
        AddressingMode::MirroredRepeat,
        FilterMode::Nearest,
    );
    assert!(matches!(
        unnormalized_repeat,
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

const PIPE_SRC: &str = r#"
__kernel void produce(__write_only pipe int p, __global const int* src) {
    int v = src[get_global_id(0)];
    write_pipe(p, &v);
}
__kernel void consume(__read_only pipe int p, __global int* dst) {
    int v;
    dst[get_global_id(0)] = read_pipe(p, &v) == 0 ? v : -1;
}
"#;

fn pipe_passes_packets_between_kernels(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let has_pipes = dev.device.pipe_support()? && dev.device.platform_version() >= Version::V2_0;
    let pipe = Pipe::new(ctx, MemFlags::empty(), 4, 64);
    if !has_pipes {
        assert!(matches!(pipe, Err(Error::Unsupported { .. })), "{pipe:?}");
        return Err(skip(
            "no pipe support: creation refused with Error::Unsupported before the driver",
        ));
    }
    let pipe = pipe?;
    assert_eq!(pipe.query_packet_size()?, 4);
    assert_eq!(pipe.query_max_packets()?, 64);
    assert_eq!(pipe.mem_type()?, MemObjectType::Pipe);
    // SAFETY: a valid pipe handle; `from_raw_retained` takes its own reference.
    let again = unsafe { Pipe::from_raw_retained(pipe.as_raw()) }?;
    assert_eq!((again.packet_size(), again.max_packets()), (4, 64));
    assert_eq!(again, pipe);
    drop(again);
    if ctx.platform_version() >= Version::V3_0 {
        assert!(pipe.properties()?.iter().all(|&p| p == 0));
    }
    assert!(matches!(
        Pipe::with_properties(ctx, MemFlags::empty(), 4, 4, &[1, 0]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Pipe::new(ctx, MemFlags::READ_ONLY, 4, 4),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Pipe::new(ctx, MemFlags::empty(), 0, 4),
        Err(Error::InvalidArgument(_))
    ));
    let program = Program::build_from_source(ctx, PIPE_SRC, "-cl-std=CL2.0")?;
    let n = 48usize;
    let input: Vec<i32> = (0..n as i32).map(|v| v * 7 + 3).collect();
    let src = Buffer::from_slice(ctx, MemFlags::READ_ONLY, &input)?;
    let dst = Buffer::new(ctx, MemFlags::WRITE_ONLY, n * 4)?;
    let mut produce = Kernel::new(&program, "produce")?;
    produce.set_arg(0, &pipe)?.set_arg(1, &src)?;
    let mut consume = Kernel::new(&program, "consume")?;
    consume.set_arg(0, &pipe)?.set_arg(1, &dst)?;
    let written = produce.enqueue_nd_range(&q, &[n], None, &[])?;
    consume
        .enqueue_nd_range(&q, &[n], None, &[&written])?
        .wait()?;
    let mut got = vec![0i32; n];
    dst.read(&q, &mut got, &[])?;
    got.sort_unstable();
    let mut expect = input;
    expect.sort_unstable();
    assert_eq!(got, expect);
    Ok(())
}
