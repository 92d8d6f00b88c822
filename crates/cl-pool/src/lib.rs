//! Memory pools for OpenCL: PyOpenCL's `pyopencl.tools` memory tooling, in Rust, and beyond it.
//!
//! What this layer is for: reusing device memory so that a request costs tens of nanoseconds
//! instead of the microseconds to milliseconds of creating (and forcing) a buffer. What it is not
//! for: general-purpose host allocation, or sub-allocating one big buffer (blocks are whole
//! allocations of the upstream, as in PyOpenCL).
//!
//! | layer | crate | here |
//! | --- | --- | --- |
//! | raw FFI | `cl-raw` | - |
//! | safe runtime | `cl-mem` | allocators use its buffers and queues |
//! | pools | **`cl-pool`** | bins, [`Allocator`], [`MemoryPool`], policies, statistics, traces, caches |
//!
//! | Rust | PyOpenCL |
//! | --- | --- |
//! | [`bitlog2`], [`bin_number`], [`alloc_size`], [`BinLayout`] | `_cl.bitlog2`, `MemoryPool.bin_number`, `MemoryPool.alloc_size` |
//! | [`Allocator`] | `AllocatorBase` |
//! | [`MemoryPool`] | `MemoryPool`, `SVMPool` (same template) |
//! | [`PoolBlock`] | `PooledBuffer`, `PooledSVM` |
//! | [`TestAllocator`] | `_TestMemoryPool`'s fake allocator (plus capacity and fault injection) |
//! | [`FirstArgCache`], [`clear_first_arg_caches`] | `first_arg_dependent_memoize`, `clear_first_arg_caches` |
//!
//! Safety model: this crate contains no `unsafe` (`#![forbid(unsafe_code)]`); every OpenCL call
//! goes through `cl-mem`.
//!
//! Thread safety and scaling: see the [`pool`] module docs.

#![forbid(unsafe_code)]

pub mod allocator;
pub mod bins;
pub mod buffer;
pub mod cache;
pub mod error;
pub mod pool;
pub mod staging;
pub mod stats;
pub mod svm;
pub mod trace;

pub use allocator::{
    Allocator, AllocatorCall, AllocatorError, HostAllocError, HostBlock, SimulatedAllocator,
    TestAllocator,
};
pub use bins::{
    alloc_size, bin_number, bitlog2, BinLayout, BinNumber, InvalidLeadingBits,
    DEFAULT_LEADING_BITS, MAX_LEADING_BITS,
};
pub use buffer::{BufferBlock, DeferredAllocator, ImmediateAllocator, PooledBuffer, PooledSlice};
pub use cache::{clear_first_arg_caches, ContextCache, ContextKey, FirstArgCache};
pub use error::{OomReport, PoolError};
pub use pool::{
    CounterScope, Eviction, LocalBlock, MemoryPool, OomMode, Policy, PoolBlock, PoolBuilder,
    DEFAULT_SHARDS,
};
pub use staging::{read_staged, write_staged, PinnedAllocator, StagingPool};
pub use stats::{BinStats, PoolStats, ScopeReport, TimingStats};
pub use svm::{PooledSvm, SvmAllocator};
