//! Device-to-device bandwidth in a multi-device context (issue 17): a buffer copy from a buffer
//! resident on device 0 into one resident on device 1, an explicit migration of a buffer from
//! device 0 to device 1, and the round trip through pinned host memory they should beat.
//!
//! `cargo run --release -p cl-benches --example multi_device_bandwidth [platform-substring]`
//! (default: the first platform with two GPUs; with one device it splits it into sub-devices
//! when it can, which measures the driver's bookkeeping rather than a link). Medians of
//! `CL_BENCH_REPS` (default 15) timed runs per size, after one warm-up, each waited for.

use cl_mem::{enqueue_copy, Transfer};
use std::time::Instant;

use cl_benches::{gbps, median};

use cl_mem::{
    enqueue_migrate_mem_objects, Buffer, Context, Device, DeviceType, MemFlags, MigrationFlags,
    Partition, PinnedMemory, Platform, Queue,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn devices(want: &str) -> Res<Vec<Device>> {
    for p in Platform::list()? {
        if !p.name()?.contains(want) {
            continue;
        }
        let gpus = p.devices_of_type(DeviceType::GPU).unwrap_or_default();
        if gpus.len() >= 2 {
            return Ok(gpus);
        }
    }
    for p in Platform::list()? {
        if !p.name()?.contains(want) {
            continue;
        }
        for d in p.devices()? {
            let units = d.max_compute_units()?;
            if d.partition_support()?.equally && units >= 2 {
                return Ok(d.create_sub_devices(&Partition::Equally(units / 2))?);
            }
        }
    }
    Err(format!("no platform matching '{want}' has two devices or a splittable one").into())
}

fn main() -> Res<()> {
    let want = std::env::args().nth(1).unwrap_or_default();
    let reps: usize = std::env::var("CL_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let devs = devices(&want)?;
    let ctx = Context::new(&devs[..2])?;
    let q0 = Queue::new(&ctx, &devs[0])?;
    let q1 = Queue::new(&ctx, &devs[1])?;
    println!(
        "devices: '{}' and '{}' ({} platform), {reps} reps per size, GB/s (median)",
        devs[0].name()?.trim(),
        devs[1].name()?.trim(),
        ctx.platform().name()?
    );
    println!("| MiB | copy dev0 -> dev1 | migrate dev0 -> dev1 | host round trip (pinned) | copy / round trip |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    for mib in [1usize, 16, 64, 256, 1024] {
        let bytes = mib << 20;
        let a = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        let b = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        // Make each buffer resident on its device.
        a.fill(&q0, &[1u32], Transfer::default().byte_count(bytes))?
            .wait()?;
        b.fill(&q1, &[2u32], Transfer::default().byte_count(bytes))?
            .wait()?;
        let mut copy = Vec::new();
        for i in 0..=reps {
            // Touch the source on device 0 again so that each copy starts from there.
            a.fill(&q0, &[u32::try_from(i)?], Transfer::default().byte_count(4))?
                .wait()?;
            let t = Instant::now();
            enqueue_copy(&q1, &b, &a, &[])?.wait()?;
            if i > 0 {
                copy.push(t.elapsed().as_secs_f64());
            }
        }
        let m = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        m.fill(&q0, &[3u32], Transfer::default().byte_count(bytes))?
            .wait()?;
        let mut migrate = Vec::new();
        for i in 0..=reps {
            let t = Instant::now();
            enqueue_migrate_mem_objects(&q1, &[&m], MigrationFlags::empty(), &[])?.wait()?;
            if i > 0 {
                migrate.push(t.elapsed().as_secs_f64());
            }
            enqueue_migrate_mem_objects(&q0, &[&m], MigrationFlags::empty(), &[])?.wait()?;
        }
        let mut host = PinnedMemory::<u8>::new(&q0, bytes)?;
        let mut round = Vec::new();
        for i in 0..=reps {
            let t = Instant::now();
            a.read(&q0, &mut host[..], &[])?;
            b.write(&q1, &host[..], &[])?;
            if i > 0 {
                round.push(t.elapsed().as_secs_f64());
            }
        }
        let (c, mg, r) = (median(copy), median(migrate), median(round));
        println!(
            "| {mib} | {:.1} | {:.1} | {:.1} | {:.2}x |",
            gbps(bytes, c),
            gbps(bytes, mg),
            gbps(bytes, r),
            r / c
        );
        // Byte-exact: b holds a's bytes.
        let mut x = vec![0u8; 64];
        let mut y = vec![0u8; 64];
        a.read(&q1, &mut x, Transfer::default().src_offset(bytes - 64))?;
        b.read(&q0, &mut y, Transfer::default().src_offset(bytes - 64))?;
        if x != y {
            return Err("the copied bytes differ".into());
        }
    }
    Ok(())
}
