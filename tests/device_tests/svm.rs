//! Shared virtual memory (`cl-mem` issue 5): per SVM kind (coarse, fine, system) fill, maps,
//! kernels through the SVM pointer and through `as_buffer`, copies in every direction; PyOpenCL's
//! issue #372 scenario; release ordering after long-running kernels on one and two queues;
//! capability gating and bad input.

use cl_mem::{enqueue_copy, Transfer};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cl_mem::svm::{
    csvm_empty, csvm_empty_like, enqueue_svm_memcpy, enqueue_svm_migrate, fsvm_empty,
    fsvm_empty_like, svm_empty, svm_empty_like, svm_from_vec, Coarse, Fine, Grain, SvmAccess,
    SvmAllocation, SvmArray, SvmMemFlags, SvmMigrateFlags, SvmOptions, SvmPointer,
};
use cl_mem::{
    Context, Error, EventStatus, Kernel, MemFlags, Program, Queue, QueueProperties,
    SvmCapabilities, UserEvent, Version,
};
use cl_tests::{skip, DeviceTest, TestDevice, TestResult};

/// The suite's tests, in the order they run.
pub fn tests() -> Vec<DeviceTest> {
    vec![
        DeviceTest {
            name: "coarse_fill_map_kernel_buffer_copy_roundtrip",
            run: coarse_roundtrip,
        },
        DeviceTest {
            name: "a_context_listing_its_device_twice_is_one_device_for_svm",
            run: a_context_listing_its_device_twice_is_one_device_for_svm,
        },
        DeviceTest {
            name: "fine_fill_map_kernel_buffer_copy_roundtrip",
            run: fine_roundtrip,
        },
        DeviceTest {
            name: "system_fill_map_kernel_buffer_copy_roundtrip",
            run: system_roundtrip,
        },
        DeviceTest {
            name: "allocation_options_and_like_helpers_are_honoured",
            run: allocation_options_and_like_helpers_are_honoured,
        },
        DeviceTest {
            name: "forgotten_map_guard_is_unmapped_before_the_next_use",
            run: forgotten_map_guard_is_unmapped_before_the_next_use,
        },
        DeviceTest {
            name: "svm_pointer_into_the_middle_reaches_the_tail",
            run: svm_pointer_into_the_middle_reaches_the_tail,
        },
        DeviceTest {
            name: "fine_grain_is_host_accessible_between_kernels",
            run: fine_grain_is_host_accessible_between_kernels,
        },
        DeviceTest {
            name: "read_only_svm_is_host_writable_issue_372",
            run: read_only_svm_is_host_writable_issue_372,
        },
        DeviceTest {
            name: "memcpy_in_every_direction",
            run: memcpy_in_every_direction,
        },
        DeviceTest {
            name: "fill_honours_the_byte_count",
            run: fill_honours_the_byte_count,
        },
        DeviceTest {
            name: "zero_size_allocations_work",
            run: zero_size_allocations_work,
        },
        DeviceTest {
            name: "migration_keeps_contents",
            run: migration_keeps_contents,
        },
        DeviceTest {
            name: "free_waits_for_a_running_kernel",
            run: free_waits_for_a_running_kernel,
        },
        DeviceTest {
            name: "free_waits_for_kernels_on_other_queues",
            run: free_waits_for_kernels_on_other_queues,
        },
        DeviceTest {
            name: "free_waits_for_fills_on_other_queues",
            run: free_waits_for_fills_on_other_queues,
        },
        DeviceTest {
            name: "kernel_argument_keeps_dropped_svm_alive",
            run: kernel_argument_keeps_dropped_svm_alive,
        },
        DeviceTest {
            name: "rebinding_orders_the_new_queue_after_the_old",
            run: rebinding_orders_the_new_queue_after_the_old,
        },
        DeviceTest {
            name: "explicit_releases_report_their_completion",
            run: explicit_releases_report_their_completion,
        },
        DeviceTest {
            name: "svm_rejects_bad_input_before_the_driver",
            run: svm_rejects_bad_input_before_the_driver,
        },
        DeviceTest {
            name: "unsupported_kinds_are_refused_before_the_driver",
            run: unsupported_kinds_are_refused,
        },
    ]
}

const SOURCE: &str = r#"
__kernel void twice(__global float *a) {
    size_t i = get_global_id(0);
    a[i] = 2.0f * a[i];
}
__kernel void plus_one(__global const float *src, __global float *dst) {
    size_t i = get_global_id(0);
    dst[i] = src[i] + 1.0f;
}
__kernel void spin_then_write(__global uint *a, uint iters) {
    size_t i = get_global_id(0);
    uint acc = (uint)i;
    for (uint k = 0; k < iters; ++k) {
        acc = acc * 1103515245u + 12345u;
    }
    a[i] = acc;
}
"#;

/// What `spin_then_write` leaves in element `i`.
fn spun(i: usize, iters: u32) -> u32 {
    let mut acc = u32::try_from(i).expect("a small index");
    for _ in 0..iters {
        acc = acc.wrapping_mul(1_103_515_245).wrapping_add(12_345);
    }
    acc
}

/// Skips unless the device (and its platform) can do `cap` SVM.
fn require(dev: &TestDevice, cap: SvmCapabilities, what: &str) -> TestResult {
    let d = &dev.device;
    if d.platform_version() < Version::V2_0 || d.version() < Version::V2_0 {
        return Err(skip(format!(
            "{what} needs OpenCL 2.0; platform {} device {}",
            d.platform_version(),
            d.version()
        )));
    }
    let caps = d.svm_capabilities()?;
    if !caps.contains(cap) {
        return Err(skip(format!(
            "{what}: CL_DEVICE_SVM_CAPABILITIES is {caps:?}"
        )));
    }
    Ok(())
}

fn kernel(q: &Queue, name: &str) -> Result<Kernel, Error> {
    Program::build_from_source(q.context(), SOURCE, "")?.kernel(name)
}

/// Waits (up to 20 s) until `flag` is set.
fn wait_for(flag: &AtomicBool) -> bool {
    let start = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        if start.elapsed() > Duration::from_secs(20) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

const N: usize = N32 as usize;
const N32: u32 = 1024;

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
        assert_eq!(view.size_bytes(), N * 4);
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

fn coarse_roundtrip(dev: &TestDevice) -> TestResult {
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

fn fine_roundtrip(dev: &TestDevice) -> TestResult {
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

fn system_roundtrip(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::FINE_GRAIN_SYSTEM,
        "fine-grain system SVM",
    )?;
    let q = dev.queue();
    let mut a = svm_from_vec(&q, vec![0f32; N])?;
    roundtrip(&q, &mut a)?;
    let back = a.into_vec()?;
    assert_eq!(back.len(), N);
    assert_eq!(back[3], 12.0);
    assert_eq!(back[12], 7.0);
    Ok(())
}

fn allocation_options_and_like_helpers_are_honoured(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    for align in [1usize, 8, 64, 128] {
        let a = SvmAllocation::<Coarse>::with_options(&q, 100, SvmOptions::new().alignment(align))?;
        assert_eq!(a.alignment(), align);
        assert_eq!(a.size_bytes(), 100);
        assert!(
            (a.svm_ptr() as usize).is_multiple_of(align),
            "alignment {align}"
        );
    }
    let w: SvmArray<u64, Coarse> =
        svm_empty(&q, SvmOptions::new().access(SvmAccess::WriteOnly), 3)?;
    assert_eq!(w.alignment(), 8);
    assert!(w.flags().contains(SvmMemFlags::WRITE_ONLY));
    let host = [1u16, 2, 3, 4, 5];
    let c = csvm_empty_like(&q, &host)?;
    assert_eq!((c.len(), c.size_bytes(), c.alignment()), (5, 10, 2));
    c.write(&q, &host, &[])?;
    let mut back = [0u16; 5];
    c.read(&q, &mut back, &[])?;
    assert_eq!(back, host);
    let s: SvmArray<u16, Coarse> = svm_empty_like(&q, SvmOptions::new(), &host)?;
    assert_eq!(s.len(), 5);
    if dev
        .device
        .svm_capabilities()?
        .contains(SvmCapabilities::FINE_GRAIN_BUFFER)
    {
        let mut f = fsvm_empty_like(&q, &host)?;
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
    let view = m.as_array((2, N / 2))?;
    assert_eq!(view[[0, 3]], 3.0);
    assert_eq!(view[[1, 3]], 2.0 * (N / 2 + 3) as f32);
    assert!(matches!(
        m.as_array((3, N / 2)),
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

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
    // As ndarray views, C and Fortran order.
    {
        let v = a.as_array((32, 32))?;
        assert_eq!(v[[1, 2]], 2.0 * 34.0);
    }
    {
        use ndarray::ShapeBuilder;
        let mut v = a.as_array_mut((32, 32).f())?;
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
    assert!(matches!(
        a.as_array((33, 32)),
        Err(Error::InvalidArgument(_))
    ));
    // With atomics, where the device has them.
    if dev
        .device
        .svm_capabilities()?
        .contains(SvmCapabilities::ATOMICS)
    {
        let mut b = SvmArray::<u32, Fine>::with_options(&q, 16, SvmOptions::new().atomics(true))?;
        assert!(b.flags().contains(SvmMemFlags::SVM_ATOMICS));
        b.as_mut_slice()?.fill(9);
        assert_eq!(b.as_slice()?, &[9; 16]);
    }
    Ok(())
}

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
        svm_empty(&q, SvmOptions::new().access(SvmAccess::ReadOnly), N)?;
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
    let mut dst: SvmArray<f32, Coarse> = svm_empty(&q, SvmOptions::new(), N)?;
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
        let mut s = svm_from_vec::<u8>(&q, Vec::new())?;
        assert!(s.as_slice()?.is_empty());
        assert!(s.into_vec()?.is_empty());
    }
    Ok(())
}

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
            enqueue_svm_migrate(&q, &[&a], SvmMigrateFlags::empty(), &[]),
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
    enqueue_svm_migrate(&q, &[&a], SvmMigrateFlags::TO_HOST, &[])?.wait()?;
    enqueue_svm_migrate(&q, &[&a], SvmMigrateFlags::empty(), &[])?.wait()?;
    let empty = csvm_empty::<u32>(&q, 0)?;
    enqueue_svm_migrate(&q, &[&a, &empty], SvmMigrateFlags::empty(), &[])?.wait()?;
    let mut out = vec![0u32; N];
    a.read(&q, &mut out, &[])?;
    assert_eq!(out, data);
    Ok(())
}

const SPIN: u32 = 200_000;

/// A gated, long-running kernel writes to an allocation that is dropped right after the
/// enqueue: the free must not run before the kernel completed.
fn free_waits_for_a_running_kernel(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let gate = UserEvent::new(q.context())?;
    let a = csvm_empty::<u32>(&q, 256)?;
    let mut k = kernel(&q, "spin_then_write")?;
    k.set_arg(0, &a)?.set_arg(1, &SPIN)?;
    let kev = k.enqueue_nd_range(&q, &[256], None, &[&gate])?;
    drop(k);
    let freed = Arc::new(AtomicBool::new(false));
    let kernel_status_at_free = Arc::new(Mutex::new(None));
    {
        let freed = Arc::clone(&freed);
        let seen = Arc::clone(&kernel_status_at_free);
        let kev = kev.clone();
        a.on_release(move |status| {
            *seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((kev.status(), status));
            freed.store(true, Ordering::SeqCst);
        });
    }
    drop(a); // the free is enqueued now, behind the gated kernel
    q.flush()?;
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !freed.load(Ordering::SeqCst),
        "the SVM was freed while its kernel was still waiting"
    );
    gate.set_complete()?;
    assert!(wait_for(&freed), "the SVM free never completed");
    let seen = kernel_status_at_free
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match seen {
        Some((Ok(EventStatus::Complete), EventStatus::Complete)) => {}
        other => panic!("at the free: (kernel status, free status) = {other:?}"),
    }
    assert_eq!(kev.status()?, EventStatus::Complete);
    Ok(())
}

/// The same across two queues: bound to q1, used by a kernel on q2, dropped: the free on q1
/// waits for q2's kernel.
fn free_waits_for_kernels_on_other_queues(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q1 = dev.queue();
    let q2 = Queue::new(q1.context(), &dev.device)?;
    let gate = UserEvent::new(q1.context())?;
    let a = csvm_empty::<u32>(&q1, 256)?;
    let b = csvm_empty::<u32>(&q1, 256)?;
    assert_eq!(a.queue(), q1);
    let mut k = kernel(&q2, "spin_then_write")?;
    k.set_arg(0, &a)?.set_arg(1, &SPIN)?;
    let kev = k.enqueue_nd_range(&q2, &[256], None, &[&gate])?;
    // The same kernel object, re-pointed at `b`, enqueued on q1 (not gated): `a`'s argument is
    // gone from the kernel, only q2's pending command still uses it.
    k.set_arg(0, &b)?;
    k.enqueue_nd_range(&q1, &[256], None, &[])?;
    drop(k);
    let freed = Arc::new(AtomicBool::new(false));
    let order = Arc::new(AtomicI32::new(0));
    {
        let freed = Arc::clone(&freed);
        let order = Arc::clone(&order);
        let kev = kev.clone();
        a.on_release(move |status| {
            let ok = status == EventStatus::Complete
                && matches!(kev.status(), Ok(EventStatus::Complete));
            order.store(if ok { 1 } else { -1 }, Ordering::SeqCst);
            freed.store(true, Ordering::SeqCst);
        });
    }
    drop(a);
    // Not `finish`: q1's free now waits (through a marker) for q2's gated kernel.
    q1.flush()?;
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !freed.load(Ordering::SeqCst),
        "freed on q1 while q2's kernel still waited"
    );
    gate.set_complete()?;
    assert!(wait_for(&freed), "the SVM free never completed");
    assert_eq!(
        order.load(Ordering::SeqCst),
        1,
        "the free completed before q2's kernel"
    );
    let mut b = b;
    b.with_map(&q1, cl_mem::ReadOnly, .., |s| {
        for (i, &v) in s.iter().enumerate() {
            assert_eq!(v, spun(i, SPIN), "at {i}");
        }
    })?;
    Ok(())
}

/// A fill holds nothing (unlike a kernel's argument record): only the markers the free enqueues on
/// every other queue that used the allocation keep a gated fill there from writing freed memory.
fn free_waits_for_fills_on_other_queues(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    if dev.platform_name().contains("Oclgrind") {
        return Err(skip("Oclgrind has no SVM"));
    }
    let q1 = dev.queue();
    let q2 = Queue::new(q1.context(), &dev.device)?;
    let gate = UserEvent::new(q1.context())?;
    let a = csvm_empty::<u32>(&q1, 256)?;
    let fill = a.fill(&q2, &[5], &[&*gate])?;
    let freed = Arc::new(AtomicBool::new(false));
    let order = Arc::new(AtomicI32::new(0));
    {
        let freed = Arc::clone(&freed);
        let order = Arc::clone(&order);
        let fill = fill.clone();
        a.on_release(move |status| {
            let ok = status == EventStatus::Complete
                && matches!(fill.status(), Ok(EventStatus::Complete));
            order.store(if ok { 1 } else { -1 }, Ordering::SeqCst);
            freed.store(true, Ordering::SeqCst);
        });
    }
    drop(a);
    q1.flush()?;
    std::thread::sleep(Duration::from_millis(100));
    let early = freed.load(Ordering::SeqCst);
    // Open the gate before asserting, so a broken rule fails instead of hanging.
    gate.set_complete()?;
    fill.wait()?;
    assert!(!early, "freed on q1 while q2's fill still waited");
    assert!(wait_for(&freed), "the SVM free never completed");
    assert_eq!(
        order.load(Ordering::SeqCst),
        1,
        "the free completed before q2's fill"
    );
    Ok(())
}

/// A kernel holding an SVM argument keeps it alive after the array is dropped; the free comes
/// when the kernel goes.
fn kernel_argument_keeps_dropped_svm_alive(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let mut src = csvm_empty::<f32>(&q, N)?;
    src.with_map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| s.iter_mut().enumerate().for_each(|(i, v)| *v = i as f32),
    )?;
    let mut dst = csvm_empty::<f32>(&q, N)?;
    let freed = Arc::new(AtomicBool::new(false));
    {
        let freed = Arc::clone(&freed);
        src.on_release(move |_| freed.store(true, Ordering::SeqCst));
    }
    let mut k = kernel(&q, "plus_one")?;
    k.set_arg(0, &src)?.set_arg(1, &dst)?;
    drop(src);
    k.enqueue_nd_range(&q, &[N], None, &[])?;
    q.finish()?;
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !freed.load(Ordering::SeqCst),
        "freed while a kernel still holds it as an argument"
    );
    k.enqueue_nd_range(&q, &[N], None, &[])?;
    drop(k);
    assert!(
        wait_for(&freed),
        "the free never came after the kernel was dropped"
    );
    dst.with_map(&q, cl_mem::ReadOnly, .., |s| {
        for (i, &v) in s.iter().enumerate() {
            assert_eq!(v, i as f32 + 1.0, "at {i}");
        }
    })?;
    Ok(())
}

fn rebinding_orders_the_new_queue_after_the_old(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q1 = dev.queue();
    let q2 = Queue::new(q1.context(), &dev.device)?;
    let gate = UserEvent::new(q1.context())?;
    let mut a = csvm_empty::<u32>(&q1, 64)?;
    let mut k = kernel(&q1, "spin_then_write")?;
    k.set_arg(0, &a)?.set_arg(1, &1000u32)?;
    k.enqueue_nd_range(&q1, &[64], None, &[&gate])?;
    drop(k);
    q1.flush()?;
    a.bind_to_queue(&q2)?;
    assert_eq!(a.queue(), q2);
    // Work on the new queue waits for the gated kernel on the old one.
    let fill = a.fill(&q2, &[5u32], Transfer::default().byte_count(4))?;
    q2.flush()?;
    std::thread::sleep(Duration::from_millis(50));
    assert_ne!(
        fill.status()?,
        EventStatus::Complete,
        "q2 ran before q1's earlier work"
    );
    gate.set_complete()?;
    fill.wait()?;
    a.with_map(&q2, cl_mem::ReadOnly, .., |s| {
        assert_eq!(s[0], 5);
        assert_eq!(s[1], spun(1, 1000));
    })?;
    Ok(())
}

fn explicit_releases_report_their_completion(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let gate = UserEvent::new(q.context())?;
    let a = csvm_empty::<u32>(&q, 64)?;
    let mut k = kernel(&q, "spin_then_write")?;
    k.set_arg(0, &a)?.set_arg(1, &SPIN)?;
    let kev = k.enqueue_nd_range(&q, &[64], None, &[&gate])?;
    // Still held by the kernel: refused (the memory then goes with the kernel).
    let b = csvm_empty::<u32>(&q, 64)?;
    let mut kb = kernel(&q, "spin_then_write")?;
    kb.set_arg(0, &b)?;
    assert!(matches!(b.enqueue_release(&[]), Err(Error::SvmInUse(_))));
    drop(kb);
    drop(k);
    let free = a.enqueue_release(&[])?;
    assert_eq!(free.command_type()?, cl_raw::sys::CL_COMMAND_SVM_FREE);
    q.flush()?;
    std::thread::sleep(Duration::from_millis(50));
    assert_ne!(free.status()?, EventStatus::Complete);
    gate.set_complete()?;
    free.wait()?;
    assert_eq!(kev.status()?, EventStatus::Complete);
    // release_now waits first, then frees at once.
    let c = csvm_empty::<u32>(&q, 64)?;
    c.fill(&q, &[3], &[])?;
    let freed = Arc::new(AtomicBool::new(false));
    {
        let freed = Arc::clone(&freed);
        c.on_release(move |s| freed.store(s == EventStatus::Complete, Ordering::SeqCst));
    }
    c.release_now()?;
    assert!(freed.load(Ordering::SeqCst));
    // into_raw / from_raw hand the pointer over and back (what an allocator does).
    let d = csvm_empty::<u32>(&q, 64)?;
    let e = csvm_empty::<u32>(&q, 64)?;
    assert!(d != e);
    let d_ptr = d.svm_ptr();
    d.write(&q, &[9u32; 64], &[])?;
    let p = d.into_raw()?;
    assert_eq!(p, d_ptr);
    // SAFETY: `p` came from clSVMAlloc in this context with 64 u32 (coarse, read-write) and
    // was given up by `into_raw`; the write above was blocking.
    let back = unsafe { SvmArray::<u32, Coarse>::from_raw(&q, p, 64, 4, SvmMemFlags::READ_WRITE) }?;
    let mut out = [0u32; 64];
    back.read(&q, &mut out, &[])?;
    assert_eq!(out, [9; 64]);
    // SAFETY: the checks below refuse before adopting anything.
    let misaligned = unsafe {
        SvmArray::<u32, Coarse>::from_raw(
            &q,
            p.cast::<u8>().wrapping_add(2).cast(),
            4,
            4,
            SvmMemFlags::READ_WRITE,
        )
    };
    assert!(matches!(misaligned, Err(Error::Misaligned { .. })));
    // SAFETY: as above.
    let null = unsafe {
        SvmArray::<u32, Coarse>::from_raw(&q, std::ptr::null_mut(), 4, 4, SvmMemFlags::READ_WRITE)
    };
    assert!(matches!(null, Err(Error::InvalidArgument(_))));
    drop(back);
    Ok(())
}

fn svm_rejects_bad_input_before_the_driver(dev: &TestDevice) -> TestResult {
    require(
        dev,
        SvmCapabilities::COARSE_GRAIN_BUFFER,
        "coarse-grain SVM",
    )?;
    let q = dev.queue();
    let invalid = |r: Result<(), Error>, what: &str| match r {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("{what}: {other:?}"),
    };
    let alloc =
        |len: usize, o: SvmOptions| SvmArray::<u32, Coarse>::with_options(&q, len, o).map(drop);
    invalid(alloc(4, SvmOptions::new().alignment(3)), "alignment 3");
    // Alignment 0 is the driver's default, not an error (parity::svm_alignment_zero_is_the_drivers_default).
    invalid(
        alloc(4, SvmOptions::new().alignment(1 << 40)),
        "alignment 2^40",
    );
    invalid(alloc(usize::MAX / 2, SvmOptions::new()), "size overflow");
    let max = usize::try_from(dev.device.max_mem_alloc_size()?).unwrap_or(usize::MAX);
    invalid(
        alloc(max / 4 + 1, SvmOptions::new()),
        "above CL_DEVICE_MAX_MEM_ALLOC_SIZE",
    );
    invalid(
        alloc(4, SvmOptions::new().atomics(true)),
        "atomics on coarse grain",
    );
    // Powers of two above the largest OpenCL type (the spec's limit; PoCL and Intel return NULL
    // from clSVMAlloc there).
    invalid(alloc(4, SvmOptions::new().alignment(256)), "alignment 256");
    invalid(
        alloc(4, SvmOptions::new().alignment(1 << 30)),
        "alignment 2^30",
    );
    // Out-of-order queues cannot order the free.
    if dev
        .device
        .queue_properties()?
        .contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE)
    {
        let ooo = Queue::builder(q.context(), &dev.device)
            .out_of_order(true)
            .build()?;
        invalid(csvm_empty::<u32>(&ooo, 4).map(drop), "out-of-order queue");
        let a = csvm_empty::<u32>(&q, 4)?;
        invalid(a.bind_to_queue(&ooo), "binding to an out-of-order queue");
    }
    let mut a = csvm_empty::<u32>(&q, 16)?;
    // Fill: pattern sizes, alignment, bounds.
    invalid(
        a.fill(&q, &[1u8, 2, 3], Transfer::default().byte_count(3))
            .map(drop),
        "3-byte pattern",
    );
    invalid(
        a.fill(&q, &[0u8; 0], Transfer::default().byte_count(0))
            .map(drop),
        "empty pattern",
    );
    invalid(
        a.fill(&q, &[0u8; 256], Transfer::default().byte_count(256))
            .map(drop),
        "256-byte pattern",
    );
    assert!(matches!(
        a.fill(
            &q,
            &[0u8; 4],
            Transfer::default().dst_offset(2).byte_count(4)
        ),
        Err(Error::Misaligned { .. })
    ));
    assert!(matches!(
        a.fill(&q, &[0u8; 4], Transfer::default().byte_count(6)),
        Err(Error::Misaligned { .. })
    ));
    assert!(matches!(
        a.fill(
            &q,
            &[0u8; 4],
            Transfer::default().dst_offset(60).byte_count(8)
        ),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        a.fill(
            &q,
            &[0u32],
            Transfer::default().dst_offset(10 * 4).byte_count(10 * 4)
        ),
        Err(Error::OutOfBounds { .. })
    ));
    // A 3-byte element: its default alignment (the element size) is not a power of two.
    invalid(
        csvm_empty::<[u8; 3]>(&q, 4).map(drop),
        "3-byte element, default alignment",
    );
    let odd = SvmArray::<[u8; 3], Coarse>::with_options(&q, 4, SvmOptions::new().alignment(1))?;
    invalid(
        odd.fill(&q, &[[1, 2, 3]], &[]).map(drop),
        "fill with a 3-byte element",
    );
    // Transfers and maps past the end.
    assert!(matches!(
        a.write(&q, &[1u32, 2], Transfer::default().dst_offset(15 * 4)),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        a.read(&q, &mut [0u32], Transfer::default().src_offset(16 * 4)),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        a.map(&q, cl_mem::ReadOnly, 8..17),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(a.arg_at(17), Err(Error::OutOfBounds { .. })));
    let b = csvm_empty::<u32>(&q, 8)?;
    invalid(
        enqueue_copy(&q, &a, &b, &[]).map(drop),
        "copy of different lengths",
    );
    invalid(
        enqueue_svm_memcpy(&q, &a, 0, &a, 4, 8, &[]).map(drop),
        "overlapping copy",
    );
    assert!(matches!(
        enqueue_svm_memcpy(&q, &a, 60, &b, 0, 8, &[]),
        Err(Error::OutOfBounds { .. })
    ));
    // Another context's queue.
    let other = dev.queue();
    invalid(
        a.fill(&other, &[1], &[]).map(drop),
        "a queue of another context",
    );
    invalid(
        a.map(&other, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)
            .map(drop),
        "mapping on a queue of another context",
    );
    invalid(a.bind_to_queue(&other), "binding to another context");
    // View flags.
    invalid(
        a.as_buffer(MemFlags::COPY_HOST_PTR).map(drop),
        "COPY_HOST_PTR view",
    );
    // Nothing above reached the allocation.
    a.with_map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| s.fill(4),
    )?;
    a.with_map(&q, cl_mem::ReadOnly, .., |s| assert_eq!(s, &[4; 16]))?;
    Ok(())
}

/// Every kind the device lacks is refused with `Unsupported`, without calling SVM entry points
/// (Oclgrind is OpenCL 1.2 and must never see one).
fn unsupported_kinds_are_refused(dev: &TestDevice) -> TestResult {
    let d = &dev.device;
    let caps = d.svm_capabilities()?;
    let q = dev.queue();
    let mut refused = 0;
    let unsupported = |r: Result<(), Error>, what: &str| match r {
        Err(Error::Unsupported { .. }) => {}
        other => panic!("{what}: {other:?}"),
    };
    if !caps.contains(SvmCapabilities::COARSE_GRAIN_BUFFER) {
        unsupported(csvm_empty::<f32>(&q, 4).map(drop), "coarse grain");
        unsupported(csvm_empty::<f32>(&q, 0).map(drop), "zero-size coarse grain");
        refused += 1;
    }
    if !caps.contains(SvmCapabilities::FINE_GRAIN_BUFFER) {
        unsupported(fsvm_empty::<f32>(&q, 4).map(drop), "fine grain");
        refused += 1;
    }
    if !caps.contains(SvmCapabilities::FINE_GRAIN_SYSTEM) {
        unsupported(svm_from_vec(&q, vec![1u8; 4]).map(drop), "system SVM");
        refused += 1;
    }
    if caps.contains(SvmCapabilities::FINE_GRAIN_BUFFER) && !caps.contains(SvmCapabilities::ATOMICS)
    {
        unsupported(
            SvmArray::<u32, Fine>::with_options(&q, 4, SvmOptions::new().atomics(true)).map(drop),
            "SVM atomics",
        );
        refused += 1;
    }
    if refused == 0 {
        return Err(skip(format!(
            "the device supports every SVM kind ({caps:?})"
        )));
    }
    Ok(())
}

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
