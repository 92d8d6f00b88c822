//! Passing OpenCL objects between the `opencl3` crate and cl-mem / cl-pool through raw handles.
//!
//! `CL_TEST=portable cargo run -p cl-tests --example opencl3_interop` (any selector of the
//! `CL_TEST` / `PYOPENCL_TEST` grammar; `CL_CTX` as for `create_some_context`; with neither, the
//! first device).
//!
//! 1. opencl3 creates the context, the queue and a buffer;
//! 2. cl-mem adopts context and queue with `from_raw_retained` (opencl3 keeps its own references:
//!    each side releases what it owns), and a `cl_pool::MemoryPool` allocates on that queue;
//! 3. cl-mem writes a pooled buffer, opencl3 reads it back through the raw handle (`into_raw`
//!    of a clone hands opencl3 a reference of its own);
//! 4. opencl3 writes its buffer, cl-mem adopts it with `Buffer::from_raw_retained` and reads it.
//!
//! Both crates link the same libOpenCL, so the handles are the same objects; only the Rust type
//! aliases differ (`*mut c_void` on both sides, hence the `.cast()`s).

use std::ptr;

use cl_mem::RawHandle;
use cl_mem::{Device, MemFlags};
use cl_pool::{ImmediateAllocator, MemoryPool};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context as O3Context;
use opencl3::memory::{Buffer as O3Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::types::CL_BLOCKING;

const N: usize = 1024;

/// The device the usual variables select, through cl-mem's selection.
fn pick_device() -> cl_mem::Result<Device> {
    let by_test_selector = ["CL_TEST", "PYOPENCL_TEST"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()));
    if by_test_selector {
        // `test_devices` errors when the selector matches nothing, so there is a first one.
        Ok(cl_mem::test_devices()?[0].device)
    } else {
        Ok(cl_mem::create_some_context()?.devices()[0])
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = pick_device()?;
    println!("device: {}", device.name()?.trim());

    // 1. opencl3 owns context, queue and a buffer.
    let o3_device = opencl3::device::Device::new(device.as_raw().cast());
    let o3_context = O3Context::from_device(&o3_device)?;
    // clCreateCommandQueue works on every version (Oclgrind is OpenCL 1.2). opencl3 marks it
    // deprecated only with its CL_VERSION_2_0 feature, so `allow`, not `expect`.
    #[allow(
        deprecated,
        reason = "clCreateCommandQueue works on every version (Oclgrind is OpenCL 1.2)"
    )]
    let o3_queue = CommandQueue::create_default(&o3_context, 0)?;
    // SAFETY: a valid context; no host pointer.
    let mut o3_buffer =
        unsafe { O3Buffer::<u32>::create(&o3_context, CL_MEM_READ_WRITE, N, ptr::null_mut()) }?;

    // 2. cl-mem takes references of its own; a pool allocates on the adopted queue.
    // SAFETY: a valid context owned by `o3_context`.
    let context = unsafe { cl_mem::Context::from_raw_retained(o3_context.get().cast()) }?;
    // SAFETY: a valid queue owned by `o3_queue`, on a root device.
    let queue = unsafe { cl_mem::Queue::from_raw_retained(o3_queue.get().cast()) }?;
    assert_eq!(queue.context().as_raw(), context.as_raw());
    let pool = MemoryPool::new(ImmediateAllocator::new(&queue, MemFlags::READ_WRITE)?);
    let block = pool.allocate(N * 4)?;

    // 3. cl-mem writes the pooled buffer; opencl3 reads it through a reference of its own.
    let data: Vec<u32> = (0..1024u32).map(|i| i * 3 + 1).collect();
    assert_eq!(data.len(), N);
    block.write(&queue, &data, &[])?;
    let o3_view = O3Buffer::<u32>::new((*block).clone().into_raw().cast());
    let mut back = vec![0u32; N];
    // SAFETY: a blocking read of `N` values from a buffer of at least `N * 4` bytes.
    unsafe { o3_queue.enqueue_read_buffer(&o3_view, CL_BLOCKING, 0, &mut back, &[]) }?;
    assert_eq!(back, data, "opencl3 read other data from the cl-mem buffer");
    drop(o3_view); // releases the reference `into_raw` gave away

    // 4. opencl3 writes its buffer; cl-mem adopts it (retaining) and reads it.
    let ones = vec![7u32; N];
    // SAFETY: a blocking write of `N` values into a buffer of `N` values.
    unsafe { o3_queue.enqueue_write_buffer(&mut o3_buffer, CL_BLOCKING, 0, &ones, &[]) }?;
    // SAFETY: a valid buffer owned by `o3_buffer`.
    let adopted = unsafe { cl_mem::Buffer::from_raw_retained(o3_buffer.get().cast()) }?;
    assert_eq!(adopted.size_bytes(), N * 4);
    let mut check = vec![0u32; N];
    adopted.read(&queue, &mut check, &[])?;
    assert_eq!(
        check, ones,
        "cl-mem read other data from the opencl3 buffer"
    );

    // Each side releases what it owns; the order does not matter.
    drop((adopted, block, pool, queue, context));
    println!("{N} values each way between opencl3 and cl-mem/cl-pool: ok");
    Ok(())
}
