//! Allocators and limits: immediate allocation, host-pointer flags, zero sizes, the managed limit,
//! out-of-memory retries, the context cache, deferred allocators.

use super::{immediate_pool, Capture};
use cl_mem::svm::{Coarse, Fine, SvmOptions};
use cl_mem::{ClError, Error, MemFlags, RawHandle, SvmCapabilities};
use cl_pool::{
    Allocator, BufferBlock, DeferredAllocator, ImmediateAllocator, MemoryPool, PinnedAllocator,
    PoolError, SvmAllocator,
};
use cl_tests::{device_test, fail, TestDevice, TestResult};
use std::time::{Duration, Instant};

/// ImmediateAllocator with out-of-memory injected on demand.
#[derive(Debug)]
struct Failing {
    inner: ImmediateAllocator,
    fail_next: std::sync::atomic::AtomicUsize,
}

impl Allocator for Failing {
    type Block = BufferBlock;
    type Error = Error;
    fn allocate(&self, size: usize) -> Result<Option<BufferBlock>, Error> {
        use std::sync::atomic::Ordering;
        if self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(Error::Cl {
                call: "clCreateBuffer",
                status: ClError::MemObjectAllocationFailure,
            });
        }
        self.inner.allocate(size)
    }
    fn free(&self, block: BufferBlock) -> Result<(), Error> {
        self.inner.free(block)
    }
}

device_test!(immediate_allocator_forces_by_write_and_by_migration);
/// Both ways of forcing (PyOpenCL's pre-1.2 write, its 1.2+ migration) give usable buffers;
/// migration is refused before OpenCL 1.2.
fn immediate_allocator_forces_by_write_and_by_migration(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let v12 = dev.device.version() >= cl_mem::Version::V1_2
        && dev.device.platform_version() >= cl_mem::Version::V1_2;
    for mode in [
        cl_pool::ForceMode::Write,
        cl_pool::ForceMode::Migrate,
        cl_pool::ForceMode::Auto,
    ] {
        let imm = match ImmediateAllocator::with_force_mode(&q, MemFlags::READ_WRITE, mode) {
            Ok(imm) => imm,
            Err(Error::Unsupported { .. }) if mode == cl_pool::ForceMode::Migrate && !v12 => {
                continue
            }
            Err(e) => return Err(e.into()),
        };
        assert_eq!(imm.force_mode(), mode);
        for size in [1usize, 3, 4, 4096] {
            let block = imm.allocate(size)?.ok_or_else(|| fail("no block"))?;
            let data: Vec<u8> = (0..size)
                .map(|i| u8::try_from(i % 200).unwrap_or(0))
                .collect();
            block.write(&q, &data, &[])?;
            let mut out = vec![0u8; size];
            block.read(&q, &mut out, &[])?;
            assert_eq!(out, data, "{mode:?} {size}");
            imm.free(block)?;
        }
    }
    Ok(())
}

device_test!(allocators_refuse_host_pointer_flags);
fn allocators_refuse_host_pointer_flags(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    for flags in [
        MemFlags::USE_HOST_PTR,
        MemFlags::COPY_HOST_PTR,
        MemFlags::READ_ONLY | MemFlags::COPY_HOST_PTR,
    ] {
        let e = ImmediateAllocator::new(&q, flags)
            .err()
            .ok_or_else(|| fail("accepted"))?;
        assert_eq!(
            e.to_string(),
            "invalid argument: cannot specify USE_HOST_PTR or COPY_HOST_PTR flags"
        );
        assert!(DeferredAllocator::new(q.context(), flags).is_err());
    }
    assert!(ImmediateAllocator::new(&q, MemFlags::ALLOC_HOST_PTR | MemFlags::READ_ONLY).is_ok());
    Ok(())
}

device_test!(zero_size_gives_no_buffer_and_pool_gives_one_byte);
fn zero_size_gives_no_buffer_and_pool_gives_one_byte(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let imm = ImmediateAllocator::new(&q, MemFlags::READ_WRITE)?;
    assert!(imm.allocate(0)?.is_none());
    let def = DeferredAllocator::new(q.context(), MemFlags::READ_WRITE)?;
    assert!(def.allocate(0)?.is_none());
    assert!(def.is_deferred() && !imm.is_deferred());
    let pool = MemoryPool::new(imm);
    let z = pool.allocate(0)?;
    assert_eq!((z.requested_bytes(), z.size_bytes()), (0, 1));
    assert_eq!((pool.managed_bytes(), pool.active_bytes()), (1, 0));
    Ok(())
}

device_test!(managed_limit_reclaims_held_buffers);
fn managed_limit_reclaims_held_buffers(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    pool.set_policy(cl_pool::Policy {
        managed_bytes_limit: Some(3 << 20),
        ..pool.policy()
    });
    let held: Vec<_> = (0..2)
        .map(|_| pool.allocate(1 << 20))
        .collect::<Result<_, _>>()?;
    drop(held);
    assert_eq!(pool.held_blocks(), 2);
    let managed_before = pool.managed_bytes();
    // 2 MiB rounds to 2.125 MiB: both held blocks (1.0625 MiB each) must go.
    let big = pool.allocate(2 << 20)?;
    let s = pool.stats();
    assert_eq!(s.reclaims, 2);
    assert_eq!(s.held_blocks, 0);
    assert_eq!(s.managed_bytes, big.allocated_bytes());
    assert!(managed_before + big.allocated_bytes() > 3 << 20);
    big.write(&q, &[1u8; 16], &[])?;
    match pool.allocate(2 << 20) {
        Err(PoolError::LimitReached(r)) => {
            assert_eq!(r.limit, Some(3 << 20));
            assert_eq!(r.managed_bytes, big.allocated_bytes());
        }
        other => return Err(fail(format!("expected LimitReached, got {other:?}"))),
    }
    Ok(())
}

device_test!(injected_out_of_memory_frees_held_buffers_and_retries);
fn injected_out_of_memory_frees_held_buffers_and_retries(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = MemoryPool::new(Failing {
        inner: ImmediateAllocator::new(&q, MemFlags::READ_WRITE)?,
        fail_next: 0.into(),
    });
    let held: Vec<_> = [100usize, 5000, 70_000]
        .iter()
        .map(|&s| pool.allocate(s))
        .collect::<Result<_, _>>()?;
    drop(held);
    pool.allocator()
        .fail_next
        .store(2, std::sync::atomic::Ordering::SeqCst);
    let b = pool.allocate(1 << 20)?;
    b.write(&q, &[9u32; 8], &[])?;
    let s = pool.stats();
    // First try fails, free the 70,000-byte block (largest bin), second try fails, free the
    // 5,000-byte one, third succeeds; the 100-byte block stays.
    assert_eq!(s.reclaims, 2);
    assert_eq!(s.held_blocks, 1);
    assert_eq!(
        pool.bin_stats()
            .iter()
            .find(|b| b.held_blocks == 1)
            .map(|b| b.block_bytes),
        Some(103)
    );
    // Nothing left to free: a typed error with the figures.
    drop(b);
    pool.free_held();
    pool.allocator()
        .fail_next
        .store(1, std::sync::atomic::Ordering::SeqCst);
    match pool.allocate(64) {
        Err(PoolError::OutOfMemory { report, source }) => {
            assert!(source.is_out_of_memory());
            assert_eq!(
                (report.requested, report.rounded, report.held_bytes),
                (64, 67, 0)
            );
        }
        other => return Err(fail(format!("expected OutOfMemory, got {other:?}"))),
    }
    Ok(())
}

device_test!(oversized_request_propagates_unchanged);
fn oversized_request_propagates_unchanged(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let pool = immediate_pool(&q)?;
    drop(pool.allocate(100)?);
    let before = pool.stats();
    let max = usize::try_from(dev.device.max_mem_alloc_size()?)?;
    match pool.allocate(max + 1) {
        Err(PoolError::Allocator(e)) => assert!(!e.is_out_of_memory(), "{e}"),
        other => {
            return Err(fail(format!(
                "expected the allocator's error, got {other:?}"
            )))
        }
    }
    let after = pool.stats();
    assert_eq!(
        (
            before.held_blocks,
            before.managed_bytes,
            before.active_bytes,
            before.misses
        ),
        (
            after.held_blocks,
            after.managed_bytes,
            after.active_bytes,
            after.misses
        )
    );
    Ok(())
}

device_test!(context_cache_computes_once_per_context_and_clears);
/// PyOpenCL's `test_context_dep_memoize`, plus what the cache does to the context's references:
/// none on OpenCL 3.0+ platforms (entries go with the context's destructor callback), one per
/// cached context before (entries hold it until cleared, as in PyOpenCL).
fn context_cache_computes_once_per_context_and_clears(dev: &TestDevice) -> TestResult {
    let cache = cl_pool::ContextCache::<(u32,), u64>::new();
    let ctx = dev.context();
    let other = dev.context();
    let refs = ctx.reference_count()?;
    let mut calls = 0;
    for _ in 0..2 {
        let v = cache.get_or_insert_with(&ctx, (5,), || {
            calls += 1;
            42
        });
        assert_eq!(v, 42);
    }
    assert_eq!(calls, 1, "the same context and arguments compute once");
    cache.get_or_insert_with(&other, (5,), || {
        calls += 1;
        7
    });
    assert_eq!(calls, 2, "another context computes again");
    assert_eq!((cache.len(), cache.contexts()), (2, 2));
    let callback = ctx.devices()[0].platform_version() >= cl_mem::Version::V3_0;
    assert_eq!(cache.evicts_on_destroy(&ctx), callback);
    assert_eq!(
        ctx.reference_count()?,
        if callback { refs } else { refs + 1 },
        "entries hold their context only without a destructor callback"
    );
    assert_eq!(cache.get(&other, &(5,)), Some(7));
    cl_pool::clear_first_arg_caches();
    assert!(cache.is_empty());
    assert_eq!(
        ctx.reference_count()?,
        refs,
        "clearing releases the context"
    );
    Ok(())
}

device_test!(context_cache_entries_go_with_their_context);
/// Dropping every handle of a context drops its cache entries (OpenCL 3.0 context destructor
/// callback) and nothing else; the cache itself holds no reference.
fn context_cache_entries_go_with_their_context(dev: &TestDevice) -> TestResult {
    let probe = dev.context();
    if probe.devices()[0].platform_version() < cl_mem::Version::V3_0 {
        return Err(cl_tests::skip(format!(
            "platform is OpenCL {}: no context destructor callback (3.0); entries hold their \
             context until clear_first_arg_caches()",
            probe.devices()[0].platform_version()
        )));
    }
    drop(probe);
    let cache = cl_pool::ContextCache::<(u32,), u64>::new();
    let ctx = dev.context();
    let second_handle = ctx.clone();
    let survivor = dev.context();
    cache.get_or_insert_with(&ctx, (1,), || 10);
    cache.get_or_insert_with(&ctx, (2,), || 20);
    cache.get_or_insert_with(&survivor, (1,), || 30);
    assert_eq!((cache.len(), cache.contexts()), (3, 2));
    assert!(cache.evicts_on_destroy(&ctx));
    assert_eq!(ctx.reference_count()?, 2, "the cache holds no reference");
    drop(ctx);
    assert_eq!(cache.len(), 3, "one handle left: the context lives");
    assert_eq!(cache.get(&second_handle, &(2,)), Some(20));
    drop(second_handle);
    let at_once = cache.len() == 1;
    // The callback runs inside the last clReleaseContext on the drivers seen; allow a driver
    // thread a moment all the same.
    let t0 = Instant::now();
    while cache.len() != 1 && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        (cache.len(), cache.contexts()),
        (1, 1),
        "the destroyed context's entries are gone"
    );
    eprintln!("    evicted inside the last clReleaseContext: {at_once}");
    assert_eq!(cache.get(&survivor, &(1,)), Some(30));
    // A new context (which may reuse the old handle) computes afresh.
    let fresh = dev.context();
    let mut calls = 0;
    let v = cache.get_or_insert_with(&fresh, (1,), || {
        calls += 1;
        11
    });
    assert_eq!((v, calls), (11, 1));
    drop(fresh);
    assert_eq!(cache.len(), 1);
    Ok(())
}

device_test!(deferred_allocator_pool_warns);
/// A `DeferredAllocator` given to a pool logs PyOpenCL's warning (its `UserWarning`) through
/// `tracing`; an `ImmediateAllocator` does not.
fn deferred_allocator_pool_warns(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let deferred = DeferredAllocator::new(q.context(), MemFlags::READ_WRITE)?;
    let immediate = ImmediateAllocator::new(&q, MemFlags::READ_WRITE)?;
    assert!(deferred.is_deferred() && !immediate.is_deferred());
    let capture = Capture::default();
    let warnings = |c: &Capture| -> Vec<String> {
        c.0.lock()
            .map(|v| {
                v.iter()
                    .filter(|(l, _)| *l == tracing::Level::WARN)
                    .map(|(_, m)| m.clone())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (after_immediate, after_deferred) =
        tracing::subscriber::with_default(capture.clone(), || {
            let p1 = MemoryPool::new(immediate);
            let w1 = warnings(&capture);
            let p2 = MemoryPool::new(deferred);
            let w2 = warnings(&capture);
            drop((p1, p2));
            (w1, w2)
        });
    assert!(after_immediate.is_empty(), "{after_immediate:?}");
    assert_eq!(after_deferred.len(), 1, "{after_deferred:?}");
    assert!(
        after_deferred[0].starts_with(
            "Memory pools expect non-deferred semantics from their allocators. You passed a \
             deferred allocator"
        ),
        "{after_deferred:?}"
    );
    Ok(())
}

device_test!(every_allocator_caches_a_returned_block_on_its_thread);
/// A block returned on a thread stays in that thread's cache, for each allocator of cl-pool (a
/// typed cache slot each) and a user's allocator (a boxed slot): another thread misses, the
/// returning thread hits. A slot that did not find its cache would give the block to the shared
/// bins, where the other thread would hit it.
fn every_allocator_caches_a_returned_block_on_its_thread(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    let flags = MemFlags::READ_WRITE;
    cached_on_its_thread("immediate", &immediate_pool(&q)?)?;
    let deferred = DeferredAllocator::new(q.context(), flags)?;
    cached_on_its_thread("deferred", &MemoryPool::new(deferred))?;
    cached_on_its_thread("pinned", &MemoryPool::new(PinnedAllocator::new(&q)))?;
    let user = Failing {
        inner: ImmediateAllocator::new(&q, flags)?,
        fail_next: 0.into(),
    };
    cached_on_its_thread("a user's allocator", &MemoryPool::new(user))?;
    let caps = dev.device.svm_capabilities()?;
    if caps.contains(SvmCapabilities::COARSE_GRAIN_BUFFER) {
        let svm = SvmAllocator::<Coarse>::new(&q, SvmOptions::default());
        cached_on_its_thread("coarse-grain SVM", &MemoryPool::new(svm))?;
    }
    if caps.contains(SvmCapabilities::FINE_GRAIN_BUFFER) {
        let svm = SvmAllocator::<Fine>::new(&q, SvmOptions::default());
        cached_on_its_thread("fine-grain SVM", &MemoryPool::new(svm))?;
    }
    Ok(())
}

/// One block returned here, asked for on another thread (a miss), then here again (a hit).
fn cached_on_its_thread<A: Allocator>(what: &str, pool: &MemoryPool<A>) -> TestResult {
    let take = || pool.allocate(4096).map(drop).map_err(|e| e.to_string());
    take().map_err(fail)?;
    std::thread::scope(|s| s.spawn(take).join())
        .map_err(|_| fail(format!("{what}: the other thread panicked")))?
        .map_err(fail)?;
    take().map_err(fail)?;
    let s = pool.stats();
    if (s.misses, s.hits) == (2, 1) {
        Ok(())
    } else {
        Err(fail(format!(
            "{what}: {} misses and {} hits, expected 2 and 1 (the block left this thread's cache)",
            s.misses, s.hits
        )))
    }
}
