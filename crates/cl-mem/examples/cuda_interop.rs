//! Memory shared with CUDA without a copy (issue 34): CUDA allocates and fills, an OpenCL kernel
//! reads and writes the same bytes, CUDA reads them back, and the reverse; byte-exact checks at
//! an odd size, ordered by semaphores where the driver can export one and by host waits
//! otherwise. Then a round trip through host memory against the zero-copy hand-over at 1 MiB,
//! 64 MiB and 1 GiB (`CUDA_INTEROP_MIB=1,64,1024`, the default).
//!
//! The first lines answer what the driver offers: external memory import handle types, semaphore
//! import and export handle types, the device UUID, and which ordering the run used. On a device
//! or machine without the extensions or CUDA it prints the typed refusal and exits 0.
//!
//! Run: `cargo run -p cl-mem --features cuda --example cuda_interop` (`CL_TEST=nvidia`).

use std::time::{Duration, Instant};

use cl_mem::cuda::{CudaDevice, CudaMemory, CudaSemaphore};
use cl_mem::{
    create_some_context, Buffer, Context, Device, Error, Event, MemFlags, Program, Queue, Semaphore,
};

const SRC: &str = "__kernel void scale(__global uint* a, uint k) {
    size_t i = get_global_id(0);
    a[i] = a[i] * k + (uint)i;
}";

/// One semaphore per direction, each with its CUDA side.
struct Semaphores {
    to_cuda: (Semaphore, CudaSemaphore),
    to_opencl: (Semaphore, CudaSemaphore),
}

fn semaphores(context: &Context, device: &Device, cuda: &CudaDevice) -> Option<Semaphores> {
    let one = || -> Result<(Semaphore, CudaSemaphore), Error> {
        let s = Semaphore::new_exportable(context, device)?;
        let c = cuda.import_semaphore(&s)?;
        Ok((s, c))
    };
    match (one(), one()) {
        (Ok(to_cuda), Ok(to_opencl)) => Some(Semaphores { to_cuda, to_opencl }),
        (Err(e), _) | (_, Err(e)) => {
            println!("semaphores: not available ({e}); ordering with host waits");
            None
        }
    }
}

/// OpenCL -> CUDA: release after OpenCL's work, then a semaphore or a host wait.
fn to_cuda(
    buffer: &Buffer,
    queue: &Queue,
    cuda: &CudaDevice,
    sems: Option<&Semaphores>,
) -> Result<(), Error> {
    let released = buffer.hand_back(queue, &[])?;
    match sems {
        Some(s) => {
            queue.signal_semaphore(&s.to_cuda.0, &[])?;
            queue.flush()?;
            s.to_cuda.1.wait(cuda.stream())?;
        }
        None => released.wait()?,
    }
    Ok(())
}

/// CUDA -> OpenCL: a semaphore or a stream synchronize, then the acquire.
fn to_opencl(
    buffer: &Buffer,
    queue: &Queue,
    cuda: &CudaDevice,
    sems: Option<&Semaphores>,
) -> Result<Event, Box<dyn std::error::Error>> {
    match sems {
        Some(s) => {
            s.to_opencl.1.signal(cuda.stream())?;
            let waited = queue.wait_semaphore(&s.to_opencl.0, &[])?;
            Ok(buffer.acquire_external(queue, &[&waited])?)
        }
        None => {
            cuda.stream().synchronize()?;
            Ok(buffer.acquire_external(queue, &[])?)
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let context = create_some_context()?;
    let device = context.devices()[0];
    let queue = Queue::new(&context, &device)?;
    println!(
        "device: {} ({})",
        device.name()?,
        device.info::<String>(cl_raw::sys::CL_DEVICE_VERSION)?
    );
    println!(
        "external memory import handle types: {:?}",
        device.external_memory_import_handle_types()?
    );
    println!(
        "semaphore import handle types: {:?}",
        device.semaphore_import_handle_types()?
    );
    println!(
        "semaphore export handle types: {:?}",
        device.semaphore_export_handle_types()?
    );
    match device.uuid() {
        Ok(u) => println!(
            "uuid: {}",
            u.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
        Err(e) => println!("uuid: {e}"),
    }
    let cuda = match CudaDevice::matching(&device) {
        Ok(c) => c,
        Err(e @ Error::Unsupported { .. }) => {
            println!("no CUDA interop on this device: {e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("CUDA device: ordinal {}", cuda.context().ordinal());

    // An odd element count: the buffer is a sub-buffer of the rounded-up allocation.
    let n32 = 1_000_003u32;
    let n = n32 as usize;
    let (buffer, mut mem): (Buffer, CudaMemory<u32>) = match cuda.alloc_shared(&queue, n) {
        Ok(pair) => pair,
        Err(e @ Error::Unsupported { .. }) => {
            println!("no shared allocation on this device: {e}");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let sems = semaphores(&context, &device, &cuda);
    println!(
        "ordering: {}",
        if sems.is_some() {
            "semaphores (no host wait)"
        } else {
            "host waits"
        }
    );

    // CUDA writes, OpenCL reads and writes, CUDA reads.
    to_cuda(&buffer, &queue, &cuda, sems.as_ref())?;
    mem.fill_u32(7)?;
    to_opencl(&buffer, &queue, &cuda, sems.as_ref())?;
    let program = Program::build_from_source(&context, SRC, "")?;
    let k = program.kernel("scale")?;
    k.call(&queue, &[n], None, (&buffer, &3u32))?;
    to_cuda(&buffer, &queue, &cuda, sems.as_ref())?;
    let mut back = vec![0u32; n];
    cuda.stream().memcpy_dtoh(&mem, &mut back)?;
    cuda.stream().synchronize()?;
    let wrong = (0..n32)
        .zip(&back)
        .filter(|&(i, &v)| v != 7 * 3 + i)
        .count();
    println!("CUDA fill -> OpenCL kernel -> CUDA read: {wrong} of {n} words wrong");
    assert_eq!(wrong, 0);

    // CUDA copies a pattern in, OpenCL reads it.
    let pattern: Vec<u32> = (0..n32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    cuda.stream().memcpy_htod(&pattern, &mut mem)?;
    to_opencl(&buffer, &queue, &cuda, sems.as_ref())?;
    let seen: Vec<u32> = buffer.to_vec(&queue)?;
    let wrong = seen.iter().zip(&pattern).filter(|(a, b)| a != b).count();
    println!("CUDA copy -> OpenCL read: {wrong} of {n} words wrong");
    assert_eq!(wrong, 0);
    drop((buffer, mem));
    queue.finish()?;

    bench(&context, &queue, &cuda, sems.as_ref())?;
    Ok(())
}

/// Host round trip (CUDA -> host -> OpenCL buffer -> host -> CUDA) against the zero-copy
/// hand-over (release + acquire each way) at three sizes; best of three.
fn bench(
    context: &Context,
    queue: &Queue,
    cuda: &CudaDevice,
    sems: Option<&Semaphores>,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("\n| size | host round trip | zero-copy hand-over (semaphores) | zero-copy hand-over (host waits) |");
    println!("| --- | --- | --- | --- |");
    // `CUDA_INTEROP_MIB=64,1024` picks the sizes; progress goes to stderr, unbuffered.
    let sizes: Vec<usize> = std::env::var("CUDA_INTEROP_MIB").map_or_else(
        |_| vec![1, 64, 1024],
        |v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
    );
    for mib in sizes {
        let bytes = mib << 20;
        eprintln!("[{mib} MiB] allocating");
        let n = bytes / 4;
        let (shared, mut mem): (Buffer, CudaMemory<u32>) = cuda.alloc_shared(queue, n)?;
        eprintln!("[{mib} MiB] shared; plain buffer");
        let plain = Buffer::new(context, MemFlags::READ_WRITE, bytes)?;
        let mut host = vec![0u32; n];
        eprintln!("[{mib} MiB] CUDA fill");
        mem.fill_u32(1)?;
        cuda.stream().synchronize()?;
        let best = |f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| {
            let mut best = Duration::MAX;
            for _ in 0..3 {
                let t = Instant::now();
                f()?;
                best = best.min(t.elapsed());
            }
            Ok::<_, Box<dyn std::error::Error>>(best)
        };
        eprintln!("[{mib} MiB] host round trip");
        let host_trip = best(&mut || {
            cuda.stream().memcpy_dtoh(&mem, &mut host)?;
            cuda.stream().synchronize()?;
            plain.write(queue, &host, &[])?;
            plain.read(queue, &mut host, &[])?;
            cuda.stream().memcpy_htod(&host, &mut mem)?;
            cuda.stream().synchronize()?;
            Ok(())
        })?;
        let sem_trip = match sems {
            Some(_) => Some(best(&mut || {
                to_cuda(&shared, queue, cuda, sems)?;
                to_opencl(&shared, queue, cuda, sems)?.wait()?;
                Ok(())
            })?),
            None => None,
        };
        eprintln!("[{mib} MiB] hand-over with host waits");
        let host_wait_trip = best(&mut || {
            to_cuda(&shared, queue, cuda, None)?;
            to_opencl(&shared, queue, cuda, None)?.wait()?;
            Ok(())
        })?;
        let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
        println!(
            "| {mib} MiB | {} ({:.1} GB/s over 4 copies) | {} | {} |",
            ms(host_trip),
            4.0 * bytes as f64 / host_trip.as_secs_f64() / 1e9,
            sem_trip.map_or_else(|| "no semaphores".into(), ms),
            ms(host_wait_trip),
        );
        eprintln!("[{mib} MiB] dropping the OpenCL buffer");
        drop(shared);
        queue.finish()?;
        eprintln!("[{mib} MiB] dropping the CUDA memory");
        drop(mem);
        eprintln!("[{mib} MiB] done");
    }
    Ok(())
}
