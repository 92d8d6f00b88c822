//! Bad input to buffer calls is a typed error decided before the driver, and leaks no reference.

use crate::common::{base_align, SCALE_KERNELS};
use cl_mem::{
    enqueue_copy, enqueue_migrate_mem_objects, AddressingMode, Buffer, ClError, Context, Error,
    Event, FilterMode, LocalMemory, MapFlags, MemFlags, MemObject, MigrationFlags, NullMem,
    PinnedMemory, Program, Queue, RawHandle, Rect, Sampler, Transfer, UserEvent,
};
use cl_tests::{device_test, TestDevice, TestResult};

device_test!(bad_input_matrix_is_refused_before_the_driver);
/// Every call of the matrix must fail with a typed error decided before the driver (never
/// `Error::Cl`), without panicking; afterwards no reference, event or map may be left over.
fn bad_input_matrix_is_refused_before_the_driver(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context().clone();
    let other_ctx = Context::new(&[dev.device])?;
    let other_q = Queue::new(&other_ctx, &dev.device)?;
    let ctx_refs = ctx.reference_count()?;
    let events_before = cl_mem::live_objects().events;
    let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, 256)?;
    let src = Buffer::new(&ctx, MemFlags::READ_WRITE, 64)?;
    let foreign = Buffer::new(&other_ctx, MemFlags::READ_WRITE, 64)?;
    let foreign_event = UserEvent::new(&other_ctx)?;
    let program = Program::build_from_source(&ctx, SCALE_KERNELS, "")?;
    let mut k = program.kernel("scale")?;
    let local = program.kernel("fill_local")?;
    let mut host = vec![0u8; 512];
    let mut results: Vec<(String, cl_mem::Result<()>)> = Vec::new();
    let mut push = |what: String, r: cl_mem::Result<()>| results.push((what, r));
    let big = [
        usize::MAX,
        usize::MAX - 3,
        usize::MAX / 2,
        1 << 40,
        257,
        256,
        253,
    ];
    // Host transfers past the end or overflowing: 7 offsets x 4 operations.
    for &off in &big {
        push(
            format!("read at {off}"),
            buf.read(&q, &mut host[..4], Transfer::default().src_offset(off))
                .map(drop),
        );
        push(
            format!("write at {off}"),
            buf.write(&q, &host[..4], Transfer::default().dst_offset(off))
                .map(drop),
        );
        push(
            format!("enqueue_read at {off}"),
            buf.enqueue_read(&q, vec![0u8; 4], Transfer::default().src_offset(off))
                .map(drop),
        );
        push(
            format!("enqueue_write at {off}"),
            buf.enqueue_write(&q, vec![0u8; 4], Transfer::default().dst_offset(off))
                .map(drop),
        );
    }
    // Device-side ranges: (offset, length) pairs past the end or overflowing, 8 x 4 operations.
    let pairs = [
        (0usize, 260usize),
        (4, 256),
        (256, 4),
        (usize::MAX - 3, 4),
        (4, usize::MAX - 3),
        (usize::MAX - 3, usize::MAX - 3),
        (200, 100),
        (1 << 40, 4),
    ];
    for &(off, len) in &pairs {
        push(
            format!("fill {off}+{len}"),
            buf.fill(
                &q,
                &[0u32],
                Transfer::default().dst_offset(off).byte_count(len),
            )
            .map(drop),
        );
        push(
            format!("copy into {off}+{len}"),
            enqueue_copy(
                &q,
                &buf,
                &src,
                Transfer::default().dst_offset(off).byte_count(len),
            )
            .map(drop),
        );
        push(
            format!("copy from {off}+{len}"),
            enqueue_copy(
                &q,
                &src,
                &buf,
                Transfer::default().src_offset(off).byte_count(len),
            )
            .map(drop),
        );
        push(
            format!("sub-buffer {off}+{len}"),
            buf.sub_buffer(off, len, MemFlags::empty()).map(drop),
        );
    }
    // Map ranges (elements): 5 ranges x 2 maps.
    let ranges = [
        (0usize, 65usize),
        (63, 65),
        (usize::MAX - 1, usize::MAX),
        (5, 3),
        (64, 64),
    ];
    for &(a, b) in &ranges {
        push(
            format!("map_read {a}..{b}"),
            buf.map::<u32, _>(&q, cl_mem::ReadOnly, a..b, &[]).map(drop),
        );
        push(
            format!("map_mut {a}..{b}"),
            buf.map::<u32, _>(&q, MapFlags::WRITE, a..b, &[]).map(drop),
        );
    }
    // Fill patterns and misaligned fills: 9.
    for n in [0usize, 3, 5, 6, 7, 129, 256] {
        push(
            format!("fill pattern of {n} bytes"),
            buf.fill(&q, &vec![0u8; n], Transfer::default().byte_count(0))
                .map(drop),
        );
    }
    push(
        "fill misaligned offset".into(),
        buf.fill(&q, &[0u32], Transfer::default().dst_offset(2).byte_count(4))
            .map(drop),
    );
    push(
        "fill misaligned size".into(),
        buf.fill(&q, &[0u32], Transfer::default().byte_count(6))
            .map(drop),
    );
    // Sub-buffer flags: 6.
    for flags in [
        MemFlags::USE_HOST_PTR,
        MemFlags::COPY_HOST_PTR,
        MemFlags::ALLOC_HOST_PTR,
        MemFlags::READ_ONLY | MemFlags::WRITE_ONLY,
        MemFlags::HOST_READ_ONLY | MemFlags::HOST_NO_ACCESS,
        MemFlags::KERNEL_READ_AND_WRITE,
    ] {
        push(
            format!("sub-buffer flags {flags:?}"),
            buf.sub_buffer(0, 16, flags).map(drop),
        );
    }
    // Rectangles with a zero or oversized region: 6 x 2.
    for region in [
        [0usize, 1, 1],
        [1, 0, 1],
        [1, 1, 0],
        [257, 1, 1],
        [16, 17, 1],
        [usize::MAX, 1, 1],
    ] {
        push(
            format!("write_rect {region:?}"),
            buf.write(
                &q,
                &host,
                Transfer::default().rect(cl_mem::Rect::new(region)),
            )
            .map(drop),
        );
        push(
            format!("read_rect {region:?}"),
            buf.read(
                &q,
                &mut host,
                Transfer::default().rect(cl_mem::Rect::new(region)),
            )
            .map(drop),
        );
    }
    // Overlapping copies within one buffer: 2.
    push(
        "overlapping copy".into(),
        enqueue_copy(
            &q,
            &buf,
            &buf,
            Transfer::default().dst_offset(4).byte_count(8),
        )
        .map(drop),
    );
    push(
        "overlapping copy backwards".into(),
        enqueue_copy(
            &q,
            &buf,
            &buf,
            Transfer::default().src_offset(8).byte_count(16),
        )
        .map(drop),
    );
    // Buffer sizes: 3.
    for size in [0usize, usize::MAX, 1 << 60] {
        push(
            format!("buffer of {size} bytes"),
            Buffer::new(&ctx, MemFlags::READ_WRITE, size).map(drop),
        );
    }
    // Kernel arguments of the wrong kind, for each of the four parameters: 4 x 6.
    let image_ok = dev.device.image_support()?;
    let sampler = if image_ok {
        Some(Sampler::new(
            &ctx,
            false,
            AddressingMode::None,
            FilterMode::Nearest,
        )?)
    } else {
        None
    };
    for index in 0..4u32 {
        let pointer = index < 2;
        if pointer {
            push(
                format!("u64 for arg {index}"),
                k.set_arg(index, &0x1234_5678u64).map(drop),
            );
            push(
                format!("u32 for arg {index}"),
                k.set_arg(index, &7u32).map(drop),
            );
            push(
                format!("[u8; 8] for arg {index}"),
                k.set_arg(index, &[1u8; 8]).map(drop),
            );
            push(
                format!("f32 for arg {index}"),
                k.set_arg(index, &1.0f32).map(drop),
            );
        } else {
            push(
                format!("buffer for arg {index}"),
                k.set_arg(index, &buf).map(drop),
            );
            push(
                format!("NullMem for arg {index}"),
                k.set_arg(index, &NullMem).map(drop),
            );
            push(
                format!("sub-buffer for arg {index}"),
                k.set_arg(index, &src).map(drop),
            );
            push(
                format!("foreign buffer for arg {index}"),
                k.set_arg(index, &foreign).map(drop),
            );
        }
        push(
            format!("local memory for arg {index}"),
            k.set_arg(index, &LocalMemory::new(64)).map(drop),
        );
        match &sampler {
            Some(s) => push(
                format!("sampler for arg {index}"),
                k.set_arg(index, s).map(drop),
            ),
            None => push(
                format!("empty local memory for arg {index}"),
                k.set_arg(index, &LocalMemory::new(0)).map(drop),
            ),
        }
    }
    // Indices past the end: 3. Foreign objects: 2.
    for index in [4u32, 5, u32::MAX] {
        push(
            format!("arg index {index}"),
            k.set_arg(index, &1u32).map(drop),
        );
    }
    push(
        "foreign buffer for a pointer".into(),
        k.set_arg(0, &foreign).map(drop),
    );
    push(
        "a buffer for a __local parameter".into(),
        local
            .program()
            .kernel(local.name())?
            .set_arg(0, &buf)
            .map(drop),
    );
    // Enqueue shapes, queues and wait lists: 8 (all arguments set first).
    k.set_arg(0, &buf)?
        .set_arg(1, &buf)?
        .set_arg(2, &1.0f32)?
        .set_arg(3, &0u32)?;
    let shapes: [(&[usize], Option<&[usize]>); 5] = [
        (&[], None),
        (&[1, 1, 1, 1], None),
        (&[16], Some(&[0])),
        (&[16, 16], Some(&[16])),
        (&[16, 16], Some(&[4, 0])),
    ];
    for (g, l) in shapes {
        push(
            format!("nd-range {g:?} / {l:?}"),
            k.enqueue_nd_range(&q, g, l, &[]).map(drop),
        );
    }
    push(
        "kernel on a foreign queue".into(),
        k.enqueue_nd_range(&other_q, &[16], None, &[]).map(drop),
    );
    push(
        "kernel after a foreign event".into(),
        k.enqueue_nd_range(&q, &[16], None, &[&foreign_event])
            .map(drop),
    );
    push(
        "marker after a foreign event".into(),
        q.enqueue_marker(&[&foreign_event]).map(drop),
    );
    // Transfers on a foreign queue or after a foreign event: 6.
    push(
        "read on a foreign queue".into(),
        buf.read(&other_q, &mut host[..4], &[]).map(drop),
    );
    push(
        "write on a foreign queue".into(),
        buf.write(&other_q, &host[..4], &[]).map(drop),
    );
    push(
        "fill on a foreign queue".into(),
        buf.fill(&other_q, &[0u32], Transfer::default().byte_count(4))
            .map(drop),
    );
    push(
        "read after a foreign event".into(),
        buf.read(&q, &mut host[..4], &[&*foreign_event]).map(drop),
    );
    push(
        "fill after a foreign event".into(),
        buf.fill(
            &q,
            &[0u32],
            Transfer::default().byte_count(4).wait(&[&foreign_event]),
        )
        .map(drop),
    );
    push(
        "copy after a foreign event".into(),
        enqueue_copy(&q, &buf, &src, &[&*foreign_event]).map(drop),
    );
    // Aliasing maps and commands under maps: 8.
    {
        let guard = buf.map::<u32, _>(&q, cl_mem::ReadOnly, 0..16, &[])?;
        push(
            "map_mut under map_read".into(),
            buf.map::<u32, _>(&q, MapFlags::WRITE, 8..9, &[]).map(drop),
        );
        push(
            "write under map_read".into(),
            buf.write(&q, &host[..4], &[]).map(drop),
        );
        push(
            "fill under map_read".into(),
            buf.fill(&q, &[0u32], Transfer::default().byte_count(4))
                .map(drop),
        );
        push(
            "copy into map_read".into(),
            enqueue_copy(&q, &buf, &src, &[]).map(drop),
        );
        push(
            "kernel writing under map_read".into(),
            k.enqueue_nd_range(&q, &[16], None, &[]).map(drop),
        );
        drop(guard);
        let guard = buf.map::<u32, _>(&q, MapFlags::WRITE, 0..16, &[])?;
        push(
            "map_read under map_mut".into(),
            buf.map::<u32, _>(&q, cl_mem::ReadOnly, 0..1, &[]).map(drop),
        );
        push(
            "read under map_mut".into(),
            buf.read(&q, &mut host[..4], &[]).map(drop),
        );
        push(
            "copy from map_mut".into(),
            enqueue_copy(&q, &src, &buf, &[]).map(drop),
        );
        drop(guard);
    }

    assert!(results.len() >= 150, "only {} inputs", results.len());
    let mut wrong = Vec::new();
    for (what, r) in &results {
        match r {
            Err(Error::Cl { .. }) | Err(Error::Build { .. }) | Ok(()) => {
                wrong.push(format!("{what}: {r:?}"))
            }
            Err(_) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "not refused before the driver:\n{}",
        wrong.join("\n")
    );
    // Nothing was left behind.
    foreign_event.set_complete()?;
    q.finish()?;
    drop((k, local, sampler));
    assert_eq!(buf.reference_count()?, 1);
    assert_eq!(src.reference_count()?, 1);
    assert_eq!(foreign.reference_count()?, 1);
    assert_eq!(buf.live_maps(), 0);
    drop((buf, src, foreign, foreign_event, other_q, program));
    assert_eq!(ctx.reference_count()?, ctx_refs);
    assert_eq!(cl_mem::live_objects().events, events_before);
    eprintln!("{} bad inputs refused", results.len());
    Ok(())
}

device_test!(bad_input_suite_leaks_no_references);
fn bad_input_suite_leaks_no_references(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context().clone();
    let ctx_refs = ctx.reference_count()?;
    let buf = Buffer::new(&ctx, MemFlags::READ_WRITE, 256)?;
    let other = Buffer::new(&ctx, MemFlags::READ_WRITE, 64)?;
    let mut host = [0u8; 512];
    let align = base_align(dev)?;
    let fq = dev.queue();
    let errors: Vec<Result<Event, Error>> = vec![
        buf.read(&q, &mut host[..100], Transfer::default().src_offset(200)),
        buf.write(&q, &host[..0], Transfer::default().dst_offset(257)),
        buf.fill(&q, &[[0u8; 3]], Transfer::default().byte_count(3)),
        buf.fill(&q, &[0u32], Transfer::default().dst_offset(1).byte_count(4)),
        enqueue_copy(&q, &buf, &other, Transfer::default().byte_count(65)),
        enqueue_copy(
            &q,
            &buf,
            &buf,
            Transfer::default().dst_offset(1).byte_count(8),
        ),
        buf.write(&q, &host, Transfer::default().rect(Rect::new([16, 17, 1]))),
        buf.read(
            &q,
            &mut host,
            Transfer::default().rect(Rect::new([16, 2, 1]).dst_pitches(8, 0)),
        ),
        enqueue_migrate_mem_objects(&q, &[], MigrationFlags::HOST, &[]),
        enqueue_copy(&q, &buf, &host[..], &[]),
        buf.enqueue_write(&q, vec![0u8; 2], Transfer::default().dst_offset(255))
            .map(|p| p.event().clone()),
        buf.map::<u8, _>(&q, cl_mem::ReadOnly, 0..300, &[])
            .map(|_| unreachable!()),
        buf.sub_buffer(1 % align.max(2), 8, MemFlags::empty())
            .map(|_| unreachable!()),
        buf.sub_buffer(0, 300, MemFlags::empty())
            .map(|_| unreachable!()),
        Buffer::new(&ctx, MemFlags::READ_WRITE, 0).map(|_| unreachable!()),
        // A queue of another context, for each operation.
        buf.read(&fq, &mut host[..4], &[]),
        buf.write(&fq, &host[..4], &[]),
        buf.fill(&fq, &[0u8], Transfer::default().byte_count(4)),
        enqueue_copy(&fq, &buf, &other, &[]),
        buf.write(&fq, &host, Transfer::default().rect(Rect::new([4, 1, 1]))),
        buf.read(
            &fq,
            &mut host,
            Transfer::default().rect(Rect::new([4, 1, 1])),
        ),
        enqueue_copy(
            &fq,
            &buf,
            &other,
            Transfer::default().rect(Rect::new([4, 1, 1])),
        ),
        enqueue_migrate_mem_objects(&fq, &[&buf], MigrationFlags::empty(), &[]),
        buf.enqueue_read(&fq, vec![0u8; 4], &[])
            .map(|p| p.event().clone()),
        buf.map::<u8, _>(&fq, cl_mem::ReadOnly, .., &[])
            .map(|_| unreachable!()),
        // Patterns, pitches, flags, offsets, sizes.
        buf.fill(&q, &[0u8; 256], Transfer::default().byte_count(256)),
        buf.fill(&q, &[0u8; 2], Transfer::default().byte_count(255)),
        enqueue_copy(
            &q,
            &buf,
            &buf,
            Transfer::default().rect(
                Rect::new([2, 2, 1])
                    .src_pitches(4, 0)
                    .dst_pitches(8, 0)
                    .dst_origin([0, 8, 0]),
            ),
        ),
        buf.map::<u8, _>(&q, MapFlags::READ, .., &[])
            .map(|_| unreachable!()),
        buf.map::<u8, _>(
            &q,
            MapFlags::WRITE_INVALIDATE_REGION | MapFlags::READ,
            ..,
            &[],
        )
        .map(|_| unreachable!()),
        buf.sub_buffer(0, 8, MemFlags::COPY_HOST_PTR)
            .map(|_| unreachable!()),
        buf.sub_buffer(0, 8, MemFlags::READ_ONLY | MemFlags::WRITE_ONLY)
            .map(|_| unreachable!()),
        Buffer::use_host_memory(&ctx, MemFlags::ALLOC_HOST_PTR, vec![0u8; 4])
            .map(|_| unreachable!()),
        enqueue_copy(
            &q,
            &buf,
            &host[..],
            Transfer {
                src_offset: 600,
                ..Transfer::default()
            },
        ),
        enqueue_copy(
            &q,
            &buf,
            &other,
            Transfer {
                byte_count: Some(65),
                ..Transfer::default()
            },
        ),
        PinnedMemory::<u8>::new(&q, 0).map(|_| unreachable!()),
    ];
    for (i, r) in errors.iter().enumerate() {
        let e = r
            .as_ref()
            .err()
            .unwrap_or_else(|| panic!("bad input {i} was accepted"));
        assert!(
            e.cl_status().is_none(),
            "bad input {i} reached the driver: {e}"
        );
    }
    drop(errors);
    // A real driver error, for contrast: it is reported with the call name, then nothing leaks.
    let e = ClError::InvalidValue;
    assert_eq!(
        Error::Cl {
            call: "clEnqueueFillBuffer",
            status: e
        }
        .to_string(),
        "clEnqueueFillBuffer failed: CL_INVALID_VALUE"
    );
    q.finish()?;
    assert_eq!(buf.reference_count()?, 1);
    assert_eq!(other.reference_count()?, 1);
    assert_eq!(buf.mem_info()?.map_count, 0);
    drop(buf);
    drop(other);
    assert_eq!(ctx.reference_count()?, ctx_refs);
    Ok(())
}
