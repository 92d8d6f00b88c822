//! Bad image input is a typed error; unsupported formats are reported.

use super::R_U32;
use crate::common::{image_queue, invalid, RGBA_F};
use cl_mem::{
    enqueue_copy, image_from_array, supported_image_formats, ArrayImageOptions, Buffer,
    ChannelOrder, ChannelType, Error, FillColor, Image, ImageDesc, ImageFormat, ImagePitches,
    ImageType, MapFlags, MemFlags, MemObject, RawHandle, Rect, Transfer,
};
use cl_tests::{device_test, fail, skip, TestDevice, TestResult};

device_test!(bad_image_inputs_are_typed_errors);
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
        Image::new(
            ctx,
            MemFlags::READ_WRITE,
            RGBA_F,
            &ImageDesc::from_shape(&[4], false, true)?,
        ),
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
    match Image::from_buffer(ctx, MemFlags::READ_WRITE, RGBA_F, &small, &[5], None) {
        Err(Error::OutOfBounds {
            len: 80, size: 64, ..
        }) => {}
        other => return Err(fail(format!("1-D buffer image past its buffer: {other:?}"))),
    }
    // Shapes `from_buffer` does not take: a row pitch for one row, three dimensions.
    for (shape, pitch) in [
        (&[4usize][..], Some(64)),
        (&[4, 1, 1][..], None),
        (&[][..], None),
    ] {
        invalid(
            Image::from_buffer(ctx, MemFlags::READ_WRITE, RGBA_F, &small, shape, pitch),
            "an image from a buffer of a shape it does not take",
        );
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
    let m = img.map(&q, MapFlags::READ, &[2, 2], &[3, 3], &[], |_| ());
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
        img.map(&other_q, MapFlags::READ, &[], &[1], &[], |_| ()),
        Err(Error::InvalidArgument(_))
    ));
    // Map flags the driver would refuse (or, empty, map for nothing) are refused before it.
    for flags in [
        MapFlags::empty(),
        MapFlags::WRITE_INVALIDATE_REGION | MapFlags::READ,
    ] {
        assert!(matches!(
            img.map(&q, flags, &[], &[1], &[], |_| ()),
            Err(Error::InvalidArgument(_))
        ));
    }
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
        wo.map(&q, MapFlags::READ, &[], &[1], &[], |_| ()),
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
    assert_eq!(img.mem_info()?.map_count, 0);
    assert_eq!(img.reference_count()?, 1);
    Ok(())
}

device_test!(unsupported_formats_are_reported);
fn unsupported_formats_are_reported(dev: &TestDevice) -> TestResult {
    let q = image_queue(dev)?;
    let ctx = q.context();
    let supported = supported_image_formats(ctx, MemFlags::READ_WRITE, ImageType::Image2d)?;
    let mut refused = 0;
    let mut created = 0;
    for order in 0x10B0..=0x10C3u32 {
        for ty in 0x10D0..=0x10E0u32 {
            let f = ImageFormat::from_raw(cl_raw::sys::cl_image_format {
                image_channel_order: order,
                image_channel_data_type: ty,
            });
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

device_test!(an_image_over_a_buffer_of_another_context_is_refused);
fn an_image_over_a_buffer_of_another_context_is_refused(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let (a, b) = (dev.context(), dev.context());
    let fmt = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt32);
    let buf = Buffer::new(&a, MemFlags::READ_WRITE, 4096)?;
    let msg = invalid(
        Image::from_buffer(&b, MemFlags::empty(), fmt, &buf, &[16], None),
        "1-D image over another context's buffer",
    );
    assert!(msg.contains("another context"), "{msg}");
    invalid(
        Image::from_buffer(&b, MemFlags::empty(), fmt, &buf, &[16, 4], None),
        "2-D image over another context's buffer",
    );
    Ok(())
}
