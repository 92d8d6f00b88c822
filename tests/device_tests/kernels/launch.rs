//! Kernel launches: every argument set, several threads, local memory, and what a call keeps alive
//! until its command ran.

use crate::common::{SCALE_KERNELS, SCALE_SRC};
use cl_mem::{Buffer, Error, LocalMemory, MemFlags, Program, RawHandle, UserEvent};
use cl_tests::{device_test, eventually, skip, TestDevice, TestResult};

device_test!(kernel_call_sets_every_argument_and_runs_from_several_threads);
/// PyOpenCL's `kernel(queue, global, local, *args)` in one expression, on one kernel shared by
/// eight threads (no `&mut`): each thread's arguments reach its own command.
fn kernel_call_sets_every_argument_and_runs_from_several_threads(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SCALE_SRC, "")?;
    let k = program.kernel("scale")?;
    let n = 64usize;
    let input = cl_mem::Buffer::from_slice(ctx, MemFlags::READ_ONLY, &vec![1.0f32; n])?;
    // A wrong count, and a wrong kind at a position, name the kernel and the argument.
    let r = k.call(&q, &[n], None, (&input, &input, &2.0f32));
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("'scale' takes 4 arguments, got 3")),
        "{r:?}"
    );
    let r = k.call(&q, &[n], None, (&input, &input, &2.0f64, &64u32));
    assert!(
        matches!(&r, Err(e @ Error::KernelArg { index: 2, .. }) if e.to_string().contains("float k")),
        "{r:?}"
    );
    // One thread on Oclgrind: it crashes under API calls from several host threads
    // (docs/DEVICES.md#oclgrind-threads-release).
    let threads = if dev.platform_name().contains("Oclgrind") {
        1
    } else {
        8u8
    };
    let k = std::sync::Arc::new(k);
    let results: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (k, q, input) = (&k, &q, &input);
                s.spawn(move || -> cl_mem::Result<Vec<f32>> {
                    let out = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, n * 4)?;
                    for _ in 0..20 {
                        k.call(q, &[n], None, (input, &out, &f32::from(t), &64u32))?;
                    }
                    out.to_vec(q)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a thread panicked"))
            .collect::<cl_mem::Result<_>>()
    })?;
    for (t, got) in results.iter().enumerate() {
        let want: Vec<f32> = (0..n).map(|i| t as f32 + i as f32).collect();
        assert_eq!(got, &want, "thread {t}");
    }
    Ok(())
}

device_test!(kernel_scales_buffer_roundtrip);
fn kernel_scales_buffer_roundtrip(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let n = 1000usize;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let a = cl_mem::Buffer::from_slice(q.context(), MemFlags::READ_ONLY, &input)?;
    let b = cl_mem::Buffer::new(q.context(), MemFlags::WRITE_ONLY, n * 4)?;
    let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &a)?
        .set_arg(1, &b)?
        .set_arg(2, &3.0f32)?
        .set_arg(3, &u32::try_from(n)?)?;
    let done = k.enqueue_nd_range(&q, &[1024], None, &[])?;
    let mut out = vec![0f32; n];
    b.read(&q, &mut out, &[&done])?;
    for (i, (&x, &y)) in input.iter().zip(&out).enumerate() {
        assert_eq!(y, x * 3.0 + i as f32, "element {i}");
    }
    Ok(())
}

device_test!(kernel_local_memory_reverses_groups);
fn kernel_local_memory_reverses_groups(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
    let mut k = program.kernel("reverse_groups")?;
    let wg = k
        .work_group_info::<usize>(q.device(), cl_raw::sys::CL_KERNEL_WORK_GROUP_SIZE)?
        .min(16);
    if wg < 2 {
        return Err(skip(format!(
            "kernel work-group size {wg} leaves nothing to reverse"
        )));
    }
    let n = wg * 8;
    let input: Vec<i32> = (0..i32::try_from(n)?).collect();
    let a = cl_mem::Buffer::from_slice(q.context(), MemFlags::READ_ONLY, &input)?;
    let b = cl_mem::Buffer::new(q.context(), MemFlags::WRITE_ONLY, n * 4)?;
    k.set_arg(0, &a)?
        .set_arg(1, &b)?
        .set_arg(2, &LocalMemory::of::<i32>(wg))?;
    k.enqueue_nd_range(&q, &[n], Some(&[wg]), &[])?;
    let mut out = vec![0i32; n];
    b.read(&q, &mut out, &[])?;
    for g in 0..n / wg {
        for l in 0..wg {
            assert_eq!(
                out[g * wg + l],
                input[g * wg + wg - 1 - l],
                "group {g} lane {l}"
            );
        }
    }
    Ok(())
}

device_test!(kernel_keeps_dropped_buffer_alive);
fn kernel_keeps_dropped_buffer_alive(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let program = Program::build_from_source(q.context(), SCALE_SRC, "")?;
    let mut k = program.kernel("scale")?;
    let out = cl_mem::Buffer::new(q.context(), MemFlags::READ_WRITE, 64)?;
    {
        let input = cl_mem::Buffer::from_slice(q.context(), MemFlags::READ_ONLY, &[2.0f32; 16])?;
        k.set_arg(0, &input)?;
        assert_eq!(input.reference_count()?, 2, "the kernel holds a reference");
    }
    k.set_arg(1, &out)?
        .set_arg(2, &2.0f32)?
        .set_arg(3, &16u32)?;
    k.enqueue_nd_range(&q, &[16], None, &[])?;
    let mut got = [0f32; 16];
    out.read(&q, &mut got, &[])?;
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, 4.0 + i as f32);
    }
    // Replacing the argument drops the kernel's reference to the old one once no command
    // needs it: the completed command's record goes at the next enqueue (or with the kernel).
    k.set_arg(1, &out)?;
    assert!((2..=3).contains(&out.reference_count()?));
    drop(k);
    assert_eq!(out.reference_count()?, 1);
    Ok(())
}

device_test!(arguments_outlive_a_dropped_kernel_until_the_command_ran);
fn arguments_outlive_a_dropped_kernel_until_the_command_ran(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let ctx = q.context();
    let program = Program::build_from_source(ctx, SCALE_KERNELS, "")?;
    let out = Buffer::new(ctx, MemFlags::READ_WRITE, 64)?;
    let gate = UserEvent::new(ctx)?;
    let input = Buffer::from_slice(ctx, MemFlags::READ_ONLY, &[4.0f32; 16])?;
    let mut k = program.kernel("scale")?;
    k.set_arg(0, &input)?
        .set_arg(1, &out)?
        .set_arg(2, &0.5f32)?
        .set_arg(3, &16u32)?;
    assert_eq!(input.reference_count()?, 2, "ours and the kernel's");
    let done = k.enqueue_nd_range(&q, &[16], None, &[&gate])?;
    assert_eq!(k.commands_in_flight(), 1);
    drop(k);
    // The gated command still holds its argument (the driver may hold more references).
    assert!(input.reference_count()? >= 2);
    let probe = input.clone();
    drop(input);
    gate.set_complete()?;
    done.wait()?;
    let mut got = [0f32; 16];
    out.read(&q, &mut got, &[])?;
    assert_eq!(got, [2.0f32; 16]);
    eventually("the completed command released its argument", || {
        Ok(probe.reference_count()? == 1)
    })?;
    Ok(())
}
