//! Pooled buffers: transfers, kernels, fills, maps, slices, uniqueness, and what keeps a block.

use super::{expected, fill_kernel, immediate_pool, Capture, FILL_SRC};
use cl_mem::{Buffer, Error, MemFlags, MemObject, Program, RawHandle, Transfer, UserEvent};
use cl_tests::{device_test, TestDevice, TestResult};

device_test!(pooled_buffers_roundtrip_through_transfers_and_kernels);
fn pooled_buffers_roundtrip_through_transfers_and_kernels(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    let n = 1000;
    let a = pool.allocate(n * 4)?;
    // Transfers through Deref<Target = Buffer>.
    let data: Vec<u32> = (0..u32::try_from(n)?).map(|i| i * 3).collect();
    a.write(&q, &data, &[])?;
    let mut out = vec![0u32; n];
    a.read(&q, &mut out, &[])?;
    assert_eq!(out, data);
    // As a kernel argument, directly (`AsKernelArg`), and through `buffer()`.
    fill_kernel(&q, &a, 7, n, &[])?.wait()?;
    a.read(&q, &mut out, &[])?;
    assert_eq!(out, expected(7, n));
    fill_kernel(&q, &*a, 8, n, &[])?.wait()?;
    a.read(&q, &mut out, &[])?;
    assert_eq!(out, expected(8, n));
    // `to_vec` reads the requested bytes, not the bin's (1000 asked, a 1023-byte block).
    {
        let odd = pool.allocate(1000)?;
        odd.write(&q, &[7u8; 1000], &[])?;
        assert_eq!(odd.allocated_bytes(), 1023);
        assert_eq!(odd.to_vec::<u8>(&q)?, vec![7u8; 1000]);
        assert_eq!(Buffer::to_vec::<u8>(&odd, &q)?.len(), 1023);
        assert_eq!(odd.to_vec::<u32>(&q)?.len(), 250);
        let local = pool.allocate_local(1000)?;
        assert_eq!(local.to_vec::<u8>(&q)?.len(), 1000);
    }
    // A local block and a slice of a pooled block are kernel arguments too.
    {
        let l = pool.allocate_local(n * 4)?;
        fill_kernel(&q, &l, 9, n, &[])?.wait()?;
        let mut back = vec![0u32; n];
        cl_mem::enqueue_copy(&q, &mut back[..], &l, &[])?;
        assert_eq!(back, expected(9, n));
        drop(l);
    }
    let head = a.slice(..16)?;
    fill_kernel(&q, &head, 100, 4, &[])?.wait()?;
    a.read(&q, &mut out[..4], &[])?;
    assert_eq!(out[..4], [100, 101, 102, 103]);
    // As a memory object.
    assert_eq!(a.mem_info()?.size_bytes, a.allocated_bytes());
    let as_mem: &dyn MemObject = &*a;
    assert_eq!(a.as_raw(), as_mem.as_raw());
    Ok(())
}

device_test!(tracing_spans_cover_allocations_transfers_maps_kernels_and_misses);
/// Spans name every driver-facing operation a user may want to see: allocations, transfers,
/// maps, kernel enqueues and pool misses (a pool hit makes none).
fn tracing_spans_cover_allocations_transfers_maps_kernels_and_misses(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    let warm = pool.allocate(4096)?;
    drop(warm);
    let capture = Capture::default();
    let r: Result<(), cl_tests::TestError> =
        tracing::subscriber::with_default(capture.clone(), || {
            let hit = pool.allocate(4096)?;
            let after_hit = capture.0.lock().map(|v| v.len()).unwrap_or(usize::MAX);
            assert_eq!(after_hit, 0, "a pool hit makes no span");
            let miss = pool.allocate(1 << 20)?;
            hit.write(&q, &[1u32; 16], &[])?;
            let _ = hit.to_vec::<u32>(&q)?;
            hit.with_map::<u32, _, _>(&q, cl_mem::ReadOnly, ..4, |_| ())?;
            fill_kernel(&q, &miss, 1, 16, &[])?.wait()?;
            Ok(())
        });
    r?;
    let names: Vec<String> = capture
        .0
        .lock()
        .map(|v| v.iter().map(|(_, m)| m.clone()).collect())
        .unwrap_or_default();
    for want in [
        "span cl_pool::miss",
        "span cl_mem::alloc",
        "span cl_mem::write",
        "span cl_mem::read",
        "span cl_mem::map",
        "span cl_mem::kernel",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }
    Ok(())
}

device_test!(pooled_buffers_fill_copy_and_map);
/// Fills, device-to-device copies (`enqueue_copy`, memcpy order) and maps take pooled buffers
/// through `Deref` / `buffer()`.
fn pooled_buffers_fill_copy_and_map(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    let n = 256;
    let a = pool.allocate(n * 4)?;
    let b = pool.allocate(n * 4)?;
    a.fill(&q, &[7u32], Transfer::default().byte_count(n * 4))?
        .wait()?;
    b.fill(&q, &[1u32], Transfer::default().byte_count(n * 4))?
        .wait()?;
    // The pooled blocks are larger than requested: copy exactly the requested bytes.
    cl_mem::enqueue_copy(
        &q,
        &b,
        &a,
        cl_mem::Transfer {
            byte_count: Some(n * 4),
            ..cl_mem::Transfer::default()
        },
    )?
    .wait()?;
    let sum: u64 = b.with_map::<u32, _, _>(&q, cl_mem::ReadOnly, ..n, |s| {
        s.iter().map(|&x| u64::from(x)).sum()
    })?;
    assert_eq!(sum, 7 * 256);
    b.with_map::<u32, _, _>(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        ..4,
        |s| s.copy_from_slice(&[1, 2, 3, 4]),
    )?;
    let mut head = [0u32; 4];
    b.read(&q, &mut head, &[])?;
    assert_eq!(head, [1, 2, 3, 4]);
    Ok(())
}

device_test!(pooled_buffers_slice_and_migrate);
fn pooled_buffers_slice_and_migrate(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    let align = dev.device.base_addr_align();
    let n = 2 * align + 64;
    let b = pool.allocate(n)?;
    b.write(&q, &vec![0u8; n], &[])?;
    let part = b.slice(align..align + 64)?;
    assert_eq!(part.size_bytes(), 64);
    part.write(&q, &[7u8; 64], &[])?;
    let mut all = vec![1u8; n];
    b.read(&q, &mut all, &[])?;
    assert!(all[..align].iter().all(|&x| x == 0));
    assert!(all[align..align + 64].iter().all(|&x| x == 7));
    // Slices stop at the requested size, not the rounded one (n = 2 * align + 64 is never a
    // bin's exact size, so the block has room past n that a slice must not reach).
    assert!(b.allocated_bytes() > n);
    assert!(matches!(b.slice(0..n + 1), Err(Error::OutOfBounds { .. })));
    // The error names the slice asked for, not the whole range up to its end.
    assert!(matches!(
        b.slice(100..n + 1),
        Err(Error::OutOfBounds { offset: 100, len, size, .. }) if len == n + 1 - 100 && size == n
    ));
    assert!(matches!(b.slice(5..5), Err(Error::InvalidArgument(_))));
    // Reversed past the end is a reversed range first, as an empty one.
    assert!(matches!(
        b.slice(n + 10..n + 8),
        Err(Error::InvalidArgument(_))
    ));
    if dev.device.version() >= cl_mem::Version::V1_2
        && dev.device.platform_version() >= cl_mem::Version::V1_2
    {
        // PyOpenCL refuses pooled buffers here (std::bad_cast).
        cl_mem::enqueue_migrate_mem_objects(
            &q,
            &[&*b, &*part],
            cl_mem::MigrationFlags::empty(),
            &[],
        )?
        .wait()?;
        let mut again = vec![0u8; 64];
        b.read(&q, &mut again, Transfer::default().src_offset(align))?;
        assert_eq!(again, vec![7u8; 64]);
    }
    Ok(())
}

device_test!(pool_hit_hands_out_the_same_buffer);
fn pool_hit_hands_out_the_same_buffer(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    let a = pool.allocate(1000)?;
    let raw = a.as_raw();
    a.write(&q, &[42u32; 4], &[])?;
    drop(a);
    assert_eq!(pool.held_blocks(), 1);
    let b = pool.allocate(1001)?; // same bin (1023 bytes)
    assert_eq!(b.as_raw(), raw);
    let mut out = [0u32; 4];
    b.read(&q, &mut out, &[])?;
    assert_eq!(
        out, [42; 4],
        "a hit hands out the held buffer with its contents"
    );
    let s = pool.stats();
    assert_eq!((s.hits, s.misses, s.upstream_allocations), (1, 1, 1));
    assert_eq!((pool.held_blocks(), pool.active_blocks()), (0, 1));
    assert_eq!((pool.managed_bytes(), pool.active_bytes()), (1023, 1001));
    Ok(())
}

device_test!(buffer_is_unique_until_cloned_sliced_imaged_or_set_as_an_argument);
/// `Buffer::is_unique`, what a pool's hand-out relies on: every handle that can start new work
/// on the memory counts (clones, sub-buffers, `Memory`, images over it, kernel slots, references
/// given away), commands still pending do not.
fn buffer_is_unique_until_cloned_sliced_imaged_or_set_as_an_argument(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let n = 64;
    let b = Buffer::new(ctx, MemFlags::READ_WRITE, n * 4)?;
    assert!(b.is_unique(), "a new buffer");
    let c = b.clone();
    assert!(!b.is_unique() && !c.is_unique(), "a clone");
    drop(c);
    assert!(b.is_unique(), "the clone dropped");
    let part = b.sub_buffer(0, 16, MemFlags::empty())?;
    assert!(!b.is_unique() && !part.is_unique(), "a sub-buffer");
    drop(part);
    assert!(b.is_unique(), "the sub-buffer dropped");
    let m = cl_mem::Memory::from(b.clone());
    assert!(!b.is_unique(), "a Memory of a clone");
    drop(m);
    assert!(b.is_unique(), "the Memory dropped");
    // Conversions through raw handles inside the crate count nothing for good: a sub-buffer's
    // parent read back, a Memory released, a Memory adopted from the handle and dropped.
    let part = b.sub_buffer(0, 16, MemFlags::empty())?;
    drop(part.mem_info()?.associated_object);
    drop(part);
    assert!(b.is_unique(), "a sub-buffer's parent read back and dropped");
    cl_mem::Memory::from(b.clone()).release()?;
    assert!(b.is_unique(), "a Memory released");
    // SAFETY: a live buffer of this crate; nothing outside it uses the handle.
    let adopted = unsafe { cl_mem::Memory::from_raw_retained(b.as_raw()) }?;
    assert!(!b.is_unique(), "an adopted Memory can start work");
    drop(adopted);
    assert!(b.is_unique(), "the adopted Memory dropped");
    // A 2-D image (a 1-D buffer image would keep PoCL's context: DEVICES.md
    // #pocl-image1d-buffer-keeps-context), where the device makes them.
    let format =
        cl_mem::ImageFormat::new(cl_mem::ChannelOrder::R, cl_mem::ChannelType::UnsignedInt32);
    match cl_mem::Image::from_buffer(ctx, MemFlags::READ_WRITE, format, &b, &[n, 1], None) {
        Ok(img) => {
            assert!(!b.is_unique(), "an image over the buffer");
            drop(img);
            assert!(b.is_unique(), "the image dropped");
        }
        Err(Error::Unsupported { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    // A kernel slot counts; a command that used it does not, once the slot let it go.
    let other = Buffer::new(ctx, MemFlags::READ_WRITE, n * 4)?;
    let program = Program::build_from_source(ctx, FILL_SRC, "")?;
    let mut k = program.kernel("fill")?;
    k.set_arg(0, &b)?.set_arg(1, &1u32)?;
    assert!(!b.is_unique(), "a kernel slot");
    let gate = UserEvent::new(ctx)?;
    let pending = k.enqueue_nd_range(&q, &[n], None, &[&gate])?;
    k.set_arg(0, &other)?;
    let unique_while_pending = b.is_unique();
    let pending_status = pending.status()?;
    gate.set_complete()?;
    pending.wait()?;
    assert!(
        unique_while_pending,
        "a command still pending ({pending_status:?}) counted as a handle"
    );
    k.set_arg(0, &b)?;
    assert!(!b.is_unique(), "set again");
    drop(k);
    assert!(b.is_unique(), "the kernel dropped");
    // A reference given away may come back (`from_raw`): counted for good.
    let given = b.clone().into_raw();
    // SAFETY: `given` is the reference `into_raw` gave away, adopted once.
    let back = unsafe { Buffer::from_raw(given) }?;
    drop(back);
    assert!(!b.is_unique(), "a reference given away with into_raw");
    Ok(())
}

device_test!(a_clone_of_a_pooled_buffer_keeps_its_memory_from_the_next_owner);
/// Issue 29: a clone of a pooled buffer (or a sub-buffer taken through `Deref`) outlived the
/// block and, once the block went back, reached the next owner's bytes. Now the next owner gets
/// other memory, and the clone keeps its own bytes.
fn a_clone_of_a_pooled_buffer_keeps_its_memory_from_the_next_owner(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let n = 256;
    // A clone through `Deref`.
    let pool = immediate_pool(&q)?;
    let a = pool.allocate(n * 4)?;
    a.write(&q, &vec![1u32; n], &[])?;
    let kept: Buffer = (*a).clone();
    drop(a);
    let b = pool.allocate(n * 4)?;
    assert_ne!(
        b.as_raw(),
        kept.as_raw(),
        "the next owner got the memory a clone still reaches"
    );
    b.write(&q, &vec![9u32; n], &[])?;
    assert_eq!(kept.read_vec_of::<u32>(&q, n)?, vec![1u32; n]);
    assert_eq!(b.to_vec::<u32>(&q)?, vec![9u32; n]);
    // Still a hit for the pool: the block changed memory, not the pool's books.
    assert_eq!((pool.stats().hits, pool.stats().misses), (1, 1));
    drop((b, kept));
    // A sub-buffer through `Deref`, and a clone of a pooled slice.
    for case in ["sub-buffer", "slice clone"] {
        let pool = immediate_pool(&q)?;
        let a = pool.allocate(n * 4)?;
        let raw = a.as_raw();
        let kept: Buffer = match case {
            "sub-buffer" => a.sub_buffer(0, 16, MemFlags::empty())?,
            _ => (*a.slice(..16)?).clone(),
        };
        drop(a);
        let b = pool.allocate(n * 4)?;
        assert_ne!(b.as_raw(), raw, "a {case} still reaches the memory");
        drop((b, kept));
    }
    Ok(())
}

device_test!(a_kernel_argument_keeps_its_pooled_memory_until_replaced_or_dropped);
/// Issue 29: a kernel keeps the buffer it was given, so a kernel run again after its pooled
/// argument went back wrote into the next owner's block. Now the block's memory stays out of
/// the next hand-out until the argument is replaced or the kernel dropped.
fn a_kernel_argument_keeps_its_pooled_memory_until_replaced_or_dropped(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    let n = 256;
    let program = Program::build_from_source(q.context(), FILL_SRC, "")?;
    let mut k = program.kernel("fill")?;
    let a = pool.allocate(n * 4)?;
    let first = a.as_raw();
    k.set_arg(0, &a)?
        .set_arg(1, &1u32)?
        .enqueue_nd_range(&q, &[n], None, &[])?
        .wait()?;
    drop(a);
    let b = pool.allocate(n * 4)?;
    assert_ne!(b.as_raw(), first, "the kernel still has the memory set");
    b.write(&q, &vec![9u32; n], &[])?;
    k.enqueue_nd_range(&q, &[n], None, &[])?.wait()?; // writes the kernel's argument, not `b`
    assert_eq!(b.to_vec::<u32>(&q)?, vec![9u32; n], "the kernel wrote b");
    // Replaced: the first memory comes back at the next hand-out.
    k.set_arg(0, &b)?;
    let second = b.as_raw();
    drop(b);
    let c = pool.allocate(n * 4)?;
    assert_eq!(
        c.as_raw(),
        first,
        "the replaced argument's memory is reused"
    );
    drop(c);
    // Dropped: the kernel's slots go with it.
    let d = pool.allocate(n * 4)?;
    let third = d.as_raw();
    assert_ne!(third, second, "the kernel still has the second memory set");
    let mut k2 = program.kernel("fill")?;
    k2.set_arg(0, &d)?;
    drop(d);
    drop(k2);
    let e = pool.allocate(n * 4)?;
    assert_eq!(e.as_raw(), third, "a dropped kernel's argument is reused");
    drop(e);
    drop(k);
    Ok(())
}

device_test!(a_cached_kernel_with_a_fresh_block_per_call_reuses_two_buffers);
/// The common pattern: one cached kernel, a fresh pooled block per call, the block dropped
/// right after the enqueue. The kernel's slot holds the last call's memory, so consecutive calls
/// get different memory, and two buffers alternate: nothing is allocated after the second call.
/// The calls wait for a gate, so every command is still pending when the next block is handed
/// out (they keep their arguments; only the slot counts).
fn a_cached_kernel_with_a_fresh_block_per_call_reuses_two_buffers(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    let n = 64;
    let program = Program::build_from_source(q.context(), FILL_SRC, "")?;
    let mut k = program.kernel("fill")?;
    let gate = UserEvent::new(q.context())?;
    let mut seen = Vec::new();
    let mut same_as_previous = 0;
    let mut previous = None;
    let mut last = None;
    let run = (|| -> Result<(), cl_tests::TestError> {
        for v in 0..20u32 {
            let b = pool.allocate(n * 4)?;
            let raw = b.as_raw();
            if previous == Some(raw) {
                same_as_previous += 1;
            }
            previous = Some(raw);
            if !seen.contains(&raw) {
                seen.push(raw);
            }
            k.set_arg(0, &b)?.set_arg(1, &v)?;
            last = Some(k.enqueue_nd_range(&q, &[n], None, &[&gate])?);
        }
        Ok(())
    })();
    // Open the gate before asserting, so a failure cannot leave the queue stuck.
    gate.set_complete()?;
    if let Some(ev) = last {
        ev.wait()?;
    }
    run?;
    assert_eq!(
        same_as_previous, 0,
        "a block was handed out with the memory the kernel's slot still held"
    );
    assert_eq!(seen.len(), 2, "memories used over 20 calls");
    assert_eq!(pool.stats().upstream_allocations, 1);
    // `Kernel::call` keeps no argument: each call's block goes back at once and the next call,
    // ordered after it on the in-order queue, gets the same memory.
    let pool = immediate_pool(&q)?;
    let mut used = Vec::new();
    for v in 0..20u32 {
        let b = pool.allocate(n * 4)?;
        used.push(b.as_raw());
        k.call(&q, &[n], None, (&b, &v))?;
    }
    let b = pool.allocate(n * 4)?;
    q.finish()?;
    let want: Vec<u32> = (19..).take(n).collect();
    assert_eq!(b.to_vec::<u32>(&q)?, want, "the last call's values");
    used.dedup();
    assert_eq!(used.len(), 1, "memories used over 20 calls");
    assert_eq!(pool.stats().upstream_allocations, 1);
    Ok(())
}

device_test!(pooled_buffer_reports_requested_and_rounded_sizes);
fn pooled_buffer_reports_requested_and_rounded_sizes(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    for size in [1usize, 100, 1000, 4097, 1 << 20] {
        let b = pool.allocate(size)?;
        assert_eq!(b.requested_bytes(), size);
        assert_eq!(b.allocated_bytes(), pool.alloc_size(pool.bin_number(size)));
        assert_eq!(b.size_bytes(), b.allocated_bytes());
        assert_eq!(b.mem_info()?.size_bytes, b.allocated_bytes());
    }
    Ok(())
}
