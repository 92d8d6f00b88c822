//! Device-to-device bandwidth in a multi-device context (issues 17 and 32): a buffer copy from a
//! buffer resident on device 0 into one resident on device 1, an explicit migration of a buffer
//! from device 0 to device 1, each on the driver's path (`Plain`), `Auto` and the forced staged
//! path through pinned chunks (`Staged`), and the round trip through pinned host memory.
//!
//! `cargo run --release -p cl-benches --example multi_device_bandwidth [platform-substring]`
//! (default: the first platform with two GPUs; with one device it splits it into sub-devices
//! when it can, which measures the driver's bookkeeping rather than a link). Medians of
//! `CL_BENCH_REPS` (default 7) timed runs per size and path, after one warm-up, each waited for;
//! sizes 64, 256 and 1024 MiB (`CL_BENCH_SIZES_MIB=1,16` to change them).

use cl_mem::{enqueue_copy, Transfer};
use std::time::Instant;

use cl_benches::{gbps, median};

use cl_mem::{
    enqueue_migrate_mem_objects, Buffer, Context, Device, DeviceType, MemFlags, MigrationFlags,
    Partition, PinnedMemory, Platform, Queue, TransferOptions, TransferPath,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn devices(want: &str) -> Res<Vec<Device>> {
    for p in Platform::list()? {
        if !p.name()?.contains(want) {
            continue;
        }
        let gpus = p.devices(DeviceType::GPU).unwrap_or_default();
        if gpus.len() >= 2 {
            return Ok(gpus);
        }
    }
    for p in Platform::list()? {
        if !p.name()?.contains(want) {
            continue;
        }
        for d in p.devices(DeviceType::ALL)? {
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
        .unwrap_or(7);
    let devs = devices(&want)?;
    let ctx = Context::new(&devs[..2])?;
    let q0 = Queue::new(&ctx, &devs[0])?;
    let q1 = Queue::new(&ctx, &devs[1])?;
    println!(
        "devices: '{}' and '{}' ({} platform), {reps} reps per size, GB/s (median)",
        devs[0].name()?.trim(),
        devs[1].name()?.trim(),
        ctx.devices()[0].platform().name()?
    );
    println!(
        "copy / migrate dev0 -> dev1: plain = the driver's one command, auto = TransferPath::Auto, \
         staged = forced pinned chunks (issue 32); round trip = read into pinned host on dev0 + write on dev1"
    );
    println!(
        "| MiB | copy plain | copy auto | copy staged | migrate plain | migrate auto | migrate staged | round trip (pinned) | staged / plain | staged / round trip |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let sizes: Vec<usize> = std::env::var("CL_BENCH_SIZES_MIB")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![64, 256, 1024]);
    let staged = TransferOptions {
        path: TransferPath::Staged,
        ..TransferOptions::default()
    };
    let paths = [TransferOptions::plain(), TransferOptions::default(), staged];
    for mib in sizes {
        let bytes = mib << 20;
        let a = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        let b = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        // Make each buffer resident on its device.
        a.fill(&q0, &[1u32], Transfer::default().byte_count(bytes))?
            .wait()?;
        b.fill(&q1, &[2u32], Transfer::default().byte_count(bytes))?
            .wait()?;
        let mut copy = Vec::new();
        for options in paths {
            let mut t_all = Vec::new();
            for i in 0..=reps {
                // Touch the source on device 0 again so that each copy starts from there.
                a.fill(&q0, &[u32::try_from(i)?], Transfer::default().byte_count(4))?
                    .wait()?;
                let t = Instant::now();
                enqueue_copy(&q1, &b, &a, Transfer::default().options(options))?.wait()?;
                if i > 0 {
                    t_all.push(t.elapsed().as_secs_f64());
                }
            }
            copy.push(median(t_all));
            // Byte-exact: b holds a's bytes (the first word and the last 64 bytes).
            let mut x = vec![0u8; 64];
            let mut y = vec![0u8; 64];
            a.read(&q1, &mut x, Transfer::default().src_offset(bytes - 64))?;
            b.read(&q0, &mut y, Transfer::default().src_offset(bytes - 64))?;
            let head = b.read_vec_of::<u32>(&q0, 1)?;
            if x != y || head != [u32::try_from(reps)?] {
                return Err(format!("{options:?}: the copied bytes differ").into());
            }
        }
        let m = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        let mut migrate = Vec::new();
        for opts in paths {
            let mut t_all = Vec::new();
            for i in 0..=reps {
                // Written on device 0 each time, so that each migration moves bytes.
                m.fill(
                    &q0,
                    &[u32::try_from(i)?],
                    Transfer::default().byte_count(bytes),
                )?
                .wait()?;
                let t = Instant::now();
                let o = Transfer::default().options(opts);
                enqueue_migrate_mem_objects(&q1, &[&m], MigrationFlags::empty(), o)?.wait()?;
                if i > 0 {
                    t_all.push(t.elapsed().as_secs_f64());
                }
            }
            migrate.push(median(t_all));
            let tail = {
                let mut x = vec![0u32; 1];
                m.read(&q1, &mut x, Transfer::default().src_offset(bytes - 4))?;
                x[0]
            };
            if tail != u32::try_from(reps)? {
                return Err(format!("{opts:?}: the migrated bytes differ").into());
            }
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
        let r = median(round);
        let g = |t: f64| gbps(bytes, t);
        println!(
            "| {mib} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1}x | {:.2}x |",
            g(copy[0]),
            g(copy[1]),
            g(copy[2]),
            g(migrate[0]),
            g(migrate[1]),
            g(migrate[2]),
            g(r),
            copy[0] / copy[2],
            r / copy[2],
        );
    }
    Ok(())
}
