//! SVM lifetimes: frees wait for the commands using the memory, kernel arguments keep it alive, map
//! guards leak nothing; bad input and unsupported kinds are refused before the driver.

use super::{kernel, require, wait_for, N};
use crate::common::{coarse_svm, mapped};
use cl_mem::svm::{
    csvm_empty, enqueue_svm_memcpy, fsvm_empty, svm_empty, Coarse, Fine, SvmArray, SvmMemFlags,
    SvmOptions, SvmPointer,
};
use cl_mem::{
    enqueue_copy, Error, EventStatus, MemFlags, Program, Queue, QueueProperties, RawHandle,
    SvmCapabilities, Transfer, UserEvent,
};
use cl_tests::{device_test, skip, TestDevice, TestResult};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SVM_SRC: &str = r#"
__kernel void twice(__global float* a) { a[get_global_id(0)] *= 2.0f; }
"#;

const SPIN: u32 = 200_000;

/// What `spin_then_write` leaves in element `i`.
fn spun(i: usize, iters: u32) -> u32 {
    let mut acc = u32::try_from(i).expect("a small index");
    for _ in 0..iters {
        acc = acc.wrapping_mul(1_103_515_245).wrapping_add(12_345);
    }
    acc
}

device_test!(free_waits_for_a_running_kernel);
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

device_test!(free_waits_for_kernels_on_other_queues);
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

device_test!(free_waits_for_fills_on_other_queues);
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

device_test!(kernel_argument_keeps_dropped_svm_alive);
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

device_test!(rebinding_orders_the_new_queue_after_the_old);
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

device_test!(explicit_releases_report_their_completion);
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

device_test!(forgotten_svm_map_guards_leak_no_queue);
fn forgotten_svm_map_guards_leak_no_queue(dev: &TestDevice) -> TestResult {
    coarse_svm(dev)?;
    let q = dev.queue();
    let ctx = q.context().clone();
    let before = ctx.reference_count()?;
    {
        let mut a = cl_mem::svm::SvmArray::<f32, cl_mem::svm::Coarse>::new(&q, 64)?;
        a.with_map(
            &q,
            cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
            ..,
            |s| s.fill(0.0),
        )?;
        for _ in 0..5 {
            std::mem::forget(a.map(&q, cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE, ..)?);
        }
        // The next map unmaps the leftovers; their queue references go with them.
        a.with_map(&q, cl_mem::ReadOnly, .., |s| assert_eq!(s[0], 0.0))?;
        for _ in 0..3 {
            std::mem::forget(a.map(&q, cl_mem::ReadOnly, ..)?);
        }
    }
    // Dropping the array unmaps what is left and frees it, on the queue.
    q.finish()?;
    let after = ctx.reference_count()?;
    assert_eq!(
        after, before,
        "forgotten SVM map guards changed the context's reference count"
    );
    Ok(())
}

device_test!(a_cached_kernel_and_an_svm_map_take_turns);
fn a_cached_kernel_and_an_svm_map_take_turns(dev: &TestDevice) -> TestResult {
    coarse_svm(dev)?;
    let q = dev.queue();
    let ctx = q.context();
    let mut a = cl_mem::svm::SvmArray::<f32, cl_mem::svm::Coarse>::new(&q, 64)?;
    a.with_map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..,
        |s| s.iter_mut().for_each(|v| *v = 1.0),
    )?;
    let program = Program::build_from_source(ctx, SVM_SRC, "")?;
    let mut k = program.kernel("twice")?;
    k.set_arg(0, &a)?;
    for round in 1..=3u32 {
        k.enqueue_nd_range(&q, &[64], None, &[])?;
        q.finish()?;
        // No extra step: the kernel stays cached with its argument, the map works.
        let want = 2f32.powi(i32::try_from(round)?);
        a.with_map(&q, cl_mem::ReadOnly, .., |s| {
            assert!(s.iter().all(|&v| v == want), "round {round}")
        })?;
        let guard = a.map(&q, cl_mem::ReadOnly, ..)?;
        mapped(
            k.enqueue_nd_range(&q, &[64], None, &[]),
            "kernel under an SVM map",
        );
        drop(guard);
    }
    Ok(())
}

device_test!(svm_rejects_bad_input_before_the_driver);
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
    let alloc = |len: usize, o: SvmOptions| svm_empty::<u32, Coarse>(&q, o, len).map(drop);
    invalid(alloc(4, SvmOptions::default().alignment(3)), "alignment 3");
    // Alignment 0 is the driver's default, not an error (parity::svm_alignment_zero_is_the_drivers_default).
    invalid(
        alloc(4, SvmOptions::default().alignment(1 << 40)),
        "alignment 2^40",
    );
    invalid(
        alloc(usize::MAX / 2, SvmOptions::default()),
        "size overflow",
    );
    let max = usize::try_from(dev.device.max_mem_alloc_size()?).unwrap_or(usize::MAX);
    invalid(
        alloc(max / 4 + 1, SvmOptions::default()),
        "above CL_DEVICE_MAX_MEM_ALLOC_SIZE",
    );
    invalid(
        alloc(4, SvmOptions::default().atomics(true)),
        "atomics on coarse grain",
    );
    // Powers of two above the largest OpenCL type (the spec's limit; PoCL and Intel return NULL
    // from clSVMAlloc there).
    invalid(
        alloc(4, SvmOptions::default().alignment(256)),
        "alignment 256",
    );
    invalid(
        alloc(4, SvmOptions::default().alignment(1 << 30)),
        "alignment 2^30",
    );
    // Out-of-order queues cannot order the free.
    let supported: u64 = dev.device.info(cl_raw::sys::CL_DEVICE_QUEUE_PROPERTIES)?;
    if QueueProperties::from_bits_retain(supported)
        .contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE)
    {
        let ooo = Queue::with_properties(
            q.context(),
            &dev.device,
            QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE,
        )?;
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
    let odd = svm_empty::<[u8; 3], Coarse>(&q, SvmOptions::default().alignment(1), 4)?;
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
    // A view the host may not read or write: refused as a buffer's transfer is, before the
    // driver (whose answer is CL_INVALID_OPERATION).
    for (flags, reads, writes) in [
        (MemFlags::HOST_NO_ACCESS, false, false),
        (MemFlags::HOST_READ_ONLY, true, false),
        (MemFlags::HOST_WRITE_ONLY, false, true),
    ] {
        let view = a.as_buffer(MemFlags::READ_WRITE | flags)?;
        let mut out = [0u32; 4];
        let read = view.read(&q, &mut out[..], &[]).map(drop);
        let write = view.write(&q, &[5u32; 4][..], &[]).map(drop);
        if reads {
            read?;
        } else {
            invalid(read, "a read through a view the host may not read");
        }
        if writes {
            write?;
        } else {
            invalid(write, "a write through a view the host may not write");
        }
    }
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

device_test!(unsupported_kinds_are_refused_before_the_driver);
/// Every kind the device lacks is refused with `Unsupported`, without calling SVM entry points
/// (Oclgrind is OpenCL 1.2 and must never see one).
fn unsupported_kinds_are_refused_before_the_driver(dev: &TestDevice) -> TestResult {
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
        unsupported(SvmArray::from_vec(&q, vec![1u8; 4]).map(drop), "system SVM");
        refused += 1;
    }
    if caps.contains(SvmCapabilities::FINE_GRAIN_BUFFER) && !caps.contains(SvmCapabilities::ATOMICS)
    {
        unsupported(
            svm_empty::<u32, Fine>(&q, SvmOptions::default().atomics(true), 4).map(drop),
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
