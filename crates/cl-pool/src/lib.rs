//! Memory pools for OpenCL: PyOpenCL's `pyopencl.tools` memory tooling, in Rust, and beyond it.
//!
//! **For:** reusing device memory so that a request costs tens of nanoseconds instead of the
//! microseconds to milliseconds of creating (and forcing) a buffer or an SVM allocation; seeing
//! what the pool does (statistics, traces, plots); CL-object-dependent memoization. **Not for:**
//! general-purpose host allocation, or sub-allocating one big buffer (blocks are whole allocations
//! of the upstream, as in PyOpenCL).
//!
//! # Quick start
//!
//! ```toml
//! [dependencies]
//! cl-mem = "0.1"
//! cl-pool = "0.1"
//! ```
//!
//! A pooled vector add on the device [`cl_mem::create_some_context`] picks (`CL_CTX` or
//! `CL_TEST` when set, else a GPU, else a CPU runtime, a simulator last), read back into a `Vec`
//! and an `ndarray` (this is `examples/quick_start.rs`, run as a test on every device):
//!
//! ```
#![doc = include_str!("../examples/quick_start.rs")]
//! ```
//!
//! | layer | crate | here |
//! | --- | --- | --- |
//! | raw FFI | `cl-raw` | - |
//! | safe runtime | `cl-mem` | allocators use its buffers, SVM, pinned memory and queues |
//! | pools | **`cl-pool`** | bins, [`Allocator`], [`MemoryPool`], policies, statistics, traces, caches |
//!
//! | Rust | OpenCL | PyOpenCL |
//! | --- | --- | --- |
//! | [`MemoryPool::bin_number`], [`MemoryPool::alloc_size`], [`BinLayout`] | - | `MemoryPool.bin_number`, `MemoryPool.alloc_size` |
//! | [`Allocator`], [`AllocatorError`] | - | `AllocatorBase` |
//! | [`DeferredAllocator`] | `clCreateBuffer` | `DeferredAllocator` |
//! | [`ImmediateAllocator`] | `clCreateBuffer` + `clEnqueueMigrateMemObjects` | `ImmediateAllocator` |
//! | [`SvmAllocator`] | `clSVMAlloc` / `clEnqueueSVMFree` (through `cl_mem::svm`) | `SVMAllocator` |
//! | [`MemoryPool`], [`PoolBlock`], [`LocalBlock`] | - | `MemoryPool`, `SVMPool` (same template) |
//! | [`DevicePools`] | one pool per device of a multi-device context | - (one `MemoryPool` per context) |
//! | [`PooledBuffer`], [`PooledSlice`], [`PooledSvm`] | a `cl_mem` / SVM pointer held by the pool | `PooledBuffer`, `PooledSVM` |
//! | [`PinnedAllocator`] | `ALLOC_HOST_PTR` buffers, mapped | - |
//! | [`SimulatedAllocator`] (host-only: replay, host benches) | - | `_TestMemoryPool`'s fake allocator |
//! | [`FirstArgCache`], [`ContextCache`], [`clear_first_arg_caches`] | - | `first_arg_dependent_memoize`, `context_dependent_memoize`, `clear_first_arg_caches` |
//! | [`trace`] | - | `_set_trace` (stdout only) |
//!
//! Crate features: `serde` (default): trace JSON lines ([`trace::to_json_lines`],
//! [`trace::from_json_lines`]) and serde derives on [`trace::TraceEvent`]. Without it the pool,
//! recording and replay remain.
//!
//! Safety model: no `unsafe` code (`#![forbid(unsafe_code)]`). Every OpenCL call goes through
//! `cl-mem`, and no allocator (so no OpenCL) call is made while one of the pool's locks is held.
//!
//! Thread safety and scaling: see [`MemoryPool`]'s documentation.

#![forbid(unsafe_code)]

mod allocator;
mod bins;
mod buffer;
mod cache;
mod error;
mod multi;
mod pinned;
mod pool;
mod stats;
mod svm;
pub mod trace;

pub use allocator::{Allocator, AllocatorError, HostAllocError, HostBlock, SimulatedAllocator};
pub use bins::{BinLayout, BinNumber, InvalidLeadingBits};
pub use buffer::{
    BufferBlock, DeferredAllocator, ForceMode, ImmediateAllocator, PooledBuffer, PooledSlice,
};
pub use cache::{clear_first_arg_caches, ContextCache, FirstArgCache};
pub use error::{OomReport, PoolError};
pub use multi::DevicePools;
pub use pinned::PinnedAllocator;
pub use pool::{
    Eviction, LocalBlock, MemoryPool, OomMode, Policy, PoolBlock, PoolBuilder, ThreadCacheLimits,
};
pub use stats::{BinStats, PoolStats, ScopeReport, TimingStats};
pub use svm::{PooledSvm, SvmAllocator};
