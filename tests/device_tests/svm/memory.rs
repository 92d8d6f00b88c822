//! SVM allocations of every grain: round trips, options, maps, pointers into the middle, memcpy, fill,
//! zero sizes and migration.

use super::{kernel, require, wait_for, N, N32};
use cl_mem::svm::{
    csvm_empty, enqueue_svm_memcpy, enqueue_svm_migrate, fsvm_empty, svm_empty, Coarse, Fine,
    Grain, SvmAccess, SvmAllocation, SvmArray, SvmMemFlags, SvmOptions, SvmPointer,
};
use cl_mem::{
    enqueue_copy, Context, Error, EventStatus, MemFlags, MigrationFlags, Queue, SvmCapabilities,
    Transfer, UserEvent, Version,
};
use cl_tests::{device_test, skip, TestDevice, TestResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The per-kind scenario on an array of `N` floats.
fn roundtrip<G: Grain>(q: &Queue, a: &mut SvmArray<f32, G>) -> TestResult {
    assert_eq!(a.len(), N);
    assert_eq!(a.size_bytes(), N * 4);
    assert!(!a.svm_ptr().is_null());
    assert_eq!(a.queue(), *q);

    // Fill, then map read-only.
    a.fill(q, &[1.5f32], &[])?.wait()?;
    a.with_map(q, cl_mem::ReadOnly, .., |s| {
        assert!(s.iter().all(|&v| v == 1.5), "fill: {:?}", &s[..4])
    })?;

    // Map read-write: write i.
    {
        let mut m = a.map(q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?;
        for (i, v) in m.iter_mut().enumerate() {
            *v = i as f32;
        }
        m.release()?;
    }

    // A kernel doubles the data through the SVM pointer.
    let mut k = kernel(q, "twice")?;
    k.set_arg(0, &*a)?;
    k.enqueue_nd_range(q, &[N], None, &[])?.wait()?;
    // PyOpenCL's pattern: the kernel stays cached with its argument set, and the host maps the
    // memory after the command ran. While the map is open the kernel is refused, not raced.
    let m = a.map(q, cl_mem::ReadOnly, ..)?;
    for (i, &v) in m.iter().enumerate() {
        assert_eq!(v, 2.0 * i as f32, "pointer kernel at {i}");
    }
    assert!(matches!(
        k.enqueue_nd_range(q, &[N], None, &[]),
        Err(Error::Mapped(_))
    ));
    drop(m);
    // Direct host access (no guard) still needs the kernel to let go.
    k.enqueue_nd_range(q, &[N], None, &[])?.wait()?;
    drop(k);
    let m = a.map(q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?;
    for (i, &v) in m.iter().enumerate() {
        assert_eq!(v, 4.0 * i as f32, "second kernel run at {i}");
    }
    // Back to the values the buffer-view step expects.
    let mut m = m;
    for (i, v) in m.iter_mut().enumerate() {
        *v = 2.0 * i as f32;
    }
    drop(m);

    // And again through a buffer view of the same memory.
    {
        let view = a.as_buffer(MemFlags::READ_WRITE)?;
        assert!(view.flags().contains(MemFlags::USE_HOST_PTR));
        let mut k = kernel(q, "twice")?;
        k.set_arg(0, &view)?;
        k.enqueue_nd_range(q, &[N], None, &[])?.wait()?;
        let mut through_view = vec![0f32; N];
        view.read(q, &mut through_view, &[])?;
        for (i, &v) in through_view.iter().enumerate() {
            assert_eq!(v, 4.0 * i as f32, "buffer-view kernel at {i}");
        }
    }

    // Copy back to the host.
    let mut host = vec![0f32; N];
    a.read(q, &mut host, &[])?;
    for (i, &v) in host.iter().enumerate() {
        assert_eq!(v, 4.0 * i as f32, "read at {i}");
    }
    // And from the host, at an offset.
    a.write(q, &[7.0f32; 5], Transfer::default().dst_offset(10 * 4))?;
    a.with_map(q, cl_mem::ReadOnly, .., |s| {
        assert_eq!(&s[10..15], &[7.0; 5]);
        assert_eq!(s[9], 36.0);
        assert_eq!(s[15], 60.0);
    })?;
    Ok(())
}

device_test!(coarse_fill_map_kernel_buffer_copy_roundtrip);
fn coarse_fill_map_kernel_buffer_copy_roundtrip(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let mut a = csvm_empty::<f32>(&q, N)?;
    assert_eq!(a.alignment(), 4);
    assert!(!a.flags().contains(SvmMemFlags::SVM_FINE_GRAIN_BUFFER));
    roundtrip(&q, &mut a)
}

device_test!(a_context_listing_its_device_twice_is_one_device_for_svm);
/// A context made from the same device listed twice has one device: SVM works in it where it
/// works in a one-device context (the NVIDIA multi-GPU refusal counts distinct devices). PoCL and
/// Intel accept such a context; NVIDIA 580.159.04 and Oclgrind refuse it in `clCreateContext` (skip).
fn a_context_listing_its_device_twice_is_one_device_for_svm(dev: &TestDevice) -> TestResult {
    let Ok(context) = Context::new(&[dev.device, dev.device]) else {
        return Err(skip(
            "the driver refuses a device listed twice in clCreateContext",
        ));
    };
    let q = Queue::new(&context, &dev.device)?;
    match SvmArray::<u32, Coarse>::new(&q, 16) {
        Ok(mut a) => {
            a.with_map(
                &q,
                cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
                ..,
                |v| v.fill(7),
            )?;
            assert_eq!(
                a.with_map(&q, cl_mem::ReadOnly, .., <[u32]>::to_vec)?,
                vec![7; 16]
            );
            Ok(())
        }
        Err(Error::Unsupported { needs, .. }) => {
            assert!(!needs.contains("several GPUs"), "{needs}");
            Err(skip(format!("no coarse-grain SVM here: {needs}")))
        }
        Err(e) => Err(e.into()),
    }
}

device_test!(fine_fill_map_kernel_buffer_copy_roundtrip);
fn fine_fill_map_kernel_buffer_copy_roundtrip(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::FINE_GRAIN_BUFFER,
        "fine-grain buffer SVM",
    )?;
    let q = dev.queue();
    let mut a = fsvm_empty::<f32>(&q, N)?;
    assert!(a.flags().contains(SvmMemFlags::SVM_FINE_GRAIN_BUFFER));
    roundtrip(&q, &mut a)
}

device_test!(system_fill_map_kernel_buffer_copy_roundtrip);
fn system_fill_map_kernel_buffer_copy_roundtrip(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::FINE_GRAIN_SYSTEM,
        "fine-grain system SVM",
    )?;
    let q = dev.queue();
    let mut a = SvmArray::from_vec(&q, vec![0f32; N])?;
    roundtrip(&q, &mut a)?;
    let back = a.into_vec()?;
    assert_eq!(back.len(), N);
    assert_eq!(back[3], 12.0);
    assert_eq!(back[12], 7.0);
    Ok(())
}

device_test!(allocation_options_and_like_helpers_are_honoured);
fn allocation_options_and_like_helpers_are_honoured(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    for align in [1usize, 8, 64, 128] {
        let a = svm_empty::<u8, Coarse>(&q, SvmOptions::default().alignment(align), 100)?;
        assert_eq!(a.alignment(), align);
        assert_eq!(a.size_bytes(), 100);
        assert!(
            (a.svm_ptr() as usize).is_multiple_of(align),
            "alignment {align}"
        );
    }
    let w: SvmArray<u64, Coarse> =
        svm_empty(&q, SvmOptions::default().access(SvmAccess::WriteOnly), 3)?;
    assert_eq!(w.alignment(), 8);
    assert!(w.flags().contains(SvmMemFlags::WRITE_ONLY));
    let host = [1u16, 2, 3, 4, 5];
    let c = csvm_empty::<u16>(&q, host.len())?;
    assert_eq!((c.len(), c.size_bytes(), c.alignment()), (5, 10, 2));
    c.write(&q, &host, &[])?;
    let mut back = [0u16; 5];
    c.read(&q, &mut back, &[])?;
    assert_eq!(back, host);
    let s: SvmArray<u16, Coarse> = svm_empty(&q, SvmOptions::default(), host.len())?;
    assert_eq!(s.len(), 5);
    if dev
        .device
        .svm_capabilities()?
        .contains(SvmCapabilities::FINE_GRAIN_BUFFER)
    {
        let mut f = fsvm_empty::<u16>(&q, host.len())?;
        f.as_mut_slice()?.copy_from_slice(&host);
        assert_eq!(f.as_slice()?, &host);
    }
    // Dropped on another thread while a gated kernel still uses it: still ordered.
    let gate = UserEvent::new(q.context())?;
    let a = csvm_empty::<u32>(&q, 64)?;
    let mut k = kernel(&q, "spin_then_write")?;
    k.set_arg(0, &a)?.set_arg(1, &10u32)?;
    let kev = k.enqueue_nd_range(&q, &[64], None, &[&gate])?;
    drop(k);
    let freed = Arc::new(AtomicBool::new(false));
    {
        let freed = Arc::clone(&freed);
        let kev = kev.clone();
        a.on_release(move |_| {
            let done = matches!(kev.status(), Ok(EventStatus::Complete));
            freed.store(done, Ordering::SeqCst);
        });
    }
    std::thread::spawn(move || drop(a))
        .join()
        .map_err(|_| cl_tests::fail("the dropping thread panicked"))?;
    gate.set_complete()?;
    assert!(wait_for(&freed), "the free did not come after the kernel");
    Ok(())
}

device_test!(forgotten_map_guard_is_unmapped_before_the_next_use);
/// `mem::forget` on a map guard is safe (the borrow ends, no reference remains) and benign: the
/// region is unmapped before the next map, host access or free.
fn forgotten_map_guard_is_unmapped_before_the_next_use(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let mut a = csvm_empty::<f32>(&q, N)?;
    {
        let mut m = a.map(&q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?;
        m.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
        std::mem::forget(m);
    }
    a.with_map(&q, cl_mem::ReadOnly, .., |s| assert_eq!(s[5], 5.0))?;
    let mut k = kernel(&q, "twice")?;
    k.set_arg(0, &a)?;
    k.enqueue_nd_range(&q, &[N], None, &[])?;
    drop(k);
    std::mem::forget(a.map(&q, cl_mem::ReadOnly, ..)?);
    let mut out = vec![0f32; N];
    a.read(&q, &mut out, &[])?;
    assert_eq!(out[7], 14.0);
    a.with_map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| s[0] = -3.0,
    )?;
    std::mem::forget(a.map(&q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, 0..4)?);
    let freed = Arc::new(AtomicBool::new(false));
    {
        let freed = Arc::clone(&freed);
        a.on_release(move |s| freed.store(s == EventStatus::Complete, Ordering::SeqCst));
    }
    drop(a); // unmaps the leftover, then frees
    assert!(
        wait_for(&freed),
        "the free after a forgotten map did not complete"
    );
    if dev
        .device
        .svm_capabilities()?
        .contains(SvmCapabilities::FINE_GRAIN_BUFFER)
    {
        let mut f = fsvm_empty::<u32>(&q, 8)?;
        std::mem::forget(f.map(&q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?);
        f.as_mut_slice()?.fill(3);
        assert_eq!(f.as_slice()?, &[3; 8]);
    }
    Ok(())
}

device_test!(svm_pointer_into_the_middle_reaches_the_tail);
/// An SVM pointer may point into the middle of an allocation (a buffer cannot); maps give
/// ndarray views.
fn svm_pointer_into_the_middle_reaches_the_tail(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let mut a = csvm_empty::<f32>(&q, N)?;
    a.with_map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| s.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32),
    )?;
    let mut k = kernel(&q, "twice")?;
    k.set_arg(0, &a.arg_at(N / 2)?)?;
    k.enqueue_nd_range(&q, &[N / 2], None, &[])?;
    drop(k);
    let m = a.map(&q, cl_mem::ReadOnly, ..)?;
    for (i, &v) in m.iter().enumerate() {
        let want = if i < N / 2 { i as f32 } else { 2.0 * i as f32 };
        assert_eq!(v, want, "at {i}");
    }
    let view = ndarray::ArrayView::from_shape((2, N / 2), &m[..])?;
    assert_eq!(view[[0, 3]], 3.0);
    assert_eq!(view[[1, 3]], 2.0 * (N / 2 + 3) as f32);
    Ok(())
}

device_test!(fine_grain_is_host_accessible_between_kernels);
/// Fine-grain memory is read and written without maps between kernel runs.
fn fine_grain_is_host_accessible_between_kernels(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::FINE_GRAIN_BUFFER,
        "fine-grain buffer SVM",
    )?;
    let q = dev.queue();
    let mut a = fsvm_empty::<f32>(&q, N)?;
    for (i, v) in a.as_mut_slice()?.iter_mut().enumerate() {
        *v = i as f32;
    }
    let mut k = kernel(&q, "twice")?;
    k.set_arg(0, &a)?;
    // No wait here: `as_slice` waits for the queue itself.
    k.enqueue_nd_range(&q, &[N], None, &[])?;
    assert!(matches!(a.as_slice(), Err(Error::SvmInUse(_))));
    drop(k);
    for (i, &v) in a.as_slice()?.iter().enumerate() {
        assert_eq!(v, 2.0 * i as f32, "at {i}");
    }
    // As an ndarray view of the slice, in Fortran order.
    {
        use ndarray::ShapeBuilder;
        let mut v = ndarray::ArrayViewMut::from_shape((32, 32).f(), a.as_mut_slice()?)?;
        assert_eq!(v[[1, 2]], 2.0 * 65.0);
        v[[0, 1]] = -1.0;
    }
    assert_eq!(a.as_slice()?[32], -1.0);
    // `call` keeps no argument: host access right after it (the call's command waited for), and
    // the same kernel called again, with no drop in between.
    let k = kernel(&q, "twice")?;
    k.call(&q, &[N], None, (&a,))?;
    assert_eq!(a.as_slice()?[32], -2.0);
    a.as_mut_slice()?[32] = 5.0;
    k.call(&q, &[N], None, (&a,))?;
    assert_eq!(a.as_slice()?[32], 10.0);
    assert_eq!(a.as_slice()?[1], 8.0);
    assert!(matches!(
        k.enqueue_nd_range(&q, &[N], None, &[]),
        Err(Error::InvalidArgument(m)) if m.contains("argument 0") && m.contains("not set")
    ));
    // With atomics, where the device has them.
    if dev
        .device
        .svm_capabilities()?
        .contains(SvmCapabilities::ATOMICS)
    {
        let mut b = svm_empty::<u32, Fine>(&q, SvmOptions::default().atomics(true), 16)?;
        assert!(b.flags().contains(SvmMemFlags::SVM_ATOMICS));
        b.as_mut_slice()?.fill(9);
        assert_eq!(b.as_slice()?, &[9; 16]);
    }
    Ok(())
}

device_test!(read_only_svm_is_host_writable_issue_372);
/// PyOpenCL issue #372: a READ_ONLY SVM array could not be filled from the host. Here the host
/// maps it read-write, a kernel reads it (pointer and buffer-view paths), and the values arrive.
fn read_only_svm_is_host_writable_issue_372(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let mut src: SvmArray<f32, Coarse> =
        svm_empty(&q, SvmOptions::default().access(SvmAccess::ReadOnly), N)?;
    assert!(src.flags().contains(SvmMemFlags::READ_ONLY));
    src.with_map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| {
            for (i, v) in s.iter_mut().enumerate() {
                *v = i as f32;
            }
        },
    )?;
    let mut dst: SvmArray<f32, Coarse> = svm_empty(&q, SvmOptions::default(), N)?;
    let mut k = kernel(&q, "plus_one")?;
    k.set_arg(0, &src)?.set_arg(1, &dst)?;
    k.enqueue_nd_range(&q, &[N], None, &[])?;
    drop(k);
    dst.with_map(&q, cl_mem::ReadOnly, .., |s| {
        for (i, &v) in s.iter().enumerate() {
            assert_eq!(v, i as f32 + 1.0, "pointer path at {i}");
        }
    })?;
    // The read-only data seen as a READ_ONLY buffer.
    {
        let view = src.as_buffer(MemFlags::READ_ONLY)?;
        assert!(view.flags().contains(MemFlags::READ_ONLY));
        let mut k = kernel(&q, "plus_one")?;
        k.set_arg(0, &view)?.set_arg(1, &dst)?;
        k.enqueue_nd_range(&q, &[N], None, &[])?;
    }
    let mut host = vec![0f32; N];
    dst.read(&q, &mut host, &[])?;
    for (i, &v) in host.iter().enumerate() {
        assert_eq!(v, i as f32 + 1.0, "buffer path at {i}");
    }
    Ok(())
}

device_test!(memcpy_in_every_direction);
fn memcpy_in_every_direction(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let data: Vec<u32> = (0..N32).collect();
    let a = csvm_empty::<u32>(&q, N)?;
    let mut b = csvm_empty::<u32>(&q, N)?;
    // host -> SVM
    a.write(&q, &data, &[])?;
    // SVM -> SVM, whole
    enqueue_copy(&q, &b, &a, &[])?.wait()?;
    // SVM -> host
    let mut out = vec![0u32; N];
    b.read(&q, &mut out, &[])?;
    assert_eq!(out, data);
    // A host side that is not whole values of `T` is refused, given or taken from its length.
    assert!(matches!(
        a.write(&q, &[0xFFu8; 3][..], &[]),
        Err(Error::Misaligned { .. })
    ));
    assert!(matches!(
        a.read(&q, &mut [0u8; 3][..], &[]),
        Err(Error::Misaligned { .. })
    ));
    a.read(&q, &mut out, &[])?;
    assert_eq!(out, data, "a refused write changed nothing");
    // SVM -> SVM with byte offsets, and within one allocation (no overlap).
    enqueue_svm_memcpy(&q, &b, 0, &a, 400, 40, &[])?;
    enqueue_svm_memcpy(&q, &b, 800, &b, 0, 40, &[])?.wait()?;
    b.with_map(&q, cl_mem::ReadOnly, .., |s| {
        assert_eq!(&s[..10], &data[100..110]);
        assert_eq!(&s[200..210], &data[100..110]);
        assert_eq!(&s[10..200], &data[10..200]);
    })?;
    // Across grains, where fine grain exists.
    if dev
        .device
        .svm_capabilities()?
        .contains(SvmCapabilities::FINE_GRAIN_BUFFER)
    {
        let mut f = fsvm_empty::<u32>(&q, N)?;
        enqueue_copy(&q, &f, &a, &[])?;
        assert_eq!(f.as_slice()?, &data[..]);
        f.as_mut_slice()?[0] = 77;
        let mut c = csvm_empty::<u32>(&q, N)?;
        enqueue_copy(&q, &c, &f, &[])?;
        c.with_map(&q, cl_mem::ReadOnly, .., |s| assert_eq!(s[0], 77))?;
    }
    // Through the untyped interface, as PyOpenCL's SVMPointer (object-safe: kinds mix).
    {
        let p: &mut dyn SvmPointer = &mut b;
        assert_eq!(p.size_bytes(), N * 4);
        let bytes = p.map_ro_bytes(&q)?;
        assert_eq!(&bytes[4..8], &101u32.to_ne_bytes());
    }
    {
        let p: &mut dyn SvmPointer = &mut b;
        p.map_rw_bytes(&q)?[0..4].copy_from_slice(&5u32.to_ne_bytes());
        let view = p.as_buffer(MemFlags::READ_ONLY)?;
        let mut first = [0u32; 1];
        view.read(&q, &mut first, &[])?;
        assert_eq!(first, [5]);
    }
    // Partial reads at an offset.
    let mut few = [0u32; 4];
    a.read(&q, &mut few, Transfer::default().src_offset((N - 4) * 4))?;
    assert_eq!(few, [N32 - 4, N32 - 3, N32 - 2, N32 - 1]);
    Ok(())
}

device_test!(fill_honours_the_byte_count);
/// PyOpenCL's `enqueue_svm_memfill` ignores its byte count; this one fills exactly the range.
fn fill_honours_the_byte_count(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let mut a = csvm_empty::<u32>(&q, 16)?;
    a.fill(&q, &[1], &[])?;
    a.fill(
        &q,
        &2u32.to_ne_bytes(),
        Transfer::default().dst_offset(8).byte_count(16),
    )?;
    a.fill(
        &q,
        &[3u32],
        Transfer::default().dst_offset(12 * 4).byte_count(2 * 4),
    )?;
    a.fill(
        &q,
        &[0xffu8],
        Transfer::default().dst_offset(64 - 1).byte_count(1),
    )?;
    let last = u32::from_ne_bytes({
        let mut b = 1u32.to_ne_bytes();
        b[3] = 0xff;
        b
    });
    a.with_map(&q, cl_mem::ReadOnly, .., |s| {
        assert_eq!(s, &[1, 1, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 3, 3, 1, last]);
    })?;
    Ok(())
}

device_test!(zero_size_allocations_work);
fn zero_size_allocations_work(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let mut a = csvm_empty::<f32>(&q, 0)?;
    assert!(a.is_empty());
    assert_eq!(a.size_bytes(), 0);
    assert!(a.svm_ptr().is_null());
    assert!(a
        .map(&q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?
        .is_empty());
    a.with_map(&q, cl_mem::ReadOnly, .., |s| assert!(s.is_empty()))?;
    a.fill(&q, &[1.0f32], &[])?.wait()?;
    a.write(&q, &[0u8; 0], &[])?;
    a.read(&q, &mut [0u8; 0], &[])?;
    assert!(matches!(
        a.as_buffer(MemFlags::READ_WRITE),
        Err(Error::InvalidArgument(_))
    ));
    let bytes = SvmAllocation::<Coarse>::new(&q, 0)?;
    assert_eq!(
        bytes.enqueue_release(&[])?.command_type()?,
        cl_raw::sys::CL_COMMAND_MARKER
    );
    a.release_now()?;
    if dev
        .device
        .svm_capabilities()?
        .contains(SvmCapabilities::FINE_GRAIN_SYSTEM)
    {
        let mut s = SvmArray::<u8, cl_mem::svm::System>::from_vec(&q, Vec::new())?;
        assert!(s.as_slice()?.is_empty());
        assert!(s.into_vec()?.is_empty());
    }
    Ok(())
}

device_test!(migration_keeps_contents);
fn migration_keeps_contents(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let d = &dev.device;
    let q = dev.queue();
    let a = csvm_empty::<u32>(&q, N)?;
    let data: Vec<u32> = (0..N32).map(|i| i * 3).collect();
    a.write(&q, &data, &[])?;
    if d.platform_version() < Version::V2_1 || d.version() < Version::V2_1 {
        assert!(matches!(
            enqueue_svm_migrate(&q, &[&a], MigrationFlags::empty(), &[]),
            Err(Error::Unsupported {
                feature: "clEnqueueSVMMigrateMem",
                ..
            })
        ));
        return Err(skip(format!(
            "SVM migration needs OpenCL 2.1; device {}",
            d.version()
        )));
    }
    enqueue_svm_migrate(&q, &[&a], MigrationFlags::HOST, &[])?.wait()?;
    enqueue_svm_migrate(&q, &[&a], MigrationFlags::empty(), &[])?.wait()?;
    let empty = csvm_empty::<u32>(&q, 0)?;
    enqueue_svm_migrate(&q, &[&a, &empty], MigrationFlags::empty(), &[])?.wait()?;
    let mut out = vec![0u32; N];
    a.read(&q, &mut out, &[])?;
    assert_eq!(out, data);
    Ok(())
}
