//! Images: [`ImageFormat`] and the supported formats of a context, [`Image`] of every type
//! (1-D, 1-D array, 1-D from a buffer, 2-D, 2-D array, 3-D), its info, [`image_from_array`],
//! and the image transfers (fill, read, write, copies, maps) — PyOpenCL's `ImageFormat`,
//! `get_supported_image_formats`, `Image`/`create_image`, `image_from_array`,
//! `enqueue_fill_image`, the image forms of `enqueue_copy` and `enqueue_map_image`. The
//! coordinate, pitch and checking rules are on [`Image`] (this module is private: its items are
//! re-exported at the crate root).

mod array;
pub(crate) mod create;
mod format;
mod map;
pub(crate) mod transfer;

use std::fmt;
use std::sync::Arc;

use cl_raw::{image as raw, sys, Version};

use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::memory::{MemFlags, MemObjectType};
use crate::raw_handle::{clone_retains, RawHandle};
use crate::runtime::context::Context;
use crate::runtime::track::Tracked;

#[cfg(feature = "ndarray")]
pub use array::image_from_array;
pub use array::{ArrayImageOptions, ImageElement};
pub(crate) use format::ChannelKind;
pub use format::{ChannelOrder, ChannelType, ImageFormat};
pub use map::ImageMapping;
pub use transfer::FillColor;

/// The six image types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageType {
    /// `CL_MEM_OBJECT_IMAGE1D` (1.2).
    Image1d,
    /// `CL_MEM_OBJECT_IMAGE1D_ARRAY` (1.2): `array_size` rows of `width` pixels.
    Image1dArray,
    /// `CL_MEM_OBJECT_IMAGE1D_BUFFER` (1.2): a 1-D image over a buffer's memory.
    Image1dBuffer,
    /// `CL_MEM_OBJECT_IMAGE2D`.
    Image2d,
    /// `CL_MEM_OBJECT_IMAGE2D_ARRAY` (1.2): `array_size` layers of `width` x `height`.
    Image2dArray,
    /// `CL_MEM_OBJECT_IMAGE3D`.
    Image3d,
}

impl ImageType {
    /// Every image type.
    pub const ALL: [ImageType; 6] = [
        ImageType::Image1d,
        ImageType::Image1dArray,
        ImageType::Image1dBuffer,
        ImageType::Image2d,
        ImageType::Image2dArray,
        ImageType::Image3d,
    ];

    /// The raw `cl_mem_object_type`.
    pub(crate) fn to_raw(self) -> sys::cl_mem_object_type {
        match self {
            ImageType::Image1d => sys::CL_MEM_OBJECT_IMAGE1D,
            ImageType::Image1dArray => sys::CL_MEM_OBJECT_IMAGE1D_ARRAY,
            ImageType::Image1dBuffer => sys::CL_MEM_OBJECT_IMAGE1D_BUFFER,
            ImageType::Image2d => sys::CL_MEM_OBJECT_IMAGE2D,
            ImageType::Image2dArray => sys::CL_MEM_OBJECT_IMAGE2D_ARRAY,
            ImageType::Image3d => sys::CL_MEM_OBJECT_IMAGE3D,
        }
    }

    /// The image type of a memory-object type, `None` for buffers, pipes and unknown types.
    pub(crate) fn from_mem_type(t: MemObjectType) -> Option<ImageType> {
        Some(match t {
            MemObjectType::Image1d => ImageType::Image1d,
            MemObjectType::Image1dArray => ImageType::Image1dArray,
            MemObjectType::Image1dBuffer => ImageType::Image1dBuffer,
            MemObjectType::Image2d => ImageType::Image2d,
            MemObjectType::Image2dArray => ImageType::Image2dArray,
            MemObjectType::Image3d => ImageType::Image3d,
            _ => return None,
        })
    }

    /// How many values [`Image::shape`] has: 1, 2 (1-D array, 2-D) or 3 (2-D array, 3-D).
    pub(crate) fn rank(self) -> usize {
        match self {
            ImageType::Image1d | ImageType::Image1dBuffer => 1,
            ImageType::Image1dArray | ImageType::Image2d => 2,
            ImageType::Image2dArray | ImageType::Image3d => 3,
        }
    }

    /// Whether it is an image array.
    pub(crate) fn is_array(self) -> bool {
        matches!(self, ImageType::Image1dArray | ImageType::Image2dArray)
    }

    /// The OpenCL version that introduced it (and its creation through `clCreateImage`).
    pub(crate) fn min_version(self) -> Version {
        match self {
            ImageType::Image2d | ImageType::Image3d => Version::V1_0,
            _ => Version::V1_2,
        }
    }

    /// A short name for messages (`"1-D array"`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            ImageType::Image1d => "1-D",
            ImageType::Image1dArray => "1-D array",
            ImageType::Image1dBuffer => "1-D buffer",
            ImageType::Image2d => "2-D",
            ImageType::Image2dArray => "2-D array",
            ImageType::Image3d => "3-D",
        }
    }
}

impl fmt::Display for ImageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Row and slice pitch of host memory (or of an image's host data), in bytes; 0 = tightly packed
/// (the `Default`).
/// See [`Image`] (pitches) for what the slice pitch means per image type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ImagePitches {
    /// Bytes from one row to the next.
    pub row: usize,
    /// Bytes from one slice (3-D), layer (2-D array) or row (1-D array) to the next.
    pub slice: usize,
}

impl ImagePitches {
    /// Given pitches.
    pub const fn new(row: usize, slice: usize) -> ImagePitches {
        ImagePitches { row, slice }
    }

    fn is_packed(self) -> bool {
        self.row == 0 && self.slice == 0
    }
}

/// What an image is: its type, size and host-data pitches (`cl_image_desc` without the buffer
/// and the mip/sample counts, which are 0 here).
///
/// Build one with [`ImageDesc::d1`], [`ImageDesc::d2`], ... or from a PyOpenCL-style shape with
/// [`ImageDesc::from_shape`]; sizes that a type does not use are 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageDesc {
    /// The image type.
    pub image_type: ImageType,
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels (2-D, 2-D array, 3-D; else 1).
    pub height: usize,
    /// Depth in pixels (3-D; else 1).
    pub depth: usize,
    /// Layers (arrays; else 1).
    pub array_size: usize,
    /// Pitches of the host data; only with host data.
    pub pitches: ImagePitches,
    /// Mip levels (`cl_khr_mipmap_image`); 0 or 1 for an image without mip-maps.
    pub mip_levels: u32,
}

impl ImageDesc {
    fn of(image_type: ImageType, [width, height, depth, array_size]: [usize; 4]) -> ImageDesc {
        ImageDesc {
            image_type,
            width,
            height,
            depth,
            array_size,
            pitches: ImagePitches::default(),
            mip_levels: 0,
        }
    }

    /// A 1-D image.
    pub fn d1(width: usize) -> ImageDesc {
        ImageDesc::of(ImageType::Image1d, [width, 1, 1, 1])
    }

    /// A 1-D image array of `layers` rows.
    pub fn d1_array(width: usize, layers: usize) -> ImageDesc {
        ImageDesc::of(ImageType::Image1dArray, [width, 1, 1, layers])
    }

    /// A 1-D image over a buffer (create it with [`Image::from_buffer`]).
    pub(crate) fn d1_buffer(width: usize) -> ImageDesc {
        ImageDesc::of(ImageType::Image1dBuffer, [width, 1, 1, 1])
    }

    /// A 2-D image.
    pub fn d2(width: usize, height: usize) -> ImageDesc {
        ImageDesc::of(ImageType::Image2d, [width, height, 1, 1])
    }

    /// A 2-D image array of `layers` layers.
    pub fn d2_array(width: usize, height: usize, layers: usize) -> ImageDesc {
        ImageDesc::of(ImageType::Image2dArray, [width, height, 1, layers])
    }

    /// A 3-D image.
    pub fn d3(width: usize, height: usize, depth: usize) -> ImageDesc {
        ImageDesc::of(ImageType::Image3d, [width, height, depth, 1])
    }

    /// With `levels` mip levels (`cl_khr_mipmap_image`: checked at creation; no host data).
    pub fn with_mip_levels(mut self, levels: u32) -> ImageDesc {
        self.mip_levels = levels;
        self
    }

    /// The same description with host-data pitches.
    pub fn with_pitches(mut self, pitches: ImagePitches) -> ImageDesc {
        self.pitches = pitches;
        self
    }

    /// PyOpenCL's `create_image` shape rules: a shape of 1 to 3 values (width first), an array
    /// flag, and whether a buffer backs the image. The layer count of a 1-D array is `shape[1]`
    /// (PyOpenCL takes it from the absent `shape[2]` and creates a single layer).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for 0 or more than 3 values, a zero value, an array of 1 value,
    /// or a buffer with more than 1 value or with `is_array`.
    pub fn from_shape(shape: &[usize], is_array: bool, from_buffer: bool) -> Result<ImageDesc> {
        if from_buffer && is_array {
            return Err(Error::InvalidArgument(
                "'buffer' and 'is_array' are mutually exclusive".into(),
            ));
        }
        if shape.contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "image shape {shape:?} has a zero dimension"
            )));
        }
        Ok(match (shape, is_array) {
            (&[w], false) if from_buffer => ImageDesc::d1_buffer(w),
            (&[w], false) => ImageDesc::d1(w),
            (&[_], true) => {
                return Err(Error::InvalidArgument(
                    "array of zero-dimensional images not supported".into(),
                ))
            }
            (_, _) if from_buffer => {
                return Err(Error::InvalidArgument(format!(
                    "an image from a buffer is 1-D, the shape has {} values",
                    shape.len()
                )))
            }
            (&[w, n], true) => ImageDesc::d1_array(w, n),
            (&[w, h], false) => ImageDesc::d2(w, h),
            (&[w, h, n], true) => ImageDesc::d2_array(w, h, n),
            (&[w, h, d], false) => ImageDesc::d3(w, h, d),
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "an image shape has 1 to 3 values, got {}",
                    shape.len()
                )))
            }
        })
    }

    /// The bound of each coordinate: `[width, height or layers, depth or layers]`, 1 where the
    /// type has no such axis (OpenCL's origin/region convention).
    pub fn extent(&self) -> [usize; 3] {
        match self.image_type {
            ImageType::Image1d | ImageType::Image1dBuffer => [self.width, 1, 1],
            ImageType::Image1dArray => [self.width, self.array_size, 1],
            ImageType::Image2d => [self.width, self.height, 1],
            ImageType::Image2dArray => [self.width, self.height, self.array_size],
            ImageType::Image3d => [self.width, self.height, self.depth],
        }
    }
}

/// An image object. Owns one reference: `Clone` retains (both values name the same image),
/// `Drop` releases (never panics). Its type, format, size and flags are read once, at creation.
///
/// # Coordinates
///
/// Origins and regions are `&[usize]` of at most three values, in pixels, completed as PyOpenCL
/// completes them (missing origin values are 0, missing region values 1), and they follow
/// OpenCL's convention per image type: the layer of a 1-D array is the second value, the layer of
/// a 2-D array the third. [`ImageDesc::extent`] (of [`Image::desc`]) gives the bound of each
/// value; every origin and region is checked against it before the driver is called.
///
/// # Pitches
///
/// [`ImagePitches`] are in bytes, 0 meaning tightly packed. As in OpenCL, the slice pitch is the
/// distance between 2-D slices of a 3-D image or layers of a 2-D array, and between the rows
/// (layers) of a 1-D array; 1-D and 2-D images take no slice pitch.
///
/// # Checks
///
/// Every mismatch PyOpenCL leaves to the driver (or misreports) is a typed error before the driver
/// is called, in this order: image support and platform version ([`Error::Unsupported`]); flags,
/// sizes against the largest device limits, pitches without host data or not fitting the shape
/// ([`Error::InvalidArgument`]); host data too small for the shape and pitches
/// ([`Error::OutOfBounds`]); a format the context does not support for these flags and this type
/// ([`Error::Unsupported`], after one `clGetSupportedImageFormats`). Transfers check the queue's
/// context, the host-access flags, origins and regions, host slice lengths against region and
/// pitches, and buffer ranges.
///
/// # Driver differences handled here
///
/// - Copied host data with pitches is repacked tightly before `clCreateImage`: Oclgrind ignores
///   `image_row_pitch`/`image_slice_pitch`, PoCL the layer pitch of 1-D arrays.
/// - For 1-D arrays the layer stride is passed as both row and slice pitch: PoCL, Oclgrind and
///   the Intel CPU runtime step `row_pitch` between layers where the spec says `slice_pitch`.
pub struct Image {
    raw: sys::cl_mem,
    context: Context,
    desc: ImageDesc,
    format: ImageFormat,
    element_size: usize,
    flags: MemFlags,
    /// The command and map record, shared by clones (and, for an image made from a buffer, with
    /// the buffer's allocation).
    tracked: Arc<Tracked>,
    /// Counts this wrapper in [`crate::live_objects`].
    live: crate::runtime::live::Live<{ crate::runtime::live::MEM }>,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"); an
// image may be used in commands, queried and released from any thread. Races on its contents are
// the commands' ordering concern, not the handle's.
unsafe impl Send for Image {}
// SAFETY: as for `Send`.
unsafe impl Sync for Image {}

/// Everything `clGetImageInfo` reports about an image (PyOpenCL's `Image.get_image_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// `CL_IMAGE_FORMAT`.
    pub format: ImageFormat,
    /// `CL_IMAGE_ELEMENT_SIZE`, bytes per pixel.
    pub element_size: usize,
    /// `CL_IMAGE_ROW_PITCH`.
    pub row_pitch: usize,
    /// `CL_IMAGE_SLICE_PITCH`.
    pub slice_pitch: usize,
    /// `CL_IMAGE_WIDTH`.
    pub width: usize,
    /// `CL_IMAGE_HEIGHT` (0 for 1-D images).
    pub height: usize,
    /// `CL_IMAGE_DEPTH` (0 except for 3-D images).
    pub depth: usize,
    /// `CL_IMAGE_ARRAY_SIZE` (1.2; 0 for non-arrays).
    pub array_size: usize,
    /// `CL_IMAGE_BUFFER` (1.2): the buffer of a 1-D buffer image.
    pub buffer: Option<Buffer>,
    /// `CL_IMAGE_NUM_MIP_LEVELS` (1.2).
    pub num_mip_levels: u32,
    /// `CL_IMAGE_NUM_SAMPLES` (1.2).
    pub num_samples: u32,
}

impl Image {
    /// The image's view of its command record.
    pub(crate) fn tracked(&self) -> &Tracked {
        &self.tracked
    }

    /// Shares `buffer`'s command record: an image made from a buffer is the buffer's bytes.
    pub(crate) fn share_record_of(&mut self, buffer: &crate::buffer::Buffer) {
        self.tracked = buffer
            .tracked()
            .view(buffer.origin_bytes(), buffer.size_bytes());
    }

    /// Wraps a reference we own; releases it on error.
    fn from_parts(
        raw: sys::cl_mem,
        context: &Context,
        desc: ImageDesc,
        format: ImageFormat,
        flags: MemFlags,
    ) -> Result<Image> {
        let element_size = format.itemsize().unwrap_or(0);
        let mut img = Image {
            live: crate::runtime::live::Live::new(),
            raw,
            context: context.clone(),
            desc,
            format,
            element_size,
            flags,
            // Adopted handles share the record of the wrappers that already exist.
            tracked: Tracked::adopt_root(raw, 1),
        };
        if img.element_size == 0 {
            // A vendor format: the driver knows its pixel size.
            // SAFETY: a valid image we own; a 1.0 parameter.
            match unsafe { raw::get_info(raw, sys::CL_IMAGE_ELEMENT_SIZE) } {
                Ok(size) => img.element_size = size,
                // Dropping `img` releases the reference we were given.
                Err(e) => return Err(Error::cl("clGetImageInfo")(e)),
            }
        }
        Ok(img)
    }

    /// The context it belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// [`Error::InvalidArgument`] unless `queue` is of the image's context.
    pub(crate) fn check_queue(&self, queue: &crate::runtime::queue::Queue) -> Result<()> {
        if queue.context().as_raw() == self.context.as_raw() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(
                "the queue and the image belong to different contexts".into(),
            ))
        }
    }

    /// The description it was created with (pitches: those of the host data, if any).
    pub fn desc(&self) -> &ImageDesc {
        &self.desc
    }

    /// The pixel format.
    pub fn format(&self) -> ImageFormat {
        self.format
    }

    /// The flags it was created with (as the driver reports them for adopted handles).
    pub fn flags(&self) -> MemFlags {
        self.flags
    }

    /// The shape, width first, for every image type (PyOpenCL's `Image.shape` knows only 2-D and
    /// 3-D): `[w]` (1-D, 1-D buffer), `[w, layers]` (1-D array), `[w, h]`, `[w, h, layers]`
    /// (2-D array), `[w, h, d]`.
    pub fn shape(&self) -> Vec<usize> {
        self.desc.extent()[..self.desc.image_type.rank()].to_vec()
    }

    /// The bound of each origin/region value (see [`Image`], coordinates).
    pub(crate) fn extent(&self) -> [usize; 3] {
        self.desc.extent()
    }

    /// Bytes of the tightly packed image (all layers).
    pub(crate) fn size_bytes_packed(&self) -> usize {
        self.desc.extent().iter().product::<usize>() * self.element_size
    }

    /// Everything `clGetImageInfo` reports. The 1.2 queries (array size, buffer, mip levels,
    /// samples) read as 0/`None` on older platforms, where they are not asked.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetImageInfo` or `clRetainMemObject`.
    pub fn info(&self) -> Result<ImageInfo> {
        let q = |param| {
            // SAFETY: a valid image; 1.0 parameters.
            unsafe { raw::get_info::<usize>(self.raw, param) }.map_err(Error::cl("clGetImageInfo"))
        };
        // SAFETY: a valid image; a 1.0 parameter.
        let format: sys::cl_image_format = unsafe { raw::get_info(self.raw, sys::CL_IMAGE_FORMAT) }
            .map_err(Error::cl("clGetImageInfo"))?;
        let ctx_version = self.context.platform_version();
        let (array_size, buffer, num_mip_levels, num_samples) = if ctx_version >= Version::V1_2 {
            // SAFETY: a valid image of a 1.2+ platform; 1.2 parameters.
            let (buf, mips, samples) = unsafe {
                (
                    raw::get_info::<sys::cl_mem>(self.raw, sys::CL_IMAGE_BUFFER),
                    raw::get_info::<u32>(self.raw, sys::CL_IMAGE_NUM_MIP_LEVELS),
                    raw::get_info::<u32>(self.raw, sys::CL_IMAGE_NUM_SAMPLES),
                )
            };
            let buf = buf.map_err(Error::cl("clGetImageInfo"))?;
            let buffer = if buf.is_null() {
                None
            } else {
                // SAFETY: the driver returned the image's live buffer.
                Some(unsafe { Buffer::from_raw_retained(buf) }?)
            };
            (
                q(sys::CL_IMAGE_ARRAY_SIZE)?,
                buffer,
                mips.map_err(Error::cl("clGetImageInfo"))?,
                samples.map_err(Error::cl("clGetImageInfo"))?,
            )
        } else {
            (0, None, 0, 0)
        };
        Ok(ImageInfo {
            format: ImageFormat::from_raw(format),
            element_size: q(sys::CL_IMAGE_ELEMENT_SIZE)?,
            row_pitch: q(sys::CL_IMAGE_ROW_PITCH)?,
            slice_pitch: q(sys::CL_IMAGE_SLICE_PITCH)?,
            width: q(sys::CL_IMAGE_WIDTH)?,
            height: q(sys::CL_IMAGE_HEIGHT)?,
            depth: q(sys::CL_IMAGE_DEPTH)?,
            array_size,
            buffer,
            num_mip_levels,
            num_samples,
        })
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` gives that reference away and forgets the wrapper.
unsafe impl crate::raw_handle::RawHandle for Image {
    crate::memory::tracked_mem!(raw_handle);

    /// Adopts one reference to a raw image (no retain), reading its type, format, size and flags.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetMemObjectInfo`/`clGetImageInfo`; [`Error::InvalidArgument`] when
    /// it is not an image. The reference is released on error.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid memory object and the caller gives its reference to the new `Image`.
    /// 2. As obligation 3 of [`crate::Memory::from_raw`] (the command record does not see
    ///    commands and maps made outside this crate).
    unsafe fn from_raw(raw: sys::cl_mem) -> Result<Image> {
        // SAFETY: obligation 1: the reference is ours to wrap (and to release on error).
        let mem = unsafe { crate::memory::Memory::adopt_untracked(raw) };
        let image_type = ImageType::from_mem_type(crate::memory::mem_type(raw)?)
            .ok_or_else(|| Error::InvalidArgument("the memory object is not an image".into()))?;
        let flags = MemFlags::from_bits_retain(crate::memory::query(raw, sys::CL_MEM_FLAGS)?);
        let q = |param| {
            // SAFETY: `raw` is a valid image (its type was just checked); 1.0/1.2 parameters
            // that every image-capable platform of 1.2 or newer answers.
            unsafe { raw::get_info::<usize>(raw, param) }.map_err(Error::cl("clGetImageInfo"))
        };
        // SAFETY: as above.
        let format: sys::cl_image_format = unsafe { raw::get_info(raw, sys::CL_IMAGE_FORMAT) }
            .map_err(Error::cl("clGetImageInfo"))?;
        let array_size = if image_type.is_array() {
            q(sys::CL_IMAGE_ARRAY_SIZE)?
        } else {
            1
        };
        let desc = ImageDesc {
            image_type,
            width: q(sys::CL_IMAGE_WIDTH)?,
            height: q(sys::CL_IMAGE_HEIGHT)?.max(1),
            depth: q(sys::CL_IMAGE_DEPTH)?.max(1),
            array_size,
            pitches: ImagePitches::default(),
            // CL_IMAGE_NUM_MIP_LEVELS is a 1.2 query; adopted images are taken as one level.
            mip_levels: 0,
        };
        let context = crate::memory::mem_context(raw)?;
        let raw = mem.into_raw();
        let mut img = Image::from_parts(raw, &context, desc, ImageFormat::from_raw(format), flags)?;
        // An image made from a buffer is the buffer's bytes: share the buffer's record.
        if let Some(Ok(buffer)) =
            crate::memory::mem_associated_object(img.raw)?.map(crate::memory::Memory::into_buffer)
        {
            img.share_record_of(&buffer);
        }
        Ok(img)
    }
}

/// The formats every device of `context` supports for `flags` and `image_type` (PyOpenCL's
/// `get_supported_image_formats`), in the driver's order.
///
/// # Errors
///
/// [`Error::Unsupported`] for a 1.2 image type on an older platform (checked first);
/// [`Error::Cl`] from `clGetSupportedImageFormats`.
pub fn supported_image_formats(
    context: &Context,
    flags: MemFlags,
    image_type: ImageType,
) -> Result<Vec<ImageFormat>> {
    context.require_platform_version(image_type.min_version(), "1-D and array image types")?;
    // SAFETY: a valid context; the type exists on this platform version.
    let formats =
        unsafe { raw::get_supported_formats(context.as_raw(), flags.bits(), image_type.to_raw()) }
            .map_err(Error::cl("clGetSupportedImageFormats"))?;
    Ok(formats.into_iter().map(ImageFormat::from_raw).collect())
}

impl From<Image> for crate::memory::Memory {
    /// The image as an untyped memory object (same reference).
    fn from(image: Image) -> crate::memory::Memory {
        let tracked = Arc::clone(&image.tracked);
        // SAFETY: we give the image's one reference to the new `Memory`.
        let mut mem = unsafe { crate::memory::Memory::adopt_untracked(image.into_raw_only()) };
        mem.set_tracked(tracked);
        mem
    }
}

impl TryFrom<crate::memory::Memory> for Image {
    type Error = crate::memory::Memory;

    /// The memory object as an image, or back unchanged when it is not one.
    fn try_from(mem: crate::memory::Memory) -> std::result::Result<Image, crate::memory::Memory> {
        match crate::memory::mem_type(mem.as_raw()).map(ImageType::from_mem_type) {
            // SAFETY: a valid image; the new `Image` takes one more reference and `mem`'s is
            // dropped on return, so the count is unchanged.
            Ok(Some(_)) => unsafe { Image::from_raw_retained(mem.as_raw()) }.map_err(|_| mem),
            _ => Err(mem),
        }
    }
}

crate::memory::tracked_mem!(Image {
    context,
    tracked,
    live
});
clone_retains!(Mem: Image { context, desc, format, element_size, flags, tracked, live });

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image")
            .field("raw", &self.raw)
            .field("type", &self.desc.image_type)
            .field("shape", &self.shape())
            .field("format", &self.format)
            .field("flags", &self.flags)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_shape_follows_create_image_and_fixes_1d_arrays() {
        assert_eq!(
            ImageDesc::from_shape(&[8], false, false),
            Ok(ImageDesc::d1(8))
        );
        assert_eq!(
            ImageDesc::from_shape(&[8], false, true),
            Ok(ImageDesc::d1_buffer(8))
        );
        // PyOpenCL: array_size = shape[2] = 1. Here: the 3 layers asked for.
        let d = ImageDesc::from_shape(&[8, 3], true, false).unwrap();
        assert_eq!(d.image_type, ImageType::Image1dArray);
        assert_eq!(d.array_size, 3);
        assert_eq!(d.extent(), [8, 3, 1]);
        assert_eq!(
            ImageDesc::from_shape(&[8, 3], false, false),
            Ok(ImageDesc::d2(8, 3))
        );
        assert_eq!(
            ImageDesc::from_shape(&[8, 3, 2], true, false),
            Ok(ImageDesc::d2_array(8, 3, 2))
        );
        assert_eq!(
            ImageDesc::from_shape(&[8, 3, 2], false, false),
            Ok(ImageDesc::d3(8, 3, 2))
        );
        for (shape, arr, buf) in [
            (&[][..], false, false),
            (&[1, 2, 3, 4][..], false, false),
            (&[8][..], true, false),
            (&[8, 2][..], false, true),
            (&[8][..], true, true),
        ] {
            assert!(
                matches!(
                    ImageDesc::from_shape(shape, arr, buf),
                    Err(Error::InvalidArgument(_))
                ),
                "{shape:?} {arr} {buf}"
            );
        }
    }

    #[test]
    fn extents_follow_opencl_origin_convention() {
        assert_eq!(ImageDesc::d1(5).extent(), [5, 1, 1]);
        assert_eq!(ImageDesc::d1_array(5, 4).extent(), [5, 4, 1]);
        assert_eq!(ImageDesc::d2(5, 6).extent(), [5, 6, 1]);
        assert_eq!(ImageDesc::d2_array(5, 6, 7).extent(), [5, 6, 7]);
        assert_eq!(ImageDesc::d3(5, 6, 7).extent(), [5, 6, 7]);
        for t in ImageType::ALL {
            assert_eq!(
                ImageType::from_mem_type(MemObjectType::from_raw(t.to_raw())),
                Some(t)
            );
        }
        assert_eq!(ImageType::from_mem_type(MemObjectType::Buffer), None);
    }
}
