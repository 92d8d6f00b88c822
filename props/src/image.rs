//! Target `image`: image format and shape arithmetic, against `u128` references.
//!
//! Input: a raw channel order and type (known values and unknown ones), a shape of 0..=4 values
//! with the array and buffer flags, an image type with sizes and pitches, an origin and a region
//! of 0..=4 values, and a host length; sizes take edge-case values up to `usize::MAX`.
//!
//! Properties (each call never panics, and):
//! - `ImageFormat::itemsize` is `Ok` exactly for a known order and type, in `1..=16`, equal to
//!   the packed size for packed types and `channels * dtype_size` otherwise (`DEPTH_STENCIL`: 4,
//!   or 8 with `FLOAT`);
//! - `ImageDesc::from_shape` follows PyOpenCL's table (1 value: 1-D or a 1-D buffer; 2: 1-D
//!   array or 2-D; 3: 2-D array or 3-D; buffers 1-D only, never arrays), and the result's
//!   `extent()[..rank]` is the shape (unused axes 1), so pixel counts agree with the `u128`
//!   product of the shape;
//! - coordinates complete like PyOpenCL (origin 0, region 1) and are accepted exactly when at
//!   most 3 values, no zero region value and `origin + region <= extent` per axis in `u128`;
//! - the host bytes of a transfer equal the `u128` reference (last row without its padding), or
//!   the call is `InvalidArgument` exactly where the reference refuses the pitches or overflows;
//! - the host layout of a creation is accepted exactly when the reference accepts it
//!   (`OutOfBounds` only for host data too short), and repacking accepted data never panics and
//!   yields `width * itemsize * rows * layers` bytes, each row the source row at its pitch.

use cl_mem::{
    fuzzing, ChannelOrder, ChannelType, Error, ImageDesc, ImageFormat, ImagePitches, ImageType,
};

use crate::input::Input;

fn format(input: &mut Input<'_>) -> ImageFormat {
    ImageFormat::from_raw(cl_raw::sys::cl_image_format {
        image_channel_order: 0x10B0 + u32::from(input.u8() % 24),
        image_channel_data_type: 0x10D0 + u32::from(input.u8() % 20),
    })
}

/// `itemsize` against the rules.
///
/// # Panics
///
/// When they disagree.
pub fn check_itemsize(f: ImageFormat) {
    let known = f.channel_count().is_ok() && f.dtype_size().is_ok();
    match f.itemsize() {
        Ok(size) => {
            assert!(known, "{f}: itemsize {size} for an unknown order or type");
            assert!((1..=16).contains(&size), "{f}: itemsize {size}");
            let dtype = f.dtype_size().expect("known type");
            let packed = matches!(
                f.channel_type,
                ChannelType::UnormShort565
                    | ChannelType::UnormShort555
                    | ChannelType::UnormInt101010
                    | ChannelType::UnormInt101010_2
            );
            let want = if packed {
                dtype
            } else if f.channel_order == ChannelOrder::DepthStencil {
                if f.channel_type == ChannelType::Float {
                    8
                } else {
                    4
                }
            } else {
                f.channel_count().expect("known order") * dtype
            };
            assert_eq!(size, want, "{f}");
        }
        Err(Error::InvalidArgument(_)) => assert!(!known, "{f}: refused a known format"),
        Err(e) => panic!("{f}: unexpected {e:?}"),
    }
}

/// `from_shape` against PyOpenCL's table, plus cl-mem's refusal of a zero dimension (an empty
/// image, which PyOpenCL leaves to the driver).
///
/// # Panics
///
/// When they disagree.
pub fn check_from_shape(shape: &[usize], is_array: bool, from_buffer: bool) {
    use ImageType::*;
    let want = match (shape.len(), is_array, from_buffer) {
        _ if shape.contains(&0) => None,
        (_, true, true) => None,
        (1, false, true) => Some(Image1dBuffer),
        (1, false, false) => Some(Image1d),
        (_, _, true) => None,
        (2, true, _) => Some(Image1dArray),
        (2, false, _) => Some(Image2d),
        (3, true, _) => Some(Image2dArray),
        (3, false, _) => Some(Image3d),
        _ => None,
    };
    match (ImageDesc::from_shape(shape, is_array, from_buffer), want) {
        (Ok(desc), Some(t)) => {
            assert_eq!(desc.image_type, t, "{shape:?}");
            let extent = desc.extent();
            assert_eq!(&extent[..shape.len()], shape, "{t:?}");
            assert!(extent[shape.len()..].iter().all(|&v| v == 1));
            // Pixel counts (None past u128: three values near 2^64).
            let product = |v: &[usize]| {
                v.iter()
                    .try_fold(1u128, |acc, &x| acc.checked_mul(x as u128))
            };
            assert_eq!(product(&extent), product(shape));
            assert_eq!(desc.pitches, ImagePitches::default());
        }
        (Err(Error::InvalidArgument(_)), None) => {}
        (got, want) => {
            panic!("{shape:?} array {is_array} buffer {from_buffer}: {got:?}, want {want:?}")
        }
    }
}

/// Coordinate completion against `u128`.
///
/// # Panics
///
/// When they disagree.
pub fn check_coords(extent: [usize; 3], origin: &[usize], region: &[usize]) {
    let got = fuzzing::image_coords(extent, origin, region);
    if origin.len() > 3 || region.len() > 3 {
        assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
        return;
    }
    let mut o = [0usize; 3];
    let mut r = [1usize; 3];
    o[..origin.len()].copy_from_slice(origin);
    r[..region.len()].copy_from_slice(region);
    let fits = (0..3).all(|a| o[a] as u128 + r[a] as u128 <= extent[a] as u128);
    match got {
        Ok(c) => {
            assert!(!r.contains(&0) && fits);
            assert_eq!(c, (o, r));
        }
        Err(Error::InvalidArgument(_)) => assert!(r.contains(&0), "{o:?} {r:?}"),
        Err(Error::OutOfBounds { .. }) => assert!(!fits, "{o:?} {r:?} within {extent:?}"),
        Err(e) => panic!("coords: unexpected {e:?}"),
    }
}

/// `(rows, slices, min_slice)` of a host region, or `None` for a slice pitch the type refuses.
fn host_shape(
    t: ImageType,
    region: [u128; 3],
    row: u128,
    slice_given: bool,
) -> Option<(u128, u128, u128)> {
    use ImageType::*;
    Some(match t {
        Image1d | Image1dBuffer | Image2d => {
            if slice_given {
                return None;
            }
            (region[1], 1, 0)
        }
        Image1dArray => (1, region[1], row),
        Image2dArray | Image3d => (region[1], region[2], row * region[1]),
    })
}

/// Host bytes of a transfer against `u128`.
///
/// # Panics
///
/// When they disagree.
pub fn check_host_bytes(t: ImageType, elem: usize, region: [usize; 3], pitches: ImagePitches) {
    let got = fuzzing::image_host_bytes(t, elem, region, pitches);
    let want = (|| {
        if region.contains(&0) {
            return None;
        }
        let r = region.map(|v| v as u128);
        let tight = r[0] * elem as u128;
        let row = if pitches.row == 0 {
            tight
        } else {
            pitches.row as u128
        };
        // Every pitch goes to the driver as a usize: one past it is refused.
        if row < tight || usize::try_from(row).is_err() {
            return None;
        }
        let (rows, slices, min_slice) = host_shape(t, r, row, pitches.slice != 0)?;
        usize::try_from(min_slice).ok()?;
        let slice = if pitches.slice == 0 {
            min_slice
        } else {
            pitches.slice as u128
        };
        if slice < min_slice {
            return None;
        }
        let need = (slice * (slices - 1))
            .checked_add(row * (rows - 1))?
            .checked_add(tight)?;
        usize::try_from(need).ok()
    })();
    match (got, want) {
        (Ok(n), Some(w)) => assert_eq!(n, w, "{t:?} elem {elem} {region:?} {pitches:?}"),
        (Err(Error::InvalidArgument(_)), None) => {}
        (got, want) => panic!("{t:?} elem {elem} {region:?} {pitches:?}: {got:?}, want {want:?}"),
    }
}

/// The creation layout against `u128`, then repacking of accepted data.
///
/// # Panics
///
/// When they disagree, or repacking is wrong.
pub fn check_layout(desc: &ImageDesc, f: ImageFormat, host_len: Option<usize>) {
    let got = fuzzing::image_check_host_layout(desc, f, host_len);
    let p = desc.pitches;
    let Some(have) = host_len else {
        let packed = p == ImagePitches::default();
        match got {
            Ok(v) => assert!(packed && v == (0, 0)),
            Err(Error::InvalidArgument(_)) => assert!(!packed),
            Err(e) => panic!("{desc:?}: unexpected {e:?}"),
        }
        return;
    };
    let Ok(elem) = f.itemsize() else {
        assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
        return;
    };
    use ImageType::*;
    // `(need, rows, layers, row, slice)` or None for refused pitches / overflow.
    let want = (|| {
        let e = elem as u128;
        let tight = desc.width as u128 * e;
        let row = if p.row == 0 { tight } else { p.row as u128 };
        // A row past usize::MAX (width x itemsize overflowing) is refused; below it, every
        // product here stays under 2^128.
        if row < tight || row % e != 0 || usize::try_from(row).is_err() {
            return None;
        }
        let h = desc.height as u128;
        let (need, rows, layers, slice) = match desc.image_type {
            Image1d | Image1dBuffer | Image2d => {
                if p.slice != 0 {
                    return None;
                }
                // A 1-D image is one row, whatever `height` says.
                let rows = if desc.image_type == Image2d { h } else { 1 };
                (row * rows, rows, 1, 0)
            }
            t => {
                let (min_slice, n, rows) = match t {
                    Image1dArray => (row, desc.array_size as u128, 1),
                    Image2dArray => (row * h, desc.array_size as u128, h),
                    _ => (row * h, desc.depth as u128, h),
                };
                let slice = if p.slice == 0 {
                    min_slice
                } else {
                    p.slice as u128
                };
                // `is_multiple_of(0)` holds only for 0 (a zero-width row).
                let multiple = if row == 0 {
                    slice == 0
                } else {
                    slice % row == 0
                };
                if slice < min_slice || !multiple {
                    return None;
                }
                usize::try_from(min_slice).ok()?;
                (slice * n, rows, n, slice)
            }
        };
        usize::try_from(need).ok()?;
        usize::try_from(tight).ok()?;
        Some((need, rows, layers, row, slice))
    })();
    match (&got, want) {
        (Ok(v), Some((need, rows, layers, row, slice))) => {
            assert!(
                have as u128 >= need,
                "{desc:?} {f}: {have} < {need} accepted"
            );
            assert_eq!(*v, (p.row, p.slice));
            // Repack real bytes when they are few enough to allocate.
            if have <= 1 << 16 {
                check_repack(desc, elem, have, (rows, layers, row, slice));
            }
        }
        (Err(Error::OutOfBounds { len, size, .. }), Some((need, ..))) => {
            assert!((have as u128) < need && *len as u128 == need && *size == have);
        }
        (Err(Error::InvalidArgument(_)), None) => {}
        (got, want) => panic!("{desc:?} {f} host {have}: {got:?}, want {want:?}"),
    }
}

fn check_repack(
    desc: &ImageDesc,
    elem: usize,
    have: usize,
    (rows, layers, row, slice): (u128, u128, u128, u128),
) {
    let bytes: Vec<u8> = (0..have).map(|i| (i % 251).to_le_bytes()[0]).collect();
    let out = fuzzing::image_repack(desc, elem, &bytes);
    let tight = desc.width * elem;
    assert_eq!(out.len() as u128, tight as u128 * rows * layers, "{desc:?}");
    if tight == 0 {
        return;
    }
    for (i, chunk) in out.chunks(tight).enumerate() {
        let (z, y) = (i as u128 / rows, i as u128 % rows);
        let start = usize::try_from(z * slice + y * row).expect("within the host data");
        assert_eq!(chunk, &bytes[start..start + tight], "{desc:?} row {i}");
    }
}

/// The properties above, for one input.
///
/// # Panics
///
/// When a property does not hold.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let f = format(&mut input);
    check_itemsize(f);

    let n = usize::from(input.u8() % 5);
    let shape: Vec<usize> = (0..n).map(|_| input.size()).collect();
    let (is_array, from_buffer) = (input.bool(), input.bool());
    check_from_shape(&shape, is_array, from_buffer);

    let extent = [input.size(), input.size(), input.size()];
    let origin: Vec<usize> = (0..usize::from(input.u8() % 5))
        .map(|_| input.size())
        .collect();
    let region: Vec<usize> = (0..usize::from(input.u8() % 5))
        .map(|_| input.size())
        .collect();
    check_coords(extent, &origin, &region);

    let t = ImageType::ALL[usize::from(input.u8()) % ImageType::ALL.len()];
    let elem = if input.bool() {
        input.size()
    } else {
        f.itemsize().unwrap_or(4)
    };
    let region = [input.size(), input.size(), input.size()];
    let pitches = ImagePitches::new(input.size(), input.size());
    check_host_bytes(t, elem, region, pitches);

    // A creation: small sizes mostly (so repacking runs), edge cases sometimes.
    let dim = |input: &mut Input<'_>| {
        if input.u8() & 3 == 0 {
            input.size()
        } else {
            input.small(40)
        }
    };
    let t = ImageType::ALL[usize::from(input.u8()) % ImageType::ALL.len()];
    let desc = ImageDesc {
        image_type: t,
        width: dim(&mut input),
        height: dim(&mut input),
        depth: dim(&mut input),
        array_size: dim(&mut input),
        pitches: match input.u8() % 4 {
            0 => ImagePitches::default(),
            1 => ImagePitches::new(dim(&mut input), 0),
            2 => ImagePitches::new(0, dim(&mut input)),
            _ => ImagePitches::new(input.size(), input.size()),
        },
        mip_levels: 0,
    };
    let host_len = match input.u8() % 4 {
        0 => None,
        1 => Some(input.size()),
        _ => Some(input.small(1 << 16)),
    };
    check_layout(&desc, f, host_len);
}
