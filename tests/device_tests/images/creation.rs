//! Image creation: formats, legacy calls, host memory and pitches, info, typed arrays.

use super::{descs, padded_grid, pattern, R_U32};
use crate::common::{image_queue, RGBA_F};
use cl_mem::{
    image_from_array, supported_image_formats, ArrayImageOptions, Buffer, ChannelOrder,
    ChannelType, Error, Image, ImageDesc, ImageFormat, ImagePitches, ImageType, MemFlags,
    MemObject, MemObjectType, RawHandle, Rect, Transfer,
};
use cl_tests::{device_test, fail, skip, Expectation, TestDevice, TestResult};

device_test!(supported_formats_are_listed_per_type);
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
            if !matches!(f.channel_order, ChannelOrder::Other(_))
                && !matches!(f.channel_type, ChannelType::Other(_))
            {
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

device_test!(legacy_calls_create_2d_and_3d_images);
fn legacy_calls_create_2d_and_3d_images(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    for desc in [ImageDesc::d2(5, 3), ImageDesc::d3(3, 2, 4)] {
        let data = pattern(desc.extent().iter().product::<usize>() * 4, 0.5);
        let img =
            Image::new_through_legacy_calls(ctx, MemFlags::READ_WRITE, RGBA_F, &desc, Some(&data))?;
        assert_eq!(img.to_vec::<f32>(&q)?, data);
        assert_eq!(
            img.mem_info()?.mem_type,
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

device_test!(owned_host_image_uses_its_memory);
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

device_test!(host_row_pitch_is_honoured_at_creation);
fn host_row_pitch_is_honoured_at_creation(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    // A 3 x 4 image from rows padded to 5 values (20 bytes).
    let (padded, tight) = padded_grid(3, 4, 5);
    let desc = ImageDesc::d2(3, 4).with_pitches(ImagePitches::new(20, 0));
    let img = Image::from_host(q.context(), MemFlags::READ_WRITE, R_U32, &desc, &padded)?;
    assert_eq!(img.to_vec::<u32>(&q)?, tight);
    Ok(())
}

device_test!(
    used_host_row_pitch_is_honoured,
    expected = &[Expectation {
        platform: "oclgrind",
        device: "",
        version: "Oclgrind 21.10",
        reason: "clCreateImage ignores image_row_pitch: USE_HOST_PTR rows are read as if packed",
        link: "docs/DEVICES.md#oclgrind",
        failure: "USE_HOST_PTR rows read with image_row_pitch 20",
        flaky: false,
    }]
);
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

device_test!(host_slice_pitch_is_honoured_at_creation);
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

device_test!(one_d_array_layer_pitch_is_honoured_at_creation);
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

device_test!(one_d_array_layer_count_is_right);
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
    assert_eq!(img.mem_info()?.mem_type, MemObjectType::Image1dArray);
    Ok(())
}

device_test!(image_info_matches_creation);
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
        if matches!(
            desc.image_type,
            ImageType::Image1dArray | ImageType::Image2dArray
        ) {
            assert_eq!(info.array_size, desc.array_size);
        }
        assert_eq!(info.buffer, None);
        assert_eq!(info.num_mip_levels, 0);
        assert_eq!(info.num_samples, 0);
        assert_eq!(img.mem_info()?.flags, MemFlags::READ_ONLY);
        assert_eq!(img.info()?.element_size, 16);
        // Adopting the raw handle reads the same description back.
        // SAFETY: a valid image handle; `from_raw_retained` takes its own reference.
        let again = unsafe { Image::from_raw_retained(img.as_raw()) }?;
        assert_eq!(again, img);
        assert_eq!(again.shape(), img.shape());
        assert_eq!(again.format(), RGBA_F);
        assert_eq!(again.desc().image_type, desc.image_type);
        // Through the untyped memory handle and back.
        let mem: cl_mem::Memory = again.into();
        let want = match desc.image_type {
            ImageType::Image1d => MemObjectType::Image1d,
            ImageType::Image1dArray => MemObjectType::Image1dArray,
            ImageType::Image1dBuffer => MemObjectType::Image1dBuffer,
            ImageType::Image2d => MemObjectType::Image2d,
            ImageType::Image2dArray => MemObjectType::Image2dArray,
            ImageType::Image3d => MemObjectType::Image3d,
        };
        assert_eq!(mem.mem_info()?.mem_type, want);
        let back = Image::try_from(mem).map_err(|m| fail(format!("{m:?} is not an image")))?;
        assert_eq!(back, img);
    }
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    assert!(Image::try_from(cl_mem::Memory::from(buf)).is_err());
    Ok(())
}

device_test!(
    image_info_reports_pitches,
    expected = &[
        Expectation {
            platform: "oclgrind",
            device: "",
            version: "Oclgrind 21.10",
            reason: "CL_IMAGE_ROW_PITCH and CL_IMAGE_SLICE_PITCH read 0 for images created without host pitches",
            link: "docs/DEVICES.md#oclgrind",
            failure: "CL_IMAGE_ROW_PITCH 0 below a packed row",
            flaky: false,
        }
    ]
);
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

device_test!(image_from_array_reads_back_equal);
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
    assert_eq!(
        img.mem_info()?.flags & MemFlags::READ_ONLY,
        MemFlags::READ_ONLY
    );
    let back = img.read_array::<f32>(&q, &[], &img.shape(), &[])?;
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
        access: MemFlags::READ_WRITE,
        norm_int: true,
    };
    let img = image_from_array(ctx, &b, opts)?;
    assert_eq!(img.shape(), vec![5, 3, 2]);
    assert_eq!(
        img.format(),
        ImageFormat::new(ChannelOrder::Rgba, ChannelType::UnormInt8)
    );
    let back = img.read_array::<u8>(&q, &[], &img.shape(), &[])?;
    assert_eq!(back.shape(), b.shape());
    assert_eq!(back.as_slice(), b.as_slice());
    // Vector elements: [i16; 4] per pixel -> RGBA/SIGNED_INT16, 1-D.
    let c = ndarray::Array1::from_shape_fn(7, |i| [i as i16, -(i as i16), 2, i16::MIN]);
    let img = image_from_array(ctx, &c, ArrayImageOptions::default())?;
    assert_eq!(
        img.format(),
        ImageFormat::new(ChannelOrder::Rgba, ChannelType::SignedInt16)
    );
    assert_eq!(img.desc().image_type, ImageType::Image1d);
    let back = img.read_array::<[i16; 4]>(&q, &[], &[7], &[])?;
    assert_eq!(back.as_slice(), c.as_slice());
    // write_array over a region, read back.
    let patch = ndarray::Array2::from_shape_fn((2, 3), |(r, cc)| 100.0 + (r * 3 + cc) as f32);
    let img = image_from_array(
        ctx,
        &a,
        ArrayImageOptions {
            access: MemFlags::READ_WRITE,
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

device_test!(typed_image_arrays_match_the_channel_type);
fn typed_image_arrays_match_the_channel_type(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let data: Vec<f32> = (0..16).map(|i| i as f32 + 0.5).collect();
    let img = Image::from_host(
        ctx,
        MemFlags::READ_WRITE,
        crate::common::RGBA_F,
        &ImageDesc::d1(4),
        &data,
    )?;
    // The case was `read_array::<f64>`: now a compile error (tests/ui). An element type
    // of another channel type is a typed error, not a reinterpretation.
    let r = img.read_array::<u32>(&q, &[], &[4], &[]);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("Float")),
        "{r:?}"
    );
    let r = img.write_array(&q, &[], &ndarray::Array2::<i32>::zeros((4, 4)), &[]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let back = img.read_array::<f32>(&q, &[], &[4], &[])?;
    assert_eq!(back.as_slice(), Some(&data[..]));
    let px = img.read_array::<[f32; 4]>(&q, &[], &[4], &[])?;
    assert_eq!(px[[1]], [4.5, 5.5, 6.5, 7.5]);
    // Normalized formats take their integer type.
    let unorm = Image::new(
        ctx,
        MemFlags::READ_WRITE,
        ImageFormat::new(cl_mem::ChannelOrder::Rgba, cl_mem::ChannelType::UnormInt8),
        &ImageDesc::d1(4),
    )?;
    unorm.write_array(&q, &[], &ndarray::Array2::<u8>::from_elem((4, 4), 7), &[])?;
    let v = unorm.read_array::<u8>(&q, &[], &[4], &[])?;
    assert!(v.iter().all(|&x| x == 7));
    let r = unorm.read_array::<i8>(&q, &[], &[4], &[]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    Ok(())
}
