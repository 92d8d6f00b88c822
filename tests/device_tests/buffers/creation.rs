//! Buffer creation, info and flags; sub-buffers; migration; pinned memory; ndarrays.

#![allow(
    clippy::cast_possible_truncation,
    reason = "test sizes and indices are small, known values"
)]

use crate::common::{add, base_align, invalid, iota, program};
use cl_mem::{
    enqueue_copy, enqueue_migrate_mem_objects, Buffer, Error, ImageDesc, MapFlags, MemFlags,
    MemObject, MemObjectType, Memory, MigrationFlags, PinnedMemory, RawHandle, Transfer, UserEvent,
    Version,
};
use cl_tests::{device_test, eventually, fail, Expectation, TestDevice, TestResult};
use ndarray::{ArrayView, ArrayViewMut, ShapeBuilder};

/// Overwrites the stack below the caller's frame (where the frames of the calls it just made were)
/// with 1s.
#[inline(never)]
fn scribble_stack() {
    let a = std::hint::black_box([1usize; 8192]);
    std::hint::black_box(&a);
}

device_test!(creation_forms_hold_their_data);
fn creation_forms_hold_their_data(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let data = iota(256);
    let copied = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &data)?;
    assert_eq!(copied.to_vec::<i32>(&q)?, data);
    assert_eq!(copied.size_bytes(), 256 * 4);
    assert!(copied.flags().contains(MemFlags::COPY_HOST_PTR));

    let empty = Buffer::new(ctx, MemFlags::READ_WRITE, 1024)?;
    empty.write(&q, &data, &[])?;
    assert_eq!(empty.to_vec::<i32>(&q)?, data);

    let pinned = Buffer::new(ctx, MemFlags::READ_WRITE | MemFlags::ALLOC_HOST_PTR, 1024)?;
    assert!(pinned.mem_info()?.flags.contains(MemFlags::ALLOC_HOST_PTR));
    pinned.write(&q, &data, &[])?;
    assert_eq!(pinned.to_vec::<i32>(&q)?, data);

    let with_copy_and_alloc = Buffer::from_slice(ctx, MemFlags::ALLOC_HOST_PTR, &data)?;
    assert_eq!(with_copy_and_alloc.to_vec::<i32>(&q)?, data);

    let owned = Buffer::use_host_memory(ctx, MemFlags::READ_WRITE, data.clone())?;
    assert_eq!(owned.to_vec::<i32>(&q)?, data);
    let boxed =
        Buffer::use_host_memory(ctx, MemFlags::READ_WRITE, data.clone().into_boxed_slice())?;
    assert_eq!(boxed.to_vec::<i32>(&q)?, data);
    let leaked: &'static mut [i32] = Box::leak(data.clone().into_boxed_slice());
    let borrowed = Buffer::use_host_memory(ctx, MemFlags::READ_WRITE, leaked)?;
    assert_eq!(borrowed.to_vec::<i32>(&q)?, data);
    assert_eq!(
        borrowed.mem_info()?.flags,
        MemFlags::READ_WRITE | MemFlags::USE_HOST_PTR
    );
    Ok(())
}

device_test!(use_host_memory_is_the_buffer_storage);
fn use_host_memory_is_the_buffer_storage(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let p = program(&q)?;
    let n = 64;
    let buf = Buffer::use_host_memory(q.context(), MemFlags::READ_WRITE, iota(n))?;
    assert!(!buf.mem_info()?.host_ptr.is_null());
    add(&q, &p, &buf, 100, n)?;
    // A blocking read synchronises the host memory with the device (USE_HOST_PTR rules).
    let out = buf.to_vec::<i32>(&q)?;
    let want: Vec<i32> = (100..100 + n as i32).collect();
    assert_eq!(out, want);
    // Mapping and unmapping also synchronises; then the host array is current.
    buf.with_map::<i32, _, _>(&q, cl_mem::ReadOnly, .., |s| assert_eq!(s, &want[..]))?;
    // SAFETY: no command runs on `buf` while the slice lives; the map above synchronised it.
    let host = unsafe { buf.host_slice::<i32>() }?;
    assert_eq!(host, &want[..]);
    // A kernel keeps the buffer (and so its host memory) alive after our handle is gone.
    let mut k = p.kernel("add")?;
    k.set_arg(0, &buf)?.set_arg(1, &1i32)?;
    let probe = buf.clone();
    drop(buf);
    k.enqueue_nd_range(&q, &[n], None, &[])?.wait()?;
    let out = probe.to_vec::<i32>(&q)?;
    assert_eq!(out[0], 101);
    // Host memory only exists for USE_HOST_PTR buffers.
    let plain = Buffer::new(q.context(), MemFlags::READ_WRITE, 64)?;
    // SAFETY: refused before any access.
    let r = unsafe { plain.host_slice::<i32>() };
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    Ok(())
}

device_test!(mem_info_queries_match_the_object);
fn mem_info_queries_match_the_object(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let pv = dev.device.platform_version();
    let buf = Buffer::new(ctx, MemFlags::READ_ONLY | MemFlags::HOST_WRITE_ONLY, 4096)?;
    let info = buf.mem_info()?;
    assert_eq!(info.mem_type, MemObjectType::Buffer);
    assert_eq!(info.flags, MemFlags::READ_ONLY | MemFlags::HOST_WRITE_ONLY);
    assert_eq!(info.size_bytes, 4096);
    assert_eq!(info.map_count, 0);
    assert_eq!(buf.reference_count()?, 1);
    assert_eq!(&info.context, ctx);
    assert!(info.host_ptr.is_null());
    assert_eq!(info.associated_object, None);
    assert_eq!(info.offset_bytes, 0);
    let align = base_align(dev)?;
    let sub = buf.sub_buffer(align, 64, MemFlags::empty())?;
    let sub_info = sub.mem_info()?;
    assert_eq!(sub_info.offset_bytes, align);
    assert_eq!(sub_info.size_bytes, 64);
    let parent = sub_info
        .associated_object
        .expect("a sub-buffer has a parent");
    assert_eq!(parent.as_raw(), buf.as_raw());
    assert!(sub.parent() == Some(&buf) && sub.mem_info()?.offset_bytes == align);
    // The 2.0 and 3.0 queries are not asked of older platforms.
    assert_eq!(
        info.uses_svm_pointer,
        (pv >= Version::V2_0).then_some(false)
    );
    assert_eq!(info.properties, (pv >= Version::V3_0).then(Vec::new));
    Ok(())
}

device_test!(creation_rejects_bad_sizes_and_flags);
fn creation_rejects_bad_sizes_and_flags(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    assert!(matches!(
        Buffer::new(&ctx, MemFlags::READ_WRITE, 0),
        Err(Error::InvalidArgument(_))
    ));
    let max = usize::try_from(dev.device.max_mem_alloc_size()?).unwrap_or(usize::MAX);
    let e = Buffer::new(&ctx, MemFlags::READ_WRITE, max.saturating_add(1)).unwrap_err();
    assert!(
        e.to_string().contains("CL_DEVICE_MAX_MEM_ALLOC_SIZE"),
        "{e}"
    );
    assert!(matches!(
        Buffer::use_host_memory(&ctx, MemFlags::READ_WRITE, Vec::<u8>::new()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Buffer::use_host_memory(&ctx, MemFlags::COPY_HOST_PTR, vec![1u8]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Buffer::use_host_memory(&ctx, MemFlags::ALLOC_HOST_PTR, vec![1u8]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Buffer::new(&ctx, MemFlags::COPY_HOST_PTR, 8),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Buffer::from_slice::<u32>(&ctx, MemFlags::READ_WRITE, &[]),
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

device_test!(buffer_info_matches_driver);
fn buffer_info_matches_driver(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let buf = cl_mem::Buffer::from_slice(&ctx, MemFlags::READ_ONLY, &[1i32, 2, 3])?;
    assert_eq!(buf.size_bytes(), 12);
    assert_eq!(buf.mem_info()?.size_bytes, 12);
    assert_eq!(buf.flags(), MemFlags::READ_ONLY | MemFlags::COPY_HOST_PTR);
    assert_eq!(buf.mem_info()?.flags, buf.flags());
    assert_eq!(buf.mem_info()?.mem_type, MemObjectType::Buffer);
    assert_eq!(buf.mem_info()?.context, ctx);
    assert_eq!(buf.mem_info()?.map_count, 0);
    assert_eq!(buf.reference_count()?, 1);
    let copy = buf.clone();
    assert_eq!(buf.reference_count()?, 2);
    assert_eq!(copy, buf);
    drop(copy);
    // SAFETY: a valid buffer handle.
    let adopted = unsafe { cl_mem::Buffer::from_raw_retained(buf.as_raw()) }?;
    assert_eq!(adopted.size_bytes(), 12);
    assert_eq!(adopted.flags(), buf.flags());
    adopted.release()?;
    assert_eq!(buf.reference_count()?, 1);
    Ok(())
}

device_test!(buffer_rejects_bad_sizes_and_ranges);
fn buffer_rejects_bad_sizes_and_ranges(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    assert!(matches!(
        cl_mem::Buffer::new(ctx, MemFlags::READ_WRITE, 0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cl_mem::Buffer::from_slice::<u8>(ctx, MemFlags::READ_WRITE, &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cl_mem::Buffer::new(ctx, MemFlags::USE_HOST_PTR, 16),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        cl_mem::Buffer::from_slice(ctx, MemFlags::USE_HOST_PTR, &[1u8]),
        Err(Error::InvalidArgument(_))
    ));
    let too_big = usize::try_from(dev.device.max_mem_alloc_size()?)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    assert!(matches!(
        cl_mem::Buffer::new(ctx, MemFlags::READ_WRITE, too_big),
        Err(Error::InvalidArgument(_))
    ));
    let buf = cl_mem::Buffer::new(ctx, MemFlags::READ_WRITE, 16)?;
    let mut out = [0u8; 8];
    let r = buf.read(&q, &mut out, Transfer::default().src_offset(9));
    assert_eq!(
        r.unwrap_err(),
        Error::OutOfBounds {
            what: "buffer read",
            offset: 9,
            len: 8,
            size: 16
        }
    );
    let r = buf.write(&q, &[1u8], Transfer::default().dst_offset(usize::MAX));
    assert!(matches!(r, Err(Error::OutOfBounds { .. })));
    buf.read(&q, &mut out, Transfer::default().src_offset(8))?;
    Ok(())
}

device_test!(conflicting_flags_and_empty_shapes_are_refused);
/// Oclgrind created buffers with `READ_ONLY | WRITE_ONLY` and `HOST_READ_ONLY | HOST_NO_ACCESS`.
fn conflicting_flags_and_empty_shapes_are_refused(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    invalid(
        Buffer::new(&ctx, MemFlags::READ_ONLY | MemFlags::WRITE_ONLY, 64),
        "READ_ONLY | WRITE_ONLY",
    );
    invalid(
        Buffer::new(
            &ctx,
            MemFlags::HOST_READ_ONLY | MemFlags::HOST_NO_ACCESS,
            64,
        ),
        "HOST_READ_ONLY | HOST_NO_ACCESS",
    );
    invalid(
        Buffer::from_slice(
            &ctx,
            MemFlags::READ_WRITE | MemFlags::WRITE_ONLY,
            &[1u32; 4],
        ),
        "from_slice READ_WRITE | WRITE_ONLY",
    );
    invalid(ImageDesc::from_shape(&[0, 4], false, false), "width 0");
    invalid(ImageDesc::from_shape(&[4, 0, 2], false, false), "height 0");
    Ok(())
}

device_test!(sub_buffers_are_used_by_kernels);
fn sub_buffers_are_used_by_kernels(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let p = program(&q)?;
    let align = base_align(dev)?;
    let per = align / 4; // ints per alignment unit
    let n = per.max(1) * 4;
    let parent = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &iota(n))?;
    // Elements [per, 2 per) and [2 per, 4 per) through byte ranges.
    let a = parent.sub_buffer_range(align..2 * align)?;
    let b = parent.sub_buffer_range(2 * per * 4..4 * per * 4)?;
    add(&q, &p, &a, 1000, per)?;
    add(&q, &p, &b, -1000, 2 * per)?;
    let out = parent.to_vec::<i32>(&q)?;
    for (i, &v) in out.iter().enumerate() {
        let want = i as i32
            + if i < per {
                0
            } else if i < 2 * per {
                1000
            } else {
                -1000
            };
        assert_eq!(v, want, "element {i}");
    }
    // Transfers address the view, not the parent.
    assert_eq!(
        a.to_vec::<i32>(&q)?,
        (per as i32..2 * per as i32)
            .map(|x| x + 1000)
            .collect::<Vec<_>>()
    );
    b.write(&q, &[42i32], &[])?;
    let mut first = [0i32];
    parent.read(&q, &mut first, Transfer::default().src_offset(2 * align))?;
    assert_eq!(first, [42]);
    Ok(())
}

device_test!(sub_buffer_of_sub_buffer_and_of_host_buffers);
fn sub_buffer_of_sub_buffer_and_of_host_buffers(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let align = base_align(dev)?;
    let bytes: Vec<u8> = (0..align * 4).map(|i| (i % 251) as u8).collect();
    let root = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &bytes)?;
    let mid = root.sub_buffer(align, align * 3, MemFlags::empty())?;
    let inner = mid.sub_buffer(align, align, MemFlags::READ_ONLY)?;
    assert_eq!(inner.mem_info()?.offset_bytes, 2 * align);
    assert_eq!(inner.parent(), Some(&root));
    assert!(inner.mem_info()?.flags.contains(MemFlags::READ_ONLY));
    assert_eq!(inner.to_vec::<u8>(&q)?, &bytes[2 * align..3 * align]);
    // PyOpenCL passes the parent's USE/ALLOC_HOST_PTR flags to clCreateSubBuffer and the
    // driver refuses; here they are inherited, not passed.
    let host = Buffer::use_host_memory(q.context(), MemFlags::READ_WRITE, bytes.clone())?;
    let hs = host.sub_buffer_range(align..2 * align)?;
    assert!(hs.mem_info()?.flags.contains(MemFlags::USE_HOST_PTR));
    assert_eq!(hs.to_vec::<u8>(&q)?, &bytes[align..2 * align]);
    assert_eq!(
        hs.mem_info()?.host_ptr,
        host.mem_info()?.host_ptr.wrapping_byte_add(align)
    );
    let pinned = Buffer::new(
        q.context(),
        MemFlags::READ_WRITE | MemFlags::ALLOC_HOST_PTR,
        align * 2,
    )?;
    let ps = pinned.sub_buffer_range(align..)?;
    ps.write(&q, &bytes[..align], &[])?;
    assert_eq!(ps.to_vec::<u8>(&q)?, &bytes[..align]);
    Ok(())
}

device_test!(sub_buffer_keeps_its_parent_alive);
fn sub_buffer_keeps_its_parent_alive(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let p = program(&q)?;
    let align = base_align(dev)?;
    let n = align / 4 * 2;
    let parent = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &iota(n))?;
    let raw_parent = parent.as_raw();
    let sub = parent.sub_buffer_range(align..)?;
    drop(parent);
    add(&q, &p, &sub, 5, n / 2)?;
    let out = sub.to_vec::<i32>(&q)?;
    assert_eq!(
        out,
        (n as i32 / 2..n as i32).map(|x| x + 5).collect::<Vec<_>>()
    );
    assert_eq!(sub.parent().map(Buffer::as_raw), Some(raw_parent));
    Ok(())
}

device_test!(sub_buffer_rejects_bad_regions_and_flags);
fn sub_buffer_rejects_bad_regions_and_flags(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let align = base_align(dev)?;
    let buf = Buffer::new(&ctx, MemFlags::WRITE_ONLY, align * 4)?;
    if align > 1 {
        assert_eq!(
            buf.sub_buffer(1, 8, MemFlags::empty()).unwrap_err(),
            Error::Misaligned {
                what: "sub-buffer origin",
                value: 1,
                alignment: align
            }
        );
        // The absolute origin counts: aligned inside a misaligned... not possible; an aligned
        // child of an aligned parent at a misaligned offset is refused too.
        let child = buf.sub_buffer(align, align * 2, MemFlags::empty())?;
        assert!(matches!(
            child.sub_buffer(align / 2, 4, MemFlags::empty()),
            Err(Error::Misaligned { .. })
        ));
    }
    assert!(matches!(
        buf.sub_buffer(0, align * 4 + 1, MemFlags::empty()),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.sub_buffer(align * 4, 1, MemFlags::empty()),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.sub_buffer(usize::MAX, 2, MemFlags::empty()),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.sub_buffer(0, 0, MemFlags::empty()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.sub_buffer_range(8..8),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.sub_buffer(0, 8, MemFlags::USE_HOST_PTR),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.sub_buffer(0, 8, MemFlags::ALLOC_HOST_PTR),
        Err(Error::InvalidArgument(_))
    ));
    // A readable view of a write-only buffer.
    assert!(matches!(
        buf.sub_buffer(0, 8, MemFlags::READ_ONLY),
        Err(Error::InvalidArgument(_))
    ));
    assert!(buf.sub_buffer(0, 8, MemFlags::WRITE_ONLY).is_ok());
    assert_eq!(buf.reference_count()?, 1);
    Ok(())
}

device_test!(sub_buffer_of_a_sub_buffer_keeps_its_host_access);
fn sub_buffer_of_a_sub_buffer_keeps_its_host_access(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align().max(4);
    let root = Buffer::new(ctx, MemFlags::READ_WRITE, align * 4)?;
    let ro = root.sub_buffer(0, align * 2, MemFlags::HOST_READ_ONLY)?;
    assert!(ro.flags().contains(MemFlags::HOST_READ_ONLY));
    let inner = ro.sub_buffer_range(..align)?;
    assert!(
        inner.flags().contains(MemFlags::HOST_READ_ONLY),
        "{:?}",
        inner.flags()
    );
    assert!(inner.mem_info()?.flags.contains(MemFlags::HOST_READ_ONLY));
    let r = inner.write(&q, &[1u8; 4], &[]);
    assert!(matches!(&r, Err(Error::InvalidArgument(_))), "{r:?}");
    let mut back = [0u8; 4];
    inner.read(&q, &mut back, &[])?;
    // Kernel access is inherited too.
    let wo = root.sub_buffer(align * 2, align * 2, MemFlags::WRITE_ONLY)?;
    let inner = wo.sub_buffer_range(..align)?;
    assert!(
        inner.flags().contains(MemFlags::WRITE_ONLY),
        "{:?}",
        inner.flags()
    );
    Ok(())
}

device_test!(migration_keeps_contents);
fn migration_keeps_contents(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let align = base_align(dev)?;
    let a = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &iota(align / 2))?;
    let b = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[5u8; 100])?;
    let m: Memory = b.clone().into();
    let e = enqueue_migrate_mem_objects(&q, &[&a, &m], MigrationFlags::HOST, &[])?;
    let e2 = enqueue_migrate_mem_objects(&q, &[&a, &b], MigrationFlags::empty(), &[&e])?;
    e2.wait()?;
    assert_eq!(a.to_vec::<i32>(&q)?, iota(align / 2));
    assert_eq!(b.to_vec::<u8>(&q)?, vec![5u8; 100]);
    // Content-undefined migration is legal; then the buffer is rewritten.
    enqueue_migrate_mem_objects(&q, &[&b], MigrationFlags::CONTENT_UNDEFINED, &[])?.wait()?;
    b.write(&q, &[6u8; 100], &[])?;
    assert_eq!(b.to_vec::<u8>(&q)?, vec![6u8; 100]);
    Ok(())
}

device_test!(
    migration_of_a_buffer_with_its_sub_buffer,
    expected = &[
        Expectation {
            platform: "nvidia",
            device: "",
            version: "580.",
            reason: "CL_MIGRATE_MEM_OBJECT_HOST of a buffer together with its sub-buffer fails with CL_INVALID_VALUE",
            link: "docs/DEVICES.md#nvidia-gpu-machine",
            failure: "clEnqueueMigrateMemObjects failed: CL_INVALID_VALUE",
            flaky: false,
        }
    ]
);
/// A buffer and its sub-buffer in one host migration (one NVIDIA bug, on its own so that it covers
/// only this).
fn migration_of_a_buffer_with_its_sub_buffer(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let align = base_align(dev)?;
    let a = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &iota(align / 2))?;
    let sub = a.sub_buffer_range(align..)?;
    enqueue_migrate_mem_objects(&q, &[&a, &sub], MigrationFlags::HOST, &[])?.wait()?;
    enqueue_migrate_mem_objects(&q, &[&a, &sub], MigrationFlags::empty(), &[])?.wait()?;
    assert_eq!(a.to_vec::<i32>(&q)?, iota(align / 2));
    Ok(())
}

device_test!(migration_rejects_bad_lists);
fn migration_rejects_bad_lists(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    assert!(matches!(
        enqueue_migrate_mem_objects(&q, &[], MigrationFlags::empty(), &[]),
        Err(Error::InvalidArgument(_))
    ));
    let foreign = Buffer::new(&dev.context(), MemFlags::READ_WRITE, 16)?;
    let e = enqueue_migrate_mem_objects(&q, &[&foreign], MigrationFlags::empty(), &[]).unwrap_err();
    assert!(e.to_string().contains("another context"), "{e}");
    // Bits OpenCL does not define never reach the driver, for buffers or SVM.
    let own = Buffer::new(q.context(), MemFlags::READ_WRITE, 16)?;
    let unknown = MigrationFlags::from_bits_retain(1 << 5);
    let e = enqueue_migrate_mem_objects(&q, &[&own], unknown, &[]).unwrap_err();
    assert!(e.to_string().contains("does not define"), "{e}");
    let e = cl_mem::svm::enqueue_svm_migrate(&q, &[], unknown, &[]).unwrap_err();
    assert!(e.to_string().contains("does not define"), "{e}");
    Ok(())
}

device_test!(migration_held_back_outlives_the_callers_stack);
/// NVIDIA 580.159.04 reads `clEnqueueMigrateMemObjects`' object list when its worker thread runs
/// the command, after the call returned (`repro/nvidia_migrate_reads_object_list_late.c`): with
/// the list on the caller's stack, a migration held back by a user event dereferenced whatever the
/// stack held by then (SIGSEGV at 0x9). cl-mem keeps the list until the command completed (and
/// then releases it: counted in `live_objects().kept_lists`).
fn migration_held_back_outlives_the_callers_stack(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let bufs = (0..4)
        .map(|_| Buffer::new(q.context(), MemFlags::READ_WRITE, 4096))
        .collect::<Result<Vec<_>, _>>()?;
    let gate = UserEvent::new(q.context())?;
    let before = cl_mem::live_objects().kept_lists;
    let mut done = Vec::new();
    for b in &bufs {
        done.push(enqueue_migrate_mem_objects(
            &q,
            &[b],
            MigrationFlags::CONTENT_UNDEFINED,
            &[&*gate],
        )?);
        scribble_stack();
    }
    // Two objects in one list too.
    done.push(enqueue_migrate_mem_objects(
        &q,
        &[&bufs[0], &bufs[1]],
        MigrationFlags::empty(),
        &[&*gate],
    )?);
    scribble_stack();
    // A careless caller: the only wrapper of a migrated buffer dropped while its migration waits.
    let doomed = Buffer::new(q.context(), MemFlags::READ_WRITE, 4096)?;
    done.push(enqueue_migrate_mem_objects(
        &q,
        &[&doomed],
        MigrationFlags::CONTENT_UNDEFINED,
        &[&*gate],
    )?);
    drop(doomed);
    scribble_stack();
    // Each migration's list is kept (counted) until its command completed, then released.
    let kept = cl_mem::live_objects().kept_lists;
    if kept < before + 6 {
        return Err(fail(format!(
            "6 migrations held back keep {} object lists",
            kept.saturating_sub(before)
        )));
    }
    gate.set_complete()?;
    for e in &done {
        e.wait()?;
    }
    eventually(
        "the completed migrations' object lists are released",
        || Ok(cl_mem::live_objects().kept_lists <= before),
    )?;
    for (i, b) in bufs.iter().enumerate() {
        let v = [u8::try_from(i)?; 64];
        b.write(&q, &v, &[])?;
        assert_eq!(b.read_vec_of::<u8>(&q, 64)?, v.to_vec());
    }
    Ok(())
}

device_test!(pinned_memory_is_a_transfer_endpoint);
fn pinned_memory_is_a_transfer_endpoint(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let p = program(&q)?;
    let n = 1024;
    let mut pinned = PinnedMemory::<i32>::new(&q, n)?;
    assert!(pinned.iter().all(|&x| x == 0));
    for (i, x) in pinned.iter_mut().enumerate() {
        *x = i as i32;
    }
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, n * 4)?;
    enqueue_copy(&q, &buf, &pinned, &[])?;
    add(&q, &p, &buf, 3, n)?;
    enqueue_copy(&q, &mut pinned, &buf, &[])?;
    assert!(pinned.iter().enumerate().all(|(i, &x)| x == i as i32 + 3));
    // Non-blocking, owning the pinned memory.
    let mut eights = PinnedMemory::new(&q, n)?;
    eights.fill(8i32);
    let w = buf.enqueue_write(&q, eights, &[])?;
    let back = w.wait()?;
    assert_eq!(back.len(), n);
    let r = buf.enqueue_read(&q, pinned, &[])?;
    let pinned = r.wait()?;
    assert!(pinned.iter().all(|&x| x == 8));
    assert!(matches!(
        PinnedMemory::<i32>::new(&q, 0),
        Err(Error::InvalidArgument(_))
    ));
    // An ndarray view of pinned memory (a slice), checked against its length by ndarray.
    let mut pinned = pinned;
    ArrayViewMut::from_shape((32, 32), &mut pinned[..])?
        .column_mut(0)
        .fill(-3);
    assert_eq!(pinned[5 * 32], -3);
    assert!(ArrayView::from_shape((33, 32), &pinned[..]).is_err());
    Ok(())
}

device_test!(ndarrays_in_and_out_in_c_and_fortran_order);
fn ndarrays_in_and_out_in_c_and_fortran_order(dev: &TestDevice) -> TestResult {
    use ndarray::{s, Array2};
    let q = dev.queue();
    let p = program(&q)?;
    let c = Array2::from_shape_fn((3, 4), |(i, j)| (10 * i + j) as i32);
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, 12 * 4)?;
    buf.write(&q, &c, &[])?;
    add(&q, &p, &buf, 1, 12)?;
    let back: Array2<i32> = buf.to_array(&q, (3, 4))?;
    assert_eq!(back, c.mapv(|x| x + 1));
    // Fortran order: memory order is column-major, so the buffer holds the transpose's rows.
    let f = Array2::from_shape_vec((3, 4).f(), (0..12).collect::<Vec<i32>>())?;
    buf.write(&q, &f, &[])?;
    assert_eq!(buf.to_vec::<i32>(&q)?, (0..12).collect::<Vec<_>>());
    let mut g = Array2::<i32>::zeros((3, 4).f());
    buf.read(&q, &mut g, &[])?;
    assert_eq!(g, f);
    let fb: Array2<i32> = buf.to_array(&q, (3, 4).f())?;
    assert_eq!(fb, f);
    // A strided view is refused before the driver; so is a shape larger than the buffer.
    let strided = c.slice(s![.., ..2]);
    assert!(matches!(
        buf.write(&q, &strided, &[]),
        Err(Error::InvalidArgument(_))
    ));
    let mut big = Array2::<i32>::zeros((4, 4));
    assert!(matches!(
        buf.read(&q, &mut big, &[]),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.to_array::<i32, _>(&q, (5, 4)),
        Err(Error::OutOfBounds { .. })
    ));
    // Map views: a map is a slice, viewed by ndarray, which checks shape and strides against
    // the mapped elements (PyOpenCL accepts strides reaching past the map).
    buf.write(&q, &(0..12).collect::<Vec<i32>>(), &[])?;
    {
        let m = buf.map::<i32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        assert_eq!(ArrayView::from_shape((3, 4).f(), &m[..])?[[1, 2]], 7);
        assert!(ArrayView::from_shape((4, 3).strides((4, 1)), &m[..]).is_err());
    }
    {
        let mut m = buf.map::<i32, _>(&q, MapFlags::READ | MapFlags::WRITE, .., &[])?;
        ArrayViewMut::from_shape((2, 6), &mut m[..])?
            .row_mut(1)
            .fill(-1);
    }
    assert_eq!(buf.to_vec::<i32>(&q)?[6..], [-1; 6]);
    Ok(())
}
