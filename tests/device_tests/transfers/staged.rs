//! Staged transfers (through pinned host chunks): byte-exact at odd sizes and chunk edges, in
//! rectangles, from several threads, under maps and failing dependencies, with bounded threads and chunks.

use cl_mem::{
    idle_staging_chunks, Buffer, ClError, Error, Event, MemFlags, Queue, Rect, Transfer,
    TransferOptions, TransferPath, UserEvent, AUTO_MIN_BYTES, MAX_STAGING_THREADS,
};
use cl_tests::{device_test, fail, skip, TestDevice, TestResult};

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from((i * 31 + usize::from(seed) * 7) % 251).unwrap_or(0))
        .collect()
}

/// Copying threads per device: one on Oclgrind (it crashes under concurrent host threads).
fn threads(dev: &TestDevice) -> usize {
    if dev.platform_name().contains("Oclgrind") {
        1
    } else {
        3
    }
}

device_test!(staged_transfers_are_byte_exact_at_odd_sizes_offsets_and_chunk_edges);
fn staged_transfers_are_byte_exact_at_odd_sizes_offsets_and_chunk_edges(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let t = threads(dev);
    let total = 300_007usize + 8192;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, total)?;
    let sizes: &[usize] = if dev.platform_name().contains("Oclgrind") {
        &[1, 4095, 4097, 20_001]
    } else {
        &[1, 7, 4095, 4096, 4097, 65_537, 300_007]
    };
    let mut cases = 0;
    for &size in sizes {
        for offset in [0usize, 3, 4093] {
            for chunk in [1024usize, 4096, 5000] {
                let background = pattern(total, 99);
                buf.write(
                    &q,
                    &background,
                    Transfer::default().options(TransferOptions::plain()),
                )?;
                let data = pattern(size, u8::try_from(chunk % 200).unwrap_or(1));
                // Staged write, plain read: the range holds `data`, the rest is untouched.
                buf.write(
                    &q,
                    &data,
                    Transfer::default()
                        .dst_offset(offset)
                        .options(TransferOptions::staged(chunk, t)),
                )?;
                let mut all = vec![0u8; total];
                buf.read(
                    &q,
                    &mut all,
                    Transfer::default().options(TransferOptions::plain()),
                )?;
                if all[offset..offset + size] != data[..]
                    || all[..offset] != background[..offset]
                    || all[offset + size..] != background[offset + size..]
                {
                    return Err(fail(format!(
                        "staged write of {size} bytes at {offset}, chunks of {chunk}, {t} threads"
                    )));
                }
                // Plain write, staged read of the same range (odd end inside a chunk).
                let mut back = vec![0u8; size];
                buf.read(
                    &q,
                    &mut back,
                    Transfer::default()
                        .src_offset(offset)
                        .options(TransferOptions::staged(chunk, t)),
                )?;
                if back != data {
                    return Err(fail(format!(
                        "staged read of {size} bytes at {offset}, chunks of {chunk}, {t} threads"
                    )));
                }
                cases += 1;
            }
        }
    }
    // Staged on both sides, one big transfer over many chunks.
    let data = pattern(total, 5);
    buf.write(
        &q,
        &data,
        Transfer::default().options(TransferOptions::staged(4096, t)),
    )?;
    let mut back = vec![0u8; total];
    buf.read(
        &q,
        &mut back,
        Transfer::default().options(TransferOptions::staged(6000, t)),
    )?;
    assert_eq!(back, data, "{cases} cases before");
    // The pinned chunks are cached per context, and bounded.
    let idle = idle_staging_chunks(&q);
    if idle == 0 || idle > 32 {
        return Err(fail(format!("{idle} pinned chunks cached")));
    }
    Ok(())
}

device_test!(staged_rectangles_are_byte_exact_in_2d_and_3d);
/// Staged rectangles (`write_rect_with` / `read_rect_with`) move exactly the bytes the plain
/// path moves: odd widths, origins and pitches on both sides, pieces of one row, of several rows
/// with a short last piece, and of a whole slice, 2-D and 3-D; bytes outside the rectangle stay.
fn staged_rectangles_are_byte_exact_in_2d_and_3d(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let t = threads(dev);
    let size = 96 * 1024;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, size)?;
    let host_len = 80 * 1024;
    let rects = [
        // 2-D, odd width and origins, packed host side.
        Rect::new([37, 29, 1])
            .src_origin([5, 3, 0])
            .dst_origin([11, 7, 0])
            .src_pitches(53, 0)
            .dst_pitches(101, 0),
        // 3-D with explicit slice pitches on both sides.
        Rect::new([64, 9, 5])
            .src_origin([1, 2, 1])
            .dst_origin([3, 1, 2])
            .src_pitches(70, 70 * 12)
            .dst_pitches(128, 128 * 11),
        // Rows wider than the smallest chunk (one row per piece).
        Rect::new([1500, 6, 2])
            .dst_origin([17, 0, 1])
            .dst_pitches(1600, 1600 * 7),
    ];
    let mut cases = 0;
    for (k, rect) in rects.iter().enumerate() {
        for chunk in [1000usize, 3 * 64 + 5, 1 << 20] {
            let seed = u8::try_from(k * 10 + chunk % 7).unwrap_or(1);
            let host = pattern(host_len, seed);
            let background = pattern(size, 99);
            // The plain path's result is the reference.
            buf.write(
                &q,
                &background,
                Transfer::default().options(TransferOptions::plain()),
            )?;
            buf.write(
                &q,
                &host,
                Transfer::default()
                    .rect(*rect)
                    .options(TransferOptions::plain()),
            )?;
            let mut want = vec![0u8; size];
            buf.read(
                &q,
                &mut want,
                Transfer::default().options(TransferOptions::plain()),
            )?;
            buf.write(
                &q,
                &background,
                Transfer::default().options(TransferOptions::plain()),
            )?;
            buf.write(
                &q,
                &host,
                Transfer::default()
                    .rect(*rect)
                    .options(TransferOptions::staged(chunk, t)),
            )?;
            let mut got = vec![0u8; size];
            buf.read(
                &q,
                &mut got,
                Transfer::default().options(TransferOptions::plain()),
            )?;
            if got != want {
                return Err(fail(format!(
                    "staged write_rect {rect:?}, chunks of {chunk}"
                )));
            }
            // Reads: the device side as the source now (the rectangle's sides swap roles).
            let read = Rect {
                src_origin: rect.dst_origin,
                dst_origin: rect.src_origin,
                src_pitches: rect.dst_pitches,
                dst_pitches: rect.src_pitches,
                region: rect.region,
            };
            let outside = pattern(host_len, 7);
            let mut want = outside.clone();
            buf.read(
                &q,
                &mut want,
                Transfer::default()
                    .rect(read)
                    .options(TransferOptions::plain()),
            )?;
            let mut got = outside.clone();
            buf.read(
                &q,
                &mut got,
                Transfer::default()
                    .rect(read)
                    .options(TransferOptions::staged(chunk, t)),
            )?;
            if got != want {
                return Err(fail(format!(
                    "staged read_rect {read:?}, chunks of {chunk}"
                )));
            }
            if want == outside {
                return Err(fail("the reference read moved nothing".to_string()));
            }
            cases += 1;
        }
    }
    // Bad rectangles and options are refused before the driver, as on the plain path.
    let bad = Rect::new([64, 2000, 1]);
    let host = pattern(host_len, 1);
    match buf.write(
        &q,
        &host,
        Transfer::default()
            .rect(bad)
            .options(TransferOptions::staged(1000, t)),
    ) {
        Err(Error::OutOfBounds { .. }) => {}
        other => return Err(fail(format!("a rectangle past the host slice: {other:?}"))),
    }
    match buf.write(
        &q,
        &host,
        Transfer::default()
            .rect(rects[0])
            .options(TransferOptions::staged(0, t)),
    ) {
        Err(Error::InvalidArgument(_)) => {}
        other => return Err(fail(format!("zero chunk bytes: {other:?}"))),
    }
    assert_eq!(cases, 9);
    Ok(())
}

device_test!(staged_transfers_check_bounds_options_and_maps_first);
fn staged_transfers_check_bounds_options_and_maps_first(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, 4096)?;
    let opts = TransferOptions::staged(1000, 2);
    let data = vec![1u8; 100];
    let mut out = vec![0u8; 100];
    for (what, r) in [
        (
            "write past the end",
            buf.write(
                &q,
                &data,
                Transfer::default().dst_offset(4000).options(opts),
            )
            .map(drop),
        ),
        (
            "read past the end",
            buf.read(
                &q,
                &mut out,
                Transfer::default().src_offset(4000).options(opts),
            )
            .map(drop),
        ),
    ] {
        if !matches!(r, Err(Error::OutOfBounds { .. })) {
            return Err(fail(format!("{what}: {r:?}")));
        }
    }
    for bad in [
        TransferOptions::staged(0, 2),
        TransferOptions::staged(1000, 0),
    ] {
        let r = buf.write(&q, &data, Transfer::default().options(bad));
        if !matches!(r, Err(Error::InvalidArgument(_))) {
            return Err(fail(format!("{bad:?}: {r:?}")));
        }
    }
    // A staged write into bytes the host has mapped is refused, and writes nothing.
    buf.write(
        &q,
        &[7u8; 4096],
        Transfer::default().options(TransferOptions::plain()),
    )?;
    {
        let map = buf.map::<u8, _>(&q, cl_mem::ReadOnly, 0..200, &[])?;
        let r = buf.write(&q, &data, Transfer::default().options(opts));
        if !matches!(r, Err(Error::Mapped(_))) {
            return Err(fail(format!("staged write under a map: {r:?}")));
        }
        assert_eq!(map[0], 7);
    }
    let mut all = vec![0u8; 4096];
    buf.read(&q, &mut all, Transfer::default().options(opts))?;
    assert!(all.iter().all(|&b| b == 7));
    // A read-only-for-the-host buffer refuses host writes on both paths.
    let ro = Buffer::new(
        q.context(),
        MemFlags::READ_WRITE | MemFlags::HOST_READ_ONLY,
        4096,
    )?;
    if ro
        .write(&q, &data, Transfer::default().options(opts))
        .is_ok()
    {
        return Err(fail(
            "a staged write into a HOST_READ_ONLY buffer was accepted",
        ));
    }
    Ok(())
}

device_test!(auto_stages_only_on_a_discrete_gpu);
/// `Auto` stages on a GPU without host-unified memory (from `AUTO_MIN_BYTES` on), and never on
/// the CPU runtimes; the chunks it used stay cached in the context.
fn auto_stages_only_on_a_discrete_gpu(dev: &TestDevice) -> TestResult {
    if std::env::var("CL_TRANSFER_PATH").is_ok() {
        return Err(skip(
            "CL_TRANSFER_PATH overrides the automatic choice in this process",
        ));
    }
    let q = dev.queue();
    let n = AUTO_MIN_BYTES + 12_345;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
    let data = pattern(n, 3);
    buf.write(&q, &data, &[])?;
    let mut back = vec![0u8; n];
    buf.read(&q, &mut back, &[])?;
    assert_eq!(back, data);
    let t = dev.device.device_type()?;
    let discrete = t.contains(cl_mem::DeviceType::GPU)
        && !t.contains(cl_mem::DeviceType::CPU)
        && !dev
            .device
            .info::<bool>(cl_raw::sys::CL_DEVICE_HOST_UNIFIED_MEMORY)?;
    let used = idle_staging_chunks(&q) > 0;
    if used != discrete {
        return Err(fail(format!(
            "Auto staged: {used}; discrete GPU: {discrete} ({t:?})"
        )));
    }
    // Small transfers stay plain everywhere.
    let q2 = dev.queue();
    let small = Buffer::new(q2.context(), MemFlags::READ_WRITE, 4096)?;
    small.write(
        &q2,
        &[1u8; 4096],
        Transfer::default().options(TransferOptions::default()),
    )?;
    assert_eq!(idle_staging_chunks(&q2), 0);
    assert_eq!(TransferOptions::default().path, TransferPath::Auto);
    Ok(())
}

device_test!(concurrent_staged_transfers_from_several_threads);
fn concurrent_staged_transfers_from_several_threads(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Oclgrind") {
        return Err(skip(
            "Oclgrind 21.10 crashes on concurrent API calls from several host threads (docs/DEVICES.md)",
        ));
    }
    let q = dev.queue();
    let part = 200_003usize;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, part * 4)?;
    let queues: Vec<Queue> = (0..2)
        .map(|_| Queue::new(q.context(), &dev.device))
        .collect::<Result<_, _>>()?;
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4usize)
            .map(|i| {
                let (buf, q) = (&buf, if i < 2 { &q } else { &queues[i - 2] });
                s.spawn(move || -> Result<(), String> {
                    let data = pattern(part, u8::try_from(i).unwrap_or(0));
                    let opts = TransferOptions::staged(16_384 + i * 1000, 2);
                    for _ in 0..5 {
                        buf.write(
                            q,
                            &data,
                            Transfer::default().dst_offset(i * part).options(opts),
                        )
                        .map_err(|e| e.to_string())?;
                        let mut back = vec![0u8; part];
                        buf.read(
                            q,
                            &mut back,
                            Transfer::default().src_offset(i * part).options(opts),
                        )
                        .map_err(|e| e.to_string())?;
                        if back != data {
                            return Err(format!("thread {i}: bytes differ"));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    for r in results {
        r.map_err(fail)?;
    }
    let mut all = vec![0u8; part * 4];
    buf.read(
        &q,
        &mut all,
        Transfer::default().options(TransferOptions::plain()),
    )?;
    for i in 0..4 {
        assert_eq!(
            all[i * part..(i + 1) * part],
            pattern(part, u8::try_from(i).unwrap_or(0))[..]
        );
    }
    Ok(())
}

device_test!(a_map_never_sees_half_a_staged_write);
/// A staged write is many chunk commands; a map of its bytes taken from another thread meanwhile
/// waits for the whole write (the transfer holds its range), so it sees all old or all new bytes.
fn a_map_never_sees_half_a_staged_write(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Oclgrind") {
        return Err(skip(
            "Oclgrind 21.10 crashes on concurrent API calls from several host threads (docs/DEVICES.md)",
        ));
    }
    let q = dev.queue();
    let q2 = Queue::new(q.context(), &dev.device)?;
    let n = 1 << 20;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
    buf.write(
        &q,
        &vec![1u8; n],
        Transfer::default().options(TransferOptions::plain()),
    )?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let seen: Result<(usize, usize), String> = std::thread::scope(|s| {
        let mapper = s.spawn(|| -> Result<(usize, usize), String> {
            let (mut maps, mut mixed) = (0, 0);
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let m = buf
                    .map::<u8, _>(&q2, cl_mem::ReadOnly, .., &[])
                    .map_err(|e| e.to_string())?;
                let first = m[0];
                if m.iter().any(|&b| b != first) {
                    mixed += 1;
                }
                maps += 1;
                drop(m);
            }
            Ok((maps, mixed))
        });
        // A write that meets a live map is refused (as a plain write is); it is tried again.
        let mut written = 0u8;
        let mut refused = 0u32;
        while written < 20 && refused < 100_000 {
            let v = vec![written + 2; n];
            // Small chunks: many commands per write, many chances for a map in between.
            match buf.write(
                &q,
                &v,
                Transfer::default().options(TransferOptions::staged(16 << 10, 2)),
            ) {
                Ok(_) => written += 1,
                Err(Error::Mapped(_)) => {
                    refused += 1;
                    std::thread::yield_now();
                }
                Err(e) => {
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                    return Err(e.to_string());
                }
            }
        }

        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let seen = mapper
            .join()
            .unwrap_or_else(|_| Err("mapper panicked".into()))?;
        if written < 20 {
            return Err(format!("only {written} of 20 writes got between the maps"));
        }
        Ok(seen)
    });
    let (maps, mixed) = seen.map_err(fail)?;
    if mixed > 0 {
        return Err(fail(format!(
            "{mixed} of {maps} maps saw half a staged write"
        )));
    }
    Ok(())
}

device_test!(a_failed_dependency_is_an_error_and_poisons_no_later_command);
/// A blocking transfer after a failed command is an error on every path, never `Ok` with nothing
/// moved (PoCL and the Intel runtime return `CL_SUCCESS` from such a blocking enqueue; Intel even
/// reports it `CL_COMPLETE`); and a failed command does not fail, hang (PoCL) or crash (Intel)
/// the allocation's later commands on other queues. Found by a review.
fn a_failed_dependency_is_an_error_and_poisons_no_later_command(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let q2 = Queue::new(ctx, q.device())?;
    let n = 64 * 1024;
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, n)?;
    buf.write(
        &q,
        &vec![1u8; n],
        Transfer::default().options(TransferOptions::plain()),
    )?;
    let failed = UserEvent::new(ctx)?;
    failed.set_error(ClError::OutOfResources)?;
    let gate: &Event = &failed;
    let staged = TransferOptions::staged(16 * 1024, 1);
    for (path, opts) in [("plain", TransferOptions::plain()), ("staged", staged)] {
        let w = buf.write(
            &q,
            &vec![2u8; n],
            Transfer::default().options(opts).wait(&[gate]),
        );
        if w.is_ok() {
            return Err(fail(format!(
                "{path} write after a failed command returned Ok"
            )));
        }
        let mut out = vec![9u8; n];
        let r = buf.read(
            &q,
            &mut out,
            Transfer::default().options(opts).wait(&[gate]),
        );
        if r.is_ok() {
            return Err(fail(format!(
                "{path} read after a failed command returned Ok"
            )));
        }
    }
    // Any command after an already failed event is refused before the driver (PoCL 3.1 never
    // completes one), with the spec's status.
    match buf.enqueue_write(&q, vec![3u8; n], &[gate]) {
        Err(Error::Cl {
            status: ClError::ExecStatusErrorForEventsInWaitList,
            ..
        }) => {}
        other => {
            return Err(fail(format!(
                "a non-blocking write after a failed event: {:?}",
                other.map(drop)
            )))
        }
    }
    // A non-blocking write on `q` that fails after it was enqueued, then commands of the same
    // buffer on `q2`: they neither wait for nor inherit the failure.
    let later = UserEvent::new(ctx)?;
    let pending = buf.enqueue_write(&q, vec![3u8; n], &[&*later])?;
    later.set_error(ClError::OutOfResources)?;
    if pending.wait().is_ok() {
        return Err(fail("a write after a failed command completed"));
    }
    buf.write(
        &q2,
        &vec![4u8; n],
        Transfer::default().options(TransferOptions::plain()),
    )?;
    buf.write(&q2, &vec![5u8; n], Transfer::default().options(staged))?;
    let mut out = vec![0u8; n];
    buf.read(
        &q2,
        &mut out,
        Transfer::default().options(TransferOptions::plain()),
    )?;
    if out.iter().any(|&b| b != 5) {
        return Err(fail("the buffer after the failed write and two good ones"));
    }
    Ok(())
}

device_test!(a_dependency_failing_during_a_blocking_transfer_is_an_error);
/// A blocking transfer whose wait-list event fails while the call blocks (another thread sets it)
/// is an error on every blocking host path: PoCL and the Intel runtime return `CL_SUCCESS` from
/// such a call having moved nothing, so cl-mem waits for the command's event.
fn a_dependency_failing_during_a_blocking_transfer_is_an_error(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Oclgrind") {
        return Err(skip(
            "Oclgrind 21.10: a flushed command waiting on a user event blocks the flushing thread, \
             and API calls from a second thread crash it",
        ));
    }
    let q = dev.queue();
    let ctx = q.context();
    let n = 4096;
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, n)?;
    let image = if dev.device.image_support()? {
        Some(cl_mem::Image::new(
            ctx,
            MemFlags::READ_WRITE,
            crate::common::RGBA_F,
            &cl_mem::ImageDesc::d2(4, 4),
        )?)
    } else {
        None
    };
    for path in [
        "plain write",
        "plain read",
        "rect write",
        "image write",
        "image read",
    ] {
        if path.starts_with("image") && image.is_none() {
            continue;
        }
        let gate = UserEvent::new(ctx)?;
        let setter = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                gate.set_error(ClError::OutOfResources)
            })
        };
        let w: &[&Event] = &[&*gate];
        let data = vec![1u8; n];
        let mut out = vec![0u8; n];
        let mut px = [0f32; 64];
        let r = match path {
            "plain write" => buf.write(
                &q,
                &data,
                Transfer::default()
                    .options(TransferOptions::plain())
                    .wait(w),
            ),
            "plain read" => buf.read(
                &q,
                &mut out,
                Transfer::default()
                    .options(TransferOptions::plain())
                    .wait(w),
            ),
            "rect write" => buf.write(
                &q,
                &data,
                Transfer::default()
                    .rect(cl_mem::Rect::new([64, 64, 1]))
                    .wait(w),
            ),
            "image write" => image
                .as_ref()
                .map_or(Err(Error::InvalidArgument(String::new())), |i| {
                    i.write(&q, &px, w)
                }),
            _ => image
                .as_ref()
                .map_or(Err(Error::InvalidArgument(String::new())), |i| {
                    i.read(&q, &mut px, w)
                }),
        };
        setter
            .join()
            .map_err(|_| fail("the setter thread panicked"))??;
        if r.is_ok() {
            return Err(fail(format!(
                "a {path} whose wait-list event failed during the call returned Ok"
            )));
        }
    }
    Ok(())
}

device_test!(staged_threads_and_pinned_chunks_are_bounded);
/// A huge `threads` still gives a correct transfer, and a transfer pins no more chunks than it
/// moves (this part failed before the fix: 2 chunks pinned for 1). The cap itself
/// (`MAX_STAGING_THREADS`) is not observable here: no thread count is exposed, and the 4 chunks
/// below clamp the workers to 4 anyway.
fn staged_threads_and_pinned_chunks_are_bounded(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let n = 3 * 4096 + 5;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
    let data = pattern(n, 3);
    // 4 chunks, so at most 4 workers whatever is asked (on Oclgrind: one, its thread crash).
    let many = if dev.platform_name().contains("Oclgrind") {
        1
    } else {
        100_000
    };
    buf.write(
        &q,
        &data,
        Transfer::default().options(TransferOptions::staged(4096, many)),
    )?;
    let mut out = vec![0u8; n];
    buf.read(
        &q,
        &mut out,
        Transfer::default().options(TransferOptions::staged(4096, many)),
    )?;
    if out != data {
        return Err(fail(
            "bytes differ after a staged round trip with a huge thread count",
        ));
    }
    const { assert!(MAX_STAGING_THREADS >= 8) };
    // One chunk moved with depth 2: one pinned chunk of that size, not two.
    let q1 = dev.queue();
    let one = Buffer::new(q1.context(), MemFlags::READ_WRITE, 10_000)?;
    let before = idle_staging_chunks(&q1);
    one.write(
        &q1,
        &[6u8; 10_000],
        Transfer::default().options(TransferOptions::staged(1 << 20, 4)),
    )?;
    let pinned = idle_staging_chunks(&q1) - before;
    if pinned != 1 {
        return Err(fail(format!(
            "a one-chunk transfer left {pinned} pinned chunks cached (expected 1)"
        )));
    }
    Ok(())
}
