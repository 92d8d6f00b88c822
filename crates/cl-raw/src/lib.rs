//! `cl-raw`: the FFI layer of the workspace — `cl-sys` re-exported, what it lacks, a typed status
//! ([`ClError`]), version parsing ([`Version`]), and thin `unsafe` wrappers, one module per OpenCL
//! object.
//!
//! **For:** crates that need the raw OpenCL API with `Result`s instead of status codes (the safe
//! runtime `cl-mem` builds on it). **Not for:** application code — use `cl-mem`, whose types own
//! their handles and check arguments, versions and capabilities before calling the driver.
//!
//! # Layers
//!
//! | crate | level | unsafe |
//! | --- | --- | --- |
//! | `cl-sys` (crates.io), re-exported as [`sys`] | raw `extern` declarations and constants | all |
//! | **`cl-raw`** | `Result`-returning wrappers, [`ClError`], [`Version`], [`InfoValue`] | wrappers are `unsafe fn` |
//! | `cl-mem` | owning types: `Platform`, `Device`, `Context`, `Queue`, `Event`, `Buffer`, ... | only inside |
//! | `cl-pool` | allocators and memory pools | none |
//!
//! # Concepts
//!
//! | Rust | OpenCL |
//! | --- | --- |
//! | [`ClError`], [`check`] | `cl_int` status codes (`CL_INVALID_VALUE`, ...) |
//! | [`Version`] | `"OpenCL X.Y ..."` strings, `cl_version` (3.0) |
//! | [`InfoValue`] (what `get_info` decodes into; `info::query` inside) | the `clGet*Info` size-then-fill pattern |
//! | [`object`] | `clRetain*`, `clRelease*`, `clGet*Info` of every reference-counted object, written once |
//! | [`platform`], [`device`], [`context`], [`queue`], [`event`], [`program`], [`kernel`] | `clGetPlatformIDs`, `clCreateContext`, `clEnqueue*`, ... |
//! | [`mem`], [`image`], [`pipe`], [`sampler`], [`svm`] | memory objects, `clSVMAlloc` |
//! | [`fault`] | (feature `fault-injection`) a chosen call failing with a chosen status |
//! | [`extra`] | the 3.0 and vendor items `cl-sys` 0.4 lacks that the workspace uses |
//! | [`select::Selector`] | the `CL_TEST` / `PYOPENCL_TEST` device-selector grammar (pure; no OpenCL call) |
//!
//! # Naming
//!
//! A wrapper is found by its C name: drop `cl`, drop the noun of its module, snake_case, and put it
//! in the module of the object it acts on. `clEnqueueReadBuffer` -> [`queue::enqueue_read_buffer`],
//! `clGetDeviceInfo` -> [`device::get_info`], `clCreateBuffer` -> [`mem::create_buffer`],
//! `clCreateImage` -> [`image::create`], `clSVMAlloc` -> [`svm::alloc`]. Every `clEnqueue*`
//! lives in [`queue`]. The first doc line of each wrapper links the Khronos reference page. The
//! exception: retain, release and info of the reference-counted objects are one function each in
//! [`object`], which takes the kind of object (`clReleaseEvent` -> `object::release(Object::Event,
//! e)`, `clGetMemObjectInfo` -> [`object::get_info`] with [`object::Object::Mem`]).
//!
//! Only what `cl-mem` and `cl-characterize` call is wrapped; other entry points are reached
//! through [`sys`].
//!
//! # Safety model
//!
//! Every wrapper is an `unsafe fn` with a numbered `# Safety` list: handle validity, host-memory
//! lifetimes, ownership of returned references, and the OpenCL version the call needs. Wrappers
//! check what they can without a device (0-terminated property lists, wait-list lengths, kernel
//! dimensions) and return `CL_INVALID_*` for it instead of calling. Version gating is the
//! caller's obligation here: an OpenCL 1.2 platform (Oclgrind 21.10) hangs on a 3.0 entry point,
//! so compare [`Version::parse_platform`] of `CL_PLATFORM_VERSION` before calling a newer entry
//! point; `cl-mem` does this and returns `Error::Unsupported`.
//!
//! Enqueue wrappers always request an event and return it; the caller owns that reference.
//!
//! # Features
//!
//! - `fault-injection` (off by default; never enabled by a library crate, only by the test
//!   package `cl-tests`): [`fault::arm`] makes a chosen call of a chosen allocation or enqueue site
//!   return a chosen status before the driver is called. Without it [`fault`] has only the list of
//!   sites, and each site check is an empty inline function.
//!
//! `cl-sys` is built with `opencl_version_2_0` and `opencl_version_2_1`.

pub use cl_sys as sys;

mod error;
pub mod fault;
pub mod info;
mod version;

pub mod external;
pub mod extra;
pub mod select;

pub mod context;
pub mod device;
pub mod event;
pub mod image;
pub mod kernel;
pub mod mem;
pub mod object;
pub mod pipe;
pub mod platform;
pub mod program;
pub mod queue;
pub mod sampler;
pub mod svm;

pub use error::{check, ClError};
pub use info::{InfoElement, InfoValue};
pub use version::{Version, VersionParseError};

/// A list length as `cl_uint`; lengths beyond `u32::MAX` are `CL_INVALID_VALUE`.
fn count(len: usize) -> Result<sys::cl_uint, ClError> {
    sys::cl_uint::try_from(len).map_err(|_| ClError::InvalidValue)
}

/// `list` as the C API reads a list: null when empty.
fn or_null<T>(list: &[T]) -> *const T {
    if list.is_empty() {
        std::ptr::null()
    } else {
        list.as_ptr()
    }
}

/// A 0-terminated property list as the C API reads it (null when empty).
///
/// # Errors
///
/// `CL_INVALID_VALUE` for a list whose last value is not 0, before the driver reads past it.
fn properties<T: Copy + PartialEq + Default>(list: &[T]) -> Result<*const T, ClError> {
    if list.last().is_some_and(|&p| p != T::default()) {
        return Err(ClError::InvalidValue);
    }
    Ok(or_null(list))
}

/// A Rust `bool` as `cl_bool`.
const fn cl_bool(b: bool) -> sys::cl_bool {
    if b {
        sys::CL_TRUE
    } else {
        sys::CL_FALSE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_rejects_lengths_beyond_u32() {
        assert_eq!(count(3), Ok(3));
        assert_eq!(count(u32::MAX as usize), Ok(u32::MAX));
        #[cfg(target_pointer_width = "64")]
        assert_eq!(count(u32::MAX as usize + 1), Err(ClError::InvalidValue));
    }

    #[test]
    fn wrappers_check_arguments_before_the_driver() {
        // None of these reach the driver: the handles are null and would fail there anyway.
        let null = std::ptr::null_mut();
        // SAFETY: every call below is rejected before any handle is used.
        unsafe {
            assert_eq!(
                queue::enqueue_nd_range_kernel(null, null, None, &[], None, &[]),
                Err(ClError::InvalidWorkDimension)
            );
            assert_eq!(
                queue::enqueue_nd_range_kernel(null, null, None, &[1, 1, 1, 1], None, &[]),
                Err(ClError::InvalidWorkDimension)
            );
            assert_eq!(
                queue::enqueue_nd_range_kernel(null, null, None, &[8], Some(&[2, 2]), &[]),
                Err(ClError::InvalidValue)
            );
            assert_eq!(
                queue::create_with_properties(null, null, &[1, 2]),
                Err(ClError::InvalidValue)
            );
            assert_eq!(
                pipe::create(null, 0, 1, 1, &[5]),
                Err(ClError::InvalidValue)
            );
            assert_eq!(
                context::create(&[], &[], None, null),
                Err(ClError::InvalidValue)
            );
            assert_eq!(
                program::create_with_source(null, &[]),
                Err(ClError::InvalidValue)
            );
            assert_eq!(
                queue::enqueue_migrate_mem_objects(null, &[], 0, &[]),
                Err(ClError::InvalidValue)
            );
            assert_eq!(event::wait_for_events(&[]), Ok(()));
        }
    }
}
