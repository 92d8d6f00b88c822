//! Out-of-memory injected into the pool and staged paths: the pool reclaims, a pooled block keeps
//! its old queue, a staged transfer or copy failing mid-way is an error and its retry is whole.

use super::{settled, stable, SEEN, STATUSES};
use cl_mem::{
    enqueue_copy, Buffer, MemFlags, Queue, RawHandle, Rect, Transfer, TransferOptions, Version,
};
use cl_pool::{ImmediateAllocator, MemoryPool, PoolError};
use cl_raw::fault;
use cl_raw::fault::Threads;
use cl_tests::{fail, skip, TestDevice, TestResult};

scenario!(
    pool_reclaims_on_injected_upstream_failures_and_stays_balanced,
    sites = &["clCreateBuffer", "clEnqueueMigrateMemObjects"]
);
fn pool_reclaims_on_injected_upstream_failures_and_stays_balanced(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = MemoryPool::new(ImmediateAllocator::new(&q, MemFlags::READ_WRITE)?);
    for status in STATUSES {
        pool.free_held();
        let held: Vec<_> = [100usize, 5000]
            .iter()
            .map(|&s| pool.allocate(s))
            .collect::<Result<_, _>>()?;
        drop(held);
        assert_eq!(pool.held_blocks(), 2);
        let before = pool.stats();
        // One failure at the upstream create: the pool frees its largest held block and retries.
        let armed = fault::arm("clCreateBuffer", status, 1..=1, Threads::Current);
        let b = pool.allocate(1 << 16)?;
        assert_eq!(armed.fired(), 1);
        drop(armed);
        *SEEN.lock().unwrap().entry("clCreateBuffer").or_default() += 1;
        let s = pool.stats();
        assert_eq!(
            s.reclaims,
            before.reclaims + 1,
            "{status}: the reclaim path did not run"
        );
        assert_eq!(s.held_blocks, 1);
        assert_eq!(s.managed_bytes, s.held_bytes + s.active_rounded_bytes);
        b.write(&q, &[1u32, 2, 3], &[])?;
        assert_eq!(b.read_vec_of::<u32>(&q, 3)?, [1, 2, 3]);
        drop(b);
        // Every try fails: a typed out-of-memory error, nothing held, counters balanced.
        let armed = fault::arm("clCreateBuffer", status, 1..=10, Threads::Current);
        match pool.allocate(1 << 20) {
            Err(e @ PoolError::OutOfMemory { .. }) => {
                assert!(e.is_out_of_memory());
                assert!(e.to_string().contains(status.name()), "{e}");
            }
            other => {
                return Err(fail(format!(
                    "{status}: expected OutOfMemory, got {other:?}"
                )))
            }
        }
        drop(armed);
        let s = pool.stats();
        assert_eq!((s.held_blocks, s.active_blocks, s.managed_bytes), (0, 0, 0));
        // The force step (migration, 1.2+) fails: the new buffer is released, not leaked.
        if dev.device.version() >= Version::V1_2 && dev.device.platform_version() >= Version::V1_2 {
            let refs_and_events = || {
                vec![
                    u64::from(q.context().reference_count().unwrap_or(0)),
                    cl_mem::live_objects().events as u64,
                ]
            };
            let before = stable(&refs_and_events);
            let armed = fault::arm(
                "clEnqueueMigrateMemObjects",
                status,
                1..=1,
                Threads::Current,
            );
            let r = pool.allocate(4096);
            assert_eq!(armed.fired(), 1);
            drop(armed);
            *SEEN
                .lock()
                .unwrap()
                .entry("clEnqueueMigrateMemObjects")
                .or_default() += 1;
            match r {
                Err(e) => assert!(e.to_string().contains(status.name()), "{e}"),
                Ok(_) => return Err(fail("an injected migration failure was not reported")),
            }
            assert_eq!(
                settled(&refs_and_events, &before),
                before,
                "{status}: migration failure leaked"
            );
            let s = pool.stats();
            assert_eq!((s.held_blocks, s.active_blocks, s.managed_bytes), (0, 0, 0));
        }
        let b = pool.allocate(256)?;
        b.write(&q, &[7u8; 4], &[])?;
        assert_eq!(b.read_vec_of::<u8>(&q, 4)?, [7; 4]);
    }
    Ok(())
}

scenario!(
    pooled_block_handed_to_another_queue_keeps_its_old_queue_when_the_sync_fails,
    sites = &[
        "clEnqueueMarkerWithWaitList",
        "clEnqueueBarrierWithWaitList",
    ]
);
/// A pooled buffer used on queue A and bound to queue B: when the marker on A or the barrier on
/// B fails, the error is typed and the block still records A, so the next hand-out (or bind)
/// waits for A again; once the calls succeed it belongs to B alone. (A block that forgot A
/// before the calls would let B's work overlap A's after a failure.)
fn pooled_block_handed_to_another_queue_keeps_its_old_queue_when_the_sync_fails(
    dev: &TestDevice,
) -> TestResult {
    let d = &dev.device;
    if d.platform_version() < Version::V1_2 || d.version() < Version::V1_2 {
        return Err(skip(
            "the cross-queue hand-off uses markers and barriers of OpenCL 1.2",
        ));
    }
    let qa = dev.queue();
    let qb = Queue::new(qa.context(), d)?;
    let pool = MemoryPool::new(ImmediateAllocator::new(&qa, MemFlags::READ_WRITE)?);
    let mut b = pool.allocate(256)?;
    b.write(&qa, &[7u32; 64], &[])?;
    for site in [
        "clEnqueueMarkerWithWaitList",
        "clEnqueueBarrierWithWaitList",
    ] {
        for status in STATUSES {
            let armed = fault::arm(site, status, 1..=1, Threads::Current);
            let r = b.bind_to_queue(&qb);
            let fired = armed.fired();
            drop(armed);
            assert_eq!(fired, 1, "{site}: the hand-off did not reach it");
            match r {
                Err(e) => assert_eq!(e.cl_status(), Some(status), "{site}: {e}"),
                Ok(()) => {
                    return Err(fail(format!(
                        "{site} {status}: the failure was not reported"
                    )))
                }
            }
            assert!(
                b.block().queues().iter().any(|q| q == &qa),
                "{site} {status}: the block forgot the queue it was used on"
            );
            *SEEN.lock().unwrap().entry(site).or_default() += 1;
        }
    }
    b.bind_to_queue(&qb)?;
    assert!(
        b.block().queues() == std::slice::from_ref(&qb),
        "after a successful hand-off the block belongs to the new queue alone"
    );
    let mut out = vec![0u32; 64];
    b.read(&qb, &mut out, &[])?;
    assert_eq!(out, vec![7u32; 64]);
    drop(b);
    qb.finish()?;
    Ok(())
}

scenario!(
    staged_transfer_failing_mid_way_is_an_error_and_the_retry_is_whole,
    sites = &["clEnqueueWriteBuffer", "clEnqueueReadBuffer"]
);
fn staged_transfer_failing_mid_way_is_an_error_and_the_retry_is_whole(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let n = 64 * 1024;
    let a = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
    a.fill(&q, &[0u8], Transfer::default().byte_count(n))
        .or_else(|_| a.write(&q, &vec![0u8; n], &[]))?;
    let data: Vec<u8> = (0..n).map(|i| u8::try_from(i % 251).unwrap()).collect();
    // One copying thread on Oclgrind: it crashes under concurrent API calls from several host
    // threads (docs/DEVICES.md), as the staged suite already knows.
    let threads = if dev.platform_name().contains("Oclgrind") {
        1
    } else {
        2
    };
    let opts = TransferOptions::staged(4096, threads);
    // Warm up: the buffer's command record then holds its last write and read, and the pinned
    // chunks are cached, so the live-event count before and after a failure compare like for like.
    a.write(&q, &data, Transfer::default().options(opts))?;
    a.read(&q, &mut vec![0u8; n], Transfer::default().options(opts))?;
    let live_events = || vec![cl_mem::live_objects().events as u64];
    for status in STATUSES {
        // Worker threads release their chunk events asynchronously: compare settled counts.
        let events = stable(&live_events);
        // The fifth of sixteen chunk writes fails, on whichever worker thread enqueues it.
        let armed = fault::arm("clEnqueueWriteBuffer", status, 5..=5, Threads::Any);
        let r = a.write(&q, &data, Transfer::default().options(opts));
        assert_eq!(armed.fired(), 1);
        drop(armed);
        *SEEN
            .lock()
            .unwrap()
            .entry("clEnqueueWriteBuffer")
            .or_default() += 1;
        match r {
            Err(e) => assert_eq!(e.cl_status(), Some(status), "{e}"),
            Ok(_) => return Err(fail("a staged write with a failed chunk reported success")),
        }
        let mut out = vec![0u8; n];
        let armed = fault::arm("clEnqueueReadBuffer", status, 3..=3, Threads::Any);
        let r = a.read(&q, &mut out, Transfer::default().options(opts));
        assert_eq!(armed.fired(), 1);
        drop(armed);
        *SEEN
            .lock()
            .unwrap()
            .entry("clEnqueueReadBuffer")
            .or_default() += 1;
        match r {
            Err(e) => assert_eq!(e.cl_status(), Some(status), "{e}"),
            Ok(_) => return Err(fail("a staged read with a failed chunk reported success")),
        }
        assert_eq!(
            settled(&live_events, &events),
            events,
            "{status}: events leaked"
        );
        a.write(&q, &data, Transfer::default().options(opts))?;
        let mut out = vec![0u8; n];
        a.read(&q, &mut out, Transfer::default().options(opts))?;
        assert!(
            out == data,
            "{status}: the staged retry did not write every byte"
        );
        a.write(&q, &vec![0u8; n], &[])?;
        // The same for a staged rectangle: 64 rows of 256 bytes (host rows 300 bytes apart) in
        // pieces of 16 rows; the third piece's write fails, then the second piece's read.
        let rect = Rect::new([256, 64, 1]).src_pitches(300, 0);
        let back = Rect::new([256, 64, 1]).dst_pitches(300, 0);
        let host: Vec<u8> = (0..300 * 64)
            .map(|i| u8::try_from(i % 253).unwrap())
            .collect();
        let events = stable(&live_events);
        for (site, nth) in [
            ("clEnqueueWriteBufferRect", 3),
            ("clEnqueueReadBufferRect", 2),
        ] {
            let armed = fault::arm(site, status, nth..=nth, Threads::Any);
            let r = if site == "clEnqueueWriteBufferRect" {
                a.write(&q, &host, Transfer::default().rect(rect).options(opts))
            } else {
                a.read(
                    &q,
                    &mut vec![0u8; 300 * 64],
                    Transfer::default().rect(back).options(opts),
                )
            };
            assert_eq!(armed.fired(), 1, "{site}");
            drop(armed);
            *SEEN.lock().unwrap().entry(site).or_default() += 1;
            match r {
                Err(e) => assert_eq!(e.cl_status(), Some(status), "{site}: {e}"),
                Ok(_) => {
                    return Err(fail(format!(
                        "a staged rectangle whose {site} failed reported success"
                    )))
                }
            }
        }
        assert_eq!(
            settled(&live_events, &events),
            events,
            "{status}: events leaked by a failed staged rectangle"
        );
        a.write(&q, &host, Transfer::default().rect(rect).options(opts))?;
        let mut out = vec![0u8; 300 * 64];
        a.read(&q, &mut out, Transfer::default().rect(back).options(opts))?;
        for r in 0..64 {
            assert!(
                out[r * 300..r * 300 + 256] == host[r * 300..r * 300 + 256],
                "{status}: the staged rectangle retry did not move row {r}"
            );
        }
        a.write(&q, &vec![0u8; n], &[])?;
    }
    Ok(())
}

scenario!(
    staged_copy_between_devices_failing_mid_way_is_an_error_and_the_retry_is_whole,
    sites = &["clEnqueueWriteBuffer", "clEnqueueReadBuffer"]
);
/// A copy through pinned chunks (forced: on one device the source is read on the context's own
/// second queue) whose third chunk write or second chunk read fails: the typed error, no event
/// leaked once the chunks enqueued before it ran, later commands and maps ordered after them,
/// and the retry copies every byte.
fn staged_copy_between_devices_failing_mid_way_is_an_error_and_the_retry_is_whole(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let n = 16 * 4096 + 3;
    let data: Vec<u8> = (0..n).map(|i| u8::try_from(i % 249).unwrap()).collect();
    let opts = TransferOptions {
        path: cl_mem::TransferPath::Staged,
        chunk_bytes: 4096,
        threads: 2,
        depth: 2,
    };
    let live_events = || vec![cl_mem::live_objects().events as u64];
    for status in STATUSES {
        for (site, nth) in [("clEnqueueWriteBuffer", 3), ("clEnqueueReadBuffer", 2)] {
            // The records of two queues are pruned in phases, so events are counted with no
            // buffer alive: what is left over after both are dropped is a leak.
            let events = stable(&live_events);
            {
                let src = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
                let dst = Buffer::new(q.context(), MemFlags::READ_WRITE, n)?;
                src.write(&q, &data, &[])?;
                dst.write(&q, &vec![0u8; n], &[])?;
                let armed = fault::arm(site, status, nth..=nth, Threads::Current);
                let r = enqueue_copy(&q, &dst, &src, Transfer::default().options(opts));
                assert_eq!(armed.fired(), 1, "{site}");
                drop(armed);
                *SEEN.lock().unwrap().entry(site).or_default() += 1;
                match r {
                    Err(e) => assert_eq!(e.cl_status(), Some(status), "{site}: {e}"),
                    Ok(_) => {
                        return Err(fail(format!(
                            "a staged copy whose {site} failed reported success"
                        )))
                    }
                }
                // A map after the failure waits for the chunks that were enqueued: it sees
                // whole chunks of the source and zeros, nothing else.
                let seen = dst.map::<u8, _>(&q, cl_mem::ReadOnly, .., &[])?.to_vec();
                for (i, (x, y)) in seen.iter().zip(&data).enumerate() {
                    assert!(*x == 0 || x == y, "{site}: byte {i} is neither old nor new");
                }
                enqueue_copy(&q, &dst, &src, Transfer::default().options(opts))?;
                assert!(
                    dst.read_vec_of::<u8>(&q, n)? == data,
                    "{status}: the staged copy's retry did not copy every byte ({site})"
                );
            }
            assert_eq!(
                settled(&live_events, &events),
                events,
                "{status}: events leaked by a failed staged copy ({site})"
            );
        }
    }
    Ok(())
}
