//! The command record: commands in flight are pruned and stay bounded, a second queue waits for the
//! first one's writes, handles given away or rebuilt keep their record, and objects may be dropped
//! from event callbacks.

use crate::common::{coarse_svm, mapped, ARGUMENT_KERNELS, SCALE_KERNELS};
use cl_mem::svm::{Coarse, SvmArray};
use cl_mem::{
    enqueue_copy, Buffer, Error, EventStatus, Image, ImageFormat, Kernel, MapFlags, MemFlags,
    NullMem, PinnedMemory, Program, Queue, RawHandle, Rect, Transfer, UserEvent,
};
use cl_pool::{ImmediateAllocator, MemoryPool, PoolBlock};
use cl_tests::{device_test, eventually, fail, skip, TestDevice, TestResult};
use std::time::Duration;

/// Waits until every wrapper made since `before` is gone: a drop handed off a callback thread
/// still happens, without another call.
fn all_released(before: &cl_mem::LiveObjects) -> TestResult {
    eventually("every dropped object is released", || {
        Ok(cl_mem::live_objects().more_than(before).is_empty())
    })
}

const DOOMED_SRC: &str = r#"
__kernel void put(__global uint* p) { p[get_global_id(0)] = 7u; }
__kernel void get(__read_only image1d_buffer_t img, __global uint* out) {
    out[get_global_id(0)] = read_imageui(img, (int)get_global_id(0)).x;
}
"#;

/// Objects whose `Drop` talks to the driver, each to be dropped by a driver callback (issue 29):
/// on the Intel CPU runtime a blocking call on the callback thread never returns. Without the
/// callback worker, the pinned storage and the image hung each of the three tests below there
/// (and bare pinned memory the event callback's).
enum Doomed {
    /// Pinned memory itself: its drop enqueues an unmap and waits for it.
    #[expect(dead_code, reason = "held only to be dropped")]
    Pinned(PinnedMemory<u32>),
    /// A `USE_HOST_PTR` buffer whose storage is pinned memory: its destruction drops that.
    PinnedStorage(Buffer),
    /// A coarse-grain SVM allocation: its drop enqueues the free behind markers.
    Svm(SvmArray<u32, Coarse>),
    /// A pooled block, the last handle of its pool: it goes back, and the pool (freeing its
    /// blocks) goes with it.
    Pooled(PoolBlock<ImmediateAllocator>),
    /// An image over a buffer with pinned storage: its destruction destroys the buffer too. A
    /// 1-D buffer image, the one kind every 1.2 device makes from a buffer (PoCL 3.1 keeps its
    /// context for good: docs/DEVICES.md#pocl-image1d-buffer-keeps-context).
    Image(Image),
}

impl Doomed {
    fn what(&self) -> &'static str {
        match self {
            Doomed::Pinned(_) => "pinned memory",
            Doomed::PinnedStorage(_) => "a buffer over pinned memory",
            Doomed::Svm(_) => "an SVM allocation",
            Doomed::Pooled(_) => "a pooled block",
            Doomed::Image(_) => "an image over pinned memory",
        }
    }

    /// One of each kind the device has; the kinds it lacks are printed with the reason.
    fn every_kind(dev: &TestDevice, q: &Queue) -> Result<Vec<Doomed>, cl_tests::TestError> {
        let ctx = q.context();
        let pinned = || -> Result<PinnedMemory<u32>, Error> {
            let mut p = PinnedMemory::new(q, DOOMED_LEN)?;
            p.fill(1);
            Ok(p)
        };
        let pinned_storage = || -> Result<Buffer, Error> {
            Buffer::use_host_memory(ctx, MemFlags::READ_WRITE, pinned()?)
        };
        let mut all = vec![
            Doomed::Pinned(pinned()?),
            Doomed::PinnedStorage(pinned_storage()?),
        ];
        match coarse_svm(dev) {
            Ok(()) => all.push(Doomed::Svm(SvmArray::new(q, DOOMED_LEN)?)),
            Err(_) => eprintln!("    not covered: SVM (no coarse-grain buffer SVM, OpenCL 2.0)"),
        }
        let pool = MemoryPool::new(ImmediateAllocator::new(q, MemFlags::READ_WRITE)?);
        all.push(Doomed::Pooled(pool.allocate(DOOMED_LEN * 4)?));
        if !dev.device.image_support()? {
            eprintln!("    not covered: images (the device has no image support)");
        } else if dev.device.platform_version() < cl_mem::Version::V1_2 {
            eprintln!("    not covered: images over buffers (OpenCL 1.2)");
        } else {
            let format =
                ImageFormat::new(cl_mem::ChannelOrder::R, cl_mem::ChannelType::UnsignedInt32);
            let img = Image::from_buffer(
                ctx,
                MemFlags::READ_ONLY,
                format,
                &pinned_storage()?,
                &[DOOMED_LEN],
                None,
            )?;
            all.push(Doomed::Image(img));
        }
        Ok(all)
    }

    /// A kernel holding `self` as an argument, and its command, gated by `gate`; `None` for
    /// pinned memory, which is no kernel argument.
    fn enqueue_gated(
        &self,
        program: &Program,
        q: &Queue,
        gate: &UserEvent,
    ) -> Result<Option<(Kernel, cl_mem::Event)>, Error> {
        let mut k = program.kernel(if matches!(self, Doomed::Image(_)) {
            "get"
        } else {
            "put"
        })?;
        match self {
            Doomed::Pinned(_) => return Ok(None),
            Doomed::PinnedStorage(b) => k.set_arg(0, b)?,
            Doomed::Svm(a) => k.set_arg(0, a)?,
            Doomed::Pooled(b) => k.set_arg(0, b)?,
            Doomed::Image(img) => {
                let out = Buffer::new(q.context(), MemFlags::READ_WRITE, DOOMED_LEN * 4)?;
                k.set_arg(0, img)?.set_arg(1, &out)?
            }
        };
        let done = k.enqueue_nd_range(q, &[DOOMED_LEN], None, &[gate])?;
        Ok(Some((k, done)))
    }
}

const DOOMED_LEN: usize = 64;

device_test!(a_dropped_kernels_arguments_are_released_off_the_callback_thread);
/// A kernel dropped while its command waits: the command's completion callback releases the
/// arguments, whose destruction (pinned storage unmapped, SVM freed, an image's buffer) must not
/// block the driver's callback thread (issue 29: the Intel runtime never finished the queue).
fn a_dropped_kernels_arguments_are_released_off_the_callback_thread(
    dev: &TestDevice,
) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), DOOMED_SRC, "")?;
    let before = cl_mem::live_objects();
    for d in Doomed::every_kind(dev, &q)? {
        let gate = UserEvent::new(q.context())?;
        let Some((k, done)) = d.enqueue_gated(&program, &q, &gate)? else {
            continue;
        };
        let what = d.what();
        drop(k);
        drop(d);
        // The command's snapshot holds the last handle; its completion callback releases it.
        gate.set_complete()?;
        done.wait().map_err(|e| fail(format!("{what}: {e}")))?;
    }
    let released = all_released(&before);
    drop(program);
    if dev.platform_name().contains("NVIDIA") && dev.driver_version().starts_with("580.") {
        // NVIDIA 580.159.04: after every object above was released (checked just above), the
        // release of this queue and its context (clReleaseCommandQueue / clReleaseContext in
        // `drop(q)`) does not return (seen in three leases; the sibling tests with the same
        // objects and no kernel dropped with a pending command finish). Not yet reduced to a C
        // reproduction: docs/DEVICES.md#nvidia-release-after-dropped-kernel.
        cl_tests::leaks_deliberately("NVIDIA 580: the queue's release hangs after this sequence");
        std::mem::forget(q);
    }
    released
}

device_test!(an_event_callback_may_drop_objects_that_talk_to_the_driver);
/// An `Event::on_complete` closure that drops such objects (issue 29).
fn an_event_callback_may_drop_objects_that_talk_to_the_driver(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let before = cl_mem::live_objects();
    for d in Doomed::every_kind(dev, &q)? {
        let gate = UserEvent::new(q.context())?;
        let marker = q.enqueue_marker(&[&gate])?;
        marker.on(cl_mem::CallbackOn::Complete, move |_| drop(d))?;
        gate.set_complete()?;
        marker.wait()?;
    }
    all_released(&before)
}

device_test!(a_user_event_set_here_may_drop_objects_in_its_callback);
/// A user event completed on this thread, with a callback that drops such objects: the Intel
/// runtime runs the callback inside `set_complete` (issue 29).
fn a_user_event_set_here_may_drop_objects_in_its_callback(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), DOOMED_SRC, "")?;
    let before = cl_mem::live_objects();
    for d in Doomed::every_kind(dev, &q)? {
        let user = UserEvent::new(q.context())?;
        // A command using the object (or, for pinned memory, its queue) waits for the event.
        let (k, gated) = match d.enqueue_gated(&program, &q, &user)? {
            Some((k, done)) => (Some(k), done),
            None => (None, q.enqueue_marker(&[&user])?),
        };
        user.on(cl_mem::CallbackOn::Complete, move |_| drop((k, d)))?;
        user.set_complete()?;
        gated.wait()?;
    }
    all_released(&before)
}

device_test!(commands_in_flight_are_pruned);
fn commands_in_flight_are_pruned(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SCALE_KERNELS, "")?;
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &buf)?
        .set_arg(1, &buf)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &16u32)?;
    // One in-order queue: one record, however many commands (no status read per enqueue).
    for _ in 0..500 {
        k.enqueue_nd_range(&q, &[16], None, &[])?;
        assert_eq!(k.commands_in_flight(), 1);
    }
    q.finish()?;
    // A replaced argument is let go once its commands ran and a new object comes.
    let x0 = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    let x1 = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    k.set_arg(0, &x0)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    q.finish()?;
    k.set_arg(0, &x1)?;
    assert!(x0.reference_count()? >= 2, "the finished command's record");
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    assert_eq!(x0.reference_count()?, 1, "x0 let go");
    q.finish()?;
    drop(k);
    assert_eq!(buf.reference_count()?, 1);
    assert_eq!(x1.reference_count()?, 1);
    // An out-of-order queue keeps one record per command, swept as they complete.
    let out_of_order = cl_mem::QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE;
    if let Ok(ooo) = Queue::with_properties(ctx, &dev.device, out_of_order) {
        let mut k = program.kernel("scale")?;
        k.set_arg(0, &buf)?
            .set_arg(1, &buf)?
            .set_arg(2, &1.0f32)?
            .set_arg(3, &16u32)?;
        for _ in 0..200 {
            k.enqueue_nd_range(&ooo, &[16], None, &[])?;
            assert!(k.commands_in_flight() <= 200);
        }
        ooo.finish()?;
        // The next sweep comes at twice what the last one left (at most 2 x 200 records: the
        // loop above may have swept while its commands still ran, slower on a loaded machine);
        // once past it, every record is of a finished command and the count falls back under
        // the first threshold for good.
        for _ in 0..500 {
            k.enqueue_nd_range(&ooo, &[16], None, &[])?;
            ooo.finish()?;
        }
        assert!(k.commands_in_flight() <= 70, "{}", k.commands_in_flight());
    }
    // A kernel of scalars only keeps no record.
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &NullMem)?
        .set_arg(1, &NullMem)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &0u32)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?.wait()?;
    assert_eq!(k.commands_in_flight(), 0);
    Ok(())
}

device_test!(a_second_queue_waits_for_the_first_queues_writes);
fn a_second_queue_waits_for_the_first_queues_writes(dev: &TestDevice) -> TestResult {
    let ctx = dev.context();
    let a = Queue::new(&ctx, &dev.device)?;
    let b = Queue::new(&ctx, &dev.device)?;
    let buf = Buffer::from_slice(&ctx, MemFlags::READ_WRITE, &[0u32; 256])?;
    // Oclgrind 21.10's clFlush does not return while the queue holds a command waiting for an
    // open user event (repro/oclgrind_flush_waits_for_user_event.c; docs/DEVICES.md#oclgrind),
    // and the cross-queue wait below flushes queue A as the spec asks: there the writes are not
    // held back, and only the ordering's result is checked.
    let gated = !dev.platform_name().contains("Oclgrind");
    let gate = UserEvent::new(&ctx)?;
    let first: Vec<&cl_mem::Event> = if gated { vec![&gate] } else { vec![] };
    // A write on queue A, held back by the gate.
    let write = buf.enqueue_write(&a, vec![7u32; 256], &first)?;
    // A read on queue B, with no wait list from the caller: it must follow A's write.
    let read = buf.enqueue_read(&b, vec![0u32; 256], &[])?;
    let read_ran_early = gated && {
        std::thread::sleep(Duration::from_millis(50));
        matches!(
            read.event().status()?,
            EventStatus::Complete | EventStatus::Error(_)
        )
    };
    // Open the gate before asserting: a broken rule fails the test instead of leaving a gated
    // command that hangs the queue's release until the watchdog.
    gate.set_complete()?;
    write.wait()?;
    let got = read.wait()?;
    assert!(
        !read_ran_early,
        "the read on queue B ran before the write on queue A it must follow"
    );
    assert_eq!(got, vec![7u32; 256]);
    // A kernel on B after a fill on A, the same way.
    let gate = UserEvent::new(&ctx)?;
    let first: Vec<&cl_mem::Event> = if gated { vec![&gate] } else { vec![] };
    let marker = a.enqueue_marker(&first)?;
    let fill = buf.fill(&a, &[9u32], &[&marker])?;
    let out = Buffer::new(&ctx, MemFlags::READ_WRITE, 256 * 4)?;
    let program = Program::build_from_source(&ctx, SCALE_KERNELS, "")?;
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &buf)?
        .set_arg(1, &out)?
        .set_arg(2, &2.0f32)?
        .set_arg(3, &256u32)?;
    let run = k.enqueue_nd_range(&b, &[256], None, &[])?;
    gate.set_complete()?;
    fill.wait()?;
    run.wait()?;
    let v: Vec<f32> = out.to_vec(&b)?;
    assert!(
        v.iter().all(|&x| x == f32::from_bits(9) * 2.0),
        "{:?}",
        &v[..4]
    );
    Ok(())
}

device_test!(command_records_stay_bounded);
fn command_records_stay_bounded(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let buf = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let other = Queue::new(ctx, &dev.device)?;
    for i in 0..300u32 {
        buf.fill(&q, &[i], &[])?;
        let mut x = [0u32; 1];
        if i % 3 == 0 {
            buf.read(&other, &mut x, &[])?;
            assert_eq!(x[0], i);
        }
        assert!(buf.recorded_commands() <= 4, "{}", buf.recorded_commands());
    }
    q.finish()?;
    other.finish()?;
    Ok(())
}

device_test!(a_handle_given_away_keeps_its_pending_commands);
/// A buffer handle given away with `into_raw` and adopted again while a command on it is still
/// pending keeps that command in its record (it came back with an empty one, so a map on another
/// queue did not wait for the copy).
fn a_handle_given_away_keeps_its_pending_commands(dev: &TestDevice) -> TestResult {
    if dev.platform_name().contains("Oclgrind") {
        // `into_raw` flushes the queue of a pending command, and Oclgrind's clFlush waits there
        // for the user event this test sets afterwards (docs/DEVICES.md#oclgrind).
        return Err(skip(
            "Oclgrind 21.10: clFlush blocks on a command waiting for a user event",
        ));
    }
    let q = dev.queue();
    let ctx = q.context();
    let src = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[9u32; 64])?;
    let dst = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[0u32; 64])?;
    let gate = UserEvent::new(ctx)?;
    let copy = enqueue_copy(&q, &dst, &src, &[&*gate])?;
    let before = dst.recorded_commands();
    assert!(before >= 1, "the gated copy is not recorded");
    let raw = dst.into_raw();
    // SAFETY: the reference `into_raw` gave away, adopted once.
    let dst = unsafe { Buffer::from_raw(raw) }?;
    let after = dst.recorded_commands();
    gate.set_complete()?;
    copy.wait()?;
    if after != before {
        return Err(fail(format!(
            "the record of pending commands went from {before} to {after} through into_raw/from_raw"
        )));
    }
    let v: Vec<u32> = dst.to_vec(&q)?;
    assert_eq!(v, vec![9u32; 64]);
    Ok(())
}

device_test!(an_image_rebuilt_from_memory_keeps_its_record);
/// An image turned into a `Memory` and back (safe code) is the same allocation with the same
/// record: a second writable map through the rebuilt image is refused (it was granted: two
/// `&mut [u8]` over one host pointer).
fn an_image_rebuilt_from_memory_keeps_its_record(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    let q2 = Queue::new(ctx, &dev.device)?;
    let img = Image::new(
        ctx,
        MemFlags::READ_WRITE,
        crate::common::RGBA_F,
        &cl_mem::ImageDesc::d2(4, 4),
    )?;
    let twin = Image::try_from(cl_mem::Memory::from(img.clone()))
        .map_err(|_| fail("an image's Memory did not narrow back to an image"))?;
    let r = img.map(
        &q,
        cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
        &[0, 0],
        &[4, 4],
        &[],
        |_| {
            twin.map(
                &q2,
                cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
                &[0, 0],
                &[4, 4],
                &[],
                |_| (),
            )
        },
    )?;
    mapped(r, "a second writable map through the rebuilt image");
    Ok(())
}

device_test!(an_image_from_a_buffer_shares_its_map_lock_and_record);
fn an_image_from_a_buffer_shares_its_map_lock_and_record(dev: &TestDevice) -> TestResult {
    if !dev.device.image_support()? {
        return Err(skip("the device has no image support"));
    }
    let q = dev.queue();
    let ctx = q.context();
    if ctx.devices()[0].platform_version() < cl_mem::Version::V1_2 {
        return Err(skip("1-D buffer images need OpenCL 1.2"));
    }
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1.0f32; 16])?;
    let img = match Image::from_buffer(
        ctx,
        MemFlags::READ_WRITE,
        crate::common::RGBA_F,
        &buf,
        &[4],
        None,
    ) {
        Ok(i) => i,
        Err(Error::Unsupported { .. }) => return Err(skip("no 1-D buffer images")),
        Err(e) => return Err(e.into()),
    };
    // The issue's case: a buffer map and a map of the image made from it aliased the same bytes.
    {
        let _w = buf.map::<f32, _>(&q, MapFlags::WRITE, .., &[])?;
        let r = img.map(&q, cl_mem::MapFlags::READ, &[], &[4], &[], |_| ());
        mapped(r, "image map under a buffer map");
        let mut px = [0f32; 16];
        mapped(
            img.read(&q, &mut px, &[]),
            "image read under a writable buffer map",
        );
    }
    let r = img.map(&q, cl_mem::MapFlags::WRITE, &[], &[4], &[], |_| {
        buf.map::<f32, _>(&q, cl_mem::ReadOnly, .., &[]).map(drop)
    })?;
    mapped(r, "buffer map under an image map");
    // Commands on the image and the buffer are ordered across queues like the buffer's own.
    let other = Queue::new(ctx, &dev.device)?;
    img.write(&other, &[2.0f32; 16], &[])?;
    let v: Vec<f32> = buf.to_vec(&q)?;
    assert_eq!(v, vec![2.0f32; 16]);
    // PoCL 3.1 crashes inside clEnqueueFillImage for 1-D buffer images
    // (repro/pocl_fill_image1d_buffer_crash.c): refused there, a real fill elsewhere.
    let fill = img.fill(
        &other,
        cl_mem::FillColor::Float([3.0; 4]),
        Transfer::default().rect(Rect::new([4, 1, 1])),
    );
    if dev.platform_name().contains("Portable Computing Language") {
        assert!(matches!(fill, Err(Error::Unsupported { .. })), "{fill:?}");
    } else {
        fill?;
        let v: Vec<f32> = buf.to_vec(&q)?;
        assert_eq!(v, vec![3.0f32; 16]);
    }
    Ok(())
}

device_test!(memory_adopted_from_a_raw_handle_keeps_the_record);
/// A `Memory` adopted from a live buffer's raw handle bypassed the record: a kernel wrote
/// through it under a live map of the buffer.
fn memory_adopted_from_a_raw_handle_keeps_the_record(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &vec![1u32; align])?;
    let sub = buf.sub_buffer(align, align, MemFlags::empty())?;
    // SAFETY: live memory objects of this crate; nothing outside it touches them.
    let (whole, part) = unsafe {
        (
            cl_mem::Memory::from_raw_retained(buf.as_raw())?,
            cl_mem::Memory::from_raw_retained(sub.as_raw())?,
        )
    };
    let program = Program::build_from_source(ctx, ARGUMENT_KERNELS, "")?;
    let mut k = program.kernel("sneaky")?;
    {
        let view = buf.map::<u32, _>(&q, cl_mem::ReadOnly, .., &[])?;
        for (what, m) in [("the root", &whole), ("a sub-buffer", &part)] {
            k.set_arg(0, m)?;
            let r = k.enqueue_nd_range(&q, &[4], None, &[]);
            assert!(matches!(r, Err(Error::Mapped(_))), "{what}: {r:?}");
        }
        q.finish()?;
        assert!(
            view.iter().all(|&v| v == 1),
            "the mapped bytes did not change"
        );
    }
    k.enqueue_nd_range(&q, &[4], None, &[])?;
    q.finish()?;
    drop(k);
    Ok(())
}
