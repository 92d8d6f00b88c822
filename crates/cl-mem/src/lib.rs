//! `cl-mem`: the safe OpenCL runtime of the workspace — platforms, devices, contexts, queues,
//! events, a minimal program/kernel layer, and memory objects.
//!
//! **For:** owning, reference-counted wrappers whose methods check what can be checked before the
//! driver is called (versions, capabilities, bounds, argument shapes) and return a typed
//! [`Error`]. **Not for:** heuristics (`cl-characterize`), pooling (`cl-pool`), or a complete
//! program/kernel API: kernels exist here so memory can be tested end to end.
//!
//! # Quick start
//!
//! A kernel over two buffers on the device [`create_some_context`] picks (`CL_CTX` or `CL_TEST`
//! when set, else a GPU, else a CPU runtime, a simulator last), read back; a wrong argument is a
//! typed error before the driver sees it (run as a test on the device `cargo test` selects):
//!
//! ```
//! use cl_mem::{create_some_context, Buffer, Error, MemFlags, Program, Queue};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let context = create_some_context()?;
//! let queue = Queue::new(&context, &context.devices()[0])?;
//! let x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
//! let a = Buffer::from_slice(&context, MemFlags::READ_ONLY, &x)?;
//! let b = Buffer::new(&context, MemFlags::WRITE_ONLY, x.len() * 4)?;
//!
//! let program = Program::build_from_source(
//!     &context,
//!     "__kernel void twice(__global const float* a, __global float* b) {
//!          size_t i = get_global_id(0); b[i] = 2.0f * a[i]; }",
//!     "",
//! )?;
//! let twice = program.kernel("twice")?;
//! // A scalar where the kernel wants a pointer: refused, the driver never sees it.
//! let wrong = twice.call(&queue, &[x.len()], None, (&1.0f32, &b));
//! assert!(matches!(wrong, Err(Error::KernelArg { .. })));
//! twice.call(&queue, &[x.len()], None, (&a, &b))?;
//!
//! let y: Vec<f32> = b.to_vec(&queue)?; // blocking read, after the kernel (in-order queue)
//! assert!(y.iter().zip(&x).all(|(y, x)| *y == 2.0 * x));
//! # Ok(())
//! # }
//! ```
//!
//! More: `examples/` (`image_blur`, `svm` with its fallback, `async_read` with tokio, and ports of
//! PyOpenCL's own examples: `pyopencl_demo`, `pyopencl_transpose`, `pyopencl_svm`), and cl-pool's
//! quick start for pooled buffers.
//!
//! # Layers
//!
//! | crate | level | unsafe |
//! | --- | --- | --- |
//! | `cl-sys` (as `cl_raw::sys`) | raw FFI | all |
//! | `cl-raw` | `Result`-returning `unsafe fn` wrappers, `ClError`, `Version` | wrappers |
//! | **`cl-mem`** | owning types below | inside only, each block justified |
//! | `cl-pool` | allocators, `MemoryPool`, `SvmPool` | none |
//!
//! # Concepts
//!
//! | Rust | OpenCL | PyOpenCL |
//! | --- | --- | --- |
//! | [`Platform`] | `cl_platform_id` | `Platform` |
//! | [`Device`], [`DeviceType`], [`SvmCapabilities`] | `cl_device_id`, `CL_DEVICE_*` | `Device` |
//! | [`Context`] | `cl_context` | `Context` |
//! | [`Queue`], [`QueueProperties`] | `cl_command_queue` | `CommandQueue` |
//! | [`Event`], [`UserEvent`] | `cl_event` | `Event`, `UserEvent` |
//! | [`Program`], [`Kernel`], [`KernelArg`], [`LocalMemory`] | `cl_program`, `cl_kernel` | `Program`, `Kernel`, `LocalMemory` |
//! | [`MemObject`] ([`MemInfo`]), [`MemFlags`] | `cl_mem`, `cl_mem_flags` | `MemoryObjectHolder`, `mem_flags` |
//! | [`Buffer`] | buffer `cl_mem` | `Buffer` |
//! | [`Memory`] | any `cl_mem`, owned | `MemoryObject` (`from_int_ptr`) |
//! | [`Buffer::sub_buffer`], [`Buffer::fill`], [`enqueue_migrate_mem_objects`] | `clCreateSubBuffer`, `clEnqueueFillBuffer`, `clEnqueueMigrateMemObjects` | `get_sub_region`, `enqueue_fill_buffer`, `enqueue_migrate_mem_objects` |
//! | [`enqueue_copy`], [`Rect`], [`Pending`], [`HostMemory`] | `clEnqueue{Read,Write,Copy}Buffer[Rect]` | `enqueue_copy`, `NannyEvent` |
//! | [`Buffer::with_map`], [`MapRead`], [`MapMut`], [`MapFlags`] | `clEnqueueMapBuffer`, `clEnqueueUnmapMemObject` | `enqueue_map_buffer`, `MemoryMap` |
//! | [`PinnedMemory`] | mapped `ALLOC_HOST_PTR` buffer | — |
//! | [`Image`], [`ImageFormat`], [`ImageDesc`], [`image_from_array`] | image `cl_mem`, `cl_image_format`, `cl_image_desc` | `Image`, `ImageFormat`, `create_image`, `image_from_array` |
//! | [`Sampler`] | `cl_sampler` | `Sampler` |
//! | [`Pipe`] | pipe `cl_mem` | `Pipe` |
//! | [`svm::SvmArray`] ([`svm::csvm_empty`], [`svm::fsvm_empty`], [`svm::SvmPointer`], maps, [`svm::SvmBufferView`]) | `clSVMAlloc`, `clEnqueueSVM*` | `SVMAllocation`, `SVMPointer`, `SVMMap`, `svm_empty`, `SVM` |
//! | [`Pod`] | by-value data | numpy dtypes |
//! | [`create_some_context`], [`test_devices`], [`select_devices`] (`CL_TEST`, `CL_CTX`) | — | `create_some_context`, `PYOPENCL_CTX`, `PYOPENCL_TEST`, `get_test_platforms_and_devices` |
//!
//! # Handles
//!
//! Each wrapper owns exactly one OpenCL reference: `Clone` retains, `Drop` releases. `Drop` never
//! panics; a failed release is logged through `tracing`, and `release(self)` reports it to callers
//! who care. Raw-handle vocabulary, one trait for every wrapper ([`RawHandle`]; `use
//! cl_mem::RawHandle`): `as_raw`, `into_raw`, `unsafe fn from_raw` (adopts a reference),
//! `unsafe fn from_raw_retained` (retains first), `release`, `reference_count`. [`Platform`] and
//! [`Device`] are `Copy` ids (root devices have no reference count) with their own `from_raw`
//! and `as_raw`.
//!
//! # Thread safety
//!
//! Since OpenCL 1.1 every API call is thread-safe except `clSetKernelArg`,
//! `clSetKernelArgSVMPointer`, `clSetKernelExecInfo` and `clCloneKernel` on one kernel object. So
//! every type here is `Send + Sync`; [`Kernel`] sets arguments under `&mut self` or its own lock
//! ([`Kernel::call`]), and is not `Clone`.
//!
//! # Version gating
//!
//! An OpenCL 1.2 platform (Oclgrind) hangs on a 3.0 entry point instead of failing, so every
//! entry point newer than 1.2 is gated on the *platform* version (and device features on the
//! *device* version) before the call, failing with [`Error::Unsupported`]. Versions are parsed once
//! per [`Device`] and cached. Queues use `clCreateCommandQueueWithProperties` only on 2.0+.
//!
//! # Safety model
//!
//! `unsafe` appears only where raw handles are adopted (`from_raw`), where a raw SVM pointer is
//! passed ([`Kernel::set_arg_svm_pointer`]), and in the `unsafe trait`s [`Pod`], [`MemObject`]
//! and [`KernelArg`] whose implementors promise valid bytes or handles. Host memory given to a
//! transfer is borrowed only by blocking calls. Kernels retain the memory objects set as their
//! arguments, so dropping a buffer between `set_arg` and the enqueue cannot dangle.
//! SVM has no reference count: [`svm`] frees an allocation on its in-order queue after every
//! queue that used it (kernels report their queues and hold their SVM arguments).
//!
//! # Features
//!
//! | feature | default | what it adds |
//! | --- | --- | --- |
//! | `ndarray` | on | ndarray arrays as transfer host memory ([`HostData`]), `Buffer::to_array`, `Image::read_array` / `write_array`, `image_from_array`; ndarray views of maps, pinned memory and SVM through `ArrayView::from_shape(shape, &guard[..])` (PyOpenCL's numpy side) |
//! | `half` | on | `half::f16` as a [`Pod`] and an [`ImageElement`] (`HALF_FLOAT` channels) |
//!
//! Without either the crate works on plain slices (`default-features = false`).
//!
//! `fuzzing` (off by default, not a public API): a hidden `fuzzing` module forwarding to the
//!   crate-private range, rectangle and image-layout checks, for the fuzz targets (`fuzz/`) and the
//!   property tests of `cl-props`.

mod buffer;
mod error;
mod external;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod image;
mod mem_type;
mod memory;
mod pipe;
mod pod;
mod raw_handle;
mod runtime;
mod sampler;
pub mod svm;

pub use cl_raw::{ClError, Version};

pub use buffer::fill::enqueue_migrate_mem_objects;
pub use buffer::host::PinnedMemory;
pub use buffer::map::{MapFlags, MapMode, MapMut, MapRead, PendingMap, ReadOnly};
pub use buffer::rect::Rect;
pub use buffer::staged::{
    idle_staging_chunks, TransferOptions, TransferPath, AUTO_MIN_BYTES, MAX_STAGING_THREADS,
};
pub use buffer::tracked::MigrationFlags;
pub use buffer::transfer::{
    enqueue_copy, enqueue_copy_buffer_p2p_amd, CopyPair, HostData, HostDataMut, HostMemory,
    Pending, PendingFuture, Transfer,
};
pub use buffer::{AsBuffer, Buffer};
pub use cl_raw::select::{SelectError, Selector};
pub use error::{set_drop_failure_hook, DropFailure, DropHook, Error, Result};
#[cfg(feature = "cuda")]
pub use external::cuda;
pub use external::{ExternalMemory, MemoryHandleType, Semaphore, SemaphoreHandleType};
pub use memory::{MemFlags, MemInfo, MemObject, MemObjectType, Memory};
pub use pod::Pod;
pub use raw_handle::RawHandle;
pub use runtime::context::Context;
pub use runtime::device::QueueProperties;
pub use runtime::device::{Device, DeviceType, ImageLimits, SvmCapabilities};
pub use runtime::event::future::EventFuture;
pub use runtime::event::{CallbackOn, Event, EventStatus, ProfilingTimes, UserEvent};
pub use runtime::kernel::{
    ArgValue, AsKernelArg, KeepAlive, Kernel, KernelArg, KernelArgs, KernelParam, LocalMemory,
    NullMem, ParamKind,
};
pub use runtime::live::{live_objects, LiveObjects};
pub use runtime::partition::{AffinityDomain, Partition, PartitionSupport};
pub use runtime::platform::Platform;
pub use runtime::program::Program;
pub use runtime::queue::Queue;
pub use runtime::select::{
    create_some_context, select_devices, test_devices, DeviceRank, Selected,
};

#[cfg(feature = "ndarray")]
pub use image::image_from_array;
pub use image::{
    supported_image_formats, ArrayImageOptions, ChannelOrder, ChannelType, FillColor, Image,
    ImageDesc, ImageElement, ImageFormat, ImageInfo, ImageMapping, ImagePitches, ImageType,
};
pub use pipe::Pipe;
pub use sampler::{AddressingMode, FilterMode, Sampler, SamplerInfo, SamplerProperty};
