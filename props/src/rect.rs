//! Target `rect`: buffer rectangles, byte ranges, range resolution and host ranges, against a
//! `u128` reference that cannot overflow.
//!
//! Input: a rectangle (region, both origins and both pitch pairs), two side sizes, and ranges,
//! all with edge-case values up to `usize::MAX`.
//!
//! Properties (each call never panics, and):
//! - a rectangle side is accepted exactly when the reference finds a positive region, valid
//!   pitches (row >= width, slice >= rows * row and a multiple of row) and `first + extent <=
//!   size`; it then returns the reference's pitches; a refusal is `InvalidArgument` for the
//!   pitch rules and for extents past `usize::MAX`, else `OutOfBounds` with the exact offset and
//!   length;
//! - `check_range(offset, len, size)` is `Ok` exactly when `offset + len <= size` (in `u128`),
//!   else `OutOfBounds` with the same numbers;
//! - range resolution gives `(start, end)` exactly when `start < end <= len` in `u128` (an
//!   excluded start or included end past `usize::MAX` included);
//! - a host range defaults to the rest of the slice and is `Ok` exactly when it fits.

use std::ops::Bound;

use cl_mem::{fuzzing, Error, Rect};

use crate::input::Input;

/// What the reference expects of one side.
#[derive(Debug, PartialEq, Eq)]
enum Side {
    Ok([usize; 2]),
    BadPitch,
    /// `first`, `end` (exclusive), in u128.
    Past(u128, u128),
}

fn reference_side(
    region: [usize; 3],
    origin: [usize; 3],
    pitches: [usize; 2],
    size: usize,
) -> Side {
    if region.contains(&0) {
        return Side::BadPitch;
    }
    let r = region.map(|v| v as u128);
    let o = origin.map(|v| v as u128);
    let row = if pitches[0] == 0 {
        r[0]
    } else {
        pitches[0] as u128
    };
    if row < r[0] {
        return Side::BadPitch;
    }
    let min_slice = r[1] * row;
    let slice = if pitches[1] == 0 {
        min_slice
    } else {
        pitches[1] as u128
    };
    if slice < min_slice || slice % row != 0 {
        return Side::BadPitch;
    }
    // A slice pitch past usize::MAX cannot be passed to the driver.
    let (Ok(row_u), Ok(slice_u)) = (usize::try_from(row), usize::try_from(slice)) else {
        return Side::BadPitch;
    };
    // Each term is below 2^128, their sums need not be: past u128 is past usize anyway.
    let sum = |terms: [u128; 3]| {
        terms
            .iter()
            .try_fold(0u128, |acc, &t| acc.checked_add(t))
            .unwrap_or(u128::MAX)
    };
    let first = sum([o[2] * slice, o[1] * row, o[0]]);
    let end = sum([
        first,
        (r[2] - 1) * slice,
        ((r[1] - 1) * row).saturating_add(r[0]),
    ]);
    if end <= size as u128 {
        Side::Ok([row_u, slice_u])
    } else {
        Side::Past(first, end)
    }
}

/// One side against the reference.
///
/// # Panics
///
/// When the check and the reference disagree.
pub fn check_side(region: [usize; 3], origin: [usize; 3], pitches: [usize; 2], size: usize) {
    let rect = Rect::new(region);
    let got = fuzzing::rect_side(&rect, origin, pitches, size);
    let want = reference_side(region, origin, pitches, size);
    let case = || format!("region {region:?} origin {origin:?} pitches {pitches:?} size {size}");
    match (&got, &want) {
        (Ok(p), Side::Ok(w)) => assert_eq!(p, w, "{}", case()),
        (Err(Error::InvalidArgument(_)), Side::BadPitch) => {}
        (Err(Error::InvalidArgument(msg)), Side::Past(_, end)) => {
            assert!(
                *end > usize::MAX as u128,
                "{}: extent fits usize but refused as {msg}",
                case()
            );
        }
        (
            Err(Error::OutOfBounds {
                offset,
                len,
                size: s,
                ..
            }),
            Side::Past(first, end),
        ) => {
            assert_eq!(
                (*offset as u128, *offset as u128 + *len as u128, *s),
                (*first, *end, size),
                "{}",
                case()
            );
        }
        _ => panic!("{}: got {got:?}, the reference says {want:?}", case()),
    }
}

/// `check_range` against `u128`.
///
/// # Panics
///
/// When they disagree.
pub fn check_byte_range(offset: usize, len: usize, size: usize) {
    let fits = offset as u128 + len as u128 <= size as u128;
    match fuzzing::check_range(offset, len, size) {
        Ok(()) => assert!(fits, "{offset}+{len} accepted within {size}"),
        Err(Error::OutOfBounds {
            offset: o,
            len: l,
            size: s,
            ..
        }) => {
            assert!(!fits, "{offset}+{len} refused within {size}");
            assert_eq!((o, l, s), (offset, len, size));
        }
        Err(e) => panic!("check_range: unexpected {e:?}"),
    }
}

/// Range resolution against `u128`.
///
/// # Panics
///
/// When they disagree.
pub fn check_resolve(start: Bound<usize>, end: Bound<usize>, len: usize) {
    let s = match start {
        Bound::Included(s) => s as u128,
        Bound::Excluded(s) => s as u128 + 1,
        Bound::Unbounded => 0,
    };
    let e = match end {
        Bound::Included(e) => e as u128 + 1,
        Bound::Excluded(e) => e as u128,
        Bound::Unbounded => len as u128,
    };
    let got = fuzzing::resolve_range(start, end, len);
    if s < e && e <= len as u128 {
        let want = (usize::try_from(s).ok(), usize::try_from(e).ok());
        let got = got.map(|(a, b)| (Some(a), Some(b)));
        assert_eq!(got.ok(), Some(want), "{start:?}..{end:?} in {len}");
    } else {
        match got {
            Err(Error::InvalidArgument(_)) => assert!(
                s >= e || e > usize::MAX as u128 || s > usize::MAX as u128,
                "{start:?}..{end:?} in {len}: InvalidArgument for a non-empty range"
            ),
            Err(Error::OutOfBounds { .. }) => assert!(e > len as u128 && s < e),
            other => panic!("{start:?}..{end:?} in {len}: {other:?}"),
        }
    }
}

/// Host ranges against `u128`.
///
/// # Panics
///
/// When they disagree.
pub fn check_host_range(len: usize, offset: usize, count: Option<usize>) {
    let c = count.map_or((len as u128).saturating_sub(offset as u128), |c| c as u128);
    let fits = offset as u128 + c <= len as u128;
    match fuzzing::host_range(len, offset, count) {
        Ok((a, b)) => {
            assert!(fits);
            assert_eq!((a as u128, b as u128), (offset as u128, offset as u128 + c));
        }
        Err(Error::OutOfBounds { .. }) => assert!(!fits, "{offset}+{c} refused within {len}"),
        Err(e) => panic!("host_range: unexpected {e:?}"),
    }
}

fn bound(input: &mut Input<'_>) -> Bound<usize> {
    match input.u8() % 3 {
        0 => Bound::Unbounded,
        1 => Bound::Included(input.size()),
        _ => Bound::Excluded(input.size()),
    }
}

/// The properties above, for one input.
///
/// # Panics
///
/// When a property does not hold.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let three = |input: &mut Input<'_>| [input.size(), input.size(), input.size()];
    let region = three(&mut input);
    let src_origin = three(&mut input);
    let dst_origin = three(&mut input);
    let src_pitches = [input.size(), input.size()];
    let dst_pitches = [input.size(), input.size()];
    let (src_size, dst_size) = (input.size(), input.size());
    check_side(region, src_origin, src_pitches, src_size);
    check_side(region, dst_origin, dst_pitches, dst_size);
    check_byte_range(input.size(), input.size(), input.size());
    let (start, end) = (bound(&mut input), bound(&mut input));
    check_resolve(start, end, input.size());
    let count = if input.bool() {
        Some(input.size())
    } else {
        None
    };
    check_host_range(input.size(), input.size(), count);
}
