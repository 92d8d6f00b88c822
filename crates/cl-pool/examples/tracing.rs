//! What the workspace logs and traces: spans around allocations (`cl_mem::alloc`), transfers
//! (`cl_mem::write` / `cl_mem::read`, with `staged`), maps (`cl_mem::map`), kernel enqueues
//! (`cl_mem::kernel`) and pool misses (`cl_pool::miss`), each with its bytes, queue and device;
//! the device choice (`cl_mem::select`); and PyOpenCL's warning for a pool over a deferred
//! allocator. Pool hits make no span: they stay in tens of nanoseconds.
//!
//! Run: `RUST_LOG=debug cargo run -p cl-pool --example tracing` (`RUST_LOG=cl_pool=debug`,
//! `RUST_LOG=info`, ... filter it). In your program, the one line is
//! `tracing_subscriber::fmt().with_env_filter(EnvFilter::from_default_env()).with_span_events(FmtSpan::CLOSE).init();`
//! (crate `tracing-subscriber` with its `env-filter` feature).

use cl_mem::{create_some_context, MemFlags, Program, Queue};
use cl_pool::{DeferredAllocator, ImmediateAllocator, MemoryPool};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::EnvFilter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("debug"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .init();

    let context = create_some_context()?;
    let queue = Queue::new(&context, &context.devices()[0])?;

    // PyOpenCL warns (UserWarning) when a pool gets a deferred allocator: here a `tracing` warning.
    let _deferred = MemoryPool::new(DeferredAllocator::new(&context, MemFlags::READ_WRITE)?);

    let pool = MemoryPool::new(ImmediateAllocator::new(&queue, MemFlags::READ_WRITE)?);
    let n = 4096;
    let a = pool.allocate(n * 4)?; // a miss: a `cl_pool::miss` span around `cl_mem::alloc`
    a.write(&queue, &vec![1.0f32; n], &[])?;
    let program = Program::build_from_source(
        &context,
        "__kernel void twice(__global float* p) { p[get_global_id(0)] *= 2.0f; }",
        "",
    )?;
    let k = program.kernel("twice")?;
    k.call(&queue, &[n], None, (&a,))?;
    let sum: f32 = a.with_map::<f32, _, _>(&queue, cl_mem::ReadOnly, .., |s| s.iter().sum())?;
    let back: Vec<f32> = a.to_vec(&queue)?;
    assert_eq!(sum, 2.0 * n as f32);
    assert!(back.iter().all(|&x| x == 2.0));
    drop(a);
    let _hit = pool.allocate(n * 4)?; // a hit: no span
    eprintln!(
        "done: {} hit(s), {} miss(es)",
        pool.stats().hits,
        pool.stats().misses
    );
    Ok(())
}
