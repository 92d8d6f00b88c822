//! Creating images: the checks made before the driver is called, the OpenCL 1.2 descriptor path
//! (`clCreateImage`) and the 1.0/1.1 path (`clCreateImage2D`/`clCreateImage3D`).
//!
//! Every mismatch PyOpenCL leaves to the driver (or misreports) is a typed error here, checked in
//! this order: image support and platform version ([`Error::Unsupported`]); flags, sizes against
//! the device limits, pitches without host data or not fitting the shape
//! ([`Error::InvalidArgument`]); host data too small for the shape and pitches
//! ([`Error::OutOfBounds`]); a format the context does not support for these flags and this type
//! ([`Error::Unsupported`], after one `clGetSupportedImageFormats`).

use std::any::Any;
use std::ffi::c_void;

use cl_raw::{image as raw, sys, Version};

use super::{Image, ImageDesc, ImageFormat, ImagePitches, ImageType};
use crate::buffer::Buffer;
use crate::error::{check_range, Error, Result};
use crate::memory::MemFlags;
use crate::pod::{slice_as_bytes, Pod};
use crate::raw_handle::RawHandle;
use crate::runtime::context::Context;
use crate::runtime::worker::Place;

/// Where the image's memory comes from.
enum Source<'a> {
    /// Uninitialised.
    Empty,
    /// `COPY_HOST_PTR` from these bytes.
    Copy(&'a [u8]),
    /// `USE_HOST_PTR` over memory the image will own.
    Use(*mut c_void, usize),
    /// A 1-D buffer image over this buffer.
    Buffer(&'a Buffer),
}

impl Source<'_> {
    fn host_len(&self) -> Option<usize> {
        match self {
            Source::Copy(b) => Some(b.len()),
            Source::Use(_, len) => Some(*len),
            Source::Empty | Source::Buffer(_) => None,
        }
    }
}

/// Which entry point creates the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// `clCreateImage` (1.2).
    Descriptor,
    /// `clCreateImage2D`/`clCreateImage3D` (1.0, deprecated by 1.2, still exported).
    Legacy,
}

impl Image {
    /// An uninitialised image (PyOpenCL's `create_image` without `hostbuf`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for host-pointer flags (use [`Image::from_host`] or
    /// [`Image::from_owned_host`]), pitches (they describe host data), a 1-D buffer type (use
    /// [`Image::from_buffer`]), and every check of [`Image`](crate::Image#checks) (size
    /// limits, host layout, supported format); [`Error::Cl`] from
    /// `clCreateImage`.
    pub fn new(
        context: &Context,
        flags: MemFlags,
        format: ImageFormat,
        desc: &ImageDesc,
    ) -> Result<Image> {
        create_checked(context, flags, format, desc, None, Path::Descriptor)
    }

    /// An image initialised with a copy of `data` laid out with `desc.pitches`
    /// (`COPY_HOST_PTR` is added).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for `USE_HOST_PTR` (borrowed data cannot back an image that may
    /// outlive it: see [`Image::from_owned_host`]); [`Error::OutOfBounds`] when `data` is smaller
    /// than the shape and pitches need; and as [`Image::new`].
    pub fn from_host<T: Pod>(
        context: &Context,
        flags: MemFlags,
        format: ImageFormat,
        desc: &ImageDesc,
        data: &[T],
    ) -> Result<Image> {
        let data = Some(slice_as_bytes(data));
        create_checked(context, flags, format, desc, data, Path::Descriptor)
    }

    /// An image that uses `data` as its storage (`USE_HOST_PTR` is added). The image owns the
    /// vector from now on: it is freed by the driver's destructor callback when the OpenCL object
    /// is destroyed (after the last reference, including those of kernels and pending commands,
    /// is gone), so the memory can neither be freed nor touched by the host while the device may
    /// use it. Read it back through transfers or maps.
    ///
    /// # Errors
    ///
    /// As [`Image::from_host`]; [`Error::Cl`] from `clSetMemObjectDestructorCallback` (then the
    /// image is released and the vector leaked, never freed early).
    pub fn from_owned_host<T: Pod>(
        context: &Context,
        flags: MemFlags,
        format: ImageFormat,
        desc: &ImageDesc,
        data: Vec<T>,
    ) -> Result<Image> {
        if flags.contains(MemFlags::COPY_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "COPY_HOST_PTR and USE_HOST_PTR are mutually exclusive".into(),
            ));
        }
        let flags = flags | MemFlags::USE_HOST_PTR;
        let mut data = data;
        let len = std::mem::size_of_val(data.as_slice());
        let ptr: *mut c_void = data.as_mut_ptr().cast();
        let image = create(
            context,
            flags,
            format,
            desc,
            Source::Use(ptr, len),
            Path::Descriptor,
        )?;
        // Moving the vector into a box keeps its heap block (and so `ptr`) where it is.
        let place = Place::for_platform(context.platform());
        let owner: Box<(Place, Box<dyn Any + Send>)> = Box::new((place, Box::new(data)));
        let user_data = Box::into_raw(owner).cast::<c_void>();
        // SAFETY: a valid image; `user_data` stays valid until the callback takes it back and
        // drops it where `place` says.
        if let Err(e) = unsafe {
            cl_raw::mem::set_destructor_callback(image.as_raw(), free_owned_host, user_data)
        } {
            drop(image);
            // The driver may still hold the memory: leak it rather than free it early.
            return Err(Error::cl("clSetMemObjectDestructorCallback")(e));
        }
        Ok(image)
    }

    /// An image over `buffer`'s memory (PyOpenCL's `Image(ctx, flags, fmt, shape, pitches,
    /// buffer)`), sharing the buffer's command record, so maps of one exclude maps of the other
    /// and commands on both are ordered. Empty `flags` inherit the buffer's. `shape` is
    ///
    /// - `[width]`: a 1-D image buffer (`CL_MEM_OBJECT_IMAGE1D_BUFFER`, OpenCL 1.2), `row_pitch`
    ///   `None`;
    /// - `[width, height]`: a 2-D image (`cl_khr_image2d_from_buffer`, core in OpenCL 2.0) whose
    ///   rows lie `row_pitch` bytes apart (`None`: the tightest pitch the devices accept).
    ///
    /// # Errors
    ///
    /// Checked first: [`Error::InvalidArgument`] for another shape, a pitch with a 1-D shape,
    /// host-pointer flags or a zero size; [`Error::Unsupported`] when a device of the context
    /// lacks the feature (1-D: before 1.2; 2-D: no extension, and not a 2.x device or a 3.0
    /// device reporting a pitch alignment) or image support; for 1-D, a width above
    /// `CL_DEVICE_IMAGE_MAX_BUFFER_SIZE` is [`Error::InvalidArgument`]; for 2-D,
    /// [`Error::Misaligned`] for a row pitch that is not a multiple of
    /// `CL_DEVICE_IMAGE_PITCH_ALIGNMENT` pixels or a buffer origin that is not a multiple of
    /// `CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT` pixels; [`Error::OutOfBounds`] when the pixels
    /// do not fit the buffer; an unsupported format as [`Image::new`]. Then [`Error::Cl`] from
    /// `clCreateImage`.
    pub fn from_buffer(
        context: &Context,
        flags: MemFlags,
        format: ImageFormat,
        buffer: &Buffer,
        shape: &[usize],
        row_pitch: Option<usize>,
    ) -> Result<Image> {
        match (shape, row_pitch) {
            (&[width], None) => Image::from_buffer_1d(context, flags, format, buffer, width),
            (&[width, height], _) => {
                Image::from_buffer_2d(context, flags, format, buffer, (width, height), row_pitch)
            }
            _ => Err(Error::InvalidArgument(format!(
                "an image from a buffer takes [width] (no row pitch) or [width, height], got \
                 {shape:?} with row pitch {row_pitch:?}"
            ))),
        }
    }

    /// [`Image::from_buffer`] of a `[width]` shape.
    fn from_buffer_1d(
        context: &Context,
        flags: MemFlags,
        format: ImageFormat,
        buffer: &Buffer,
        width: usize,
    ) -> Result<Image> {
        if flags.intersects(MemFlags::HOST_PTR_FLAGS | MemFlags::ALLOC_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "an image from a buffer takes no host-pointer flags".into(),
            ));
        }
        create(
            context,
            flags,
            format,
            &ImageDesc::d1_buffer(width),
            Source::Buffer(buffer),
            Path::Descriptor,
        )
    }

    /// [`Image::from_buffer`] of a `[width, height]` shape.
    fn from_buffer_2d(
        context: &Context,
        flags: MemFlags,
        format: ImageFormat,
        buffer: &Buffer,
        (width, height): (usize, usize),
        row_pitch: Option<usize>,
    ) -> Result<Image> {
        check_support(context, ImageType::Image2d, Path::Descriptor)?;
        check_buffer_context(context, buffer)?;
        flags.check()?;
        if flags.intersects(MemFlags::HOST_PTR_FLAGS | MemFlags::ALLOC_HOST_PTR) {
            return Err(Error::InvalidArgument(
                "an image from a buffer takes no host-pointer flags".into(),
            ));
        }
        if width == 0 || height == 0 {
            return Err(Error::InvalidArgument(
                "a 2-D image from a buffer needs a positive width and height".into(),
            ));
        }
        let elem = format.itemsize()?;
        let (mut pitch_px, mut base_px) = (1usize, 1usize);
        for d in context.devices() {
            let limits = d.image_limits()?;
            // Core in 2.x; optional in 3.0, where a device without it reports a pitch alignment
            // of 0; an extension before 2.0.
            let supported = d.has_extension("cl_khr_image2d_from_buffer")?
                || (d.version() >= Version::V2_0
                    && (d.version() < Version::V3_0 || limits.pitch_alignment != 0));
            if !supported {
                return Err(Error::Unsupported {
                    feature: "2-D images from buffers",
                    needs: format!(
                        "cl_khr_image2d_from_buffer (or OpenCL 2.x); device '{}' (OpenCL {}) \
                         reports neither the extension nor a pitch alignment",
                        d.name().unwrap_or_default().trim(),
                        d.version()
                    ),
                });
            }
            pitch_px = pitch_px.max(limits.pitch_alignment.max(1) as usize);
            base_px = base_px.max(limits.base_address_alignment.max(1) as usize);
        }
        let pitch_unit = pitch_px.saturating_mul(elem);
        let tight = width.saturating_mul(elem);
        let row_pitch = row_pitch.unwrap_or_else(|| tight.div_ceil(pitch_unit) * pitch_unit);
        if row_pitch < tight {
            return Err(Error::InvalidArgument(format!(
                "row pitch {row_pitch} is less than a row of {width} {elem}-byte pixels"
            )));
        }
        if !row_pitch.is_multiple_of(pitch_unit) {
            return Err(Error::Misaligned {
                what: "row pitch of a 2-D image from a buffer",
                value: row_pitch,
                alignment: pitch_unit,
            });
        }
        let base_unit = base_px.saturating_mul(elem);
        if !buffer.origin_bytes().is_multiple_of(base_unit) {
            return Err(Error::Misaligned {
                what: "origin of the buffer of a 2-D image",
                value: buffer.origin_bytes(),
                alignment: base_unit,
            });
        }
        let need = row_pitch.saturating_mul(height - 1).saturating_add(tight);
        check_range("2-D image over its buffer", 0, need, buffer.size_bytes())?;
        let desc = ImageDesc::d2(width, height).with_pitches(ImagePitches::new(row_pitch, 0));
        check_limits(context, &desc)?;
        check_format(context, flags, format, ImageType::Image2d)?;
        let raw_desc = sys::cl_image_desc {
            image_type: ImageType::Image2d.to_raw(),
            image_width: width,
            image_height: height,
            image_depth: 1,
            image_array_size: 1,
            image_row_pitch: row_pitch,
            image_slice_pitch: 0,
            num_mip_levels: 0,
            num_samples: 0,
            buffer: buffer.as_raw(),
        };
        // SAFETY: a valid context whose devices all take 2-D images from buffers (checked); the
        // buffer is live, its origin aligned and large enough for the rows at this pitch
        // (checked); no host pointer; we own the result.
        let raw = unsafe {
            raw::create(
                context.as_raw(),
                flags.bits(),
                &format.to_raw(),
                &raw_desc,
                std::ptr::null_mut(),
            )
        }
        .map_err(Error::cl("clCreateImage"))?;
        let mut image = Image::from_parts(raw, context, desc, format, flags)?;
        image.share_record_of(buffer);
        Ok(image)
    }

    /// As [`Image::new`] (no data) or [`Image::from_host`] (a copy of `data`), but always through
    /// the OpenCL 1.0 entry points `clCreateImage2D`/`clCreateImage3D` (PyOpenCL's constructor
    /// on platforms older than 1.2, where cl-mem makes no context). Platforms still export them
    /// (deprecated). Only 2-D and 3-D images.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] for other image types; otherwise as [`Image::from_host`], with
    /// [`Error::Cl`] naming `clCreateImage2D` or `clCreateImage3D`.
    pub fn new_through_legacy_calls<T: Pod>(
        context: &Context,
        flags: MemFlags,
        format: ImageFormat,
        desc: &ImageDesc,
        data: Option<&[T]>,
    ) -> Result<Image> {
        let data = data.map(slice_as_bytes);
        create_checked(context, flags, format, desc, data, Path::Legacy)
    }
}

/// [`Image::new`] (no `data`) or [`Image::from_host`] (a copy of `data`) on `path`: refuses the
/// host-pointer flags that cannot apply, then creates the image.
fn create_checked(
    context: &Context,
    flags: MemFlags,
    format: ImageFormat,
    desc: &ImageDesc,
    data: Option<&[u8]>,
    path: Path,
) -> Result<Image> {
    let Some(data) = data else {
        if flags.intersects(MemFlags::HOST_PTR_FLAGS) {
            return Err(Error::InvalidArgument(
                "USE_HOST_PTR and COPY_HOST_PTR need host data: use Image::from_host or Image::from_owned_host".into(),
            ));
        }
        return create(context, flags, format, desc, Source::Empty, path);
    };
    if flags.contains(MemFlags::USE_HOST_PTR) {
        return Err(Error::InvalidArgument(
            "USE_HOST_PTR cannot borrow a slice: the image may outlive it (use Image::from_owned_host)".into(),
        ));
    }
    let flags = flags | MemFlags::COPY_HOST_PTR;
    create(context, flags, format, desc, Source::Copy(data), path)
}

extern "C" fn free_owned_host(_mem: sys::cl_mem, user_data: *mut c_void) {
    // SAFETY: `user_data` came from `Box::into_raw` of a `Box<(Place, Box<dyn Any + Send>)>` in
    // `from_owned_host`, and the driver calls this once, after the object is destroyed.
    let (place, owner) =
        *unsafe { Box::from_raw(user_data.cast::<(Place, Box<dyn Any + Send>)>()) };
    // Dropped where every callback's work runs (issue 29).
    place.run(move || drop(owner));
}

/// Checks everything, then calls the driver.
fn create(
    context: &Context,
    flags: MemFlags,
    format: ImageFormat,
    desc: &ImageDesc,
    source: Source<'_>,
    path: Path,
) -> Result<Image> {
    check_support(context, desc.image_type, path)?;
    flags.check()?;
    if desc.mip_levels > 1 {
        for d in context.devices() {
            if !d.has_extension("cl_khr_mipmap_image")? {
                return Err(Error::Unsupported {
                    feature: "mip-mapped images",
                    needs: format!(
                        "cl_khr_mipmap_image, which device '{}' lacks",
                        d.name().unwrap_or_default().trim()
                    ),
                });
            }
        }
        if !matches!(source, Source::Empty) || path == Path::Legacy {
            return Err(Error::InvalidArgument(
                "a mip-mapped image is created empty through clCreateImage (no host data, no \
                 buffer)"
                    .into(),
            ));
        }
    }
    if desc.image_type == ImageType::Image1dBuffer && !matches!(source, Source::Buffer(_)) {
        return Err(Error::InvalidArgument(
            "a 1-D buffer image is created from a buffer: use Image::from_buffer".into(),
        ));
    }
    check_limits(context, desc)?;
    let pitches = check_host_layout(desc, format, source.host_len())?;
    if let Source::Buffer(buffer) = &source {
        check_buffer_context(context, buffer)?;
        let elem = format.itemsize()?;
        let need = desc.width.saturating_mul(elem);
        check_range(
            "1-D buffer image over its buffer",
            0,
            need,
            buffer.size_bytes(),
        )?;
    }
    check_format(context, flags, format, desc.image_type)?;

    let raw_format = format.to_raw();
    // Copied data with pitches is repacked tightly first: Oclgrind ignores the host pitches of
    // clCreateImage and PoCL the layer pitch of 1-D arrays (docs/DEVICES.md), and the copy is
    // made anyway. Memory the image uses in place cannot be repacked: its pitches go to the
    // driver (for 1-D arrays in both fields, see `driver_pitches`).
    let repacked: Vec<u8>;
    let (host_ptr, pitches) = match source {
        Source::Copy(bytes) if !desc.pitches.is_packed() => {
            repacked = repack(desc, format.itemsize()?, bytes);
            (repacked.as_ptr().cast_mut().cast::<c_void>(), (0, 0))
        }
        Source::Copy(bytes) => (bytes.as_ptr().cast_mut().cast::<c_void>(), (0, 0)),
        Source::Use(ptr, _) => (
            ptr,
            super::transfer::driver_pitches(desc.image_type, desc.pitches),
        ),
        Source::Empty | Source::Buffer(_) => (std::ptr::null_mut(), pitches),
    };
    let raw = match path {
        Path::Descriptor => {
            let raw_desc = sys::cl_image_desc {
                image_type: desc.image_type.to_raw(),
                image_width: desc.width,
                image_height: desc.height,
                image_depth: desc.depth,
                image_array_size: desc.array_size,
                image_row_pitch: pitches.0,
                image_slice_pitch: pitches.1,
                num_mip_levels: desc.mip_levels,
                num_samples: 0,
                buffer: match source {
                    Source::Buffer(b) => b.as_raw(),
                    _ => std::ptr::null_mut(),
                },
            };
            // SAFETY: a valid context of a 1.2+ platform (checked); the buffer, if any, is a live
            // buffer; `host_ptr` is null or covers the image with these pitches (checked) and,
            // for COPY_HOST_PTR, is only read during the call, for USE_HOST_PTR owned by the
            // image from now on (`from_owned_host`); we own the result.
            unsafe {
                raw::create(
                    context.as_raw(),
                    flags.bits(),
                    &raw_format,
                    &raw_desc,
                    host_ptr,
                )
            }
            .map_err(Error::cl("clCreateImage"))?
        }
        Path::Legacy => {
            // SAFETY: as above; the legacy calls exist on every platform.
            unsafe { create_legacy(context, flags, raw_format, desc, pitches, host_ptr) }?
        }
    };
    let mut image = Image::from_parts(raw, context, *desc, format, flags)?;
    if let Source::Buffer(buffer) = &source {
        image.share_record_of(buffer);
    }
    Ok(image)
}

/// `clCreateImage2D` / `clCreateImage3D` (through `cl_raw::image::create_2d` / `create_3d`).
///
/// # Safety
///
/// 1. `context` is valid; `desc` is a 2-D or 3-D description (checked by `check_support`).
/// 2. `host_ptr` is null or covers the image with `pitches`.
unsafe fn create_legacy(
    context: &Context,
    flags: MemFlags,
    format: sys::cl_image_format,
    desc: &ImageDesc,
    (row_pitch, slice_pitch): (usize, usize),
    host_ptr: *mut c_void,
) -> Result<sys::cl_mem> {
    match desc.image_type {
        // SAFETY: obligations 1-2.
        ImageType::Image2d => unsafe {
            raw::create_2d(
                context.as_raw(),
                flags.bits(),
                &format,
                (desc.width, desc.height),
                row_pitch,
                host_ptr,
            )
        }
        .map_err(Error::cl("clCreateImage2D")),
        // SAFETY: obligations 1-2.
        _ => unsafe {
            raw::create_3d(
                context.as_raw(),
                flags.bits(),
                &format,
                (desc.width, desc.height, desc.depth),
                (row_pitch, slice_pitch),
                host_ptr,
            )
        }
        .map_err(Error::cl("clCreateImage3D")),
    }
}

/// Images at all, the image type on this platform, and the path for it.
fn check_support(context: &Context, image_type: ImageType, path: Path) -> Result<()> {
    context.require_image_support("images")?;
    match path {
        // Every context of this crate is of a 1.2+ platform.
        Path::Descriptor => Ok(()),
        Path::Legacy if matches!(image_type, ImageType::Image2d | ImageType::Image3d) => Ok(()),
        Path::Legacy => Err(Error::needs_version(
            "1-D and array images",
            image_type.min_version(),
            "platform",
            context.platform_version(),
        )),
    }
}

/// Refuses a buffer of another context as an image's storage (PoCL aborts on it; other drivers
/// build a cross-context image).
fn check_buffer_context(context: &Context, buffer: &Buffer) -> Result<()> {
    if buffer.context() != context {
        return Err(Error::InvalidArgument(
            "the buffer belongs to another context than the image".into(),
        ));
    }
    Ok(())
}

/// Positive sizes within the largest limits of the context's devices.
fn check_limits(context: &Context, desc: &ImageDesc) -> Result<()> {
    let t = desc.image_type;
    for (name, v) in [
        ("width", desc.width),
        ("height", desc.height),
        ("depth", desc.depth),
        ("array size", desc.array_size),
    ] {
        if v == 0 {
            return Err(Error::InvalidArgument(format!(
                "image {name} must be positive"
            )));
        }
    }
    let mut max = [0usize; 7];
    for d in context.devices() {
        if !d.image_support()? {
            continue;
        }
        let l = d.image_limits()?;
        for (m, v) in max.iter_mut().zip([
            l.max_2d[0],
            l.max_2d[1],
            l.max_3d[0],
            l.max_3d[1],
            l.max_3d[2],
            l.max_array_size,
            l.max_buffer_size,
        ]) {
            *m = (*m).max(v);
        }
    }
    let [w2, h2, w3, h3, d3, arr, buf] = max;
    let width2 = ("width", desc.width, "CL_DEVICE_IMAGE2D_MAX_WIDTH", w2);
    let height2 = ("height", desc.height, "CL_DEVICE_IMAGE2D_MAX_HEIGHT", h2);
    let layers = (
        "array size",
        desc.array_size,
        "CL_DEVICE_IMAGE_MAX_ARRAY_SIZE",
        arr,
    );
    let checks: &[(&str, usize, &str, usize)] = match t {
        ImageType::Image1d => &[width2],
        ImageType::Image1dBuffer => {
            &[("width", desc.width, "CL_DEVICE_IMAGE_MAX_BUFFER_SIZE", buf)]
        }
        ImageType::Image1dArray => &[width2, layers],
        ImageType::Image2d => &[width2, height2],
        ImageType::Image2dArray => &[width2, height2, layers],
        ImageType::Image3d => &[
            ("width", desc.width, "CL_DEVICE_IMAGE3D_MAX_WIDTH", w3),
            ("height", desc.height, "CL_DEVICE_IMAGE3D_MAX_HEIGHT", h3),
            ("depth", desc.depth, "CL_DEVICE_IMAGE3D_MAX_DEPTH", d3),
        ],
    };
    for &(name, v, limit, m) in checks {
        if v > m {
            return Err(Error::InvalidArgument(format!(
                "{t} image {name} {v} exceeds {limit} ({m}) of every device"
            )));
        }
    }
    // Sizes a type does not use must be 1, so that the extent is what was asked.
    let unused_ok = match t {
        ImageType::Image1d | ImageType::Image1dBuffer => {
            desc.height == 1 && desc.depth == 1 && desc.array_size == 1
        }
        ImageType::Image1dArray => desc.height == 1 && desc.depth == 1,
        ImageType::Image2d => desc.depth == 1 && desc.array_size == 1,
        ImageType::Image2dArray => desc.depth == 1,
        ImageType::Image3d => desc.array_size == 1,
    };
    if !unused_ok {
        return Err(Error::InvalidArgument(format!(
            "a {t} image uses only its own sizes; the others must be 1: {desc:?}"
        )));
    }
    Ok(())
}

/// The pitches to pass, after checking them against the shape and the host data length.
pub(crate) fn check_host_layout(
    desc: &ImageDesc,
    format: ImageFormat,
    host_len: Option<usize>,
) -> Result<(usize, usize)> {
    let p = desc.pitches;
    let Some(have) = host_len else {
        if !p.is_packed() {
            return Err(Error::InvalidArgument(
                "pitches may only be given with host data".into(),
            ));
        }
        return Ok((0, 0));
    };
    let elem = format.itemsize()?;
    let t = desc.image_type;
    let tight_row = mul(desc.width, elem)?;
    let row = if p.row == 0 { tight_row } else { p.row };
    if row < tight_row || !row.is_multiple_of(elem) {
        return Err(Error::InvalidArgument(format!(
            "row pitch {} must be at least width x element size ({tight_row}) and a multiple of the element size ({elem})",
            p.row
        )));
    }
    let need = match t {
        ImageType::Image1d | ImageType::Image1dBuffer | ImageType::Image2d => {
            if p.slice != 0 {
                return Err(Error::InvalidArgument(format!(
                    "a {t} image takes no slice pitch"
                )));
            }
            // A 1-D image is one row whatever `height` says, as `repack` reads it. (Creation
            // refuses a 1-D height other than 1 first, in `check_limits`; found by the `image`
            // fuzz target, which calls this check alone: height 0 passed 0 bytes of host data.)
            if t == ImageType::Image2d {
                mul(row, desc.height)?
            } else {
                row
            }
        }
        ImageType::Image1dArray | ImageType::Image2dArray | ImageType::Image3d => {
            let (min_slice, n) = match t {
                ImageType::Image1dArray => (row, desc.array_size),
                ImageType::Image2dArray => (mul(row, desc.height)?, desc.array_size),
                _ => (mul(row, desc.height)?, desc.depth),
            };
            let slice = if p.slice == 0 { min_slice } else { p.slice };
            if slice < min_slice || !slice.is_multiple_of(row) {
                return Err(Error::InvalidArgument(format!(
                    "slice pitch {} must be at least {min_slice} and a multiple of the row pitch ({row})",
                    p.slice
                )));
            }
            mul(slice, n)?
        }
    };
    if have < need {
        return Err(Error::OutOfBounds {
            what: "host data for the image",
            offset: 0,
            len: need,
            size: have,
        });
    }
    Ok((p.row, p.slice))
}

/// The host data of `desc` (pitches checked against `bytes` by `check_host_layout`) without its
/// padding.
pub(crate) fn repack(desc: &ImageDesc, elem: usize, bytes: &[u8]) -> Vec<u8> {
    let tight_row = desc.width * elem;
    let row = if desc.pitches.row == 0 {
        tight_row
    } else {
        desc.pitches.row
    };
    let (rows, slices, default_slice) = match desc.image_type {
        ImageType::Image1d | ImageType::Image1dBuffer => (1, 1, 0),
        ImageType::Image2d => (desc.height, 1, 0),
        ImageType::Image1dArray => (1, desc.array_size, row),
        ImageType::Image2dArray => (desc.height, desc.array_size, row * desc.height),
        ImageType::Image3d => (desc.height, desc.depth, row * desc.height),
    };
    let slice = if desc.pitches.slice == 0 {
        default_slice
    } else {
        desc.pitches.slice
    };
    if tight_row == 0 {
        // Nothing to copy, however many (empty) rows: without this, a zero width with 2^32
        // layers looped 2^37 times (found by the `image` fuzz target, which calls this alone;
        // creation refuses zero sizes first, in `check_limits`).
        return Vec::new();
    }
    let mut out = Vec::with_capacity(tight_row * rows * slices);
    for z in 0..slices {
        for y in 0..rows {
            let start = z * slice + y * row;
            out.extend_from_slice(&bytes[start..start + tight_row]);
        }
    }
    out
}

fn mul(a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .ok_or_else(|| Error::InvalidArgument("image size overflows usize".into()))
}

/// The format is among those the context supports for these flags and this type.
fn check_format(
    context: &Context,
    flags: MemFlags,
    format: ImageFormat,
    t: ImageType,
) -> Result<()> {
    // The supported set depends on the access flags only (the host-pointer flags change nothing
    // and some drivers answer an empty list for them).
    let access = flags
        & (MemFlags::READ_WRITE
            | MemFlags::READ_ONLY
            | MemFlags::WRITE_ONLY
            | MemFlags::KERNEL_READ_AND_WRITE);
    let access = if access.is_empty() {
        MemFlags::READ_WRITE
    } else {
        access
    };
    let supported = super::supported_image_formats(context, access, t)?;
    if supported.contains(&format) {
        Ok(())
    } else {
        Err(Error::Unsupported {
            feature: "image format",
            needs: format!(
                "{format} is not among the {} {t} formats the context supports for {access:?}",
                supported.len()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{ChannelOrder, ChannelType, ImagePitches};

    #[test]
    fn host_layout_checks_pitches_and_length() {
        let f = ImageFormat::RGBA_FLOAT; // 16 bytes
                                         // No host data: no pitches.
        assert_eq!(check_host_layout(&ImageDesc::d2(4, 2), f, None), Ok((0, 0)));
        assert!(matches!(
            check_host_layout(
                &ImageDesc::d2(4, 2).with_pitches(ImagePitches::new(64, 0)),
                f,
                None
            ),
            Err(Error::InvalidArgument(_))
        ));
        // Tight 2-D: 4 * 16 * 2 bytes.
        assert_eq!(
            check_host_layout(&ImageDesc::d2(4, 2), f, Some(128)),
            Ok((0, 0))
        );
        assert!(matches!(
            check_host_layout(&ImageDesc::d2(4, 2), f, Some(127)),
            Err(Error::OutOfBounds {
                len: 128,
                size: 127,
                ..
            })
        ));
        // Padded rows.
        let d = ImageDesc::d2(4, 2).with_pitches(ImagePitches::new(80, 0));
        assert_eq!(check_host_layout(&d, f, Some(160)), Ok((80, 0)));
        assert!(check_host_layout(&d, f, Some(159)).is_err());
        // Row pitch too small or not a multiple of the element size.
        for row in [48, 72] {
            let d = ImageDesc::d2(4, 2).with_pitches(ImagePitches::new(row, 0));
            assert!(matches!(
                check_host_layout(&d, f, Some(1 << 20)),
                Err(Error::InvalidArgument(_))
            ));
        }
        // 2-D images take no slice pitch.
        let d = ImageDesc::d2(4, 2).with_pitches(ImagePitches::new(0, 256));
        assert!(matches!(
            check_host_layout(&d, f, Some(1 << 20)),
            Err(Error::InvalidArgument(_))
        ));
        // 1-D array: layers are slice_pitch apart.
        let d = ImageDesc::d1_array(4, 3).with_pitches(ImagePitches::new(0, 128));
        assert_eq!(check_host_layout(&d, f, Some(384)), Ok((0, 128)));
        assert!(check_host_layout(&d, f, Some(383)).is_err());
        assert_eq!(
            check_host_layout(&ImageDesc::d1_array(4, 3), f, Some(192)),
            Ok((0, 0))
        );
        // 3-D: slices, padded.
        let d = ImageDesc::d3(4, 2, 3).with_pitches(ImagePitches::new(64, 192));
        assert_eq!(check_host_layout(&d, f, Some(576)), Ok((64, 192)));
        let d = ImageDesc::d3(4, 2, 3).with_pitches(ImagePitches::new(64, 100));
        assert!(matches!(
            check_host_layout(&d, f, Some(1 << 20)),
            Err(Error::InvalidArgument(_))
        ));
    }

    /// Regression (fuzz target `image`, `fuzz/corpus/image/regression-layout-1d-height-0`): a
    /// 1-D description with height 0 needed 0 bytes, and `repack` then read a row past them.
    #[test]
    fn one_d_layouts_need_one_row_whatever_the_height() {
        let f = ImageFormat::new(ChannelOrder::R, ChannelType::Float);
        for height in [0, 1, 3] {
            let d = ImageDesc {
                height,
                ..ImageDesc::d1_buffer(4)
            };
            assert!(matches!(
                check_host_layout(&d, f, Some(15)),
                Err(Error::OutOfBounds { len: 16, .. })
            ));
            assert_eq!(check_host_layout(&d, f, Some(16)), Ok((0, 0)));
            assert_eq!(repack(&d, 4, &[7; 16]), vec![7; 16]);
        }
    }

    /// Regression (fuzz target `image`, `fuzz/corpus/image/regression-repack-zero-width`): a
    /// zero-width 3-D layout with 2^32 + 18 slices passed the layout check (0 bytes needed) and
    /// `repack` then looped over every empty row.
    #[test]
    fn repack_of_a_zero_width_layout_is_empty_at_once() {
        let d = ImageDesc::d3(0, 31, (1 << 32) + 18);
        let f = ImageFormat::new(ChannelOrder::R, ChannelType::UnsignedInt8);
        assert_eq!(check_host_layout(&d, f, Some(0)), Ok((0, 0)));
        assert!(repack(&d, 1, &[]).is_empty());
    }

    #[test]
    fn repack_drops_row_and_slice_padding() {
        let bytes: Vec<u8> = (0..36).collect();
        let d = ImageDesc::d3(2, 2, 3).with_pitches(ImagePitches::new(3, 12));
        assert_eq!(
            repack(&d, 1, &bytes),
            vec![0, 1, 3, 4, 12, 13, 15, 16, 24, 25, 27, 28]
        );
        let d = ImageDesc::d1_array(2, 3).with_pitches(ImagePitches::new(0, 4));
        assert_eq!(repack(&d, 1, &bytes), vec![0, 1, 4, 5, 8, 9]);
        let d = ImageDesc::d2(2, 2).with_pitches(ImagePitches::new(5, 0));
        assert_eq!(repack(&d, 2, &bytes), vec![0, 1, 2, 3, 5, 6, 7, 8]);
    }

    #[test]
    fn conflicting_flags_are_refused() {
        for (flags, ok) in [
            (MemFlags::READ_ONLY | MemFlags::WRITE_ONLY, false),
            (MemFlags::HOST_NO_ACCESS | MemFlags::HOST_READ_ONLY, false),
            (MemFlags::USE_HOST_PTR | MemFlags::COPY_HOST_PTR, false),
            (MemFlags::READ_ONLY | MemFlags::COPY_HOST_PTR, true),
        ] {
            assert_eq!(flags.check().is_ok(), ok, "{flags:?}");
        }
    }
}
