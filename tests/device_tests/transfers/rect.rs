//! Rectangle reads, writes and copies: the right bytes, sub-buffers, overlap and bad regions refused.

use crate::common::{add, invalid, program};
use cl_mem::{enqueue_copy, Buffer, Error, MemFlags, Rect, Transfer};
use cl_tests::{device_test, TestDevice, TestResult};

device_test!(rect_write_read_copy_move_the_right_bytes);
fn rect_write_read_copy_move_the_right_bytes(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    // A 6x5 host image of u8, value = 10 * y + x; copy the 3x2 block at (2, 1) into an 8x4
    // buffer image at (1, 2).
    let host: Vec<u8> = (0..5)
        .flat_map(|y| (0..6).map(move |x| 10 * y + x))
        .collect();
    let buf = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[0u8; 32])?;
    let rect = Rect::new([3, 2, 1])
        .src_origin([2, 1, 0])
        .src_pitches(6, 0)
        .dst_origin([1, 2, 0])
        .dst_pitches(8, 0);
    buf.write(&q, &host, Transfer::default().rect(rect))?;
    let out = buf.to_vec::<u8>(&q)?;
    for y in 0..4 {
        for x in 0..8 {
            let want = if (1..4).contains(&x) && (2..4).contains(&y) {
                10 * (y - 1) + (x + 1)
            } else {
                0
            };
            assert_eq!(out[y * 8 + x] as usize, want, "buffer ({x}, {y})");
        }
    }
    // Read the block back, tightly packed.
    let mut block = [0u8; 6];
    buf.read(
        &q,
        &mut block,
        Transfer::default().rect(Rect::new([3, 2, 1]).src_origin([1, 2, 0]).src_pitches(8, 0)),
    )?;
    assert_eq!(block, [12, 13, 14, 22, 23, 24]);
    // 3-D: a 2x2x2 cube of a 4x4x4 volume, through buffer-to-buffer rect copy.
    let vol: Vec<u8> = (0..64).collect();
    let src = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &vol)?;
    let dst = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[0u8; 8])?;
    enqueue_copy(
        &q,
        &dst,
        &src,
        Transfer::default().rect(
            Rect::new([2, 2, 2])
                .src_origin([1, 1, 1])
                .src_pitches(4, 16),
        ),
    )?;
    assert_eq!(dst.to_vec::<u8>(&q)?, [21, 22, 25, 26, 37, 38, 41, 42]);
    // Non-blocking rectangles own their host memory.
    let w = buf.enqueue_write(
        &q,
        vec![7u8, 8, 9, 10],
        Transfer::default().rect(Rect::new([2, 2, 1]).dst_origin([6, 0, 0]).dst_pitches(8, 0)),
    )?;
    assert_eq!(w.wait()?, [7, 8, 9, 10]);
    let r = buf.enqueue_read(
        &q,
        vec![0u8; 4],
        Transfer::default().rect(Rect::new([2, 2, 1]).src_origin([6, 0, 0]).src_pitches(8, 0)),
    )?;
    assert_eq!(r.wait()?, [7, 8, 9, 10]);
    let r = buf.enqueue_read(
        &q,
        vec![0u8; 4],
        Transfer::default().rect(Rect::new([2, 2, 1]).src_origin([7, 3, 0]).src_pitches(8, 0)),
    );
    assert!(matches!(r, Err(Error::OutOfBounds { .. })));
    // A kernel reads what a rect write wrote.
    let p = program(&q)?;
    let ints = Buffer::from_slice(q.context(), MemFlags::READ_WRITE, &[0i32; 8])?;
    let rows = [1i32, 2, 3, 4];
    ints.write(
        &q,
        &rows,
        Transfer::default().rect(Rect::new([8, 2, 1]).dst_pitches(16, 0)),
    )?;
    add(&q, &p, &ints, 10, 8)?;
    assert_eq!(ints.to_vec::<i32>(&q)?, [11, 12, 10, 10, 13, 14, 10, 10]);
    Ok(())
}

device_test!(rect_rejects_bad_regions_and_pitches);
fn rect_rejects_bad_regions_and_pitches(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let buf = Buffer::new(q.context(), MemFlags::READ_WRITE, 64)?;
    let host = [0u8; 64];
    let mut out = [0u8; 64];
    // Past the buffer: 8 rows of 8 from row 1.
    let r = Rect::new([8, 8, 1]).dst_origin([0, 1, 0]);
    assert!(matches!(
        buf.write(&q, &host, Transfer::default().rect(r)),
        Err(Error::OutOfBounds {
            what: "buffer rectangle",
            ..
        })
    ));
    // Past the host slice.
    let r = Rect::new([8, 8, 1]).src_origin([1, 0, 0]);
    assert!(matches!(
        buf.write(&q, &host, Transfer::default().rect(r)),
        Err(Error::OutOfBounds {
            what: "host rectangle",
            ..
        })
    ));
    let r = Rect::new([4, 4, 1]).dst_origin([0, 0, 0]).dst_pitches(8, 0);
    assert!(matches!(
        buf.read(&q, &mut out[..20], Transfer::default().rect(r)),
        Err(Error::OutOfBounds {
            what: "host rectangle",
            ..
        })
    ));
    // Zero region, short row pitch, bad slice pitch.
    assert!(matches!(
        buf.write(&q, &host, Transfer::default().rect(Rect::new([0, 1, 1]))),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.write(
            &q,
            &host,
            Transfer::default().rect(Rect::new([8, 2, 1]).dst_pitches(4, 0))
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.write(
            &q,
            &host,
            Transfer::default().rect(Rect::new([4, 2, 2]).dst_pitches(4, 6))
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        buf.write(
            &q,
            &host,
            Transfer::default().rect(Rect::new([1, 1, 1]).dst_origin([usize::MAX, 0, 0])),
        ),
        Err(Error::InvalidArgument(_) | Error::OutOfBounds { .. })
    ));
    // Within one buffer, different pitches are refused.
    let r = Rect::new([2, 2, 1])
        .src_pitches(4, 0)
        .dst_pitches(8, 0)
        .dst_origin([0, 4, 0]);
    assert!(matches!(
        enqueue_copy(&q, &buf, &buf, Transfer::default().rect(r)),
        Err(Error::InvalidArgument(_))
    ));
    Ok(())
}

device_test!(rect_copies_with_sub_buffers_give_the_right_bytes);
/// PoCL 3.1 crashed (SIGSEGV) in `clEnqueueCopyBufferRect` with a sub-buffer on either side.
fn rect_copies_with_sub_buffers_give_the_right_bytes(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align();
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    let root = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &data)?;
    let src = root.sub_buffer(align, 1024, MemFlags::empty())?;
    let other = Buffer::new(ctx, MemFlags::READ_WRITE, 4096)?;
    let dst = other.sub_buffer(align, 1024, MemFlags::empty())?;
    // 16 bytes of 4 rows, source pitch 32 at (2, 1), destination pitch 16 at (0, 0).
    let rect = Rect::new([16, 4, 1])
        .src_origin([2, 1, 0])
        .src_pitches(32, 0)
        .dst_pitches(16, 0);
    enqueue_copy(&q, &dst, &src, Transfer::default().rect(rect))?;
    let mut got = vec![0u8; 64];
    dst.read(&q, &mut got, &[])?;
    let want: Vec<u8> = (0..4)
        .flat_map(|row| {
            let start = align + (row + 1) * 32 + 2;
            data[start..start + 16].to_vec()
        })
        .collect();
    assert_eq!(got, want);
    // A root on one side, a sub-buffer on the other.
    enqueue_copy(&q, &other, &src, Transfer::default().rect(rect))?;
    let mut got = vec![0u8; 64];
    other.read(&q, &mut got, &[])?;
    assert_eq!(got, want);
    Ok(())
}

device_test!(overlapping_rect_copies_are_refused);
/// No overlap check existed (unlike `copy_from_range`): the spec's `CL_MEM_COPY_OVERLAP`.
fn overlapping_rect_copies_are_refused(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let align = dev.device.base_addr_align();
    let buf = Buffer::from_slice(ctx, MemFlags::READ_WRITE, &vec![1u8; 8192])?;
    // One row down in one buffer: rows 1..4 of the source are rows 0..3 of the destination.
    let down = Rect::new([8, 4, 1])
        .dst_origin([0, 1, 0])
        .src_pitches(16, 0)
        .dst_pitches(16, 0);
    let msg = invalid(
        enqueue_copy(&q, &buf, &buf, Transfer::default().rect(down)),
        "one row down",
    );
    assert!(msg.contains("overlap"), "{msg}");
    // Side by side in one buffer: no byte shared, allowed.
    let beside = down.dst_origin([8, 0, 0]);
    enqueue_copy(&q, &buf, &buf, Transfer::default().rect(beside))?;
    // Two sub-buffers of one root whose rectangles meet.
    let a = buf.sub_buffer(0, 2 * align, MemFlags::empty())?;
    let b = buf.sub_buffer(align, 2 * align, MemFlags::empty())?;
    let whole = Rect::new([align, 1, 1]);
    invalid(
        enqueue_copy(
            &q,
            &b,
            &a,
            Transfer::default().rect(whole.src_origin([align, 0, 0])),
        ),
        "sub-buffers",
    );
    enqueue_copy(&q, &b, &a, Transfer::default().rect(whole))?;
    q.finish()?;
    Ok(())
}
