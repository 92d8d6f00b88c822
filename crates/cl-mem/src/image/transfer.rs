//! Image transfers: read, write, fill, image-to-image and image<->buffer copies, every one
//! bounds-checked in Rust (origins and regions against the image's extent, host slices against the
//! region and pitches, buffer ranges against the buffer's size) before the driver is called.
//! Host-memory transfers are blocking, so borrowed slices are only used during the call.

use cl_raw::{queue as raw_queue, Version};

use super::{ChannelKind, Image, ImagePitches, ImageType};
use crate::buffer::transfer::{host_transfers, CopyPair, Pending, Transfer};
use crate::buffer::Buffer;
use crate::error::{check_range, Error, Result};
use crate::pod::{slice_as_bytes, Pod};
use crate::raw_handle::RawHandle;
use crate::runtime::event::Event;
use crate::runtime::queue::Queue;
use crate::runtime::track::{enqueue_tracked, Access, Direction, Read, Write};

/// The color of [`Image::fill`], whose type must match how kernels read the image's channel
/// type (its kind): floats for float, half and normalized types, signed integers for
/// `SIGNED_INT*`, unsigned for `UNSIGNED_INT*`. Channels are in RGBA order whatever the image's
/// order (the driver converts).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FillColor {
    /// A `float4`.
    Float([f32; 4]),
    /// An `int4`.
    Int([i32; 4]),
    /// A `uint4`.
    Uint([u32; 4]),
}

impl FillColor {
    fn kind(&self) -> ChannelKind {
        match self {
            FillColor::Float(_) => ChannelKind::Float,
            FillColor::Int(_) => ChannelKind::SignedInt,
            FillColor::Uint(_) => ChannelKind::UnsignedInt,
        }
    }

    fn bytes(&self) -> [u8; 16] {
        let b: &[u8] = match self {
            FillColor::Float(v) => slice_as_bytes(v),
            FillColor::Int(v) => slice_as_bytes(v),
            FillColor::Uint(v) => slice_as_bytes(v),
        };
        let mut out = [0u8; 16];
        out.copy_from_slice(b);
        out
    }
}

const AXES: [&str; 3] = [
    "image region along axis 0 (x)",
    "image region along axis 1 (y, or layer of a 1-D array)",
    "image region along axis 2 (z, or layer of a 2-D array)",
];

/// Completes an origin (missing values 0) and a region (missing values 1), PyOpenCL's coordinate
/// triples, and checks them against `extent`.
pub(crate) fn coords(
    extent: [usize; 3],
    origin: &[usize],
    region: &[usize],
) -> Result<([usize; 3], [usize; 3])> {
    if origin.len() > 3 || region.len() > 3 {
        return Err(Error::InvalidArgument(format!(
            "an image origin or region has at most 3 values, got {} and {}",
            origin.len(),
            region.len()
        )));
    }
    let mut o = [0usize; 3];
    let mut r = [1usize; 3];
    o[..origin.len()].copy_from_slice(origin);
    r[..region.len()].copy_from_slice(region);
    for axis in 0..3 {
        if r[axis] == 0 {
            return Err(Error::InvalidArgument(format!(
                "an image region has no zero values, got {r:?}"
            )));
        }
        check_range(AXES[axis], o[axis], r[axis], extent[axis])?;
    }
    Ok((o, r))
}

/// Bytes a host slice needs for `region` of an image of `image_type` laid out with `pitches`
/// (0 = packed), after checking the pitches. Layers of 1-D arrays are `slice` apart, as in
/// `clEnqueueReadImage`.
pub(crate) fn host_bytes(
    image_type: ImageType,
    elem: usize,
    region: [usize; 3],
    pitches: ImagePitches,
) -> Result<usize> {
    // Callers complete the region through `coords` first (which refuses zeros), but the size
    // arithmetic below subtracts 1 from the row and slice counts: refuse zeros here too rather
    // than rely on the order of the checks (found by the `image` fuzz target: `[0, 0, 0]`
    // underflowed).
    if region.contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "an image region has no zero values, got {region:?}"
        )));
    }
    let overflow = || Error::InvalidArgument("image region size overflows usize".into());
    let tight_row = region[0].checked_mul(elem).ok_or_else(overflow)?;
    let row = pitch_or_least("row", pitches.row, tight_row)?;
    let (rows, slices, min_slice) = match image_type {
        ImageType::Image1d | ImageType::Image1dBuffer | ImageType::Image2d => {
            if pitches.slice != 0 {
                return Err(Error::InvalidArgument(format!(
                    "a {image_type} image transfer takes no slice pitch"
                )));
            }
            (region[1], 1, 0)
        }
        ImageType::Image1dArray => (1, region[1], row),
        ImageType::Image2dArray | ImageType::Image3d => (
            region[1],
            region[2],
            row.checked_mul(region[1]).ok_or_else(overflow)?,
        ),
    };
    let slice = pitch_or_least("slice", pitches.slice, min_slice)?;
    // The last row of the last slice needs only its pixels, not a whole pitch.
    slice
        .checked_mul(slices - 1)
        .and_then(|s| row.checked_mul(rows - 1).and_then(|r| r.checked_add(s)))
        .and_then(|x| x.checked_add(tight_row))
        .ok_or_else(overflow)
}

/// A host pitch: `given`, or `least` (the region's `what`, row or slice, in bytes) when 0;
/// [`Error::InvalidArgument`] when it is less than that.
fn pitch_or_least(what: &str, given: usize, least: usize) -> Result<usize> {
    let pitch = if given == 0 { least } else { given };
    if pitch < least {
        return Err(Error::InvalidArgument(format!(
            "{what} pitch {pitch} is less than the region's {what} of {least} bytes"
        )));
    }
    Ok(pitch)
}

/// The pitches handed to the driver. For 1-D arrays the layer stride goes in both: the spec
/// makes `slice_pitch` the distance between layers ("the size in bytes of each image"), but PoCL,
/// Oclgrind and the Intel CPU runtime step `row_pitch` between layers (docs/DEVICES.md); a
/// single row needs no row pitch of its own, so with both equal every reading agrees.
pub(crate) fn driver_pitches(image_type: ImageType, pitches: ImagePitches) -> (usize, usize) {
    if image_type == ImageType::Image1dArray {
        let stride = if pitches.slice != 0 {
            pitches.slice
        } else {
            pitches.row
        };
        (stride, stride)
    } else {
        (pitches.row, pitches.slice)
    }
}

/// A host transfer that passed [`Image::check_host_transfer`]: completed coordinates and the
/// pitches to hand the driver.
#[derive(Clone, Copy, Debug)]
struct HostSpan {
    origin: [usize; 3],
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
}

impl Image {
    host_transfers! {
        /// Blocking host-to-image write of `src` (a slice, vector, array or contiguous ndarray:
        /// [`HostData`](crate::HostData)) after `o`'s events: the whole image from tightly packed
        /// data by default, or `o.rect`'s region (in pixels) at its destination origin, the host
        /// laid out with its source pitches (PyOpenCL's `enqueue_copy(queue, image, host, origin=,
        /// region=, pitches=)`). `o.src_offset` and `o.byte_count` pick part of `src`.
        ///
        /// ```ignore
        /// img.write(&queue, &pixels, &[])?;
        /// img.write(&queue, &tile, Transfer::default().rect(Rect::new([4, 4, 1]).dst_origin([8, 8, 0])))?;
        /// ```
        ///
        /// # Errors
        ///
        /// [`Error::InvalidArgument`] for malformed coordinates or pitches, a host origin in the
        /// rectangle (slice the host memory instead) or a destination offset;
        /// [`Error::OutOfBounds`] for a region outside the image or data smaller than the region
        /// and pitches need (all checked first); [`Error::Cl`] from `clEnqueueWriteImage`.
        write(self, queue, src, o) {
            let bytes = src.host_slice()?;
            let bytes = host_part(bytes, &o)?;
            let span = self.check_host_transfer(queue, false, &o, bytes.len())?;
            // SAFETY: checked for this queue and `bytes.len()`; the write is blocking, so `bytes`
            // is only read during the call.
            unsafe { self.enqueue_host::<Write>(queue, true, span, bytes.as_ptr().cast(), o.wait) }
        }

        /// Blocking image-to-host read into `dst` ([`HostDataMut`](crate::HostDataMut)) after `o`'s
        /// events: the whole image, tightly packed, by default, or `o.rect`'s region at its source
        /// origin, the host laid out with its destination pitches. [`Image::to_vec`] reads the
        /// whole image into a new vector.
        ///
        /// # Errors
        ///
        /// As [`Image::write`], with [`Error::Cl`] from `clEnqueueReadImage`.
        read(self, queue, dst, o) {
            let bytes = host_part_mut(dst.host_slice_mut()?, &o)?;
            let span = self.check_host_transfer(queue, true, &o, bytes.len())?;
            // SAFETY: checked for this queue and `bytes.len()`; the read is blocking, so `bytes` is
            // written only during the call, through our exclusive borrow.
            unsafe {
                self.enqueue_host::<Read>(queue, true, span, bytes.as_mut_ptr().cast(), o.wait)
            }
        }

        /// Non-blocking host-to-image write of `host`, placed as [`Image::write`] places it: `host`
        /// moves into the returned [`Pending`], which hands it back from [`Pending::wait`] (and
        /// waits if dropped), so the memory outlives the command.
        ///
        /// # Errors
        ///
        /// As [`Image::write`].
        enqueue_write(self, queue, host, o) {
            let bytes = host_part(host.host_bytes(), &o)?;
            let span = self.check_host_transfer(queue, false, &o, bytes.len())?;
            // SAFETY: checked for this queue and `bytes.len()`; `host` moves into the `Pending`,
            // whose drop waits and whose forgetting leaks, so its (unmoving, HostMemory contract)
            // bytes outlive the command.
            let ev = unsafe {
                self.enqueue_host::<Write>(queue, false, span, bytes.as_ptr().cast(), o.wait)
            }?;
            Ok(Pending::started(ev, host, queue))
        }

        /// Non-blocking image-to-host read into `host`, placed as [`Image::read`] places it;
        /// [`Pending::wait`] returns the filled memory.
        ///
        /// # Errors
        ///
        /// As [`Image::read`].
        enqueue_read(self, queue, host, o) {
            let bytes = host_part_mut(host.host_bytes_mut(), &o)?;
            let span = self.check_host_transfer(queue, true, &o, bytes.len())?;
            let ptr = bytes.as_mut_ptr();
            // SAFETY: as in `enqueue_write`; the bytes are written only by the command, and the
            // host cannot reach them until `Pending::wait` returns them.
            let ev = unsafe { self.enqueue_host::<Read>(queue, false, span, ptr.cast(), o.wait) }?;
            Ok(Pending::started(ev, host, queue))
        }
    }

    /// The image side of `o` (`image_is_src`: the image is the source): the rectangle's origin and
    /// region in pixels, or the whole image.
    fn image_side(&self, o: &Transfer<'_>, image_is_src: bool) -> ([usize; 3], [usize; 3]) {
        match o.rect {
            Some(r) if image_is_src => (r.src_origin, r.region),
            Some(r) => (r.dst_origin, r.region),
            None => ([0; 3], self.extent()),
        }
    }

    /// The checks every host read (`reading`) or write runs before the driver, in this order:
    /// the queue's context, the image's host-access flags, the coordinates against the extent,
    /// then `host_len` bytes against what the region and the host pitches need.
    fn check_host_transfer(
        &self,
        queue: &Queue,
        reading: bool,
        o: &Transfer<'_>,
        host_len: usize,
    ) -> Result<HostSpan> {
        self.check_queue(queue)?;
        self.flags.check_host_access(reading, "an image")?;
        let (origin, region) = self.image_side(o, reading);
        let (origin, region) = coords(self.extent(), &origin, &region)?;
        let pitches = match o.rect {
            Some(r) => {
                let (host_origin, p) = if reading {
                    (r.dst_origin, r.dst_pitches)
                } else {
                    (r.src_origin, r.src_pitches)
                };
                if host_origin != [0; 3] {
                    return Err(Error::InvalidArgument(format!(
                        "an image transfer has no host origin (got {host_origin:?}): slice the \
                         host memory instead"
                    )));
                }
                ImagePitches::new(p[0], p[1])
            }
            None => ImagePitches::default(),
        };
        let what = if reading {
            "host memory of an image read"
        } else {
            "host data of an image write"
        };
        self.check_host(region, pitches, host_len, what)?;
        let (row_pitch, slice_pitch) = driver_pitches(self.desc.image_type, pitches);
        Ok(HostSpan {
            origin,
            region,
            row_pitch,
            slice_pitch,
        })
    }

    /// `clEnqueueReadImage` (`D` = [`Read`]) or `clEnqueueWriteImage` (`D` = [`Write`]) of a
    /// checked `span` between the image and `host`: the one call behind [`Image::read`],
    /// [`Image::write`] and their `enqueue_` forms.
    ///
    /// # Safety
    ///
    /// 1. `span` came from [`Image::check_host_transfer`] for this direction, `queue` and a host
    ///    length `n`, and `host` is valid for `n` bytes of writes (a read) or reads (a write).
    /// 2. Nothing else accesses those bytes until the command completes (when `blocking`: until
    ///    this call returns); a write only needs them not written.
    unsafe fn enqueue_host<D: Direction>(
        &self,
        queue: &Queue,
        blocking: bool,
        span: HostSpan,
        host: D::Host,
        wait: &[&Event],
    ) -> Result<Event> {
        let (call, raw) = D::IMAGE;
        let uses = [(self.tracked(), None, D::ACCESS)];
        enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/image/events of one context (checked); the region is inside the
            // image and the host bytes cover it with these pitches (checked, obligation 1);
            // obligation 2 keeps them to the command; we own the returned event.
            unsafe {
                let ev = raw(
                    queue.as_raw(),
                    self.raw,
                    blocking,
                    span.origin,
                    span.region,
                    span.row_pitch,
                    span.slice_pitch,
                    host,
                    list,
                );
                Event::adopt(ev, call)
            }
        })
        .and_then(|ev| ev.finished_if(blocking))
    }

    /// The whole image as a tightly packed vector of `T` (the packed size over `size_of::<T>()`
    /// values), after every command enqueued before on `queue` (use [`Image::read`] for a wait
    /// list or a region).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the packed size is not a multiple of `T`'s size; as
    /// [`Image::read`].
    pub fn to_vec<T: Pod>(&self, queue: &Queue) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>();
        let bytes = self.size_bytes_packed();
        if size == 0 || !bytes.is_multiple_of(size) {
            return Err(Error::InvalidArgument(format!(
                "an image of {bytes} bytes is not a whole number of {size}-byte values"
            )));
        }
        // SAFETY: `Pod` promises every bit pattern, all-zero included, is a valid `T`.
        let zero: T = unsafe { std::mem::zeroed() };
        let mut out = vec![zero; bytes / size];
        self.read(queue, &mut out[..], &[])?;
        Ok(out)
    }

    fn check_host(
        &self,
        region: [usize; 3],
        pitches: ImagePitches,
        have: usize,
        what: &'static str,
    ) -> Result<()> {
        let need = host_bytes(self.desc.image_type, self.element_size, region, pitches)?;
        if have < need {
            return Err(Error::OutOfBounds {
                what,
                offset: 0,
                len: need,
                size: have,
            });
        }
        Ok(())
    }

    /// Fills the whole image, or `o.rect`'s region at its destination origin, with one color,
    /// after `o`'s events (PyOpenCL's `enqueue_fill_image`; OpenCL 1.2).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] before 1.2; [`Error::InvalidArgument`] for a color type that does
    /// not match the channel type (PyOpenCL passes any 16 bytes), an unknown channel type, or
    /// offsets in `o`; coordinates as [`Image::write`]; [`Error::Cl`] from `clEnqueueFillImage`.
    pub fn fill<'a>(
        &self,
        queue: &Queue,
        color: FillColor,
        o: impl Into<Transfer<'a>>,
    ) -> Result<Event> {
        let o = o.into();
        let wait = o.wait;
        no_offsets(&o, "an image fill")?;
        let (origin, region) = self.image_side(&o, false);
        queue
            .context()
            .require_platform_version(Version::V1_2, "clEnqueueFillImage")?;
        if self.desc.image_type == ImageType::Image1dBuffer
            && crate::runtime::quirks::quirks(&queue.context().platform())
                .fill_image1d_buffer_crashes
        {
            // PoCL 3.1 crashes the process (SIGSEGV) inside this call for 1-D buffer images:
            // repro/pocl_fill_image1d_buffer_crash.c, docs/DEVICES.md#pocl.
            return Err(Error::Unsupported {
                feature: "clEnqueueFillImage on a 1-D buffer image",
                needs: "a driver other than PoCL (PoCL 3.1 crashes in this call); fill the \
                        buffer instead"
                    .into(),
            });
        }
        let kind = self.format.channel_type.kind().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "cannot fill an image of unknown format {}",
                self.format
            ))
        })?;
        if kind != color.kind() {
            return Err(Error::InvalidArgument(format!(
                "a {} image is filled with a {kind:?} color, got {color:?}",
                self.format
            )));
        }
        self.check_queue(queue)?;
        let (o, r) = coords(self.extent(), &origin, &region)?;
        let bytes = color.bytes();
        let uses = [(self.tracked(), None, Access::Write)];
        enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/image/events of a 1.2 platform; the color is 16 bytes, copied by the
            // driver before returning; the region is inside the image; we own the returned event.
            unsafe {
                let ev =
                    raw_queue::enqueue_fill_image(queue.as_raw(), self.raw, &bytes, o, r, list);
                Event::adopt(ev, "clEnqueueFillImage")
            }
        })
    }

    /// Copies `region` from `src_origin` of `self` to `dst_origin` of `dst` (same format; the
    /// types may differ as the spec allows, e.g. a 2-D image into a slice of a 3-D one).
    /// Works for every image type, 1-D ones included (PyOpenCL's `enqueue_copy` refuses them).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for different formats or malformed coordinates;
    /// [`Error::OutOfBounds`] for a region outside either image (all checked first);
    /// [`Error::Cl`] from `clEnqueueCopyImage`.
    pub(crate) fn copy_to_image(
        &self,
        queue: &Queue,
        dst: &Image,
        src_origin: &[usize],
        dst_origin: &[usize],
        region: &[usize],
        wait: &[&Event],
    ) -> Result<Event> {
        if self.format != dst.format {
            return Err(Error::InvalidArgument(format!(
                "image copy between different formats: {} to {}",
                self.format, dst.format
            )));
        }
        self.check_queue(queue)?;
        dst.check_queue(queue)?;
        let (so, r) = coords(self.extent(), src_origin, region)?;
        let (dso, _) = coords(dst.extent(), dst_origin, &r)?;
        let uses = [
            (self.tracked(), None, Access::Read),
            (dst.tracked(), None, Access::Write),
        ];
        enqueue_tracked(queue, wait, &uses, |list| {
            // SAFETY: valid queue/images/events; both regions are inside their images; we own the
            // returned event.
            unsafe {
                let ev = raw_queue::enqueue_copy_image(
                    queue.as_raw(),
                    self.raw,
                    dst.raw,
                    so,
                    dso,
                    r,
                    list,
                );
                Event::adopt(ev, "clEnqueueCopyImage")
            }
        })
    }

    /// A copy between this image and `buffer`, placed by `o` (`image_is_src`: the buffer from
    /// the image, `clEnqueueCopyImageToBuffer`; else the image from the buffer,
    /// `clEnqueueCopyBufferToImage`): the image side is `o`'s rectangle or the whole image, the
    /// buffer side starts at `o`'s buffer-side byte offset, tightly packed.
    ///
    /// # Errors
    ///
    /// Checked first, in this order: [`Error::InvalidArgument`] for a byte offset on the image
    /// side, pitches or a byte count (the region sets it), a queue of another context, malformed
    /// coordinates; [`Error::OutOfBounds`] for a region outside the image or a packed region that
    /// does not fit the buffer from its offset. Then [`Error::Cl`] from the call.
    fn copy_with_buffer(
        &self,
        queue: &Queue,
        buffer: &Buffer,
        o: &Transfer<'_>,
        image_is_src: bool,
    ) -> Result<Event> {
        let (what, range_what) = if image_is_src {
            (
                "a buffer-from-image copy",
                "buffer range of an image-to-buffer copy",
            )
        } else {
            (
                "an image-from-buffer copy",
                "buffer range of a buffer-to-image copy",
            )
        };
        // The image side takes no byte offset; the buffer side's is where the pixels start.
        let (image_offset, offset) = if image_is_src {
            (o.src_offset, o.dst_offset)
        } else {
            (o.dst_offset, o.src_offset)
        };
        no_image_offset(image_offset, what)?;
        no_pitches(o, what)?;
        if o.byte_count.is_some() {
            return Err(Error::InvalidArgument(format!(
                "{what} takes no byte count (the region sets it)"
            )));
        }
        let (origin, region) = self.image_side(o, image_is_src);
        self.check_queue(queue)?;
        buffer.check_queue(queue)?;
        let (origin, region) = coords(self.extent(), &origin, &region)?;
        self.check_buffer_range(buffer, offset, region, range_what)?;
        // The source first, as every copy lists its memory.
        let uses = if image_is_src {
            [
                (self.tracked(), None, Access::Read),
                (buffer.tracked(), None, Access::Write),
            ]
        } else {
            [
                (buffer.tracked(), None, Access::Read),
                (self.tracked(), None, Access::Write),
            ]
        };
        let (q, image, mem) = (queue.as_raw(), self.raw, buffer.as_raw());
        enqueue_tracked(queue, o.wait, &uses, |list| {
            // SAFETY: valid queue/image/buffer/events; both ranges checked; we own the event.
            unsafe {
                if image_is_src {
                    let ev = raw_queue::enqueue_copy_image_to_buffer(
                        q, image, mem, origin, region, offset, list,
                    );
                    Event::adopt(ev, "clEnqueueCopyImageToBuffer")
                } else {
                    let ev = raw_queue::enqueue_copy_buffer_to_image(
                        q, mem, image, offset, origin, region, list,
                    );
                    Event::adopt(ev, "clEnqueueCopyBufferToImage")
                }
            }
        })
    }

    fn check_buffer_range(
        &self,
        buffer: &Buffer,
        offset: usize,
        region: [usize; 3],
        what: &'static str,
    ) -> Result<()> {
        let len = region
            .iter()
            .try_fold(self.element_size, |acc, &v| acc.checked_mul(v))
            .ok_or_else(|| Error::InvalidArgument("image region size overflows usize".into()))?;
        check_range(what, offset, len, buffer.size_bytes())
    }
}

/// An image takes no byte offset (its place is the rectangle's origin): refused on the image side.
fn no_image_offset(offset: usize, what: &str) -> Result<()> {
    if offset != 0 {
        return Err(Error::InvalidArgument(format!(
            "{what}: an image takes no byte offset (its place is the rectangle's origin)"
        )));
    }
    Ok(())
}

/// Refuses offsets and a byte count where `what` takes none.
fn no_offsets(o: &Transfer<'_>, what: &str) -> Result<()> {
    no_image_offset(o.src_offset | o.dst_offset, what)?;
    if o.byte_count.is_some() {
        return Err(Error::InvalidArgument(format!(
            "{what} takes no byte count"
        )));
    }
    Ok(())
}

/// The host bytes a write moves: from `o.src_offset`, `o.byte_count` bytes or the rest.
fn host_part<'b>(bytes: &'b [u8], o: &Transfer<'_>) -> Result<&'b [u8]> {
    no_image_offset(o.dst_offset, "an image write")?;
    o.src_part(bytes)
}

/// The host bytes a read fills: from `o.dst_offset`, `o.byte_count` bytes or the rest.
fn host_part_mut<'b>(bytes: &'b mut [u8], o: &Transfer<'_>) -> Result<&'b mut [u8]> {
    no_image_offset(o.src_offset, "an image read")?;
    o.dst_part(bytes)
}

/// Refuses host pitches in a rectangle of a device-side copy (no side of it is host memory).
fn no_pitches(o: &Transfer<'_>, what: &str) -> Result<()> {
    if o.rect
        .is_some_and(|r| r.src_pitches != [0; 2] || r.dst_pitches != [0; 2])
    {
        return Err(Error::InvalidArgument(format!(
            "{what} takes no pitches (buffer sides are tightly packed)"
        )));
    }
    Ok(())
}

// `crate::enqueue_copy` with images (PyOpenCL's `enqueue_copy` with images): image from image,
// image from host slice, host slice from image, buffer from image and image from buffer. The
// image side is the whole image, or the rectangle of the `Transfer` (origins and region in
// pixels); the buffer side starts at the `Transfer`'s buffer-side byte offset, tightly packed.
// 1-D images work too (PyOpenCL refuses them).

impl CopyPair for (&Image, &Image) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        let (dst, src) = self;
        no_offsets(&o, "an image-to-image copy")?;
        no_pitches(&o, "an image-to-image copy")?;
        let Some(r) = o.rect else {
            if dst.extent() != src.extent() {
                return Err(Error::InvalidArgument(format!(
                    "whole-image copy between different extents: {:?} from {:?}",
                    dst.extent(),
                    src.extent()
                )));
            }
            return src.copy_to_image(queue, dst, &[], &[], &src.extent(), o.wait);
        };
        src.copy_to_image(queue, dst, &r.src_origin, &r.dst_origin, &r.region, o.wait)
    }
}

impl<T: Pod> CopyPair for (&Image, &[T]) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        self.0.write(queue, self.1, o)
    }
}

impl<T: Pod> CopyPair for (&mut [T], &Image) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        self.1.read(queue, self.0, o)
    }
}

impl<B: crate::buffer::AsBuffer + ?Sized> CopyPair for (&B, &Image) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        self.1.copy_with_buffer(queue, self.0.as_buffer(), &o, true)
    }
}

impl<B: crate::buffer::AsBuffer + ?Sized> CopyPair for (&Image, &B) {
    fn enqueue(self, queue: &Queue, o: Transfer<'_>) -> Result<Event> {
        self.0
            .copy_with_buffer(queue, self.1.as_buffer(), &o, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_complete_like_pyopencl_and_are_bounded() {
        assert_eq!(coords([8, 4, 1], &[], &[]), Ok(([0, 0, 0], [1, 1, 1])));
        assert_eq!(coords([8, 4, 1], &[2], &[6, 4]), Ok(([2, 0, 0], [6, 4, 1])));
        assert!(matches!(
            coords([8, 4, 1], &[3], &[6]),
            Err(Error::OutOfBounds {
                offset: 3,
                len: 6,
                size: 8,
                ..
            })
        ));
        assert!(matches!(
            coords([8, 4, 1], &[0, 0, 1], &[1]),
            Err(Error::OutOfBounds { size: 1, .. })
        ));
        assert!(matches!(
            coords([8, 4, 1], &[0, 0, 0, 0], &[1]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            coords([8, 4, 1], &[0], &[0]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            coords([8, 4, 1], &[usize::MAX], &[2]),
            Err(Error::OutOfBounds { .. })
        ));
    }

    #[test]
    fn host_sizes_follow_the_pitches() {
        use ImageType::*;
        let p = ImagePitches::default();
        assert_eq!(host_bytes(Image2d, 4, [3, 2, 1], p), Ok(24));
        assert_eq!(
            host_bytes(Image2d, 4, [3, 2, 1], ImagePitches::new(16, 0)),
            Ok(28)
        );
        assert!(host_bytes(Image2d, 4, [3, 2, 1], ImagePitches::new(8, 0)).is_err());
        assert!(host_bytes(Image2d, 4, [3, 2, 1], ImagePitches::new(0, 64)).is_err());
        assert_eq!(host_bytes(Image1d, 4, [5, 1, 1], p), Ok(20));
        assert_eq!(host_bytes(Image1dArray, 4, [5, 3, 1], p), Ok(60));
        assert_eq!(
            host_bytes(Image1dArray, 4, [5, 3, 1], ImagePitches::new(0, 32)),
            Ok(84)
        );
        assert!(host_bytes(Image1dArray, 4, [5, 3, 1], ImagePitches::new(0, 16)).is_err());
        assert_eq!(host_bytes(Image3d, 2, [2, 3, 4], p), Ok(48));
        assert_eq!(
            host_bytes(Image2dArray, 2, [2, 3, 4], ImagePitches::new(8, 32)),
            Ok(3 * 32 + 2 * 8 + 4)
        );
        assert!(host_bytes(Image3d, 2, [2, 3, 4], ImagePitches::new(8, 16)).is_err());
    }

    /// Regression (fuzz target `image`, `fuzz/corpus/image/regression-host-bytes-zero-region`):
    /// a zero in the region underflowed `rows - 1` / `slices - 1` instead of being refused.
    #[test]
    fn host_sizes_refuse_a_zero_region() {
        use ImageType::*;
        for t in ImageType::ALL {
            for region in [[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 0]] {
                assert!(
                    matches!(
                        host_bytes(t, 4, region, ImagePitches::default()),
                        Err(Error::InvalidArgument(_))
                    ),
                    "{t:?} {region:?}"
                );
            }
        }
        assert_eq!(
            host_bytes(Image2d, 4, [1, 1, 1], ImagePitches::default()),
            Ok(4)
        );
    }

    #[test]
    fn one_d_array_layer_stride_goes_in_both_pitches() {
        use ImageType::*;
        assert_eq!(
            driver_pitches(Image1dArray, ImagePitches::new(0, 48)),
            (48, 48)
        );
        assert_eq!(
            driver_pitches(Image1dArray, ImagePitches::new(32, 0)),
            (32, 32)
        );
        assert_eq!(
            driver_pitches(Image1dArray, ImagePitches::default()),
            (0, 0)
        );
        assert_eq!(driver_pitches(Image3d, ImagePitches::new(32, 64)), (32, 64));
    }

    #[test]
    fn fill_colors_are_16_bytes_of_their_kind() {
        assert_eq!(
            FillColor::Float([1.0; 4]).bytes()[..4],
            1.0f32.to_ne_bytes()
        );
        assert_eq!(FillColor::Int([-1; 4]).bytes(), [0xff; 16]);
        assert_eq!(
            FillColor::Uint([7, 0, 0, 0]).kind(),
            ChannelKind::UnsignedInt
        );
    }
}
