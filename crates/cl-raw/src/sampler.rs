//! Sampler entry points.

use crate::error::{created, ClError};
use crate::fault;
use crate::{cl_bool, sys};

/// [`clCreateSampler`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateSampler.html)
/// (OpenCL 1.x entry point, deprecated by 2.0 but still exported).
///
/// # Errors
///
/// The driver's status (`CL_INVALID_OPERATION` when no device supports images).
///
/// # Safety
///
/// 1. `context` is valid.
/// 2. The caller owns (and must release) the returned sampler.
pub unsafe fn create(
    context: sys::cl_context,
    normalized_coords: bool,
    addressing_mode: sys::cl_addressing_mode,
    filter_mode: sys::cl_filter_mode,
) -> Result<sys::cl_sampler, ClError> {
    fault::check("clCreateSampler")?;
    // SAFETY: obligations 1-2.
    created(|err| unsafe {
        sys::clCreateSampler(
            context,
            cl_bool(normalized_coords),
            addressing_mode,
            filter_mode,
            err,
        )
    })
}

/// [`clCreateSamplerWithProperties`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateSamplerWithProperties.html)
/// (OpenCL 2.0): from a 0-terminated property list (empty = defaults).
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` for a non-terminated list (checked first).
///
/// # Safety
///
/// 1. `context` is valid, of an OpenCL 2.0 or newer platform.
/// 2. The caller owns (and must release) the returned sampler.
pub unsafe fn create_with_properties(
    context: sys::cl_context,
    properties: &[sys::cl_sampler_properties],
) -> Result<sys::cl_sampler, ClError> {
    fault::check("clCreateSamplerWithProperties")?;
    let props = crate::properties(properties)?;
    // SAFETY: obligations 1-2; `props` is null or 0-terminated.
    created(|err| unsafe { sys::clCreateSamplerWithProperties(context, props, err) })
}
