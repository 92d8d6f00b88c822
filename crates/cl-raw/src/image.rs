//! Image entry points (`clCreateImage`, formats, `clGetImageInfo`). Image transfers are in
//! [`crate::queue`]; retain/release are the memory-object ones in [`crate::mem`].

use std::ffi::c_void;

use crate::error::{created, ClError};
use crate::fault;
use crate::info::{info_fn, query_list};
use crate::sys;

/// [`clCreateImage`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateImage.html)
/// (OpenCL 1.2).
///
/// # Errors
///
/// The driver's status (`CL_IMAGE_FORMAT_NOT_SUPPORTED`, `CL_INVALID_IMAGE_DESCRIPTOR`,
/// `CL_INVALID_IMAGE_SIZE`, ...).
///
/// # Safety
///
/// 1. `context` is valid, of an OpenCL 1.2 or newer platform.
/// 2. `desc.buffer`, when non-null, is a valid buffer (1-D image buffers) or image (2-D from
///    buffer/image, 2.0) of the context.
/// 3. `host_ptr` as in [`crate::mem::create_buffer`], covering the image with the descriptor's
///    pitches.
/// 4. The caller owns (and must release) the returned image.
pub unsafe fn create(
    context: sys::cl_context,
    flags: sys::cl_mem_flags,
    format: &sys::cl_image_format,
    desc: &sys::cl_image_desc,
    host_ptr: *mut c_void,
) -> Result<sys::cl_mem, ClError> {
    fault::check("clCreateImage")?;
    // SAFETY: obligations 1-4; `format` and `desc` live for the call.
    created(|err| unsafe { sys::clCreateImage(context, flags, format, desc, host_ptr, err) })
}

/// [`clCreateImage2D`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateImage2D.html)
/// (OpenCL 1.0, deprecated by 1.2 and still exported): a 2-D image.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `context` is valid.
/// 2. `host_ptr` as in [`crate::mem::create_buffer`], covering the image with `row_pitch`.
/// 3. The caller owns (and must release) the returned image.
pub unsafe fn create_2d(
    context: sys::cl_context,
    flags: sys::cl_mem_flags,
    format: &sys::cl_image_format,
    (width, height): (usize, usize),
    row_pitch: usize,
    host_ptr: *mut c_void,
) -> Result<sys::cl_mem, ClError> {
    fault::check("clCreateImage2D")?;
    // SAFETY: obligations 1-3; `format` lives for the call and is only read (cl-sys declares it
    // `*mut` after the 1.0 headers).
    created(|err| unsafe {
        sys::clCreateImage2D(
            context,
            flags,
            std::ptr::from_ref(format).cast_mut(),
            width,
            height,
            row_pitch,
            host_ptr,
            err,
        )
    })
}

/// [`clCreateImage3D`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateImage3D.html)
/// (OpenCL 1.0, deprecated by 1.2 and still exported): a 3-D image.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `context` is valid.
/// 2. `host_ptr` as in [`crate::mem::create_buffer`], covering the image with the pitches.
/// 3. The caller owns (and must release) the returned image.
pub unsafe fn create_3d(
    context: sys::cl_context,
    flags: sys::cl_mem_flags,
    format: &sys::cl_image_format,
    (width, height, depth): (usize, usize, usize),
    (row_pitch, slice_pitch): (usize, usize),
    host_ptr: *mut c_void,
) -> Result<sys::cl_mem, ClError> {
    fault::check("clCreateImage3D")?;
    // SAFETY: obligations 1-3; `format` lives for the call and is only read.
    created(|err| unsafe {
        sys::clCreateImage3D(
            context,
            flags,
            std::ptr::from_ref(format).cast_mut(),
            width,
            height,
            depth,
            row_pitch,
            slice_pitch,
            host_ptr,
            err,
        )
    })
}

/// [`clGetSupportedImageFormats`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetSupportedImageFormats.html):
/// the formats every device of the context supports for `image_type` and `flags`.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `context` is valid.
pub unsafe fn get_supported_formats(
    context: sys::cl_context,
    flags: sys::cl_mem_flags,
    image_type: sys::cl_mem_object_type,
) -> Result<Vec<sys::cl_image_format>, ClError> {
    let empty = || sys::cl_image_format {
        image_channel_order: 0,
        image_channel_data_type: 0,
    };
    // SAFETY: a count-then-fill list call on a valid context.
    unsafe {
        query_list(empty, |n, formats, ret| {
            sys::clGetSupportedImageFormats(context, flags, image_type, n, formats, ret)
        })
    }
}

info_fn! {
    /// [`clGetImageInfo`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clGetImageInfo.html).
    ///
    /// # Errors
    ///
    /// The driver's status, or `CL_INVALID_VALUE` when the value does not fit `T`.
    ///
    /// # Safety
    ///
    /// 1. `image` is a valid image.
    pub unsafe fn get_info(image: sys::cl_mem, param: sys::cl_image_info) => clGetImageInfo;
}
