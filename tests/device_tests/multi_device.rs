//! Several devices in one context (issue 17): the test device's platform siblings of its type
//! when it has some (two GPUs), else two or more sub-devices of it (device fission, as the CPU
//! runtimes here offer). Buffers written on one device and used on another, explicit migration,
//! sub-buffers, images, SVM and pools across the devices.

use cl_mem::svm::{Coarse, SvmArray};
use cl_mem::{enqueue_copy, enqueue_migrate_mem_objects, ReadOnly, Rect, Transfer};
use cl_mem::{
    AffinityDomain, Buffer, ChannelOrder, ChannelType, Context, Device, Error, Event, EventStatus,
    Image, ImageDesc, ImageFormat, MemFlags, MigrationFlags, Partition, Program, Queue,
    TransferOptions, TransferPath, UserEvent,
};
use cl_pool::{DevicePools, ImmediateAllocator, MemoryPool};
use cl_tests::{device_test, fail, skip, TestDevice, TestError, TestResult};

const SRC: &str = r"
__kernel void fill(__global uint *a, uint v) { size_t i = get_global_id(0); a[i] = v + (uint)i; }
__kernel void add(__global uint *a, uint v) { a[get_global_id(0)] += v; }
";

/// Devices for one multi-device context, and how they were found.
fn group(dev: &TestDevice) -> Result<(Vec<Device>, &'static str), TestError> {
    let ty = dev.device.device_type()?;
    let siblings: Vec<Device> = dev
        .platform
        .devices(cl_mem::DeviceType::ALL)?
        .into_iter()
        .filter(|d| d.device_type().is_ok_and(|t| t == ty))
        .collect();
    if siblings.len() >= 2 && siblings.contains(&dev.device) {
        return Ok((siblings, "devices of the platform"));
    }
    let support = dev.device.partition_support()?;
    if !support.equally {
        return Err(skip(format!(
            "one {ty:?} device on the platform and no CL_DEVICE_PARTITION_EQUALLY \
             ({support:?}): no multi-device context can be made"
        )));
    }
    let units = dev.device.max_compute_units()?;
    if units < 2 {
        return Err(skip(format!(
            "one compute unit: no two sub-devices (CL_DEVICE_MAX_COMPUTE_UNITS = {units})"
        )));
    }
    let subs = dev
        .device
        .create_sub_devices(&Partition::Equally(units / 2))?;
    Ok((subs, "sub-devices"))
}

struct Multi {
    context: Context,
    queues: Vec<Queue>,
}

fn multi(dev: &TestDevice) -> Result<Multi, TestError> {
    let (devices, _) = group(dev)?;
    let context = Context::new(&devices)?;
    let queues = devices
        .iter()
        .map(|d| Queue::new(&context, d))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Multi { context, queues })
}

fn kernel_on(
    q: &Queue,
    name: &str,
    buf: &Buffer,
    v: u32,
    n: usize,
    wait: &[&Event],
) -> Result<Event, Error> {
    let program = Program::build_from_source(q.context(), SRC, "")?;
    let mut k = program.kernel(name)?;
    k.set_arg(0, buf)?.set_arg(1, &v)?;
    k.enqueue_nd_range(q, &[n], None, wait)
}

fn filled(v: u32, n: usize) -> Vec<u32> {
    (0..n)
        .map(|i| v + u32::try_from(i).unwrap_or(u32::MAX))
        .collect()
}

device_test!(sub_devices_partition_the_compute_units);
fn sub_devices_partition_the_compute_units(dev: &TestDevice) -> TestResult {
    let support = dev.device.partition_support()?;
    let units = dev.device.max_compute_units()?;
    if !support.equally {
        // The refusal is typed and comes before the driver.
        match dev.device.create_sub_devices(&Partition::Equally(1)) {
            Err(Error::Unsupported { .. }) => return Ok(()),
            other => return Err(fail(format!("no equal partition listed, got {other:?}"))),
        }
    }
    let n = (units / 2).max(1);
    let subs = dev.device.create_sub_devices(&Partition::Equally(n))?;
    if subs.len() < 2 && units >= 2 {
        return Err(fail(format!(
            "{units} compute units split by {n} gave {} sub-device(s)",
            subs.len()
        )));
    }
    for s in &subs {
        assert_eq!(s.parent_device()?, Some(dev.device));
        assert_eq!(s.max_compute_units()?, n);
        assert_eq!(s.version(), dev.device.version());
    }
    assert_eq!(dev.device.parent_device()?, None);
    // Interned: asking again gives the same devices.
    assert_eq!(dev.device.create_sub_devices(&Partition::Equally(n))?, subs);
    if support.by_counts && units >= 2 {
        let by = dev
            .device
            .create_sub_devices(&Partition::ByCounts(vec![1, 1]))?;
        assert_eq!(by.len(), 2);
        for s in &by {
            assert_eq!(s.max_compute_units()?, 1);
        }
    }
    // Bad input: typed, before the driver.
    for bad in [
        Partition::Equally(0),
        Partition::Equally(units + 1),
        Partition::ByCounts(vec![]),
        Partition::ByCounts(vec![units, units]),
    ] {
        match dev.device.create_sub_devices(&bad) {
            Err(Error::InvalidArgument(_) | Error::Unsupported { .. }) => {}
            other => return Err(fail(format!("{bad:?}: {other:?}"))),
        }
    }
    if !support.by_affinity_domain {
        match dev
            .device
            .create_sub_devices(&Partition::ByAffinityDomain(AffinityDomain::Numa))
        {
            Err(Error::Unsupported { .. }) => {}
            other => return Err(fail(format!("affinity partition not listed: {other:?}"))),
        }
    }
    Ok(())
}

device_test!(a_buffer_written_on_one_device_is_used_on_the_other);
/// Written by a kernel on device A, updated by a kernel on device B with no wait list, read on
/// A: the command record makes B wait for A and A's read wait for B (twenty round trips).
fn a_buffer_written_on_one_device_is_used_on_the_other(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let n = 4096;
    let buf = Buffer::new(&m.context, MemFlags::READ_WRITE, n * 4)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    kernel_on(a, "fill", &buf, 10, n, &[])?;
    let rounds = 20u32;
    for r in 0..rounds {
        let q = if r % 2 == 0 { b } else { a };
        kernel_on(q, "add", &buf, 1, n, &[])?;
    }
    let mut out = vec![0u32; n];
    buf.read(a, &mut out, &[])?;
    if out != filled(10 + rounds, n) {
        return Err(fail(format!(
            "after {rounds} alternating updates: {:?}..",
            &out[..4]
        )));
    }
    // Host writes through one device's queue, kernels on every device, read on the last.
    let data: Vec<u32> = (0..u32::try_from(n)?).collect();
    buf.write(a, &data, &[])?;
    for q in &m.queues {
        kernel_on(q, "add", &buf, 2, n, &[])?;
    }
    let last = m.queues.last().ok_or_else(|| fail("no queue"))?;
    buf.read(last, &mut out, &[])?;
    let k = 2 * u32::try_from(m.queues.len())?;
    assert_eq!(out, data.iter().map(|x| x + k).collect::<Vec<_>>());
    Ok(())
}

device_test!(commands_on_one_device_wait_for_gated_commands_on_the_other);
/// With device A's command held back by a user event, device B's command on the same buffer
/// waits for it: a migration after a kernel, a migration with undefined contents after a read,
/// a copy and a kernel after a kernel. (The suite's other tests cannot tell: there A's command
/// has finished before B's is enqueued, so they pass without the ordering.)
fn commands_on_one_device_wait_for_gated_commands_on_the_other(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let n = 1 << 12;
    let program = Program::build_from_source(&m.context, SRC, "")?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let buf = Buffer::new(&m.context, MemFlags::READ_WRITE, n * 4)?;
    let other = Buffer::new(&m.context, MemFlags::READ_WRITE, n * 4)?;
    for case in [
        "migration after a kernel",
        "undefined-contents migration after a read",
        "copy after a kernel",
        "kernel after a kernel",
    ] {
        let gate = UserEvent::new(&m.context)?;
        let on_a = if case.contains("after a read") {
            enqueue_copy(a, &other, &buf, &[&*gate])?
        } else {
            let mut k = program.kernel("fill")?;
            k.set_arg(0, &buf)?.set_arg(1, &5u32)?;
            k.enqueue_nd_range(a, &[n], None, &[&*gate])?
        };
        a.flush()?;
        let on_b = match case {
            "migration after a kernel" => {
                cl_mem::enqueue_migrate_mem_objects(b, &[&buf], MigrationFlags::empty(), &[])?
            }
            "undefined-contents migration after a read" => cl_mem::enqueue_migrate_mem_objects(
                b,
                &[&buf],
                MigrationFlags::CONTENT_UNDEFINED,
                &[],
            )?,
            "copy after a kernel" => enqueue_copy(b, &other, &buf, &[])?,
            _ => {
                let mut k = program.kernel("add")?;
                k.set_arg(0, &buf)?.set_arg(1, &1u32)?;
                k.enqueue_nd_range(b, &[n], None, &[])?
            }
        };
        b.flush()?;
        std::thread::sleep(std::time::Duration::from_millis(50));
        let held = on_b.status()? != EventStatus::Complete;
        gate.set_complete()?;
        on_b.wait()?;
        on_a.wait()?;
        if !held {
            return Err(fail(format!(
                "{case}: device B's command completed while device A's was held back"
            )));
        }
    }
    let mut out = vec![0u32; n];
    buf.read(b, &mut out, &[])?;
    assert_eq!(out, filled(6, n), "fill(5) on A, then add(1) on B");
    Ok(())
}

device_test!(migration_between_devices_keeps_data_and_order);
/// `enqueue_migrate_mem_objects` on device B right after a kernel on device A (no wait list)
/// moves A's result; a migration with undefined contents is ordered after pending reads too, and
/// is refused while the host has the buffer mapped.
fn migration_between_devices_keeps_data_and_order(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let n = 1 << 16;
    let buf = Buffer::new(&m.context, MemFlags::READ_WRITE, n * 4)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    kernel_on(a, "fill", &buf, 3, n, &[])?;
    cl_mem::enqueue_migrate_mem_objects(b, &[&buf], MigrationFlags::empty(), &[])?;
    kernel_on(b, "add", &buf, 1, n, &[])?;
    let mut out = vec![0u32; n];
    buf.read(b, &mut out, &[])?;
    assert_eq!(out, filled(4, n));
    // Back to A, then to the host.
    cl_mem::enqueue_migrate_mem_objects(a, &[&buf], MigrationFlags::empty(), &[])?.wait()?;
    cl_mem::enqueue_migrate_mem_objects(b, &[&buf], MigrationFlags::HOST, &[])?.wait()?;
    buf.read(a, &mut out, &[])?;
    assert_eq!(out, filled(4, n));
    // Undefined contents: then the data is whatever the next write makes it.
    cl_mem::enqueue_migrate_mem_objects(a, &[&buf], MigrationFlags::CONTENT_UNDEFINED, &[])?;
    kernel_on(a, "fill", &buf, 9, n, &[])?;
    buf.read(b, &mut out, &[])?;
    assert_eq!(out, filled(9, n));
    // Refused while mapped.
    let map = buf.map::<u32, _>(a, cl_mem::ReadOnly, ..16, &[])?;
    match cl_mem::enqueue_migrate_mem_objects(b, &[&buf], MigrationFlags::CONTENT_UNDEFINED, &[]) {
        Err(Error::Mapped(_)) => {}
        other => return Err(fail(format!("migration of a mapped buffer: {other:?}"))),
    }
    assert_eq!(map[..4], [9, 10, 11, 12]);
    drop(map);
    Ok(())
}

device_test!(sub_buffers_work_on_every_device);
/// A sub-buffer at an origin every device accepts is usable on every device's queue; the
/// alignment of the context is the largest of its devices'.
fn sub_buffers_work_on_every_device(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let align = m
        .context
        .devices()
        .iter()
        .map(Device::base_addr_align)
        .max()
        .unwrap_or(1);
    let n = 256usize;
    let buf = Buffer::new(&m.context, MemFlags::READ_WRITE, align + n * 4)?;
    assert_eq!(
        buf.sub_buffer_alignment()?,
        align,
        "the context's sub-buffer alignment is its devices' largest"
    );
    let sub = buf.sub_buffer_range(align..align + n * 4)?;
    for (i, q) in m.queues.iter().enumerate() {
        kernel_on(q, "fill", &sub, u32::try_from(i * 1000)?, n, &[])?;
        let mut out = vec![0u32; n];
        buf.read(q, &mut out, Transfer::default().src_offset(align))?;
        assert_eq!(out, filled(u32::try_from(i * 1000)?, n));
    }
    // An origin no device accepts is refused before the driver.
    if align > 1 {
        match buf.sub_buffer_range(align / 2..align / 2 + 16) {
            Err(Error::Misaligned { .. }) => {}
            other => return Err(fail(format!("misaligned origin: {other:?}"))),
        }
    }
    Ok(())
}

device_test!(images_and_svm_cross_devices);
/// Images and coarse-grain SVM, where every device of the context has them: written through
/// device A, used on device B.
fn images_and_svm_cross_devices(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let mut ran = Vec::new();
    let all_images = m
        .context
        .devices()
        .iter()
        .map(Device::image_support)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .all(|x| x);
    let pocl_subdevices = dev.platform_name().contains("Portable Computing Language")
        && dev.device.parent_device()?.is_none()
        && m.context.devices()[0].parent_device()?.is_some();
    let fmt = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt32);
    match Image::new(&m.context, MemFlags::READ_WRITE, fmt, &ImageDesc::d2(8, 4)) {
        Ok(img) => {
            let data: Vec<u32> = (0..32).collect();
            println!("    image: written on A, read on B");
            img.write(a, &data, Transfer::default().rect(Rect::new([8, 4, 1])))?;
            assert_eq!(img.to_vec::<u32>(b)?, data);
            ran.push("images");
        }
        // PoCL aborts on images of a context of sub-devices: refused (docs/DEVICES.md).
        Err(Error::Unsupported { .. }) if !all_images || pocl_subdevices => {}
        Err(e) => return Err(e.into()),
    }
    match SvmArray::<u32, Coarse>::new(a, 64) {
        Ok(mut s) => {
            println!("    coarse-grain SVM: mapped on A");
            s.with_map(
                a,
                cl_mem::MapFlags::READ | cl_mem::MapFlags::WRITE,
                ..,
                |v| {
                    for (i, x) in v.iter_mut().enumerate() {
                        *x = u32::try_from(i).unwrap_or(0);
                    }
                },
            )?;
            let program = Program::build_from_source(&m.context, SRC, "")?;
            let mut k = program.kernel("add")?;
            k.set_arg(0, &s)?.set_arg(1, &5u32)?;
            println!("    coarse-grain SVM: kernel on B");
            k.enqueue_nd_range(b, &[64], None, &[])?.wait()?;
            drop(k);
            println!("    coarse-grain SVM: mapped on A again");
            let back = s.with_map(a, cl_mem::ReadOnly, .., <[u32]>::to_vec)?;
            assert_eq!(back, (5..69).collect::<Vec<u32>>());
            ran.push("svm");
        }
        // NVIDIA crashes in clEnqueueSVMMap on SVM of a context of two GPUs: refused
        // (repro/nvidia_two_gpu_image_svm.c, docs/DEVICES.md#nvidia-multi-gpu-svm).
        Err(Error::Unsupported { needs, .. }) => {
            if dev.platform_name().contains("NVIDIA") {
                assert!(needs.contains("clEnqueueSVMMap"), "{needs}");
                println!("    coarse-grain SVM refused: {needs}");
            }
        }
        Err(e) => return Err(e.into()),
    }
    if ran.is_empty() {
        return Err(skip(
            "neither images nor coarse-grain SVM on every device of the context",
        ));
    }
    Ok(())
}

device_test!(pools_serve_every_device);
/// One shared pool (blocks used on every device) and per-device pools with per-device figures.
fn pools_serve_every_device(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let n = 1024;
    // Shared: allocated through A's allocator, written on B, read on A; reused from B's side.
    let shared = MemoryPool::new(ImmediateAllocator::new(a, MemFlags::READ_WRITE)?);
    let blk = shared.allocate(n * 4)?;
    kernel_on(b, "fill", &blk, 5, n, &[])?;
    let mut out = vec![0u32; n];
    blk.read(a, &mut out, &[])?;
    assert_eq!(out, filled(5, n));
    drop(blk);
    let again = shared.allocate(n * 4)?;
    kernel_on(b, "add", &again, 1, n, &[])?;
    again.read(b, &mut out, &[])?;
    assert_eq!(out, filled(6, n));
    assert_eq!((shared.stats().hits, shared.stats().misses), (1, 1));
    drop(again);
    // Per device.
    let pools = DevicePools::new(&m.queues, MemFlags::READ_WRITE)?;
    let x = pools.allocate(a, n * 4)?;
    let y = pools.allocate(b, 3 * n * 4)?;
    kernel_on(a, "fill", &x, 1, n, &[])?;
    kernel_on(b, "fill", &y, 2, 3 * n, &[])?;
    // Cross use: A's block updated on B.
    kernel_on(b, "add", &x, 10, n, &[])?;
    x.read(a, &mut out, &[])?;
    assert_eq!(out, filled(11, n));
    drop((x, y));
    let _x2 = pools.allocate(a, n * 4)?;
    let stats: Vec<_> = pools.pools().iter().map(|(_, p)| p.stats()).collect();
    assert_eq!(stats.len(), m.queues.len());
    assert_eq!((stats[0].hits, stats[0].misses), (1, 1));
    assert_eq!((stats[1].hits, stats[1].misses), (0, 1));
    assert_eq!(stats[1].held_blocks, 1);
    assert_eq!(stats.iter().map(|s| s.misses).sum::<u64>(), 2);
    // Bad input.
    for (what, r) in [
        (
            "no queue",
            DevicePools::new(&[], MemFlags::READ_WRITE).map(drop),
        ),
        (
            "two queues on one device",
            DevicePools::new(&[a.clone(), a.clone()], MemFlags::READ_WRITE).map(drop),
        ),
        (
            "queues of two contexts",
            DevicePools::new(&[a.clone(), dev.queue()], MemFlags::READ_WRITE).map(drop),
        ),
    ] {
        if !matches!(r, Err(Error::InvalidArgument(_))) {
            return Err(fail(format!("{what}: {r:?}")));
        }
    }
    let one = DevicePools::new(std::slice::from_ref(a), MemFlags::READ_WRITE)?;
    if one.allocate(b, 64).is_ok() {
        return Err(fail("a queue of a device without a pool was served"));
    }
    // A queue on the same (interned) device in another context: refused, nothing counted.
    let elsewhere = Context::new(&[*a.device()])?;
    let foreign = Queue::new(&elsewhere, a.device())?;
    let before = one.pools()[0].1.stats().upstream_allocations;
    if one.allocate(&foreign, 64).is_ok() {
        return Err(fail("a queue of another context was served"));
    }
    assert_eq!(one.pools()[0].1.stats().upstream_allocations, before);
    Ok(())
}

/// The staged path between devices with small chunks, so that sizes and offsets fall on and
/// beside chunk edges (4 KiB chunks, 3 pinned chunks in flight: slots are reused).
fn staged_between() -> TransferOptions {
    TransferOptions {
        path: TransferPath::Staged,
        chunk_bytes: 4096,
        threads: 1,
        depth: 3,
    }
}

fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from((i * 7 + seed) % 251).unwrap_or(0))
        .collect()
}

device_test!(staged_copies_between_devices_are_byte_exact);
/// Copies from a buffer written on device A into one on device B's queue, through pinned chunks:
/// odd sizes, offsets on both sides and sizes at chunk edges, sub-buffers; every byte lands once
/// and the bytes around the range are untouched.
fn staged_copies_between_devices_are_byte_exact(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let n = 5 * 4096 + 123;
    let data = pattern(n, 1);
    let src = Buffer::new(&m.context, MemFlags::READ_WRITE, n)?;
    let dst = Buffer::new(&m.context, MemFlags::READ_WRITE, n)?;
    for (count, so, d_o) in [
        (1usize, 0usize, 0usize),
        (4095, 1, 3),
        (4096, 0, 0),
        (4097, 4095, 1),
        (3 * 4096 + 17, 5, 4096),
        (n, 0, 0),
        (n - 4099, 4099, 2),
    ] {
        src.write(a, &data, &[])?;
        dst.write(b, &vec![0xEEu8; n], &[])?;
        enqueue_copy(
            b,
            &dst,
            &src,
            Transfer::default()
                .src_offset(so)
                .dst_offset(d_o)
                .byte_count(count)
                .options(staged_between()),
        )?
        .wait()?;
        let out = dst.read_vec_of::<u8>(a, n)?;
        let mut want = vec![0xEEu8; n];
        want[d_o..d_o + count].copy_from_slice(&data[so..so + count]);
        if out != want {
            let at = out.iter().zip(&want).position(|(x, y)| x != y);
            return Err(fail(format!(
                "{count} bytes from {so} to {d_o}: first wrong byte at {at:?}"
            )));
        }
    }
    // The default `count` (the smaller remaining size), and the same through `Auto`, which
    // takes the driver's path on the CPU runtimes, for comparison.
    let half = Buffer::new(&m.context, MemFlags::READ_WRITE, n / 2)?;
    enqueue_copy(
        b,
        &half,
        &src,
        Transfer::default().src_offset(7).options(staged_between()),
    )?
    .wait()?;
    assert_eq!(half.read_vec_of::<u8>(b, n / 2)?, data[7..7 + n / 2]);
    enqueue_copy(a, &half, &src, Transfer::default().src_offset(9))?.wait()?;
    assert_eq!(half.read_vec_of::<u8>(b, n / 2)?, data[9..9 + n / 2]);
    // A sub-buffer on either side (its origin aligned for every device).
    let align = m
        .queues
        .iter()
        .map(|q| q.device().base_addr_align())
        .max()
        .unwrap_or(128);
    if align + 8192 <= n {
        let sub_src = src.sub_buffer(align, 8192, MemFlags::READ_WRITE)?;
        let sub_dst = dst.sub_buffer(align, 8192, MemFlags::READ_WRITE)?;
        enqueue_copy(
            b,
            &sub_dst,
            &sub_src,
            Transfer::default()
                .src_offset(3)
                .dst_offset(1)
                .byte_count(8000)
                .options(staged_between()),
        )?
        .wait()?;
        let out = dst.read_vec_of::<u8>(a, n)?;
        assert_eq!(out[align + 1..align + 8001], data[align + 3..align + 8003]);
    }
    Ok(())
}

device_test!(staged_copies_between_devices_wait_for_gated_commands_on_both);
/// A staged copy returns at once, like the driver's: with the source's writer held back on
/// device A and an earlier command on the destination held back on device B, the copy waits for
/// both, and the data is the held-back write's.
fn staged_copies_between_devices_wait_for_gated_commands_on_both(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let n = 3 * 4096 + 5;
    let src = Buffer::new(&m.context, MemFlags::READ_WRITE, n)?;
    let dst = Buffer::new(&m.context, MemFlags::READ_WRITE, n)?;
    src.write(a, &vec![1u8; n], &[])?;
    dst.write(b, &vec![2u8; n], &[])?;
    let data = pattern(n, 3);
    for gated in ["source", "destination", "both"] {
        let gate_a = UserEvent::new(&m.context)?;
        let gate_b = UserEvent::new(&m.context)?;
        let on_a = src.enqueue_write(a, data.clone(), &[&*gate_a])?;
        let on_b = dst.fill(b, &[9u8], &[&*gate_b])?;
        a.flush()?;
        b.flush()?;
        // The user events are set after the call: a copy that blocked would never return.
        let copy = enqueue_copy(b, &dst, &src, Transfer::default().options(staged_between()))?;
        b.flush()?;
        let open_first = |g: &str| -> Result<(), Error> {
            match g {
                "source" => gate_b.set_complete(),
                "destination" => gate_a.set_complete(),
                _ => Ok(()),
            }
        };
        open_first(gated)?;
        std::thread::sleep(std::time::Duration::from_millis(50));
        let held = copy.status()? != EventStatus::Complete;
        if gated != "destination" {
            gate_a.set_complete()?;
        }
        if gated != "source" {
            gate_b.set_complete()?;
        }
        copy.wait()?;
        on_b.wait()?;
        on_a.wait()?;
        if !held {
            return Err(fail(format!(
                "the staged copy completed while the {gated} side's command was held back"
            )));
        }
        let out = dst.read_vec_of::<u8>(a, n)?;
        if out != data {
            return Err(fail(format!(
                "{gated}: the copy did not carry the held-back write"
            )));
        }
        dst.write(b, &vec![2u8; n], &[])?;
    }
    Ok(())
}

device_test!(gated_staged_copies_one_after_another_both_return);
/// Two staged copies behind one user event both return before it is set, and a gated staged
/// migration of several buffers too: new pinned chunks are mapped on a queue of their own, never
/// behind the first copy's gated chunk reads (the second call blocked there forever).
fn gated_staged_copies_one_after_another_both_return(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let n = 8192 + 3;
    let mut opts = staged_between();
    opts.chunk_bytes = 4096;
    opts.threads = 1;
    opts.depth = 2;
    let srcs = [pattern(n, 1), pattern(n, 2), pattern(n, 3)];
    let mut pairs = Vec::new();
    for data in &srcs {
        let src = Buffer::new(&m.context, MemFlags::READ_WRITE, n)?;
        src.write(a, data, &[])?;
        pairs.push((src, Buffer::new(&m.context, MemFlags::READ_WRITE, n)?));
    }
    // Fresh chunks each time: the cache may hold fewer than the calls take.
    let gate = UserEvent::new(&m.context)?;
    let mut copies = Vec::new();
    let wait = [&*gate];
    for (src, dst) in &pairs {
        let o = Transfer::default().wait(&wait).options(opts);
        copies.push(enqueue_copy(b, dst, src, o)?);
    }
    gate.set_complete()?;
    for (c, ((_, dst), data)) in copies.iter().zip(pairs.iter().zip(&srcs)) {
        c.wait()?;
        if &dst.read_vec_of::<u8>(b, n)? != data {
            return Err(fail("a gated staged copy carried the wrong bytes"));
        }
    }
    Ok(())
}

device_test!(staged_copies_between_devices_are_refused_under_a_map);
/// A live writable map of the destination or a live map of the source's bytes refuses a staged
/// copy before any command (`Error::Mapped`), and a map taken after the copy sees all of it.
fn staged_copies_between_devices_are_refused_under_a_map(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let n = 4 * 4096;
    let src = Buffer::new(&m.context, MemFlags::READ_WRITE, n)?;
    let dst = Buffer::new(&m.context, MemFlags::READ_WRITE, n)?;
    let data = pattern(n, 5);
    src.write(a, &data, &[])?;
    dst.write(b, &vec![0u8; n], &[])?;
    {
        let _map = dst.map::<u8, _>(a, ReadOnly, 4096..8192, &[])?;
        match enqueue_copy(b, &dst, &src, Transfer::default().options(staged_between())) {
            Err(Error::Mapped(_)) => {}
            other => return Err(fail(format!("copy into mapped bytes: {other:?}"))),
        }
    }
    {
        let _map = src.map::<u8, _>(a, cl_mem::MapFlags::WRITE, n - 1.., &[])?;
        match enqueue_copy(b, &dst, &src, Transfer::default().options(staged_between())) {
            Err(Error::Mapped(_)) => {}
            other => return Err(fail(format!("copy from writably mapped bytes: {other:?}"))),
        }
    }
    // Nothing was enqueued by the refused copies: the destination is unchanged.
    assert_eq!(dst.read_vec_of::<u8>(b, n)?, vec![0u8; n]);
    enqueue_copy(b, &dst, &src, Transfer::default().options(staged_between()))?;
    // No wait: the map waits for the last chunk on its own.
    let seen = dst.map::<u8, _>(a, ReadOnly, .., &[])?.to_vec();
    assert_eq!(seen, data, "a map after the copy saw part of it");
    Ok(())
}

device_test!(staged_migration_between_devices_keeps_data_and_order);
/// A buffer written on device A and migrated to device B through pinned chunks arrives whole,
/// and commands on B after the migration (no wait list) see it; back to A the same way.
fn staged_migration_between_devices_keeps_data_and_order(dev: &TestDevice) -> TestResult {
    let m = multi(dev)?;
    let (a, b) = (&m.queues[0], &m.queues[1]);
    let n = 3 * 1024 + 7;
    let buf = Buffer::new(&m.context, MemFlags::READ_WRITE, n * 4)?;
    kernel_on(a, "fill", &buf, 3, n, &[])?;
    enqueue_migrate_mem_objects(
        b,
        &[&buf],
        MigrationFlags::empty(),
        Transfer::default().options(staged_between()),
    )?;
    kernel_on(b, "add", &buf, 1, n, &[])?;
    let mut out = vec![0u32; n];
    buf.read(b, &mut out, &[])?;
    assert_eq!(out, filled(4, n), "A's fill, migrated, then B's add");
    let other = Buffer::new(&m.context, MemFlags::READ_WRITE, 64)?;
    other.write(a, &[5u8; 64], &[])?;
    // Two objects, one on each side of the move; then the first back to A.
    enqueue_migrate_mem_objects(
        a,
        &[&buf, &other],
        MigrationFlags::empty(),
        Transfer::default().options(staged_between()),
    )?;
    kernel_on(a, "add", &buf, 2, n, &[])?;
    buf.read(a, &mut out, &[])?;
    assert_eq!(out, filled(6, n));
    assert_eq!(other.read_vec_of::<u8>(b, 64)?, vec![5u8; 64]);
    Ok(())
}
