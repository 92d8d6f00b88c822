//! Reliability under load (issue 16): threads that share one context and hammer the same memory.
//!
//! - `concurrent_read_maps_of_one_buffer_are_safe`: the PoCL 3.1 crash of
//!   `repro/pocl_concurrent_read_maps.c` cannot be reached through the safe API.
//! - `mixed_workload_keeps_data_and_counters`: a bounded multi-threaded workload mixing pools,
//!   maps, SVM, images and kernels on several queues, checking every buffer it wrote and the
//!   counters at the end. Its length is `CL_SOAK_SECS` seconds (default 2, so CI stays fast).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cl_mem::svm::csvm_empty;
use cl_mem::{
    Buffer, ChannelOrder, ChannelType, Error, Image, ImageDesc, ImageFormat, MemFlags, Program,
    Queue, RawHandle,
};
use cl_pool::{ImmediateAllocator, MemoryPool};
use cl_tests::{device_test, fail, skip, TestDevice, TestError, TestResult};

/// Oclgrind 21.10 crashes on API calls from several host threads (docs/DEVICES.md); every test
/// here is about several threads.
fn skip_on_oclgrind(dev: &TestDevice) -> Result<(), TestError> {
    if dev.platform_name().contains("Oclgrind") {
        return Err(skip(
            "Oclgrind 21.10 crashes on concurrent API calls from several host threads \
             (docs/DEVICES.md#oclgrind-threads-release)",
        ));
    }
    Ok(())
}

device_test!(concurrent_read_maps_of_one_buffer_are_safe);
/// Four threads, each with its own queue, map one buffer read-only (any number of read maps may
/// be open at once) and check the bytes, 500 times each. PoCL 3.1 crashed (SIGSEGV) or handed out
/// a pointer to other bytes when two such maps ran at the same time; cl-mem orders each map and
/// unmap command of an allocation after the previous one (docs/DEVICES.md#pocl-concurrent-maps).
fn concurrent_read_maps_of_one_buffer_are_safe(dev: &TestDevice) -> TestResult {
    skip_on_oclgrind(dev)?;
    let q = dev.queue();
    let n = 4096usize;
    let data: Vec<u32> = (0..n)
        .map(|i| u32::try_from(i).unwrap_or(0) * 3 + 1)
        .collect();
    let buf = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &data)?;
    let rounds = 500usize;
    let results: Vec<Result<usize, String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (buf, data, ctx, device) = (&buf, &data, q.context().clone(), dev.device);
                sc.spawn(move || -> Result<usize, String> {
                    let my_q = Queue::new(&ctx, &device).map_err(|e| e.to_string())?;
                    for r in 0..rounds {
                        let m = buf
                            .map::<u32, _>(&my_q, cl_mem::ReadOnly, .., &[])
                            .map_err(|e| format!("thread {t} round {r}: {e}"))?;
                        if let Some(k) = (0..n).step_by(97).find(|&k| m[k] != data[k]) {
                            return Err(format!(
                                "thread {t} round {r}: mapped[{k}] = {}, expected {}",
                                m[k], data[k]
                            ));
                        }
                    }
                    my_q.finish().map_err(|e| e.to_string())?;
                    Ok(rounds)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    });
    let mut maps = 0;
    for r in results {
        maps += r.map_err(fail)?;
    }
    assert_eq!(maps, 4 * rounds);
    assert_eq!(buf.live_maps(), 0, "every map guard unmapped");
    assert_eq!(buf.to_vec::<u32>(&q)?, data, "the maps changed nothing");
    Ok(())
}

/// The soak's length: `CL_SOAK_SECS` seconds (fractions allowed), default 2.
fn soak_duration() -> Duration {
    let secs = std::env::var("CL_SOAK_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(2.0);
    Duration::from_secs_f64(secs)
}

const SOAK_SRC: &str = "__kernel void transform(__global uint* p, uint seed) {
    size_t i = get_global_id(0);
    p[i] = p[i] * 2654435761u + seed;
}";

/// The pattern a thread writes for `seed`.
fn pattern(seed: u32, n: usize) -> Vec<u32> {
    (0..n)
        .map(|i| seed ^ u32::try_from(i).unwrap_or(0).wrapping_mul(0x9E37_79B9))
        .collect()
}

/// What `transform` makes of `data`.
fn transformed(data: &[u32], seed: u32) -> Vec<u32> {
    data.iter()
        .map(|&x| x.wrapping_mul(2_654_435_761).wrapping_add(seed))
        .collect()
}

/// An order-sensitive checksum (FNV-1a over the words).
fn checksum(data: &[u32]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

device_test!(mixed_workload_keeps_data_and_counters);
/// `CL_SOAK_SECS` of four threads, each with its own queue, sharing one context, one
/// `MemoryPool` and one read-only buffer: per round a pooled block is written with a known
/// pattern, transformed by a kernel, mapped and checksummed; on SVM devices a coarse-grain array
/// goes through map, kernel and map; on image devices a 2-D image is written and read back; and
/// the shared buffer is mapped read-only (all threads at once). Every checksum must match the
/// host's; at the end the pool has no active block and holds what its statistics say, no event
/// wrapper is left, and the shared buffer's CL reference count is 1. Prints the operation count.
fn mixed_workload_keeps_data_and_counters(dev: &TestDevice) -> TestResult {
    skip_on_oclgrind(dev)?;
    let events_before = cl_mem::live_objects().events;
    let ctx = dev.context();
    let q0 = Queue::new(&ctx, &dev.device)?;
    let program = Program::build_from_source(&ctx, SOAK_SRC, "")?;
    let pool = MemoryPool::new(ImmediateAllocator::new(&q0, MemFlags::READ_WRITE)?);
    let svm = match csvm_empty::<u32>(&q0, 16) {
        Ok(_) => true,
        Err(Error::Unsupported { .. }) => false,
        Err(e) => return Err(e.into()),
    };
    let format = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt32);
    let images = match Image::new(&ctx, MemFlags::READ_WRITE, format, &ImageDesc::d2(16, 16)) {
        Ok(_) => true,
        Err(Error::Unsupported { .. }) => false,
        Err(e) => return Err(e.into()),
    };
    let shared_data = pattern(0xC0FFEE, 4096);
    let shared = Buffer::from_slice(&ctx, MemFlags::READ_ONLY, &shared_data)?;
    let shared_sum = checksum(&shared_data);
    let ops = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let deadline = Instant::now() + soak_duration();
    let threads = 4u32;
    let results: Vec<Result<u32, String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (ctx, device, program, pool, shared) =
                    (&ctx, dev.device, &program, &pool, &shared);
                let (ops, bytes) = (&ops, &bytes);
                sc.spawn(move || -> Result<u32, String> {
                    let e = |what: &str, round: u32, err: &dyn std::fmt::Display| {
                        format!("thread {t} round {round}: {what}: {err}")
                    };
                    let q = Queue::new(ctx, &device).map_err(|x| e("queue", 0, &x))?;
                    let mut kernel = program
                        .kernel("transform")
                        .map_err(|x| e("kernel", 0, &x))?;
                    // SVM gets a kernel object of its own: NVIDIA 580 refuses the enqueue
                    // (CL_INVALID_KERNEL_ARGS) once an argument that held an SVM pointer is set to
                    // a buffer (repro/nvidia_svm_then_buffer_kernel_arg.c, docs/DEVICES.md).
                    let mut svm_kernel = program
                        .kernel("transform")
                        .map_err(|x| e("kernel", 0, &x))?;
                    let mut round = 0u32;
                    // At least one round, however short the bound.
                    while round == 0 || Instant::now() < deadline {
                        let seed = t.wrapping_mul(1_000_003).wrapping_add(round);
                        let n = 256 + 64 * usize::try_from(round % 7).unwrap_or(0);
                        let data = pattern(seed, n);
                        let want = checksum(&transformed(&data, seed));
                        // Pool + write + kernel + map (a block may be larger than asked: its bin's size).
                        let mut block =
                            pool.allocate(n * 4).map_err(|x| e("allocate", round, &x))?;
                        block.bind_to_queue(&q).map_err(|x| e("bind", round, &x))?;
                        block
                            .write(&q, &data, &[])
                            .map_err(|x| e("write", round, &x))?;
                        kernel
                            .set_arg(0, &*block)
                            .and_then(|k| k.set_arg(1, &seed))
                            .and_then(|k| k.enqueue_nd_range(&q, &[n], None, &[]))
                            .map_err(|x| e("kernel on a pooled block", round, &x))?;
                        let got = block
                            .with_map::<u32, _, _>(&q, cl_mem::ReadOnly, ..n, checksum)
                            .map_err(|x| e("map", round, &x))?;
                        if got != want {
                            return Err(e(
                                "pooled block checksum",
                                round,
                                &format!("{got:#x} != {want:#x}"),
                            ));
                        }
                        drop(block);
                        let mut done = 4;
                        // SVM: map-write, kernel, map-read.
                        if svm && round.is_multiple_of(2) {
                            let mut arr =
                                csvm_empty::<u32>(&q, n).map_err(|x| e("SVM alloc", round, &x))?;
                            arr.with_map(
                                &q,
                                cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
                                ..,
                                |s| s.copy_from_slice(&data),
                            )
                            .map_err(|x| e("SVM map", round, &x))?;
                            svm_kernel
                                .set_arg(0, &arr)
                                .and_then(|k| k.set_arg(1, &seed))
                                .and_then(|k| k.enqueue_nd_range(&q, &[n], None, &[]))
                                .map_err(|x| e("kernel on SVM", round, &x))?;
                            let got = arr
                                .with_map(&q, cl_mem::ReadOnly, .., checksum)
                                .map_err(|x| e("SVM map", round, &x))?;
                            if got != want {
                                return Err(e(
                                    "SVM checksum",
                                    round,
                                    &format!("{got:#x} != {want:#x}"),
                                ));
                            }
                            done += 4;
                        }
                        // Image: write and read back.
                        if images && round.is_multiple_of(3) {
                            let img = Image::new(
                                ctx,
                                MemFlags::READ_WRITE,
                                format,
                                &ImageDesc::d2(16, n / 16),
                            )
                            .map_err(|x| e("image", round, &x))?;
                            img.write(&q, &data, &[])
                                .map_err(|x| e("image write", round, &x))?;
                            let mut back = vec![0u32; n];
                            img.read(&q, &mut back, &[])
                                .map_err(|x| e("image read", round, &x))?;
                            if checksum(&back) != checksum(&data) {
                                return Err(e("image checksum", round, &"differs"));
                            }
                            done += 3;
                        }
                        // The shared buffer, mapped read-only by every thread at once.
                        let got = shared
                            .with_map::<u32, _, _>(&q, cl_mem::ReadOnly, .., checksum)
                            .map_err(|x| e("shared map", round, &x))?;
                        if got != shared_sum {
                            return Err(e("shared buffer checksum", round, &format!("{got:#x}")));
                        }
                        done += 1;
                        ops.fetch_add(done, Ordering::Relaxed);
                        bytes.fetch_add(u64::try_from(n * 4).unwrap_or(0), Ordering::Relaxed);
                        round += 1;
                    }
                    q.finish().map_err(|x| e("finish", round, &x))?;
                    Ok(round)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    });
    let mut rounds = 0;
    for r in results {
        rounds += r.map_err(fail)?;
    }
    let s = pool.stats();
    assert_eq!(
        (s.active_blocks, s.active_bytes),
        (0, 0),
        "pool blocks still active: {s:?}"
    );
    assert_eq!(s.held_bytes, s.managed_bytes, "{s:?}");
    assert_eq!(
        u64::try_from(s.held_blocks)?,
        s.upstream_allocations,
        "{s:?}"
    );
    assert_eq!(s.hits + s.misses, u64::from(rounds), "{s:?}");
    pool.free_held();
    assert_eq!((pool.stats().held_blocks, pool.held_blocks()), (0, 0));
    // Drivers drop their references of finished commands asynchronously: wait for it.
    let settle = Instant::now() + Duration::from_secs(5);
    while shared.reference_count()? > 1 && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        shared.reference_count()?,
        1,
        "the shared buffer's CL reference count"
    );
    assert_eq!(shared.live_maps(), 0);
    q0.finish()?;
    drop((pool, shared, program, q0, ctx));
    let settle = Instant::now() + Duration::from_secs(5);
    while cl_mem::live_objects().events > events_before && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        cl_mem::live_objects().events,
        events_before,
        "event wrappers left by the soak"
    );
    print!(
        "{} operations in {rounds} rounds ({} KiB through the pool; SVM {}, images {}) ... ",
        ops.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed) / 1024,
        if svm { "on" } else { "off: unsupported" },
        if images { "on" } else { "off: unsupported" },
    );
    Ok(())
}
