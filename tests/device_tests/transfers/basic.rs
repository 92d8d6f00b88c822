//! Reads, writes, copies and fills of buffers: byte counts, overlap, host access flags, endpoints.

#![allow(
    clippy::cast_possible_truncation,
    reason = "test sizes and indices are small, known values"
)]

use crate::common::{add, base_align, iota, program};
use cl_mem::{
    enqueue_copy, enqueue_copy_buffer_p2p_amd, Buffer, Error, EventStatus, MapFlags, MemFlags,
    Transfer,
};
use cl_tests::{device_test, skip, TestDevice, TestResult};

device_test!(buffer_read_after_write_roundtrips);
fn buffer_read_after_write_roundtrips(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let buf = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, 256)?;
    let data: Vec<u8> = (0..=255).collect();
    buf.write(&q, &data, &[])?;
    let mut out = vec![0u8; 256];
    buf.read(&q, &mut out, &[])?;
    assert_eq!(out, data);
    // Offsets address bytes; Pod slices of u64.
    buf.write(
        &q,
        &[0x1122_3344_5566_7788u64],
        Transfer::default().dst_offset(8),
    )?;
    let mut word = [0u64; 1];
    buf.read(&q, &mut word, Transfer::default().src_offset(8))?;
    assert_eq!(word[0], 0x1122_3344_5566_7788);
    let mut head = [0u8; 8];
    buf.read(&q, &mut head, &[])?;
    assert_eq!(head, [0, 1, 2, 3, 4, 5, 6, 7]);
    // Empty transfers touch nothing and still give an event.
    buf.write(&q, &[0u8; 0], Transfer::default().dst_offset(256))?
        .wait()?;
    // Whole reads into new vectors; past the end (even absurdly) is a typed error before any
    // allocation, not an abort.
    assert_eq!(buf.to_vec::<u8>(&q)?, {
        let mut w = data.clone();
        w[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_ne_bytes());
        w
    });
    assert_eq!(buf.to_vec::<u64>(&q)?.len(), 32);
    assert!(matches!(
        buf.read_vec_of::<u8>(&q, 257),
        Err(cl_mem::Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.read_vec_of::<u64>(&q, usize::MAX),
        Err(cl_mem::Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.read_vec_of::<u8>(&q, usize::MAX),
        Err(cl_mem::Error::OutOfBounds { .. })
    ));
    Ok(())
}

device_test!(kernel_reads_host_writes_and_host_reads_kernel_writes);
fn kernel_reads_host_writes_and_host_reads_kernel_writes(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let p = program(&q)?;
    let n = 500;
    let src = Buffer::new(q.context(), MemFlags::READ_ONLY, n * 4)?;
    let dst = Buffer::new(q.context(), MemFlags::WRITE_ONLY, n * 4)?;
    let data: Vec<i32> = (0..n as i32).map(|i| i * 3 - 700).collect();
    src.write(&q, &data, &[])?;
    let mut k = p.kernel("scale_into")?;
    k.set_arg(0, &src)?.set_arg(1, &dst)?.set_arg(2, &-2i32)?;
    let done = k.enqueue_nd_range(&q, &[n], None, &[])?;
    let mut out = vec![0i32; n];
    dst.read(&q, &mut out, &[&done])?;
    for i in 0..n {
        assert_eq!(out[i], data[i] * -2, "element {i}");
    }
    // Partial read at an offset.
    let mut tail = [0i32; 10];
    dst.read(&q, &mut tail, Transfer::default().src_offset((n - 10) * 4))?;
    assert_eq!(&tail[..], &out[n - 10..]);
    Ok(())
}

device_test!(fill_every_pattern_size);
fn fill_every_pattern_size(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let size = 128 * 10;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, size)?;
    for p in [1usize, 2, 4, 8, 16, 32, 64, 128] {
        buf.fill(&q, &[0xEEu8], Transfer::default().byte_count(size))?;
        let pattern: Vec<u8> = (0..p).map(|i| (i * 7 + p) as u8).collect();
        let (offset, len) = (2 * p, 5 * p);
        buf.fill(
            &q,
            &pattern,
            Transfer::default().dst_offset(offset).byte_count(len),
        )?;
        let out = buf.to_vec::<u8>(&q)?;
        for (i, &v) in out.iter().enumerate() {
            let want = if (offset..offset + len).contains(&i) {
                pattern[(i - offset) % p]
            } else {
                0xEE
            };
            assert_eq!(v, want, "pattern size {p}, byte {i}");
        }
    }
    // Typed patterns: a float, a 16-byte vector, over the whole buffer.
    buf.fill(&q, &[1.5f32], &[])?;
    assert!(buf.to_vec::<f32>(&q)?.iter().all(|&x| x == 1.5));
    buf.fill(&q, &[[1u32, 2, 3, 4]], &[])?;
    let v = buf.to_vec::<[u32; 4]>(&q)?;
    assert!(v.iter().all(|x| *x == [1, 2, 3, 4]));
    // A fill of a sub-buffer stays inside it, and a kernel sees it.
    let align = base_align(dev)?;
    let big = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &vec![0i32; align / 2])?;
    let sub = big.sub_buffer_range(align..)?;
    sub.fill(&q, &[9i32], &[])?;
    let p = program(&q)?;
    add(&q, &p, &sub, 1, align / 4)?;
    let out = big.to_vec::<i32>(&q)?;
    assert!(out[..align / 4].iter().all(|&x| x == 0) && out[align / 4..].iter().all(|&x| x == 10));
    // A zero-size fill is a no-op.
    buf.fill(&q, &[0u8], Transfer::default().byte_count(0))?
        .wait()?;
    Ok(())
}

device_test!(fill_rejects_bad_patterns_and_ranges);
fn fill_rejects_bad_patterns_and_ranges(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, 256)?;
    assert!(matches!(
        buf.fill(&q, &[1u8, 2, 3], Transfer::default().byte_count(3)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.fill(&q, &[0u8; 256], Transfer::default().byte_count(256)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.fill(&q, &[0u8; 0], Transfer::default().byte_count(0)),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(
        buf.fill(&q, &[1u32], Transfer::default().dst_offset(2).byte_count(8))
            .unwrap_err(),
        Error::Misaligned {
            what: "fill offset",
            value: 2,
            alignment: 4
        }
    );
    assert_eq!(
        buf.fill(&q, &[1u32], Transfer::default().dst_offset(4).byte_count(6))
            .unwrap_err(),
        Error::Misaligned {
            what: "fill size",
            value: 6,
            alignment: 4
        }
    );
    assert!(matches!(
        buf.fill(
            &q,
            &[1u32],
            Transfer::default().dst_offset(252).byte_count(8)
        ),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.fill(
            &q,
            &[1u8],
            Transfer::default().dst_offset(usize::MAX).byte_count(2)
        ),
        Err(Error::OutOfBounds { .. })
    ));
    let other = dev.queue();
    assert!(matches!(
        buf.fill(&other, &[1u8], Transfer::default().byte_count(1)),
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

device_test!(copy_default_count_is_the_smaller_size);
fn copy_default_count_is_the_smaller_size(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let big = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[1u8; 16])?;
    let small = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &[2u8; 8])?;
    // PyOpenCL's default reads the source size twice: 16 -> 8 fails there; here it copies 8.
    enqueue_copy(&q, &small, &big, &[])?;
    assert_eq!(small.to_vec::<u8>(&q)?, vec![1u8; 8]);
    small.fill(&q, &[3u8], &[])?;
    enqueue_copy(&q, &big, &small, &[])?;
    assert_eq!(big.to_vec::<u8>(&q)?, [[3u8; 8], [1u8; 8]].concat());
    // Offsets: the remaining sizes decide.
    enqueue_copy(
        &q,
        &big,
        &small,
        Transfer::default().src_offset(4).dst_offset(12),
    )?;
    enqueue_copy(&q, &big, &small, Transfer::default().byte_count(2))?;
    small.fill(&q, &[9u8], &[])?;
    enqueue_copy(
        &q,
        &big,
        &small,
        Transfer::default()
            .src_offset(7)
            .dst_offset(9)
            .byte_count(1),
    )?;
    let want = [3, 3, 3, 3, 3, 3, 3, 3, 1, 9, 1, 1, 3, 3, 3, 3];
    assert_eq!(big.to_vec::<u8>(&q)?, want);
    // Non-overlapping ranges of one buffer are fine.
    enqueue_copy(
        &q,
        &big,
        &big,
        Transfer::default().dst_offset(8).byte_count(8),
    )?;
    assert_eq!(big.to_vec::<u8>(&q)?, [[3u8; 8], [3u8; 8]].concat());
    // A kernel reads what a copy wrote.
    let p = program(&q)?;
    let a = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &iota(32))?;
    let b = Buffer::new(ctx, MemFlags::READ_WRITE, 32 * 4)?;
    enqueue_copy(&q, &b, &a, &[])?;
    add(&q, &p, &b, 1, 32)?;
    assert_eq!(b.to_vec::<i32>(&q)?, (1..33).collect::<Vec<_>>());
    Ok(())
}

device_test!(copy_rejects_overlap_and_out_of_range);
fn copy_rejects_overlap_and_out_of_range(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let a = Buffer::new(q.context(), MemFlags::READ_WRITE, 64)?;
    let b = Buffer::new(q.context(), MemFlags::READ_WRITE, 32)?;
    assert!(matches!(
        enqueue_copy(&q, &a, &a, Transfer::default().dst_offset(8).byte_count(16)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        enqueue_copy(&q, &b, &a, Transfer::default().byte_count(33)),
        Err(Error::OutOfBounds {
            what: "copy destination",
            ..
        })
    ));
    assert!(matches!(
        enqueue_copy(&q, &b, &a, Transfer::default().src_offset(60).byte_count(8)),
        Err(Error::OutOfBounds {
            what: "copy source",
            ..
        })
    ));
    assert!(matches!(
        enqueue_copy(
            &q,
            &b,
            &a,
            Transfer::default().src_offset(usize::MAX).byte_count(8)
        ),
        Err(Error::OutOfBounds { .. })
    ));
    // Overlap through sub-buffers of one parent is caught too.
    let align = base_align(dev)?;
    let parent = Buffer::new(q.context(), MemFlags::READ_WRITE, align * 3)?;
    let s1 = parent.sub_buffer(0, align * 2, MemFlags::empty())?;
    let s2 = parent.sub_buffer(align, align * 2, MemFlags::empty())?;
    assert!(matches!(
        enqueue_copy(&q, &s2, &s1, &[]),
        Err(Error::InvalidArgument(_))
    ));
    let foreign = Buffer::new(&dev.context(), MemFlags::READ_WRITE, 32)?;
    assert!(matches!(
        enqueue_copy(&q, &b, &foreign, &[]),
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

device_test!(enqueue_copy_covers_every_pair);
fn enqueue_copy_covers_every_pair(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let a = Buffer::new(q.context(), MemFlags::READ_WRITE, 16)?;
    let b = Buffer::new(q.context(), MemFlags::READ_WRITE, 16)?;
    let host: Vec<u32> = vec![1, 2, 3, 4];
    enqueue_copy(&q, &a, &host[..], &[])?;
    enqueue_copy(&q, &b, &a, &[])?;
    let mut out = [0u32; 4];
    enqueue_copy(&q, &mut out, &b, &[])?;
    assert_eq!(out, [1, 2, 3, 4]);
    let mut v = vec![0u32; 4];
    enqueue_copy(&q, &mut v, &a, &[])?;
    assert_eq!(v, host);
    enqueue_copy(&q, &a, &[9u32, 9], &[])?;
    enqueue_copy(&q, &a, &host, &[])?;
    // Offsets and counts on each side.
    let opts = Transfer {
        src_offset: 4,
        dst_offset: 8,
        byte_count: Some(8),
        ..Transfer::default()
    };
    enqueue_copy(&q, &b, &host[..], opts)?;
    enqueue_copy(&q, &mut out[..], &b, &[])?;
    assert_eq!(out, [1, 2, 2, 3]);
    let mut two = [0u32; 2];
    enqueue_copy(
        &q,
        &mut two[..],
        &b,
        Transfer {
            src_offset: 8,
            ..Transfer::default()
        },
    )?;
    assert_eq!(two, [2, 3]);
    // With a host side the host slice decides the count: 8 bytes from offset 12 do not fit.
    let r = enqueue_copy(
        &q,
        &mut two[..],
        &b,
        Transfer {
            src_offset: 12,
            ..Transfer::default()
        },
    );
    assert!(matches!(
        r,
        Err(Error::OutOfBounds {
            what: "buffer read",
            offset: 12,
            len: 8,
            size: 16
        })
    ));
    let opts = Transfer {
        src_offset: 4,
        dst_offset: 0,
        byte_count: Some(4),
        ..Transfer::default()
    };
    enqueue_copy(&q, &b, &a, opts)?;
    enqueue_copy(&q, &mut out[..], &b, &[])?;
    assert_eq!(out, [2, 2, 2, 3]);
    // Host slice longer than the buffer: a typed error, nothing reaches the driver.
    let long = [0u32; 5];
    assert!(matches!(
        enqueue_copy(&q, &a, &long[..], &[]),
        Err(Error::OutOfBounds { .. })
    ));
    let r = enqueue_copy(
        &q,
        &a,
        &host[..],
        Transfer {
            src_offset: 20,
            ..Transfer::default()
        },
    );
    assert!(matches!(
        r,
        Err(Error::OutOfBounds {
            what: "host slice",
            ..
        })
    ));
    Ok(())
}

device_test!(non_blocking_transfers_return_their_memory);
fn non_blocking_transfers_return_their_memory(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let p = program(&q)?;
    let n = 4096;
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, n * 4)?;
    let w = buf.enqueue_write(&q, iota(n), &[])?;
    let k_done = {
        let mut k = p.kernel("add")?;
        k.set_arg(0, &buf)?.set_arg(1, &7i32)?;
        k.enqueue_nd_range(&q, &[n], None, &[w.event()])?
    };
    let back = w.wait()?;
    assert_eq!(back, iota(n));
    let r = buf.enqueue_read(&q, vec![0i32; n].into_boxed_slice(), &[&k_done])?;
    let out = r.wait()?;
    assert!(out.iter().enumerate().all(|(i, &v)| v == i as i32 + 7));
    // Dropping a pending transfer waits for it; the data still arrives.
    drop(buf.enqueue_write(&q, vec![5i32; n], &[])?);
    assert!(buf.to_vec::<i32>(&q)?.iter().all(|&v| v == 5));
    // A leaked `'static` slice works too, and its event settles.
    let leaked: &'static mut [i32] = Box::leak(vec![0i32; 16].into_boxed_slice());
    let r = buf.enqueue_read(&q, leaked, Transfer::default().src_offset(64))?;
    q.finish()?;
    assert_eq!(r.event().status()?, EventStatus::Complete);
    assert!(r.wait()?.iter().all(|&v| v == 5));
    // Checked first, memory dropped.
    assert!(matches!(
        buf.enqueue_write(&q, vec![1i32; 2], Transfer::default().dst_offset(n * 4 - 4)),
        Err(Error::OutOfBounds { .. })
    ));
    assert!(matches!(
        buf.enqueue_read(&q, Vec::<i32>::new(), &[]),
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

device_test!(host_access_flags_are_enforced_first);
fn host_access_flags_are_enforced_first(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let no = Buffer::new(
        q.context(),
        MemFlags::READ_WRITE | MemFlags::HOST_NO_ACCESS,
        16,
    )?;
    let wo = Buffer::new(
        q.context(),
        MemFlags::READ_WRITE | MemFlags::HOST_WRITE_ONLY,
        16,
    )?;
    let ro = Buffer::from_slice(
        q.context(),
        MemFlags::READ_WRITE | MemFlags::HOST_READ_ONLY,
        &[4u8; 16],
    )?;
    let mut out = [0u8; 16];
    assert!(matches!(
        no.read(&q, &mut out, &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        no.write(&q, &out, &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        wo.read(&q, &mut out, &[]),
        Err(Error::InvalidArgument(_))
    ));
    wo.write(&q, &[1u8; 16], &[])?;
    assert!(matches!(
        ro.write(&q, &out, &[]),
        Err(Error::InvalidArgument(_))
    ));
    ro.read(&q, &mut out, &[])?;
    assert_eq!(out, [4u8; 16]);
    assert!(matches!(
        wo.map::<u8, _>(&q, cl_mem::ReadOnly, .., &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        ro.map::<u8, _>(&q, MapFlags::WRITE, .., &[]),
        Err(Error::InvalidArgument(_))
    ));
    // A device copy is not host access.
    enqueue_copy(&q, &wo, &ro, &[])?;
    Ok(())
}

device_test!(p2p_copy_is_typed_unsupported_without_the_extension);
fn p2p_copy_is_typed_unsupported_without_the_extension(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let a = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[1u8; 64])?;
    let q2 = dev.queue();
    let b = Buffer::new(q2.context(), MemFlags::READ_WRITE, 64)?;
    let has = dev.platform.has_extension("cl_amd_copy_buffer_p2p")?
        || dev.device.has_extension("cl_amd_copy_buffer_p2p")?;
    let r = enqueue_copy_buffer_p2p_amd(dev.platform, &q, &a, &b, None, &[]);
    if has {
        r?.wait()?;
        assert_eq!(b.to_vec::<u8>(&q2)?, vec![1u8; 64]);
    } else {
        assert!(
            matches!(
                r,
                Err(Error::Unsupported {
                    feature: "clEnqueueCopyBufferP2PAMD",
                    ..
                })
            ),
            "{r:?}"
        );
        // Bounds are still checked before the lookup result is used.
        let r = enqueue_copy_buffer_p2p_amd(dev.platform, &q, &a, &b, Some(65), &[]);
        assert!(matches!(r, Err(Error::OutOfBounds { .. })), "{r:?}");
        return Err(skip(
            "no cl_amd_copy_buffer_p2p: checked the typed Unsupported error only",
        ));
    }
    Ok(())
}

device_test!(pinned_pool_blocks_are_written_as_slices);
/// Pool blocks are no longer handed out mutably (two swapped blocks went back to each other's
/// bins, tests/ui in cl-pool); slice blocks are still written in place.
fn pinned_pool_blocks_are_written_as_slices(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = cl_pool::MemoryPool::new(cl_pool::PinnedAllocator::new(&q));
    let mut a = pool.allocate(1 << 12)?;
    a.as_mut_slice::<u8>().fill(9);
    assert!(a.block().iter().all(|&x| x == 9));
    let len = a.requested_bytes();
    drop(a);
    let b = pool.allocate(len)?;
    assert!(b.allocated_bytes() >= len);
    Ok(())
}
