//! PyOpenCL parity gaps (issue 15), found by porting PyOpenCL's own memory tests: each case as
//! PyOpenCL users write it, on every device that has the feature.

use cl_mem::svm::{svm_empty, Coarse, SvmOptions, SvmPointer};
use cl_mem::RawHandle;
use cl_mem::{Buffer, Error, MemFlags, Program, SvmCapabilities};
use cl_pool::{MemoryPool, SvmAllocator};
use cl_raw::sys;
use cl_tests::{device_test, skip, Expectation, TestDevice, TestResult};

const SRC: &str = r#"
__kernel void bump(__global int* a) { a[get_global_id(0)] += 1; }
"#;

device_test!(empty_nd_ranges_run_nothing_and_return_an_event);
/// PyOpenCL's `allow_empty_ndrange=True`: a zero-size range launches nothing and still gives an
/// event (OpenCL 1.2 drivers refuse a zero global size; here every version takes it).
fn empty_nd_ranges_run_nothing_and_return_an_event(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[7i32; 4])?;
    let program = Program::build_from_source(ctx, SRC, "")?;
    let mut k = program.kernel("bump")?;
    k.set_arg(0, &buf)?;
    for global in [[0usize].as_slice(), &[4, 0], &[0, 4, 4]] {
        let ev = k.enqueue_nd_range(&q, global, None, &[])?;
        ev.wait()?;
        assert_eq!(
            ev.command_type()?,
            cl_raw::sys::CL_COMMAND_MARKER,
            "{global:?}"
        );
    }
    assert_eq!(buf.to_vec::<i32>(&q)?, vec![7; 4], "nothing ran");
    // A zero local size is still an error, empty range or not.
    let r = k.enqueue_nd_range(&q, &[0], Some(&[0]), &[]);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    k.enqueue_nd_range(&q, &[4], None, &[])?.wait()?;
    assert_eq!(buf.to_vec::<i32>(&q)?, vec![8; 4]);
    Ok(())
}

fn coarse_svm(dev: &TestDevice) -> Result<(), cl_tests::TestError> {
    let caps = dev.device.svm_capabilities()?;
    if dev.device.version() < cl_mem::Version::V2_0
        || !caps.contains(SvmCapabilities::COARSE_GRAIN_BUFFER)
    {
        return Err(skip("no coarse-grain buffer SVM (OpenCL 2.0)"));
    }
    Ok(())
}

device_test!(svm_alignment_zero_is_the_drivers_default);
/// `SVMAllocation(ctx, size, 0, flags)` and `SVMAllocator(ctx)` pass alignment 0: the driver's
/// default, the largest OpenCL data type's (not "not a power of two", and not 1 byte for
/// untyped memory).
fn svm_alignment_zero_is_the_drivers_default(dev: &TestDevice) -> TestResult {
    coarse_svm(dev)?;
    let q = dev.queue();
    let a = svm_empty::<u8, Coarse>(&q, SvmOptions::default().alignment(0), 64)?;
    let addr = a.svm_ptr() as usize;
    assert_eq!(addr % 128, 0, "alignment 0 gave {addr:#x}");
    let r = svm_empty::<u8, Coarse>(&q, SvmOptions::default().alignment(3), 64);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    // The pool's allocator asks for the default when no alignment is given.
    let pool = MemoryPool::new(SvmAllocator::<Coarse>::new(&q, SvmOptions::default()));
    let b = pool.allocate(24)?;
    let addr = b.svm_ptr() as usize;
    assert_eq!(addr % 128, 0, "the untyped pool block at {addr:#x}");
    eprintln!(
        "    default SVM alignment: allocation {:#x}, pool block {addr:#x}",
        a.svm_ptr() as usize
    );
    Ok(())
}

device_test!(zero_size_svm_through_allocation_allocator_and_pool);
/// PyOpenCL's `test_zero_size_svm_allocations`: a zero-size allocation works through the
/// allocation, the allocator and the pool.
fn zero_size_svm_through_allocation_allocator_and_pool(dev: &TestDevice) -> TestResult {
    coarse_svm(dev)?;
    let q = dev.queue();
    let a = svm_empty::<u8, Coarse>(&q, SvmOptions::default().alignment(0), 0)?;
    assert!(a.svm_ptr().is_null());
    a.enqueue_release(&[])?.wait()?;
    let allocator = SvmAllocator::<Coarse>::new(&q, SvmOptions::default());
    let none = cl_pool::Allocator::allocate(&allocator, 0)?;
    assert!(
        none.is_none(),
        "the allocator allocates nothing for 0 bytes"
    );
    let pool = MemoryPool::new(allocator);
    let b = pool.allocate(0)?;
    assert_eq!(b.requested_bytes(), 0);
    drop(b);
    let c = pool.allocate(0)?;
    assert_eq!(
        pool.stats().hits,
        1,
        "the block of a zero-size request is reused"
    );
    drop(c);
    Ok(())
}

device_test!(sub_buffers_clip_and_round_as_pyopencl_users_write_them);
/// PyOpenCL's `test_sub_buffers`: slices clip to the buffer, and the start is rounded down to the
/// device's base-address alignment (so the test works on the H100's 4096-bit alignment too).
fn sub_buffers_clip_and_round_as_pyopencl_users_write_them(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align().max(1);
    let n = align * 4;
    let data: Vec<u8> = (0..n).map(|i| u8::try_from(i % 251).unwrap_or(0)).collect();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &data)?;
    assert_eq!(buf.sub_buffer_alignment()?, align);
    // buf[align:n + 5000] clips to the end; in Rust the clipping is written out.
    let tail = buf.sub_buffer_range(align..(n + 5000).min(n))?;
    assert_eq!(tail.size_bytes(), n - align);
    assert_eq!(tail.to_vec::<u8>(&q)?, data[align..].to_vec());
    // The range itself is refused.
    assert!(matches!(
        buf.sub_buffer_range(align..n + 5000),
        Err(Error::OutOfBounds { .. })
    ));
    // PyOpenCL's loop: any start, rounded down to the alignment.
    for start in [0usize, 1, align - 1, align + 3, 2 * align + 17] {
        let a = buf.sub_buffer_alignment()?;
        let s = start / a * a;
        let end = (s + align + 7).min(n);
        let sub = buf.sub_buffer_range(s..end)?;
        assert_eq!(
            sub.to_vec::<u8>(&q)?,
            data[s..end].to_vec(),
            "start {start}"
        );
    }
    assert!(matches!(
        buf.sub_buffer_range(n..(n + 10).min(n)),
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

const INFO_SRC: &str = r#"
__kernel __attribute__((reqd_work_group_size(4, 1, 1)))
void fixed(__global int* a, __local int* tmp) {
    tmp[get_local_id(0)] = a[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    a[get_global_id(0)] = tmp[3 - get_local_id(0)];
}
"#;

device_test!(info_queries_answer_as_in_pyopencls_test_get_info);
/// PyOpenCL's `test_get_info` reads program, kernel, queue and event info; each answers here.
fn info_queries_answer_as_in_pyopencls_test_get_info(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, INFO_SRC, "")?;
    assert!(program.reference_count()? >= 1);
    assert_eq!(program.source()?.trim(), INFO_SRC.trim());
    let binaries = program.binaries()?;
    assert_eq!(binaries.len(), 1);
    assert!(!binaries[0].is_empty(), "a built program has a binary");
    assert!(
        binaries[0].iter().any(|&b| b != 0),
        "the binary has content"
    );
    assert_eq!(program.kernel_names()?, vec!["fixed".to_owned()]);
    let mut k = program.kernel("fixed")?;
    assert!(k.reference_count()? >= 1);
    let compiled: Vec<usize> =
        k.work_group_info(q.device(), sys::CL_KERNEL_COMPILE_WORK_GROUP_SIZE)?;
    assert_eq!(compiled, [4, 1, 1]);
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1i32, 2, 3, 4])?;
    k.set_arg(0, &buf)?
        .set_arg(1, &cl_mem::LocalMemory::of::<i32>(4))?;
    let _private: u64 = k.work_group_info(q.device(), sys::CL_KERNEL_PRIVATE_MEM_SIZE)?;
    // An unknown parameter is refused before the driver sees it.
    let e = k.work_group_info::<usize>(q.device(), 0x1234).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let ev = k.enqueue_nd_range(&q, &[4], Some(&[4]), &[])?;
    ev.wait()?;
    assert_eq!(buf.to_vec::<i32>(&q)?, vec![4, 3, 2, 1]);
    assert!(ev.reference_count()? >= 1);
    assert_eq!(ev.command_queue_raw()?, q.as_raw());
    assert_eq!(ev.context()?.as_raw(), ctx.as_raw());
    assert!(q.reference_count()? >= 1);
    Ok(())
}

device_test!(
    kernel_attributes_name_the_declaration,
    expected = &[
        Expectation {
            platform: "oclgrind",
            device: "",
            version: "Oclgrind 21.10",
            reason: "clGetKernelInfo(CL_KERNEL_ATTRIBUTES) returns uninitialised bytes before the attribute text",
            link: "docs/DEVICES.md#oclgrind-kernel-attributes",
            failure: "CL_KERNEL_ATTRIBUTES of a reqd_work_group_size kernel",
            flaky: false,
        }
    ]
);
/// `CL_KERNEL_ATTRIBUTES` of a kernel declared with `reqd_work_group_size` (empty is allowed: the
/// spec lets a driver leave the text out).
fn kernel_attributes_name_the_declaration(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), INFO_SRC, "")?;
    let k = program.kernel("fixed")?;
    let attrs = k.attributes()?;
    assert!(
        attrs.is_empty() || attrs.contains("reqd_work_group_size"),
        "CL_KERNEL_ATTRIBUTES of a reqd_work_group_size kernel: {attrs:?}"
    );
    Ok(())
}

device_test!(host_arrays_of_use_host_ptr_buffers);
/// PyOpenCL's `get_host_array(shape, dtype, order)`: a `USE_HOST_PTR` buffer's memory as a shaped
/// array, showing what a kernel wrote; other buffers are refused (PyOpenCL's `LogicError`).
fn host_arrays_of_use_host_ptr_buffers(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let host: Vec<i32> = (0..12).collect();
    let buf = Buffer::use_host_memory(ctx, MemFlags::READ_WRITE, host)?;
    let sum = buf.with_host_array::<i32, _, _, _>(&q, (3, 4), |a| {
        assert_eq!(a[[1, 2]], 6);
        a.sum()
    })?;
    assert_eq!(sum, 66);
    // Fortran order, as PyOpenCL's order="F".
    use ndarray::ShapeBuilder;
    buf.with_host_array::<i32, _, _, _>(&q, (4, 3).f(), |a| assert_eq!(a[[1, 2]], 9))?;
    // A kernel's writes are what the host array shows.
    let program = Program::build_from_source(ctx, SRC, "")?;
    let mut k = program.kernel("bump")?;
    k.set_arg(0, &buf)?;
    k.enqueue_nd_range(&q, &[12], None, &[])?;
    buf.with_host_array::<i32, _, _, _>(&q, 12, |a| assert_eq!(a[11], 12))?;
    // A shape past the memory, and a buffer without host memory.
    let r = buf.with_host_array::<i32, _, _, _>(&q, (5, 4), |_| ());
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let plain = Buffer::new(ctx, MemFlags::READ_WRITE, 48)?;
    let r = plain.with_host_array::<i32, _, _, _>(&q, 12, |_| ());
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    Ok(())
}

device_test!(enqueue_copy_takes_svm_pairs);
/// PyOpenCL's `enqueue_copy` with SVM: host -> SVM, SVM -> host, SVM -> SVM.
fn enqueue_copy_takes_svm_pairs(dev: &TestDevice) -> TestResult {
    coarse_svm(dev)?;
    let q = dev.queue();
    let a = cl_mem::svm::SvmArray::<u32, Coarse>::new(&q, 16)?;
    let b = cl_mem::svm::SvmArray::<u32, Coarse>::new(&q, 16)?;
    let data: Vec<u32> = (0..16).map(|i| i * 7).collect();
    cl_mem::enqueue_copy(&q, &a, &data[..], &[])?;
    cl_mem::enqueue_copy(&q, &b, &a, &[])?;
    let mut back = vec![0u32; 16];
    cl_mem::enqueue_copy(&q, &mut back[..], &b, &[])?;
    assert_eq!(back, data);
    // Offsets and counts in bytes, whole values.
    let mut part = vec![0u32; 4];
    cl_mem::enqueue_copy(
        &q,
        &mut part[..],
        &b,
        cl_mem::Transfer {
            src_offset: 8 * 4,
            byte_count: Some(16),
            ..Default::default()
        },
    )?;
    assert_eq!(part, data[8..12].to_vec());
    let r = cl_mem::enqueue_copy(
        &q,
        &mut part[..],
        &b,
        cl_mem::Transfer {
            src_offset: 3,
            ..Default::default()
        },
    );
    assert!(matches!(r, Err(Error::Misaligned { .. })), "{r:?}");
    // SVM <-> buffer (through a map of the buffer, on every grain).
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, 16 * 4)?;
    cl_mem::enqueue_copy(&q, &buf, &a, &[])?;
    assert_eq!(buf.to_vec::<u32>(&q)?, data);
    let c = cl_mem::svm::SvmArray::<u32, Coarse>::new(&q, 16)?;
    cl_mem::enqueue_copy(&q, &c, &buf, &[])?;
    let mut back = vec![0u32; 16];
    cl_mem::enqueue_copy(&q, &mut back[..], &c, &[])?;
    assert_eq!(back, data);
    Ok(())
}

device_test!(
    kernel_local_mem_size_counts_local_arguments,
    expected = &[Expectation {
        platform: "portable",
        device: "",
        version: "5.0+debian",
        reason: "CL_KERNEL_LOCAL_MEM_SIZE reads 0 with a __local argument set",
        link: "docs/DEVICES.md#pocl5-kernel-local-mem-size",
        failure: "CL_KERNEL_LOCAL_MEM_SIZE with a 16-byte __local argument: 0",
        flaky: false,
    }]
);
/// `CL_KERNEL_LOCAL_MEM_SIZE` counts the `__local` arguments set with `clSetKernelArg` (the spec).
fn kernel_local_mem_size_counts_local_arguments(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, INFO_SRC, "")?;
    let mut k = program.kernel("fixed")?;
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1i32, 2, 3, 4])?;
    k.set_arg(0, &buf)?
        .set_arg(1, &cl_mem::LocalMemory::of::<i32>(4))?;
    let local: u64 = k.work_group_info(q.device(), sys::CL_KERNEL_LOCAL_MEM_SIZE)?;
    assert!(
        local >= 16,
        "CL_KERNEL_LOCAL_MEM_SIZE with a 16-byte __local argument: {local}"
    );
    Ok(())
}

device_test!(two_d_images_from_buffers_share_their_memory);
/// PyOpenCL users reach 2-D images over buffers through `cl_khr_image2d_from_buffer`: where a
/// device has it, the image shows the buffer's bytes at the row pitch and writes through it land in
/// the buffer; elsewhere a typed `Unsupported` before the driver.
fn two_d_images_from_buffers_share_their_memory(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let fmt = cl_mem::ImageFormat::new(cl_mem::ChannelOrder::R, cl_mem::ChannelType::UnsignedInt32);
    let (w, h) = (5usize, 3usize);
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64 * 1024)?;
    let img = match cl_mem::Image::from_buffer(ctx, MemFlags::empty(), fmt, &buf, &[w, h], None) {
        Ok(i) => i,
        Err(Error::Unsupported { needs, .. }) => {
            return Err(skip(format!("no 2-D images from buffers: {needs}")));
        }
        Err(e) => return Err(e.into()),
    };
    let pitch = img.info()?.row_pitch;
    assert!(pitch >= w * 4, "row pitch {pitch}");
    // Pixels written into the image are the buffer's bytes at that pitch.
    let px: Vec<u32> = (0..u32::try_from(w * h)?).map(|i| i * 11).collect();
    img.write(&q, &px, &[])?;
    let bytes: Vec<u32> = buf.to_vec(&q)?;
    for y in 0..h {
        for x in 0..w {
            assert_eq!(bytes[y * pitch / 4 + x], px[y * w + x], "pixel ({x}, {y})");
        }
    }
    // A map of the buffer excludes writes through the image (one record).
    {
        let _m = buf.map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        let r = img.write(&q, &px, &[]);
        assert!(matches!(r, Err(Error::Mapped(_))), "{r:?}");
    }
    // Bad pitches and sizes are refused before the driver.
    let r = cl_mem::Image::from_buffer(ctx, MemFlags::empty(), fmt, &buf, &[w, h], Some(w * 4 - 4));
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let r = cl_mem::Image::from_buffer(ctx, MemFlags::empty(), fmt, &buf, &[w, h], Some(pitch + 4));
    assert!(matches!(r, Err(Error::Misaligned { .. })), "{r:?}");
    let small = Buffer::new(ctx, MemFlags::READ_WRITE, 16)?;
    let r = cl_mem::Image::from_buffer(ctx, MemFlags::empty(), fmt, &small, &[w, h], None);
    assert!(matches!(r, Err(Error::OutOfBounds { .. })), "{r:?}");
    Ok(())
}

device_test!(depth_images_where_the_device_lists_them);
/// Depth images (`cl_khr_depth_images`, `CL_DEPTH`): created and read back where the device lists
/// the format, a typed `Unsupported` before the driver where it does not.
fn depth_images_where_the_device_lists_them(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let fmt = cl_mem::ImageFormat::new(cl_mem::ChannelOrder::Depth, cl_mem::ChannelType::Float);
    let listed =
        cl_mem::supported_image_formats(ctx, MemFlags::READ_WRITE, cl_mem::ImageType::Image2d)?
            .contains(&fmt);
    let data: Vec<f32> = (0..12).map(|i| i as f32 / 16.0).collect();
    let r = cl_mem::Image::from_host(
        ctx,
        MemFlags::READ_WRITE,
        fmt,
        &cl_mem::ImageDesc::d2(4, 3),
        &data,
    );
    match r {
        Ok(img) => {
            assert!(listed, "created a depth image the device does not list");
            assert_eq!(img.to_vec::<f32>(&q)?, data);
            Ok(())
        }
        Err(Error::Unsupported { .. }) | Err(Error::InvalidArgument(_)) if !listed => Err(skip(
            "the device lists no CL_DEPTH/CL_FLOAT 2-D format (cl_khr_depth_images): refused before the driver",
        )),
        Err(e) => Err(e.into()),
    }
}

device_test!(mip_maps_are_typed_where_missing);
/// Mip-mapped images (`cl_khr_mipmap_image`): a typed answer on every device, created where the
/// device has the extension.
fn mip_maps_are_typed_where_missing(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    if !dev.device.image_support()? {
        return Ok(());
    }
    let fmt = cl_mem::ImageFormat::new(cl_mem::ChannelOrder::Rgba, cl_mem::ChannelType::Float);
    let desc = cl_mem::ImageDesc::d2(8, 8).with_mip_levels(4);
    let has = dev.device.has_extension("cl_khr_mipmap_image")?;
    match cl_mem::Image::new(ctx, MemFlags::READ_WRITE, fmt, &desc) {
        Ok(img) => assert!(
            has,
            "created a mip-mapped image without the extension: {img:?}"
        ),
        Err(Error::Unsupported { .. }) => {
            assert!(!has, "refused a mip-mapped image the device supports")
        }
        Err(e) => return Err(e.into()),
    }
    if has {
        // Host data cannot fill several levels.
        let r = cl_mem::Image::from_host(ctx, MemFlags::READ_WRITE, fmt, &desc, &[0f32; 8 * 8 * 4]);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    }
    Ok(())
}

device_test!(
    default_device_queue_is_none_until_one_is_created,
    expected = &[
        Expectation {
            platform: "intel",
            device: "",
            version: "OpenCL 3.1",
            reason: "clGetCommandQueueInfo(CL_QUEUE_DEVICE_DEFAULT) of a host queue returns CL_INVALID_VALUE although the device reports device-side enqueue",
            link: "docs/DEVICES.md#intel-default-device-queue",
            failure: "CL_QUEUE_DEVICE_DEFAULT of a host queue: clGetCommandQueueInfo failed: CL_INVALID_VALUE",
            flaky: false,
        }
    ]
);
/// PyOpenCL's `test_get_info` reads `CL_QUEUE_DEVICE_DEFAULT`: no default device queue exists until
/// one is created; below 2.1 or without device-side enqueue the query is a typed `Unsupported`.
fn default_device_queue_is_none_until_one_is_created(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    match q.device_default_raw() {
        Ok(d) => assert!(
            d.is_none(),
            "a default device queue though none was created"
        ),
        Err(Error::Unsupported { .. }) => assert!(
            dev.device.version() < cl_mem::Version::V2_1 || !dev.device.device_enqueue_support()?,
            "refused on a device with device-side enqueue"
        ),
        Err(e) => {
            return Err(cl_tests::fail(format!(
                "CL_QUEUE_DEVICE_DEFAULT of a host queue: {e}"
            )))
        }
    }
    Ok(())
}
