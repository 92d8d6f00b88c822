//! Rectangles of transfers ([`Rect`]): the value type, its checks against one side's size, and
//! the explicit pitches of a checked host rectangle ([`RectPitches`]). Plain data: shared by the
//! dispatching transfers (`transfer.rs`), the staged paths (`staged.rs`) and images.

use crate::error::{Error, Result};

/// A rectangular (up to 3-D) region of a transfer ([`Transfer::rect`](crate::buffer::transfer::Transfer::rect)): for buffers, origins and
/// region are `[x_bytes, y, z]`; for images, pixels (`[x, y, z or layer]`, the host side's origin
/// 0). Pitches are `[row_bytes, slice_bytes]` with 0 meaning tightly packed (`row = region[0]`,
/// `slice = region[1] * row`), as in `clEnqueueCopyBufferRect`. "src" and "dst" are the two
/// sides of the transfer: the host is the source of a write and the destination of a read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rect {
    /// Where the region starts on the source side.
    pub src_origin: [usize; 3],
    /// Where the region starts on the destination side.
    pub dst_origin: [usize; 3],
    /// The extent: bytes per row, rows, slices (each at least 1).
    pub region: [usize; 3],
    /// Source `[row_pitch, slice_pitch]` in bytes, 0 = tightly packed.
    pub src_pitches: [usize; 2],
    /// Destination `[row_pitch, slice_pitch]` in bytes, 0 = tightly packed.
    pub dst_pitches: [usize; 2],
}

impl Rect {
    /// A region at the origin of both sides, tightly packed.
    pub fn new(region: [usize; 3]) -> Rect {
        Rect {
            region,
            ..Rect::default()
        }
    }

    /// With this source origin.
    pub fn src_origin(mut self, origin: [usize; 3]) -> Rect {
        self.src_origin = origin;
        self
    }

    /// With this destination origin.
    pub fn dst_origin(mut self, origin: [usize; 3]) -> Rect {
        self.dst_origin = origin;
        self
    }

    /// With these source pitches.
    pub fn src_pitches(mut self, row: usize, slice: usize) -> Rect {
        self.src_pitches = [row, slice];
        self
    }

    /// With these destination pitches.
    pub fn dst_pitches(mut self, row: usize, slice: usize) -> Rect {
        self.dst_pitches = [row, slice];
        self
    }

    /// Checks the region, resolves default pitches and checks one side against `size`; returns
    /// the explicit pitches.
    pub(crate) fn side(
        &self,
        what: &'static str,
        origin: [usize; 3],
        pitches: [usize; 2],
        size: usize,
    ) -> Result<[usize; 2]> {
        let r = self.region;
        if r.contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "{what}: every region component must be positive, got {r:?}"
            )));
        }
        let row = if pitches[0] == 0 { r[0] } else { pitches[0] };
        if row < r[0] {
            return Err(Error::InvalidArgument(format!(
                "{what}: row pitch {row} is less than the region's width {}",
                r[0]
            )));
        }
        let min_slice = r[1].checked_mul(row).ok_or_else(|| too_big(what))?;
        let slice = if pitches[1] == 0 {
            min_slice
        } else {
            pitches[1]
        };
        if slice < min_slice || !slice.is_multiple_of(row) {
            return Err(Error::InvalidArgument(format!(
                "{what}: slice pitch {slice} must be a multiple of the row pitch {row} and at least {min_slice}"
            )));
        }
        // First byte touched and one past the last.
        let first = origin[2]
            .checked_mul(slice)
            .and_then(|z| origin[1].checked_mul(row).and_then(|y| y.checked_add(z)))
            .and_then(|v| v.checked_add(origin[0]))
            .ok_or_else(|| too_big(what))?;
        let end = (r[2] - 1)
            .checked_mul(slice)
            .and_then(|z| (r[1] - 1).checked_mul(row).and_then(|y| y.checked_add(z)))
            .and_then(|v| v.checked_add(r[0]))
            .and_then(|v| v.checked_add(first))
            .ok_or_else(|| too_big(what))?;
        if end > size {
            return Err(Error::OutOfBounds {
                what,
                offset: first,
                len: end - first,
                size,
            });
        }
        Ok([row, slice])
    }
}

/// The explicit `[row, slice]` pitches of both sides of a checked host rectangle transfer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RectPitches {
    pub(crate) host: [usize; 2],
    pub(crate) buffer: [usize; 2],
}

impl RectPitches {
    /// Explicit pitches of both sides (for pieces of a checked rectangle).
    pub(crate) fn new(host: [usize; 2], buffer: [usize; 2]) -> Self {
        RectPitches { host, buffer }
    }
}

fn too_big(what: &'static str) -> Error {
    Error::InvalidArgument(format!("{what}: the rectangle's extent overflows usize"))
}
