//! Pageable host memory to and from a device on the plain and the staged path (issue 13):
//! `cargo run --release -p cl-benches --example transfer_paths [device-substring] [--tune]`.
//!
//! Prints GB/s (10^9 B/s), the median of `CL_BENCH_REPS` (default 7) timed blocking transfers
//! from or into an ordinary `Vec<u8>` after one warm-up, for 1 MiB .. 1 GiB (`CL_BENCH_MAX_MIB`
//! caps the sizes), on the plain path, the staged path with the default options, and `Auto`.
//! `--tune` adds a chunk-size x thread-count grid at 256 MiB. `--zero-copy` adds the
//! `USE_HOST_PTR` route: the `Vec` moved into a buffer over its own memory
//! (`Buffer::use_host_memory`), copied on the device to or from a device buffer (a read then maps
//! the host buffer, so that the `Vec`'s bytes are current), the buffer released; timed from the
//! buffer's creation to its release, per transfer (the `Vec`s are filled before timing).
//! `--rect` adds 2-D rectangles (rows of 16 KiB, host rows 64 bytes apart from each other's
//! ends, packed device rows) on the plain, staged and `Auto` paths.
//! `--rows` prints only `Auto` / plain / staged at 64 and 256 MiB in both directions, three
//! rounds in one process (issue 32: is `Auto` the better of the two on this machine?), and stops.

use cl_mem::{enqueue_copy, Transfer};
use std::time::Instant;

use cl_benches::{gbps, median};

use cl_mem::{Buffer, Context, MemFlags, Platform, Queue, TransferOptions};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn measure(
    reps: usize,
    buf: &Buffer,
    q: &Queue,
    host: &mut [u8],
    write: bool,
    opts: TransferOptions,
) -> Res<f64> {
    let mut t = Vec::new();
    for i in 0..=reps {
        let t0 = Instant::now();
        if write {
            buf.write(q, host, Transfer::default().options(opts))?;
        } else {
            buf.read(q, host, Transfer::default().options(opts))?;
        }
        if i > 0 {
            t.push(t0.elapsed().as_secs_f64());
        }
    }
    Ok(gbps(host.len(), median(t)))
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let want = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_default();
    let tune = args.iter().any(|a| a == "--tune");
    let zero_copy = args.iter().any(|a| a == "--zero-copy");
    let rect = args.iter().any(|a| a == "--rect");
    let reps: usize = std::env::var("CL_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let max_mib: usize = std::env::var("CL_BENCH_MAX_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let device = Platform::list()?
        .into_iter()
        .flat_map(|p| p.devices(cl_mem::DeviceType::ALL).unwrap_or_default())
        .find(|d| d.name().is_ok_and(|n| n.contains(&want)))
        .ok_or("no device matches")?;
    let ctx = Context::new(&[device])?;
    let q = Queue::new(&ctx, &device)?;
    println!(
        "device '{}', {reps} reps, GB/s (median); default staged options: {:?}",
        device.name()?.trim(),
        TransferOptions::default()
    );
    println!("| MiB | dir | plain | staged | auto | staged / plain |");
    println!("| ---: | --- | ---: | ---: | ---: | ---: |");
    let staged = TransferOptions {
        path: cl_mem::TransferPath::Staged,
        ..TransferOptions::default()
    };
    if args.iter().any(|a| a == "--rows") {
        return rows(reps, &ctx, &q, staged);
    }
    for mib in [1usize, 2, 4, 8, 16, 32, 64, 256, 1024] {
        if mib > max_mib {
            break;
        }
        let bytes = mib << 20;
        let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        let mut host = vec![1u8; bytes];
        for write in [true, false] {
            let plain = measure(reps, &buf, &q, &mut host, write, TransferOptions::plain())?;
            let st = measure(reps, &buf, &q, &mut host, write, staged)?;
            let auto = measure(reps, &buf, &q, &mut host, write, TransferOptions::default())?;
            println!(
                "| {mib} | {} | {plain:.2} | {st:.2} | {auto:.2} | {:.2}x |",
                if write { "h2d" } else { "d2h" },
                st / plain
            );
        }
    }
    if rect {
        println!("\nrectangles (16 KiB rows, host row pitch 16 KiB + 64), GB/s (median)");
        println!("| MiB | dir | plain | staged | auto |");
        println!("| ---: | --- | ---: | ---: | ---: |");
        let width = 16usize << 10;
        for mib in [1usize, 16, 64, 256, 1024] {
            if mib > max_mib {
                break;
            }
            let rows = (mib << 20) / width;
            let region = cl_mem::Rect::new([width, rows, 1]).src_pitches(width + 64, 0);
            let read = cl_mem::Rect::new([width, rows, 1]).dst_pitches(width + 64, 0);
            let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, width * rows)?;
            let mut host = vec![1u8; (width + 64) * rows];
            let staged = TransferOptions {
                path: cl_mem::TransferPath::Staged,
                ..TransferOptions::default()
            };
            for write in [true, false] {
                let mut row = Vec::new();
                for opts in [TransferOptions::plain(), staged, TransferOptions::default()] {
                    let mut t = Vec::new();
                    for i in 0..=reps {
                        let t0 = Instant::now();
                        if write {
                            buf.write(&q, &host, Transfer::default().rect(region).options(opts))?;
                        } else {
                            buf.read(&q, &mut host, Transfer::default().rect(read).options(opts))?;
                        }
                        if i > 0 {
                            t.push(t0.elapsed().as_secs_f64());
                        }
                    }
                    row.push(gbps(width * rows, median(t)));
                }
                println!(
                    "| {mib} | {} | {:.2} | {:.2} | {:.2} |",
                    if write { "h2d" } else { "d2h" },
                    row[0],
                    row[1],
                    row[2]
                );
            }
        }
    }
    if zero_copy {
        println!("\nzero copy (USE_HOST_PTR over the Vec, then a device copy), GB/s (median)");
        println!("| MiB | h2d | d2h |");
        println!("| ---: | ---: | ---: |");
        for mib in [1usize, 16, 64, 256, 1024] {
            if mib > max_mib {
                break;
            }
            let bytes = mib << 20;
            let dev = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
            let (mut tw, mut tr) = (Vec::new(), Vec::new());
            for i in 0..=reps.min(5) {
                let host = vec![1u8; bytes];
                let t0 = Instant::now();
                let hb = Buffer::use_host_memory(&ctx, MemFlags::READ_ONLY, host)?;
                enqueue_copy(&q, &dev, &hb, &[])?.wait()?;
                drop(hb);
                let w = t0.elapsed().as_secs_f64();
                let host = vec![0u8; bytes];
                let t0 = Instant::now();
                let hb = Buffer::use_host_memory(&ctx, MemFlags::READ_WRITE, host)?;
                enqueue_copy(&q, &hb, &dev, &[])?.wait()?;
                let first = hb.map::<u8, _>(&q, cl_mem::ReadOnly, .., &[])?[0];
                drop(hb);
                let r = t0.elapsed().as_secs_f64();
                assert_eq!(first, 1, "the device's bytes reached the host memory");
                if i > 0 {
                    tw.push(w);
                    tr.push(r);
                }
            }
            println!(
                "| {mib} | {:.2} | {:.2} |",
                gbps(bytes, median(tw)),
                gbps(bytes, median(tr))
            );
        }
    }
    if tune {
        let bytes = 256usize.min(max_mib) << 20;
        let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, bytes)?;
        let mut host = vec![1u8; bytes];
        println!("\ntuning at {} MiB: h2d / d2h GB/s", bytes >> 20);
        println!("| chunk MiB | threads | depth | h2d | d2h |");
        println!("| ---: | ---: | ---: | ---: | ---: |");
        for chunk in [2usize, 4, 8] {
            for threads in [6usize, 8] {
                for depth in [2usize, 3] {
                    let o = TransferOptions {
                        depth,
                        ..TransferOptions::staged(chunk << 20, threads)
                    };
                    let w = measure(reps.min(5), &buf, &q, &mut host, true, o)?;
                    let r = measure(reps.min(5), &buf, &q, &mut host, false, o)?;
                    println!("| {chunk} | {threads} | {depth} | {w:.2} | {r:.2} |");
                }
            }
        }
    }
    Ok(())
}

/// `--rows`: `Auto` against the better of plain and staged, three rounds.
fn rows(reps: usize, ctx: &Context, q: &Queue, staged: TransferOptions) -> Res<()> {
    println!("\n| round | MiB | dir | auto | plain | staged | auto / best |");
    println!("| ---: | ---: | --- | ---: | ---: | ---: | ---: |");
    for round in 1..=3 {
        for mib in [64usize, 256] {
            let bytes = mib << 20;
            let buf = Buffer::new(ctx, MemFlags::READ_WRITE, bytes)?;
            let mut host = vec![1u8; bytes];
            for write in [true, false] {
                let auto = measure(reps, &buf, q, &mut host, write, TransferOptions::default())?;
                let plain = measure(reps, &buf, q, &mut host, write, TransferOptions::plain())?;
                let st = measure(reps, &buf, q, &mut host, write, staged)?;
                println!(
                    "| {round} | {mib} | {} | {auto:.2} | {plain:.2} | {st:.2} | {:.2} |",
                    if write { "h2d" } else { "d2h" },
                    auto / plain.max(st)
                );
            }
        }
    }
    Ok(())
}
