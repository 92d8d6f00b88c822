//! Command-queue entry points: creation, info, flush/finish, and every `clEnqueue*` call
//! (buffers, rectangles, images, maps, migration, kernels, markers, barriers, SVM).
//!
//! Every enqueue wrapper takes the wait list as a slice and **always** requests an event, which it
//! returns: the caller owns that reference and must release it (`cl-mem` wraps it in an `Event`).
//! Rectangles and image regions are `[usize; 3]` as the C API reads three values.

use std::ffi::c_void;

use crate::error::{check, created, ClError};
use crate::fault;
use crate::{cl_bool, count, sys};

/// Runs one `clEnqueue*` call with `wait` as its wait list and returns the event it produced.
///
/// # Safety
///
/// 1. `call(num_events, event_list, event_out)` forwards to one `clEnqueue*` function.
pub(crate) unsafe fn enqueue(
    wait: &[sys::cl_event],
    call: impl FnOnce(sys::cl_uint, *const sys::cl_event, *mut sys::cl_event) -> sys::cl_int,
) -> Result<sys::cl_event, ClError> {
    let n = count(wait.len()).map_err(|_| ClError::InvalidEventWaitList)?;
    let list = crate::or_null(wait);
    let mut event: sys::cl_event = std::ptr::null_mut();
    check(call(n, list, &mut event))?;
    Ok(event)
}

/// Writes the enqueue wrappers whose body is only the fault site and the call: each takes its
/// parameters, then `wait`, calls `fault::check` with the C name and then `sys::$c` with `args`
/// followed by the wait list and the event out-parameter. Written once so that the read and write
/// twins (and the other plain wrappers) cannot drift apart; `tests/tidy.rs` reads the invocations
/// as it reads hand-written wrappers.
macro_rules! enqueue_wrappers {
    ($(
        $(#[$attr:meta])*
        pub unsafe fn $name:ident($($param:ident: $ty:ty),* $(,)?) => $c:ident($($arg:expr),* $(,)?);
    )*) => {$(
        $(#[$attr])*
        pub unsafe fn $name($($param: $ty,)* wait: &[sys::cl_event]) -> Result<sys::cl_event, ClError> {
            fault::check(stringify!($c))?;
            // SAFETY: the wrapper's obligations are forwarded to the call; every array passed by
            // pointer holds the values the C function reads (three for origins and regions).
            unsafe { enqueue(wait, |n, list, ev| sys::$c($($arg,)* n, list, ev)) }
        }
    )*};
}

/// [`clCreateCommandQueue`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateCommandQueue.html)
/// (OpenCL 1.x entry point, deprecated by 2.0 but still exported): a host queue with `properties`
/// (`CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE`, `CL_QUEUE_PROFILING_ENABLE`).
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `context` is a valid context and `device` one of its devices.
/// 2. The caller owns (and must release) the returned queue.
pub unsafe fn create(
    context: sys::cl_context,
    device: sys::cl_device_id,
    properties: sys::cl_command_queue_properties,
) -> Result<sys::cl_command_queue, ClError> {
    fault::check("clCreateCommandQueue")?;
    // SAFETY: obligations 1 and 2.
    created(|err| unsafe { sys::clCreateCommandQueue(context, device, properties, err) })
}

/// [`clCreateCommandQueueWithProperties`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clCreateCommandQueueWithProperties.html)
/// (OpenCL 2.0): a queue from a 0-terminated property list (empty = defaults).
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` for a non-terminated list (checked first).
///
/// # Safety
///
/// 1. `context` is a valid context of an OpenCL 2.0 or newer platform and `device` one of its
///    devices.
/// 2. The caller owns (and must release) the returned queue.
pub unsafe fn create_with_properties(
    context: sys::cl_context,
    device: sys::cl_device_id,
    properties: &[sys::cl_queue_properties],
) -> Result<sys::cl_command_queue, ClError> {
    fault::check("clCreateCommandQueueWithProperties")?;
    let props = crate::properties(properties)?;
    // SAFETY: obligations 1 and 2; `props` is null or 0-terminated.
    created(|err| unsafe { sys::clCreateCommandQueueWithProperties(context, device, props, err) })
}

/// [`clFlush`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clFlush.html).
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `queue` is a valid command queue.
pub unsafe fn flush(queue: sys::cl_command_queue) -> Result<(), ClError> {
    // SAFETY: obligation 1.
    check(unsafe { sys::clFlush(queue) })
}

/// [`clFinish`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clFinish.html): blocks
/// until every command in `queue` has completed.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `queue` is a valid command queue.
pub unsafe fn finish(queue: sys::cl_command_queue) -> Result<(), ClError> {
    // SAFETY: obligation 1.
    check(unsafe { sys::clFinish(queue) })
}

enqueue_wrappers! {
    /// [`clEnqueueReadBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueReadBuffer.html):
    /// device to host, `size` bytes from `offset`.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `buffer` and every event of `wait` are valid and share one context.
    /// 2. `ptr` is valid for `size` bytes of writes and nothing else accesses them until the command
    ///    completes (when `blocking` is false: until the returned event completes).
    /// 3. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_read_buffer(queue: sys::cl_command_queue, buffer: sys::cl_mem,
        blocking: bool, offset: usize, size: usize, ptr: *mut c_void)
        => clEnqueueReadBuffer(queue, buffer, cl_bool(blocking), offset, size, ptr);

    /// [`clEnqueueWriteBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueWriteBuffer.html):
    /// host to device, `size` bytes at `offset`.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `buffer` and every event of `wait` are valid and share one context.
    /// 2. `ptr` is valid for `size` bytes of reads and is not written until the command completes
    ///    (when `blocking` is false: until the returned event completes).
    /// 3. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_write_buffer(queue: sys::cl_command_queue, buffer: sys::cl_mem,
        blocking: bool, offset: usize, size: usize, ptr: *const c_void)
        => clEnqueueWriteBuffer(queue, buffer, cl_bool(blocking), offset, size, ptr);

    /// [`clEnqueueReadBufferRect`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueReadBufferRect.html)
    /// (OpenCL 1.1): a 3-D rectangle, device to host. Origins and region are `[x_bytes, y, z]`.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `buffer` and every event of `wait` are valid and share one context.
    /// 2. `ptr` is valid for writes over the whole host rectangle (origin, region and pitches) until
    ///    the command completes (when `blocking` is false: until the returned event completes).
    /// 3. The caller owns (and must release) the returned event.
    #[expect(clippy::too_many_arguments, reason = "mirrors the C entry point")]
    pub unsafe fn enqueue_read_buffer_rect(queue: sys::cl_command_queue, buffer: sys::cl_mem,
        blocking: bool, buffer_origin: [usize; 3], host_origin: [usize; 3], region: [usize; 3],
        buffer_pitches: [usize; 2], host_pitches: [usize; 2], ptr: *mut c_void)
        => clEnqueueReadBufferRect(queue, buffer, cl_bool(blocking), buffer_origin.as_ptr(),
            host_origin.as_ptr(), region.as_ptr(), buffer_pitches[0], buffer_pitches[1],
            host_pitches[0], host_pitches[1], ptr);

    /// [`clEnqueueWriteBufferRect`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueWriteBufferRect.html)
    /// (OpenCL 1.1): a 3-D rectangle, host to device. Origins and region are `[x_bytes, y, z]`.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `buffer` and every event of `wait` are valid and share one context.
    /// 2. `ptr` is valid for reads over the whole host rectangle and not written until the command
    ///    completes (when `blocking` is false: until the returned event completes).
    /// 3. The caller owns (and must release) the returned event.
    #[expect(clippy::too_many_arguments, reason = "mirrors the C entry point")]
    pub unsafe fn enqueue_write_buffer_rect(queue: sys::cl_command_queue, buffer: sys::cl_mem,
        blocking: bool, buffer_origin: [usize; 3], host_origin: [usize; 3], region: [usize; 3],
        buffer_pitches: [usize; 2], host_pitches: [usize; 2], ptr: *const c_void)
        => clEnqueueWriteBufferRect(queue, buffer, cl_bool(blocking), buffer_origin.as_ptr(),
            host_origin.as_ptr(), region.as_ptr(), buffer_pitches[0], buffer_pitches[1],
            host_pitches[0], host_pitches[1], ptr);

    /// [`clEnqueueCopyBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueCopyBuffer.html):
    /// device to device, `size` bytes.
    ///
    /// # Errors
    ///
    /// The driver's status (`CL_MEM_COPY_OVERLAP` for overlapping regions of one buffer).
    ///
    /// # Safety
    ///
    /// 1. `queue`, both buffers and every event of `wait` are valid and share one context.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_copy_buffer(queue: sys::cl_command_queue, src: sys::cl_mem,
        dst: sys::cl_mem, src_offset: usize, dst_offset: usize, size: usize)
        => clEnqueueCopyBuffer(queue, src, dst, src_offset, dst_offset, size);

    /// [`clEnqueueCopyBufferRect`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueCopyBufferRect.html)
    /// (OpenCL 1.1): a 3-D rectangle, device to device.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, both buffers and every event of `wait` are valid and share one context.
    /// 2. The caller owns (and must release) the returned event.
    #[expect(clippy::too_many_arguments, reason = "mirrors the C entry point")]
    pub unsafe fn enqueue_copy_buffer_rect(queue: sys::cl_command_queue, src: sys::cl_mem,
        dst: sys::cl_mem, src_origin: [usize; 3], dst_origin: [usize; 3], region: [usize; 3],
        src_pitches: [usize; 2], dst_pitches: [usize; 2])
        => clEnqueueCopyBufferRect(queue, src, dst, src_origin.as_ptr(), dst_origin.as_ptr(),
            region.as_ptr(), src_pitches[0], src_pitches[1], dst_pitches[0], dst_pitches[1]);

    /// [`clEnqueueFillBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueFillBuffer.html)
    /// (OpenCL 1.2): repeats `pattern` over `size` bytes at `offset`. The driver copies the pattern
    /// before returning, so it may be a temporary.
    ///
    /// # Errors
    ///
    /// The driver's status (`CL_INVALID_VALUE` for a pattern size that is not 1, 2, 4, ..., 128 or an
    /// offset/size that is not a multiple of it).
    ///
    /// # Safety
    ///
    /// 1. `queue`, `buffer` and every event of `wait` are valid and share one context, of an OpenCL
    ///    1.2 or newer platform.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_fill_buffer(queue: sys::cl_command_queue, buffer: sys::cl_mem,
        pattern: &[u8], offset: usize, size: usize)
        => clEnqueueFillBuffer(queue, buffer, pattern.as_ptr().cast(), pattern.len(), offset, size);

    /// [`clEnqueueReadImage`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueReadImage.html):
    /// image to host. Origin and region are in pixels (`[x, y, z_or_layer]`).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `image` and every event of `wait` are valid and share one context.
    /// 2. `ptr` is valid for writes over the region laid out with `row_pitch`/`slice_pitch` (0 =
    ///    tightly packed) until the command completes (when `blocking` is false: until the returned
    ///    event completes).
    /// 3. The caller owns (and must release) the returned event.
    #[expect(clippy::too_many_arguments, reason = "mirrors the C entry point")]
    pub unsafe fn enqueue_read_image(queue: sys::cl_command_queue, image: sys::cl_mem,
        blocking: bool, origin: [usize; 3], region: [usize; 3], row_pitch: usize,
        slice_pitch: usize, ptr: *mut c_void)
        => clEnqueueReadImage(queue, image, cl_bool(blocking), origin.as_ptr(), region.as_ptr(),
            row_pitch, slice_pitch, ptr);

    /// [`clEnqueueWriteImage`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueWriteImage.html):
    /// host to image. Origin and region are in pixels.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `image` and every event of `wait` are valid and share one context.
    /// 2. `ptr` is valid for reads over the region laid out with the pitches and not written until the
    ///    command completes (when `blocking` is false: until the returned event completes).
    /// 3. The caller owns (and must release) the returned event.
    #[expect(clippy::too_many_arguments, reason = "mirrors the C entry point")]
    pub unsafe fn enqueue_write_image(queue: sys::cl_command_queue, image: sys::cl_mem,
        blocking: bool, origin: [usize; 3], region: [usize; 3], row_pitch: usize,
        slice_pitch: usize, ptr: *const c_void)
        => clEnqueueWriteImage(queue, image, cl_bool(blocking), origin.as_ptr(), region.as_ptr(),
            row_pitch, slice_pitch, ptr);

    /// [`clEnqueueCopyImage`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueCopyImage.html):
    /// image to image (same format).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, both images and every event of `wait` are valid and share one context.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_copy_image(queue: sys::cl_command_queue, src: sys::cl_mem,
        dst: sys::cl_mem, src_origin: [usize; 3], dst_origin: [usize; 3], region: [usize; 3])
        => clEnqueueCopyImage(queue, src, dst, src_origin.as_ptr(), dst_origin.as_ptr(),
            region.as_ptr());

    /// [`clEnqueueCopyImageToBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueCopyImageToBuffer.html).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `src_image`, `dst_buffer` and every event of `wait` are valid and share one
    ///    context.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_copy_image_to_buffer(queue: sys::cl_command_queue, src_image: sys::cl_mem,
        dst_buffer: sys::cl_mem, src_origin: [usize; 3], region: [usize; 3], dst_offset: usize)
        => clEnqueueCopyImageToBuffer(queue, src_image, dst_buffer, src_origin.as_ptr(),
            region.as_ptr(), dst_offset);

    /// [`clEnqueueCopyBufferToImage`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueCopyBufferToImage.html).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `src_buffer`, `dst_image` and every event of `wait` are valid and share one
    ///    context.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_copy_buffer_to_image(queue: sys::cl_command_queue,
        src_buffer: sys::cl_mem, dst_image: sys::cl_mem, src_offset: usize, dst_origin: [usize; 3],
        region: [usize; 3])
        => clEnqueueCopyBufferToImage(queue, src_buffer, dst_image, src_offset, dst_origin.as_ptr(),
            region.as_ptr());

    /// [`clEnqueueFillImage`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueFillImage.html)
    /// (OpenCL 1.2): fills a region with one color, given as the 16 bytes of a `float4`, `int4` or
    /// `uint4` (by the image's channel type; depth images read the first `float`). The driver copies
    /// the color before returning.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `image` and every event of `wait` are valid and share one context, of an OpenCL
    ///    1.2 or newer platform.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_fill_image(queue: sys::cl_command_queue, image: sys::cl_mem,
        fill_color: &[u8; 16], origin: [usize; 3], region: [usize; 3])
        => clEnqueueFillImage(queue, image, fill_color.as_ptr().cast(), origin.as_ptr(),
            region.as_ptr());
}

/// [`clEnqueueMapBuffer`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueMapBuffer.html):
/// maps `size` bytes at `offset`; returns the host pointer and the event.
///
/// # Errors
///
/// The driver's status (`CL_MAP_FAILURE`, `CL_INVALID_OPERATION` for host-access flags, ...).
///
/// # Safety
///
/// 1. `queue`, `buffer` and every event of `wait` are valid and share one context.
/// 2. The pointer may be accessed only after the map completed (when `blocking` is false: after the
///    returned event completes), only as `map_flags` allow, and not after the matching
///    [`enqueue_unmap_mem_object`].
/// 3. The caller owns (and must release) the returned event.
pub unsafe fn enqueue_map_buffer(
    queue: sys::cl_command_queue,
    buffer: sys::cl_mem,
    blocking: bool,
    map_flags: sys::cl_map_flags,
    offset: usize,
    size: usize,
    wait: &[sys::cl_event],
) -> Result<(*mut c_void, sys::cl_event), ClError> {
    fault::check("clEnqueueMapBuffer")?;
    // SAFETY: obligations 1-3 are forwarded to the call.
    unsafe {
        enqueue_map(wait, |n, list, ev, err| {
            sys::clEnqueueMapBuffer(
                queue,
                buffer,
                cl_bool(blocking),
                map_flags,
                offset,
                size,
                n,
                list,
                ev,
                err,
            )
        })
    }
}

/// As [`enqueue`], for a map call: it returns the host pointer and writes its status through its
/// last parameter (`errcode_ret`).
///
/// # Safety
///
/// 1. `call(num_events, event_list, event_out, errcode_ret)` forwards to one `clEnqueueMap*`
///    function.
unsafe fn enqueue_map(
    wait: &[sys::cl_event],
    call: impl FnOnce(
        sys::cl_uint,
        *const sys::cl_event,
        *mut sys::cl_event,
        &mut sys::cl_int,
    ) -> *mut c_void,
) -> Result<(*mut c_void, sys::cl_event), ClError> {
    let mut ptr = std::ptr::null_mut();
    // SAFETY: obligation 1.
    let event = unsafe {
        enqueue(wait, |n, list, ev| {
            let mut err = 0;
            ptr = call(n, list, ev, &mut err);
            err
        })
    }?;
    Ok((ptr, event))
}

/// The result of [`enqueue_map_image`].
#[derive(Debug)]
pub struct ImageMapping {
    /// Host pointer to the mapped region's first pixel.
    pub ptr: *mut c_void,
    /// Bytes between rows of the mapped region.
    pub row_pitch: usize,
    /// Bytes between slices (3-D, arrays; 0 for 1-D and 2-D images).
    pub slice_pitch: usize,
    /// The map command's event, owned by the caller.
    pub event: sys::cl_event,
}

/// [`clEnqueueMapImage`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueMapImage.html):
/// maps an image region; returns the pointer, the pitches and the event.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `queue`, `image` and every event of `wait` are valid and share one context.
/// 2. As [`enqueue_map_buffer`]: access only after completion, as the flags allow, until unmapped.
/// 3. The caller owns (and must release) the returned event.
pub unsafe fn enqueue_map_image(
    queue: sys::cl_command_queue,
    image: sys::cl_mem,
    blocking: bool,
    map_flags: sys::cl_map_flags,
    origin: [usize; 3],
    region: [usize; 3],
    wait: &[sys::cl_event],
) -> Result<ImageMapping, ClError> {
    fault::check("clEnqueueMapImage")?;
    let (mut row_pitch, mut slice_pitch) = (0usize, 0usize);
    // SAFETY: obligations 1-3 are forwarded; out-parameters are live locals.
    let (ptr, event) = unsafe {
        enqueue_map(wait, |n, list, ev, err| {
            sys::clEnqueueMapImage(
                queue,
                image,
                cl_bool(blocking),
                map_flags,
                origin.as_ptr(),
                region.as_ptr(),
                &mut row_pitch,
                &mut slice_pitch,
                n,
                list,
                ev,
                err,
            )
        })
    }?;
    Ok(ImageMapping {
        ptr,
        row_pitch,
        slice_pitch,
        event,
    })
}

enqueue_wrappers! {
    /// [`clEnqueueUnmapMemObject`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueUnmapMemObject.html).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue`, `mem` and every event of `wait` are valid and share one context.
    /// 2. `mapped_ptr` was returned by a map of `mem` not yet unmapped; the host stops using it now.
    /// 3. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_unmap_mem_object(queue: sys::cl_command_queue, mem: sys::cl_mem,
        mapped_ptr: *mut c_void)
        => clEnqueueUnmapMemObject(queue, mem, mapped_ptr);
}

/// [`clEnqueueMigrateMemObjects`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueMigrateMemObjects.html)
/// (OpenCL 1.2): moves memory objects to the queue's device (or the host with
/// `CL_MIGRATE_MEM_OBJECT_HOST`).
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` for an empty list (checked first).
///
/// # Safety
///
/// 1. `queue`, every mem object and every event of `wait` are valid and share one context, of an
///    OpenCL 1.2 or newer platform.
/// 2. The caller owns (and must release) the returned event.
/// 3. `mem_objects` stays valid until the command completed where the driver reads it late:
///    NVIDIA 580.159.04 reads it when its worker thread runs the command, after this call
///    returned (`repro/nvidia_migrate_reads_object_list_late.c`).
pub unsafe fn enqueue_migrate_mem_objects(
    queue: sys::cl_command_queue,
    mem_objects: &[sys::cl_mem],
    flags: sys::cl_mem_migration_flags,
    wait: &[sys::cl_event],
) -> Result<sys::cl_event, ClError> {
    fault::check("clEnqueueMigrateMemObjects")?;
    if mem_objects.is_empty() {
        return Err(ClError::InvalidValue);
    }
    let num = count(mem_objects.len())?;
    // SAFETY: obligations 1-3 are forwarded; the list is non-empty.
    unsafe {
        enqueue(wait, |n, list, ev| {
            sys::clEnqueueMigrateMemObjects(queue, num, mem_objects.as_ptr(), flags, n, list, ev)
        })
    }
}

/// [`clEnqueueNDRangeKernel`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueNDRangeKernel.html):
/// runs `kernel` over `global` work-items (1 to 3 dimensions), optionally with a global offset and
/// a local size of the same dimension.
///
/// # Errors
///
/// The driver's status; `CL_INVALID_WORK_DIMENSION` for 0 or more than 3 dimensions and
/// `CL_INVALID_VALUE` for an offset or local size of another dimension (both checked first).
///
/// # Safety
///
/// 1. `queue`, `kernel` and every event of `wait` are valid and share one context.
/// 2. Every kernel argument is set, and memory objects and SVM pointers it names stay valid until
///    the command completes.
/// 3. The caller owns (and must release) the returned event.
pub unsafe fn enqueue_nd_range_kernel(
    queue: sys::cl_command_queue,
    kernel: sys::cl_kernel,
    global_offset: Option<&[usize]>,
    global: &[usize],
    local: Option<&[usize]>,
    wait: &[sys::cl_event],
) -> Result<sys::cl_event, ClError> {
    fault::check("clEnqueueNDRangeKernel")?;
    let dims = global.len();
    if !(1..=3).contains(&dims) {
        return Err(ClError::InvalidWorkDimension);
    }
    if global_offset.is_some_and(|o| o.len() != dims) || local.is_some_and(|l| l.len() != dims) {
        return Err(ClError::InvalidValue);
    }
    let offset = global_offset.map_or(std::ptr::null(), <[usize]>::as_ptr);
    let local = local.map_or(std::ptr::null(), <[usize]>::as_ptr);
    let dims = count(dims)?;
    // SAFETY: obligations 1-3 are forwarded; all arrays hold `dims` values (checked above).
    unsafe {
        enqueue(wait, |n, list, ev| {
            sys::clEnqueueNDRangeKernel(
                queue,
                kernel,
                dims,
                offset,
                global.as_ptr(),
                local,
                n,
                list,
                ev,
            )
        })
    }
}

enqueue_wrappers! {
    /// [`clEnqueueMarkerWithWaitList`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueMarkerWithWaitList.html)
    /// (OpenCL 1.2): an event that completes when `wait` (or, if empty, every earlier command) has.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue` and every event of `wait` are valid and share one context, of an OpenCL 1.2 or newer
    ///    platform.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_marker_with_wait_list(queue: sys::cl_command_queue)
        => clEnqueueMarkerWithWaitList(queue);

    /// [`clEnqueueBarrierWithWaitList`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueBarrierWithWaitList.html)
    /// (OpenCL 1.2): later commands wait for `wait` (or, if empty, every earlier command).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue` and every event of `wait` are valid and share one context, of an OpenCL 1.2 or newer
    ///    platform.
    /// 2. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_barrier_with_wait_list(queue: sys::cl_command_queue)
        => clEnqueueBarrierWithWaitList(queue);
}

/// [`clEnqueueMarker`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueMarker.html)
/// (OpenCL 1.0/1.1; deprecated by 1.2): an event completing after every earlier command.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `queue` is a valid command queue.
/// 2. The caller owns (and must release) the returned event.
pub unsafe fn enqueue_marker(queue: sys::cl_command_queue) -> Result<sys::cl_event, ClError> {
    fault::check("clEnqueueMarker")?;
    let mut event = std::ptr::null_mut();
    // SAFETY: obligation 1; `event` is a live out-parameter.
    check(unsafe { sys::clEnqueueMarker(queue, &mut event) })?;
    Ok(event)
}

/// Callback type of [`enqueue_svm_free`]: frees the pointers instead of the driver.
pub(crate) type SvmFreeCallback = extern "C" fn(
    queue: sys::cl_command_queue,
    num_svm_pointers: sys::cl_uint,
    svm_pointers: *const *const c_void,
    user_data: *mut c_void,
);

/// [`clEnqueueSVMFree`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueSVMFree.html)
/// (OpenCL 2.0): frees SVM allocations once earlier commands on the queue are done.
///
/// # Errors
///
/// The driver's status.
///
/// # Safety
///
/// 1. `queue` and every event of `wait` are valid, of an OpenCL 2.0 or newer platform with SVM.
/// 2. Every pointer was returned by `clSVMAlloc` in the queue's context and is freed only once;
///    nothing uses it after the command completes.
/// 3. `pfn_free`/`user_data`, when given, must stay valid until the callback ran.
/// 4. The caller owns (and must release) the returned event.
pub unsafe fn enqueue_svm_free(
    queue: sys::cl_command_queue,
    svm_pointers: &[*mut c_void],
    pfn_free: Option<SvmFreeCallback>,
    user_data: *mut c_void,
    wait: &[sys::cl_event],
) -> Result<sys::cl_event, ClError> {
    fault::check("clEnqueueSVMFree")?;
    let num = count(svm_pointers.len())?;
    // SAFETY: obligations 1-4 are forwarded; `*mut c_void` and `*const c_void` share a layout.
    unsafe {
        enqueue(wait, |n, list, ev| {
            sys::clEnqueueSVMFree(
                queue,
                num,
                svm_pointers.as_ptr().cast(),
                pfn_free,
                user_data,
                n,
                list,
                ev,
            )
        })
    }
}

enqueue_wrappers! {
    /// [`clEnqueueSVMMemcpy`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueSVMMemcpy.html)
    /// (OpenCL 2.0): copies `size` bytes between SVM and/or host memory.
    ///
    /// # Errors
    ///
    /// The driver's status (`CL_MEM_COPY_OVERLAP` for overlapping ranges).
    ///
    /// # Safety
    ///
    /// 1. `queue` and every event of `wait` are valid, of an OpenCL 2.0 or newer platform with SVM.
    /// 2. `src` is readable and `dst` writable for `size` bytes until the command completes (when
    ///    `blocking` is false: until the returned event completes); `dst` is not accessed meanwhile.
    /// 3. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_svm_memcpy(queue: sys::cl_command_queue, blocking: bool, dst: *mut c_void,
        src: *const c_void, size: usize)
        => clEnqueueSVMMemcpy(queue, cl_bool(blocking), dst, src, size);

    /// [`clEnqueueSVMMemFill`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueSVMMemFill.html)
    /// (OpenCL 2.0): repeats `pattern` over `size` bytes at `svm_ptr`. The driver copies the pattern
    /// before returning.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue` and every event of `wait` are valid, of an OpenCL 2.0 or newer platform with SVM.
    /// 2. `svm_ptr` points into an SVM allocation of the queue's context with `size` bytes left, not
    ///    accessed by the host until the command completes.
    /// 3. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_svm_mem_fill(queue: sys::cl_command_queue, svm_ptr: *mut c_void,
        pattern: &[u8], size: usize)
        => clEnqueueSVMMemFill(queue, svm_ptr, pattern.as_ptr().cast(), pattern.len(), size);

    /// [`clEnqueueSVMMap`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueSVMMap.html)
    /// (OpenCL 2.0): makes coarse-grained SVM host-accessible.
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue` and every event of `wait` are valid, of an OpenCL 2.0 or newer platform with SVM.
    /// 2. `svm_ptr..svm_ptr + size` lies in an SVM allocation of the queue's context; the host accesses
    ///    it only after the map completed, as `map_flags` allow, until [`enqueue_svm_unmap`].
    /// 3. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_svm_map(queue: sys::cl_command_queue, blocking: bool,
        map_flags: sys::cl_map_flags, svm_ptr: *mut c_void, size: usize)
        => clEnqueueSVMMap(queue, cl_bool(blocking), map_flags, svm_ptr, size);

    /// [`clEnqueueSVMUnmap`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueSVMUnmap.html)
    /// (OpenCL 2.0).
    ///
    /// # Errors
    ///
    /// The driver's status.
    ///
    /// # Safety
    ///
    /// 1. `queue` and every event of `wait` are valid, of an OpenCL 2.0 or newer platform with SVM.
    /// 2. `svm_ptr` was mapped with [`enqueue_svm_map`]; the host stops accessing it now.
    /// 3. The caller owns (and must release) the returned event.
    pub unsafe fn enqueue_svm_unmap(queue: sys::cl_command_queue, svm_ptr: *mut c_void)
        => clEnqueueSVMUnmap(queue, svm_ptr);
}

/// [`clEnqueueSVMMigrateMem`](https://registry.khronos.org/OpenCL/sdk/3.0/docs/man/html/clEnqueueSVMMigrateMem.html)
/// (OpenCL 2.1): migrates SVM ranges to the queue's device (or the host). `sizes` is empty (whole
/// allocations) or one size per pointer (0 = rest of the allocation).
///
/// # Errors
///
/// The driver's status; `CL_INVALID_VALUE` for an empty pointer list or a `sizes` list of another
/// length (checked first).
///
/// # Safety
///
/// 1. `queue` and every event of `wait` are valid, of an OpenCL 2.1 or newer platform with SVM.
/// 2. Every pointer points into an SVM allocation of the queue's context.
/// 3. The caller owns (and must release) the returned event.
pub unsafe fn enqueue_svm_migrate_mem(
    queue: sys::cl_command_queue,
    svm_pointers: &[*const c_void],
    sizes: &[usize],
    flags: sys::cl_mem_migration_flags,
    wait: &[sys::cl_event],
) -> Result<sys::cl_event, ClError> {
    fault::check("clEnqueueSVMMigrateMem")?;
    if svm_pointers.is_empty() || !(sizes.is_empty() || sizes.len() == svm_pointers.len()) {
        return Err(ClError::InvalidValue);
    }
    let num = count(svm_pointers.len())?;
    let sizes = crate::or_null(sizes);
    // SAFETY: obligations 1-3 are forwarded; list lengths checked above.
    unsafe {
        enqueue(wait, |n, list, ev| {
            sys::clEnqueueSVMMigrateMem(
                queue,
                num,
                svm_pointers.as_ptr(),
                sizes,
                flags,
                n,
                list,
                ev,
            )
        })
    }
}
