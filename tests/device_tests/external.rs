//! External memory and semaphores shared with CUDA (issue 34). On devices without the extensions
//! (every CPU runtime here) the tests check the typed refusals; the CUDA round trips need the
//! `cuda` feature of cl-tests (the GPU bundle builds with it) and an NVIDIA device, and skip with
//! the reason otherwise.

use std::fs::File;
use std::os::fd::OwnedFd;

use cl_mem::{Buffer, Error, ExternalMemory, MemFlags, Semaphore};
use cl_tests::{device_test, TestDevice, TestResult};

fn some_fd() -> OwnedFd {
    File::open("/dev/null").unwrap().into()
}

device_test!(imports_are_refused_typed_where_the_extensions_are_missing);
fn imports_are_refused_typed_where_the_extensions_are_missing(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    // Host-pointer flags are refused everywhere, before anything else.
    let r = Buffer::from_external(
        &q,
        MemFlags::READ_WRITE | MemFlags::ALLOC_HOST_PTR,
        ExternalMemory::opaque_fd(some_fd(), 4096, ()),
    );
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let has_mem = dev.device.has_extension("cl_khr_external_memory")?;
    let has_sem = dev.device.has_extension("cl_khr_external_semaphore")?;
    if !has_mem {
        assert!(dev.device.external_memory_import_handle_types()?.is_empty());
        let r = Buffer::from_external(
            &q,
            MemFlags::READ_WRITE,
            ExternalMemory::opaque_fd(some_fd(), 4096, ()),
        );
        assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    }
    if !has_sem {
        assert!(dev.device.semaphore_import_handle_types()?.is_empty());
        assert!(dev.device.semaphore_export_handle_types()?.is_empty());
        let r = Semaphore::new_exportable(q.context(), &dev.device);
        assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
        let r = Semaphore::import_fd(q.context(), &dev.device, some_fd());
        assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    }
    if !dev.device.has_extension("cl_khr_device_uuid")? {
        assert!(matches!(dev.device.uuid(), Err(Error::Unsupported { .. })));
    } else {
        assert_eq!(dev.device.uuid()?.len(), 16);
    }
    if has_mem && has_sem {
        return Err(cl_tests::skip(
            "the device has the extensions: its refusals are only the flag checks",
        ));
    }
    Ok(())
}

device_test!(memory_opencl_allocated_is_not_external);
fn memory_opencl_allocated_is_not_external(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let b = Buffer::new(q.context(), MemFlags::READ_WRITE, 256)?;
    assert_eq!(b.external_acquired(), None);
    assert!(matches!(
        b.hand_back(&q, &[]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        b.acquire_external(&q, &[]),
        Err(Error::InvalidArgument(_))
    ));
    // Still an ordinary buffer.
    b.write(&q, &[1u8; 256], &[])?;
    assert_eq!(b.to_vec::<u8>(&q)?, vec![1u8; 256]);
    Ok(())
}

#[cfg(not(feature = "cuda"))]
mod cuda {
    use cl_tests::{device_test, skip, TestDevice, TestResult};

    fn not_built() -> TestResult {
        Err(skip("cl-tests built without its `cuda` feature"))
    }

    device_test!(cuda_round_trips_are_byte_exact_at_odd_sizes);
    fn cuda_round_trips_are_byte_exact_at_odd_sizes(_: &TestDevice) -> TestResult {
        not_built()
    }

    device_test!(handed_back_memory_refuses_commands_and_maps);
    fn handed_back_memory_refuses_commands_and_maps(_: &TestDevice) -> TestResult {
        not_built()
    }

    device_test!(the_exporter_may_be_dropped_first_or_last);
    fn the_exporter_may_be_dropped_first_or_last(_: &TestDevice) -> TestResult {
        not_built()
    }

    device_test!(semaphores_order_both_directions);
    fn semaphores_order_both_directions(_: &TestDevice) -> TestResult {
        not_built()
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use cl_mem::cuda::{CudaDevice, CudaMemory};
    use cl_mem::{Buffer, Error, MapFlags, Program, Queue, ReadOnly, Semaphore};
    use cl_tests::{device_test, skip, TestDevice, TestError, TestResult};

    fn device(dev: &TestDevice) -> Result<CudaDevice, TestError> {
        match CudaDevice::matching(&dev.device) {
            Ok(c) => Ok(c),
            Err(e @ Error::Unsupported { .. }) => Err(skip(format!("no CUDA interop: {e}"))),
            Err(e) => Err(e.into()),
        }
    }

    fn shared(c: &CudaDevice, q: &Queue, n: usize) -> Result<(Buffer, CudaMemory<u32>), TestError> {
        match c.alloc_shared::<u32>(q, n) {
            Ok(p) => Ok(p),
            Err(e @ Error::Unsupported { .. }) => Err(skip(format!("no shared memory: {e}"))),
            Err(e) => Err(e.into()),
        }
    }

    /// OpenCL -> CUDA with host waits (the fallback).
    fn to_cuda(b: &Buffer, q: &Queue) -> TestResult {
        b.hand_back(q, &[])?.wait()?;
        Ok(())
    }

    /// CUDA -> OpenCL with host waits (the fallback).
    fn to_opencl(b: &Buffer, q: &Queue, c: &CudaDevice) -> TestResult {
        c.stream().synchronize()?;
        b.acquire_external(q, &[])?;
        Ok(())
    }

    const SRC: &str = "__kernel void scale(__global uint* a, uint k) {
        size_t i = get_global_id(0);
        a[i] = a[i] * k + (uint)i;
    }";

    device_test!(cuda_round_trips_are_byte_exact_at_odd_sizes);
    fn cuda_round_trips_are_byte_exact_at_odd_sizes(dev: &TestDevice) -> TestResult {
        let c = device(dev)?;
        let q = dev.queue();
        let program = Program::build_from_source(q.context(), SRC, "")?;
        for n in [1usize, 3, 1023, 524_289, 3_000_017] {
            let (b, mut m) = shared(&c, &q, n)?;
            assert_eq!(b.size_bytes(), n * 4);
            to_cuda(&b, &q)?;
            m.fill_u32(5)?;
            to_opencl(&b, &q, &c)?;
            assert_eq!(b.to_vec::<u32>(&q)?, vec![5u32; n], "n = {n}: OpenCL read");
            program
                .kernel("scale")?
                .set_arg(0, &b)?
                .set_arg(1, &7u32)?
                .enqueue_nd_range(&q, &[n], None, &[])?;
            to_cuda(&b, &q)?;
            let mut back = vec![0u32; n];
            c.stream().memcpy_dtoh(&m, &mut back)?;
            c.stream().synchronize()?;
            let want: Vec<u32> = (0..n).map(|i| 35 + u32::try_from(i).unwrap()).collect();
            assert_eq!(back, want, "n = {n}: CUDA read");
        }
        q.finish()?;
        Ok(())
    }

    device_test!(handed_back_memory_refuses_commands_and_maps);
    fn handed_back_memory_refuses_commands_and_maps(dev: &TestDevice) -> TestResult {
        let c = device(dev)?;
        let q = dev.queue();
        let q2 = cl_mem::Queue::new(q.context(), &dev.device)?;
        let (b, _m) = shared(&c, &q, 4099)?;
        let sub = b.sub_buffer_range(0..64)?;
        assert_eq!(b.external_acquired(), Some(true));
        // A map refuses the hand-back; after the unmap it goes through.
        b.with_map(
            &q,
            MapFlags::READ | MapFlags::WRITE,
            ..,
            |s: &mut [u32]| s.fill(9),
        )?;
        let g = b.map::<u32, _>(&q, ReadOnly, .., &[])?;
        assert!(matches!(b.hand_back(&q, &[]), Err(Error::Mapped(_))));
        drop(g);
        to_cuda(&b, &q)?;
        assert_eq!(b.external_acquired(), Some(false));
        assert!(matches!(
            b.hand_back(&q, &[]),
            Err(Error::InvalidArgument(_))
        ));
        for r in [
            b.to_vec::<u32>(&q).map(drop),
            sub.to_vec::<u32>(&q2).map(drop),
            b.fill(&q, &[0u32], &[]).map(drop),
            b.with_map(&q2, ReadOnly, .., |_: &[u32]| ()),
        ] {
            assert!(matches!(r, Err(Error::HandedBack(_))), "{r:?}");
        }
        // Acquired on one queue, used on another: ordered by the record.
        to_opencl(&b, &q2, &c)?;
        assert_eq!(sub.to_vec::<u32>(&q)?, vec![9u32; 16]);
        Ok(())
    }

    device_test!(the_exporter_may_be_dropped_first_or_last);
    fn the_exporter_may_be_dropped_first_or_last(dev: &TestDevice) -> TestResult {
        let c = device(dev)?;
        let q = dev.queue();
        // First: CUDA's side goes, the buffer keeps the allocation.
        let (b, m) = shared(&c, &q, 100_003)?;
        drop(m);
        b.fill(&q, &[11u32], &[])?;
        assert_eq!(b.to_vec::<u32>(&q)?, vec![11u32; 100_003]);
        drop(b);
        q.finish()?;
        // Last: the buffer goes (released after its commands), CUDA reads what OpenCL wrote.
        let (b, m) = shared(&c, &q, 100_003)?;
        b.fill(&q, &[13u32], &[])?;
        drop(b);
        q.finish()?;
        let mut back = vec![0u32; 100_003];
        c.stream().memcpy_dtoh(&m, &mut back)?;
        c.stream().synchronize()?;
        assert_eq!(back, vec![13u32; 100_003]);
        Ok(())
    }

    device_test!(semaphores_order_both_directions);
    fn semaphores_order_both_directions(dev: &TestDevice) -> TestResult {
        let c = device(dev)?;
        let q = dev.queue();
        let pair = || -> Result<_, TestError> {
            let s = match Semaphore::new_exportable(q.context(), &dev.device) {
                Ok(s) => s,
                Err(e @ Error::Unsupported { .. }) => {
                    return Err(skip(format!("no exportable semaphore: {e}")))
                }
                Err(e) => return Err(e.into()),
            };
            let cs = c.import_semaphore(&s)?;
            Ok((s, cs))
        };
        let (to_cuda, cuda_waits) = pair()?;
        let (to_cl, cuda_signals) = pair()?;
        let n = 2_000_001;
        let (b, mut m) = shared(&c, &q, n)?;
        for round in 0..3u32 {
            b.hand_back(&q, &[])?;
            q.signal_semaphore(&to_cuda, &[])?;
            q.flush()?;
            cuda_waits.wait(c.stream())?;
            m.fill_u32(round + 100)?;
            cuda_signals.signal(c.stream())?;
            let w = q.wait_semaphore(&to_cl, &[])?;
            b.acquire_external(&q, &[&w])?;
            assert_eq!(b.to_vec::<u32>(&q)?, vec![round + 100; n], "round {round}");
        }
        Ok(())
    }
}
