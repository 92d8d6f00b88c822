//! Entry points into crate-private pure arithmetic, for the fuzz targets and the property tests
//! of `cl-props` (feature `fuzzing`; not part of the public API, hidden from the docs).
//!
//! Every function here forwards to the one check the safe API runs before the driver, so the
//! fuzzers exercise exactly that code: rectangle sides of `*_rect` transfers, the byte-range
//! check behind every buffer, SVM and host range, range resolution of sub-buffers, host ranges
//! of `enqueue_copy`, image coordinate completion, host layouts and repacking. They take plain
//! values and call no driver.
//!
//! Why a feature and not `pub`: these are implementation details whose signatures may change
//! with the checks; a feature keeps them out of the default public surface (and out of semver
//! checks), while still letting an outside crate reach the real code.

use std::ops::Bound;

use crate::buffer::rect::Rect;
use crate::error::Result;
use crate::image::{ImageDesc, ImageFormat, ImagePitches, ImageType};

/// [`Rect`]'s check of one side of a rectangle transfer: region, pitches (0 = packed) and extent
/// against `size` bytes; returns the explicit `[row, slice]` pitches.
///
/// # Errors
///
/// As the `*_rect` transfers: `InvalidArgument` for a zero region, bad pitches or an extent that
/// overflows `usize`, `OutOfBounds` past `size`.
pub fn rect_side(
    rect: &Rect,
    origin: [usize; 3],
    pitches: [usize; 2],
    size: usize,
) -> Result<[usize; 2]> {
    rect.side("rectangle", origin, pitches, size)
}

/// The one range check (`offset..offset + len` within `size`, overflow-free).
///
/// # Errors
///
/// `OutOfBounds` unless the range lies within `size`.
pub fn check_range(offset: usize, len: usize, size: usize) -> Result<()> {
    crate::error::check_range("range", offset, len, size)
}

/// Range resolution of `sub_buffer_range` and friends: `(start, end)` of `range` within `len`.
///
/// # Errors
///
/// `InvalidArgument` for an empty, reversed or overflowing range, `OutOfBounds` past `len`.
pub fn resolve_range(start: Bound<usize>, end: Bound<usize>, len: usize) -> Result<(usize, usize)> {
    crate::buffer::resolve_range((start, end), len)
}

/// The host byte range of an `enqueue_copy` with a host side: `offset` and an optional byte
/// count (default: the rest of the slice) within `len`.
///
/// # Errors
///
/// `OutOfBounds` unless the range lies within `len`.
pub fn host_range(len: usize, offset: usize, count: Option<usize>) -> Result<(usize, usize)> {
    crate::buffer::transfer::host_range(len, offset, count)
}

/// Image coordinates completed like PyOpenCL (origin 0, region 1) and checked against `extent`.
///
/// # Errors
///
/// `InvalidArgument` for more than 3 values or a zero region, `OutOfBounds` past `extent`.
pub fn image_coords(
    extent: [usize; 3],
    origin: &[usize],
    region: &[usize],
) -> Result<([usize; 3], [usize; 3])> {
    crate::image::transfer::coords(extent, origin, region)
}

/// Bytes a host slice needs for `region` of an image transfer with `pitches`.
///
/// # Errors
///
/// `InvalidArgument` for bad pitches, a zero region or a size that overflows `usize`.
pub fn image_host_bytes(
    image_type: ImageType,
    elem: usize,
    region: [usize; 3],
    pitches: ImagePitches,
) -> Result<usize> {
    crate::image::transfer::host_bytes(image_type, elem, region, pitches)
}

/// The pitches handed to the driver for a host transfer of `image_type`.
pub fn image_driver_pitches(image_type: ImageType, pitches: ImagePitches) -> (usize, usize) {
    crate::image::transfer::driver_pitches(image_type, pitches)
}

/// The host-layout check of image creation: pitches against the shape and `host_len`.
///
/// # Errors
///
/// `InvalidArgument` for bad pitches, an unknown format or a size that overflows `usize`,
/// `OutOfBounds` when `host_len` is too short.
pub fn image_check_host_layout(
    desc: &ImageDesc,
    format: ImageFormat,
    host_len: Option<usize>,
) -> Result<(usize, usize)> {
    crate::image::create::check_host_layout(desc, format, host_len)
}

/// The host data of `desc` without its padding, as creation repacks it. Call it only with
/// `bytes` that passed [`image_check_host_layout`] (as creation does).
pub fn image_repack(desc: &ImageDesc, elem: usize, bytes: &[u8]) -> Vec<u8> {
    crate::image::create::repack(desc, elem, bytes)
}
