//! Awaiting a non-blocking read on tokio while another task keeps running.
//!
//! `CL_TEST=portable cargo run -p cl-mem --example async_read` (any selector of the
//! `CL_TEST` / `PYOPENCL_TEST` grammar; `CL_CTX` as for `create_some_context`; with neither, the
//! first device).
//!
//! The read is woken by the command's `CL_COMPLETE` callback (`Event::wait_async`,
//! `Pending: IntoFuture`): no thread blocks in `clWaitForEvents`, so the ticker task runs on the
//! same runtime meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cl_mem::{Buffer, MemFlags, Queue};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // CL_CTX, else CL_TEST / PYOPENCL_TEST, else the best device present.
    let ctx = cl_mem::create_some_context()?;
    let device = ctx.devices()[0];
    println!("device: {}", device.name()?.trim());
    let queue = Queue::new(&ctx, &device)?;

    const N: usize = 1 << 22;
    let data: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, N * 4)?;
    buf.write(&queue, &data, &[])?;

    // Another task that ticks while the transfer is in flight.
    let stop = Arc::new(AtomicBool::new(false));
    let ticks = Arc::new(AtomicU32::new(0));
    let ticker = tokio::spawn({
        let (stop, ticks) = (Arc::clone(&stop), Arc::clone(&ticks));
        async move {
            while !stop.load(Ordering::Relaxed) {
                ticks.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });

    // The host vector moves into the transfer and comes back when the command completed.
    let pending = buf.enqueue_read(&queue, vec![0f32; N], &[])?;
    let back: Vec<f32> = pending.await?;
    stop.store(true, Ordering::Relaxed);
    ticker.await?;

    assert_eq!(back, data, "the read returned other data");
    // Events are awaitable too, by reference: a marker after everything queued so far. A plain
    // event's future knows no queue, so flush first (a callback, unlike a blocking wait, does not
    // submit the command: Oclgrind would keep the marker queued for good).
    let marker = queue.enqueue_marker(&[])?;
    queue.flush()?;
    marker.wait_async().await?;
    println!(
        "read {} MiB back; the other task ticked {} times meanwhile",
        (N * 4) >> 20,
        ticks.load(Ordering::Relaxed)
    );
    Ok(())
}
