//! Raw handles: `into_raw`/`from_raw` round trips of buffers, images, queues, programs and kernels
//! keep the reference counts.

use crate::common::{base_align, image_queue, RGBA_F, SCALE_SRC};
use cl_mem::{
    Buffer, Error, Image, ImageDesc, Kernel, MemFlags, MemObject, MemObjectType, Memory, Program,
    Queue, RawHandle,
};
use cl_tests::{device_test, TestDevice, TestResult};
use std::collections::HashSet;

device_test!(raw_handles_round_trip_and_count);
fn raw_handles_round_trip_and_count(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let buf = Buffer::from_slice(&ctx, MemFlags::READ_WRITE, &[7u32; 16])?;
    // from_raw_retained (`from_int_ptr(retain=True)`) takes a reference of its own.
    // SAFETY: a valid buffer.
    let again = unsafe { Buffer::from_raw_retained(buf.as_raw()) }?;
    assert_eq!(buf.reference_count()?, 2);
    assert_eq!(again, buf);
    let mut set = HashSet::new();
    set.insert(buf.clone());
    assert!(set.contains(&again));
    assert_eq!(buf.reference_count()?, 3);
    drop(set);
    // into_raw + from_raw moves the reference through a raw handle without counting.
    let raw = again.into_raw();
    assert_eq!(buf.reference_count()?, 2);
    // SAFETY: `raw` carries the reference `again` gave away.
    let back = unsafe { Buffer::from_raw(raw) }?;
    assert_eq!(buf.reference_count()?, 2);
    back.release()?;
    assert_eq!(buf.reference_count()?, 1);
    // The generic handle: any memory object, narrowed back to a buffer.
    // SAFETY: a valid memory object.
    let m = unsafe { Memory::from_raw_retained(buf.as_raw()) }?;
    assert_eq!(m.mem_info()?.mem_type, MemObjectType::Buffer);
    let m2 = m.clone();
    assert_eq!(m, m2);
    assert_eq!(buf.reference_count()?, 3);
    drop(m2);
    let narrowed = Buffer::try_from(m).map_err(|_| cl_tests::fail("a buffer did not narrow"))?;
    assert_eq!(narrowed.size_bytes(), 64);
    assert_eq!(buf.reference_count()?, 2);
    let as_memory: Memory = narrowed.into();
    as_memory.release()?;
    assert_eq!(buf.reference_count()?, 1);
    // A sub-buffer adopted from a raw handle finds its parent and offset.
    let align = base_align(dev)?;
    let sub = Buffer::from_slice(&ctx, MemFlags::READ_WRITE, &vec![0u8; align * 2])?.sub_buffer(
        align,
        8,
        MemFlags::empty(),
    )?;
    // SAFETY: a valid buffer.
    let adopted = unsafe { Buffer::from_raw_retained(sub.as_raw()) }?;
    assert_eq!(adopted.mem_info()?.offset_bytes, align);
    assert_eq!(
        adopted.parent().map(Buffer::as_raw),
        sub.parent().map(Buffer::as_raw)
    );
    Ok(())
}

device_test!(release_and_into_raw_leak_no_context_reference);
/// `Image::release` and `Image::into_raw` give the image's own reference away but must drop the
/// context reference the wrapper holds (an earlier `mem::forget(self)` leaked one per call).
fn release_and_into_raw_leak_no_context_reference(dev: &TestDevice) -> TestResult {
    let ctx = image_queue(dev)?.context().clone();
    let before = ctx.reference_count()?;
    let desc = ImageDesc::d2(8, 4);
    Image::new(&ctx, MemFlags::READ_WRITE, RGBA_F, &desc)?.release()?;
    assert_eq!(ctx.reference_count()?, before, "after release()");
    let raw = Image::new(&ctx, MemFlags::READ_WRITE, RGBA_F, &desc)?.into_raw();
    // SAFETY: `raw` is the one reference `into_raw` gave away; adopting it releases it on drop.
    drop(unsafe { Image::from_raw(raw) }?);
    assert_eq!(
        ctx.reference_count()?,
        before,
        "after into_raw() + from_raw()"
    );
    Ok(())
}

device_test!(queue_raw_round_trip_keeps_reference_counts);
fn queue_raw_round_trip_keeps_reference_counts(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context().clone();
    let (q0, c0) = (q.reference_count()?, ctx.reference_count()?);
    let raw = q.clone().into_raw();
    assert_eq!(
        q.reference_count()?,
        q0 + 1,
        "into_raw gave one reference away"
    );
    assert_eq!(
        ctx.reference_count()?,
        c0,
        "into_raw kept a context reference"
    );
    // SAFETY: `raw` carries the reference `into_raw` gave away; the test devices are root devices.
    let adopted = unsafe { Queue::from_raw(raw) }?;
    assert_eq!(q.reference_count()?, q0 + 1, "from_raw took a reference");
    assert_eq!(adopted, q);
    assert_eq!(adopted.context().as_raw(), ctx.as_raw());
    assert_eq!(adopted.device(), q.device());
    assert_eq!(adopted.properties(), q.properties());
    drop(adopted);
    assert_eq!(
        q.reference_count()?,
        q0,
        "the adopted queue released its reference"
    );
    // SAFETY: a valid queue (owned by `q`); a root device.
    let retained = unsafe { Queue::from_raw_retained(q.as_raw()) }?;
    assert_eq!(
        q.reference_count()?,
        q0 + 1,
        "from_raw_retained retained once"
    );
    drop(retained);
    assert_eq!(
        (q.reference_count()?, ctx.reference_count()?),
        (q0, c0),
        "queue and context reference counts after the round trips"
    );
    Ok(())
}

device_test!(program_raw_round_trip_keeps_reference_counts);
fn program_raw_round_trip_keeps_reference_counts(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SCALE_SRC, "")?;
    let (p0, c0) = (program.reference_count()?, ctx.reference_count()?);
    let raw = program.clone().into_raw();
    assert_eq!(
        program.reference_count()?,
        p0 + 1,
        "into_raw gave one reference away"
    );
    assert_eq!(
        ctx.reference_count()?,
        c0,
        "into_raw kept a context reference"
    );
    // SAFETY: `raw` carries the reference `into_raw` gave away.
    let adopted = unsafe { Program::from_raw(raw) }?;
    assert_eq!(
        program.reference_count()?,
        p0 + 1,
        "from_raw took a reference"
    );
    assert_eq!(adopted.context().as_raw(), ctx.as_raw());
    // The adopted program is usable: a kernel of it.
    assert_eq!(adopted.kernel("scale")?.num_args()?, 4);
    drop(adopted);
    assert_eq!(
        program.reference_count()?,
        p0,
        "the adopted program released its reference"
    );
    // SAFETY: a valid program (owned by `program`).
    let retained = unsafe { Program::from_raw_retained(program.as_raw()) }?;
    assert_eq!(
        program.reference_count()?,
        p0 + 1,
        "from_raw_retained retained once"
    );
    drop(retained);
    assert_eq!(
        (program.reference_count()?, ctx.reference_count()?),
        (p0, c0),
        "program and context reference counts after the round trips"
    );
    Ok(())
}

device_test!(kernel_raw_round_trip_keeps_reference_counts_and_checks);
fn kernel_raw_round_trip_keeps_reference_counts_and_checks(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let program = Program::build_from_source(&ctx, SCALE_SRC, "")?;
    let p0 = program.reference_count()?;
    let k = program.kernel("scale")?;
    let k0 = k.reference_count()?;
    let had_params = k.params().is_some();
    let raw = k.into_raw();
    // SAFETY: `raw` carries the reference `into_raw` gave away; nothing else sets its arguments
    // and none is set.
    let mut adopted = unsafe { Kernel::from_raw(raw) }?;
    assert_eq!(
        adopted.reference_count()?,
        k0,
        "the round trip changed the count"
    );
    assert_eq!(adopted.name(), "scale");
    assert_eq!(adopted.num_args()?, 4);
    assert_eq!(adopted.program().as_raw(), program.as_raw());
    // The adopted kernel got its argument descriptions, so it checks arguments as before.
    assert_eq!(
        adopted.params().is_some(),
        had_params,
        "argument descriptions lost"
    );
    if had_params {
        let r = adopted.set_arg(0, &1u32);
        assert!(matches!(r, Err(Error::KernelArg { .. })), "{r:?}");
    }
    // SAFETY: a valid kernel (owned by `adopted`), whose arguments nothing sets meanwhile.
    let retained = unsafe { Kernel::from_raw_retained(adopted.as_raw()) }?;
    assert_eq!(
        adopted.reference_count()?,
        k0 + 1,
        "from_raw_retained retained once"
    );
    drop(retained);
    assert_eq!(adopted.reference_count()?, k0);
    drop(adopted);
    assert_eq!(
        program.reference_count()?,
        p0,
        "the program's reference count after the kernel round trips"
    );
    Ok(())
}

// The `opencl3` crate and cl-mem / cl-pool on the same objects through raw handles (both link
// the same libOpenCL, so the handles are the same objects; the aliases differ, hence `.cast()`):
// opencl3 creates context, queue and a buffer; cl-mem adopts context and queue with
// `from_raw_retained` (each side releases what it owns) and a pool allocates on that queue;
// cl-mem writes a pooled buffer that opencl3 reads through a reference of its own (`into_raw` of
// a clone); opencl3 writes its buffer, which cl-mem adopts and reads.
device_test!(opencl3_and_cl_mem_share_objects_through_raw_handles);
fn opencl3_and_cl_mem_share_objects_through_raw_handles(dev: &TestDevice) -> TestResult {
    use cl_pool::{ImmediateAllocator, MemoryPool};
    use opencl3::command_queue::CommandQueue;
    use opencl3::context::Context as O3Context;
    use opencl3::memory::{Buffer as O3Buffer, ClMem, CL_MEM_READ_WRITE};
    use opencl3::types::CL_BLOCKING;
    const N: usize = 1024;

    let o3_device = opencl3::device::Device::new(dev.device.as_raw().cast());
    let o3_context = O3Context::from_device(&o3_device)?;
    // clCreateCommandQueue works on every version (Oclgrind is OpenCL 1.2). opencl3 marks it
    // deprecated only with its CL_VERSION_2_0 feature, so `allow`, not `expect`.
    #[allow(
        deprecated,
        reason = "clCreateCommandQueue works on every version (Oclgrind is OpenCL 1.2)"
    )]
    let o3_queue = CommandQueue::create_default(&o3_context, 0)?;
    // SAFETY: a valid context; no host pointer.
    let mut o3_buffer = unsafe {
        O3Buffer::<u32>::create(&o3_context, CL_MEM_READ_WRITE, N, std::ptr::null_mut())
    }?;

    // SAFETY: a valid context owned by `o3_context`.
    let context = unsafe { cl_mem::Context::from_raw_retained(o3_context.get().cast()) }?;
    // SAFETY: a valid queue owned by `o3_queue`, on a root device.
    let queue = unsafe { Queue::from_raw_retained(o3_queue.get().cast()) }?;
    assert_eq!(queue.context().as_raw(), context.as_raw());
    let pool = MemoryPool::new(ImmediateAllocator::new(&queue, MemFlags::READ_WRITE)?);
    let block = pool.allocate(N * 4)?;

    let data: Vec<u32> = (0..1024u32).map(|i| i * 3 + 1).collect();
    block.write(&queue, &data, &[])?;
    let o3_view = O3Buffer::<u32>::new((*block).clone().into_raw().cast());
    let mut back = vec![0u32; N];
    // SAFETY: a blocking read of `N` values from a buffer of at least `N * 4` bytes.
    unsafe { o3_queue.enqueue_read_buffer(&o3_view, CL_BLOCKING, 0, &mut back, &[]) }?;
    assert_eq!(back, data, "opencl3 read other data from the cl-mem buffer");
    drop(o3_view); // releases the reference `into_raw` gave away

    let ones = vec![7u32; N];
    // SAFETY: a blocking write of `N` values into a buffer of `N` values.
    unsafe { o3_queue.enqueue_write_buffer(&mut o3_buffer, CL_BLOCKING, 0, &ones, &[]) }?;
    // SAFETY: a valid buffer owned by `o3_buffer`.
    let adopted = unsafe { Buffer::from_raw_retained(o3_buffer.get().cast()) }?;
    assert_eq!(adopted.size_bytes(), N * 4);
    let mut check = vec![0u32; N];
    adopted.read(&queue, &mut check, &[])?;
    assert_eq!(
        check, ones,
        "cl-mem read other data from the opencl3 buffer"
    );
    // Each side releases what it owns; the order does not matter.
    drop((adopted, block, pool, queue, context));
    Ok(())
}
