//! Arrays in and out of images: [`Image::from_slice`] and, with ndarray, [`image_from_array`]
//! (PyOpenCL's `image_from_array`) and [`Image::read_array`] / [`Image::write_array`].
//!
//! Axis order is PyOpenCL's: the last ndarray axis (the fastest-varying in C order) is the
//! image's x, so an array of shape `(rows, cols)` is an image `cols` wide and `rows` high; a
//! trailing axis may hold the channels of a pixel.

use super::{ChannelOrder, ChannelType, Image, ImageDesc, ImageFormat};
use crate::error::{Error, Result};
use crate::memory::MemFlags;
use crate::pod::Pod;
use crate::runtime::context::Context;

// What the ndarray half needs (`image_from_array`, `Image::read_array` / `write_array`).
#[cfg(feature = "ndarray")]
use {
    crate::buffer::{rect::Rect, transfer::Transfer},
    crate::runtime::event::Event,
    crate::runtime::queue::Queue,
    ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn},
};

/// An element type an image can be built from: PyOpenCL's `DTYPE_TO_CHANNEL_TYPE` (and
/// `..._NORM`) tables, plus arrays `[T; N]` for its vector types (`float4` is `[f32; 4]`, one
/// pixel of 4 channels).
pub trait ImageElement: Pod {
    /// Channels one element holds: 1 for scalars, `N` for `[T; N]`.
    const CHANNELS: usize;
    /// The channel type without `norm_int`.
    const CHANNEL_TYPE: ChannelType;
    /// The channel type with `norm_int` (normalized integers), if any.
    const NORM_CHANNEL_TYPE: Option<ChannelType>;
}

macro_rules! image_element {
    ($($t:ty => $ct:ident, $norm:expr;)*) => {$(
        impl ImageElement for $t {
            const CHANNELS: usize = 1;
            const CHANNEL_TYPE: ChannelType = ChannelType::$ct;
            const NORM_CHANNEL_TYPE: Option<ChannelType> = $norm;
        }
    )*};
}

image_element! {
    f32 => Float, None;
    i8 => SignedInt8, Some(ChannelType::SnormInt8);
    u8 => UnsignedInt8, Some(ChannelType::UnormInt8);
    i16 => SignedInt16, Some(ChannelType::SnormInt16);
    u16 => UnsignedInt16, Some(ChannelType::UnormInt16);
    i32 => SignedInt32, None;
    u32 => UnsignedInt32, None;
}

#[cfg(feature = "half")]
image_element! {
    half::f16 => HalfFloat, None;
}

#[cfg(feature = "half")]
// SAFETY: `half::f16` is a `#[repr(transparent)]` `u16`: no padding, no pointers, every bit
// pattern a value (NaNs included).
unsafe impl Pod for half::f16 {}

impl<T: ImageElement, const N: usize> ImageElement for [T; N] {
    const CHANNELS: usize = N * T::CHANNELS;
    const CHANNEL_TYPE: ChannelType = T::CHANNEL_TYPE;
    const NORM_CHANNEL_TYPE: Option<ChannelType> = T::NORM_CHANNEL_TYPE;
}

/// Options of [`image_from_array`]; the default is PyOpenCL's (`num_channels=None, mode="r",
/// norm_int=False`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArrayImageOptions {
    /// Channels per pixel. `None`: the element's own count (1 for scalars, `N` for `[T; N]`).
    /// `Some(n > 1)` with scalar elements: the last axis holds the `n` channels.
    pub num_channels: Option<usize>,
    /// The image's flags (PyOpenCL's `mode`): `READ_ONLY` (`"r"`, the default), `WRITE_ONLY`
    /// (`"w"`) or `READ_WRITE` (`"rw"`, PyOpenCL issue #923), with host-access flags if wanted;
    /// `COPY_HOST_PTR` is added.
    pub access: MemFlags,
    /// Use the normalized channel type (`u8` -> `UNORM_INT8`, ...).
    pub norm_int: bool,
}

impl Default for ArrayImageOptions {
    fn default() -> Self {
        ArrayImageOptions {
            num_channels: None,
            access: MemFlags::READ_ONLY,
            norm_int: false,
        }
    }
}

/// The image dimensions (width first) and channel count of an array.
fn array_layout<T: ImageElement>(
    shape: &[usize],
    num_channels: Option<usize>,
) -> Result<(Vec<usize>, usize)> {
    let (dims, channels) = match num_channels {
        None => (shape, T::CHANNELS),
        Some(n) if T::CHANNELS > 1 => {
            if n != T::CHANNELS {
                return Err(Error::InvalidArgument(format!(
                    "num_channels {n} differs from the element's {} channels",
                    T::CHANNELS
                )));
            }
            (shape, n)
        }
        Some(1) => (shape, 1),
        Some(n) => match shape.split_last() {
            Some((&last, rest)) if last == n => (rest, n),
            _ => {
                return Err(Error::InvalidArgument(format!(
                "last dimension must be equal to number of channels ({n}), the shape is {shape:?}"
            )))
            }
        },
    };
    if !(1..=4).contains(&channels) {
        return Err(Error::InvalidArgument(format!(
            "an image has 1 to 4 channels, got {channels}"
        )));
    }
    let mut dims = dims.to_vec();
    dims.reverse();
    Ok((dims, channels))
}

/// An image holding a copy of `array` (PyOpenCL's `image_from_array`): the array's dimensions
/// (less a channel axis) reversed become width, height, depth; the channel order is R, RG, RGB
/// or RGBA by channel count; the channel type comes from the element type
/// ([`ImageElement`]); flags are the access flag plus `COPY_HOST_PTR`. Without ndarray, the same
/// from a slice and its shape: [`Image::from_slice`].
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a non-C-contiguous array (PyOpenCL's "array must be
/// C-contiguous"), and as [`Image::from_slice`].
#[cfg(feature = "ndarray")]
pub fn image_from_array<T, S, D>(
    context: &Context,
    array: &ArrayBase<S, D>,
    options: ArrayImageOptions,
) -> Result<Image>
where
    T: ImageElement,
    S: Data<Elem = T>,
    D: Dimension,
{
    let data = array
        .as_slice()
        .ok_or_else(|| Error::InvalidArgument("array must be C-contiguous".into()))?;
    Image::from_slice(context, data, array.shape(), options)
}

impl Image {
    /// An image holding a copy of `data`, a C-ordered array of `shape` (numpy's order: rows
    /// last-but-one, a channel axis last when `options.num_channels` says so): PyOpenCL's
    /// `image_from_array` without an ndarray. The image is `shape` reversed (width first); the
    /// channel order is R, RG, RGB or RGBA by channel count, the channel type the element type's.
    ///
    /// ```ignore
    /// // a 480x640 RGBA float image from a flat vector
    /// let img = Image::from_slice(&ctx, &pixels, &[480, 640], ArrayImageOptions::default())?;
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `data` does not hold `shape`'s values, for a channel count
    /// the shape does not carry, 0 or more than 3 image dimensions, a zero dimension, or
    /// `norm_int` with an element type without a normalized channel type (`f32`, `i32`, ...);
    /// [`Error::Unsupported`] when the context does not support the format (RGB is rarely
    /// supported: drivers allow it only with packed types); and as [`Image::from_host`].
    pub fn from_slice<T: ImageElement>(
        context: &Context,
        data: &[T],
        shape: &[usize],
        options: ArrayImageOptions,
    ) -> Result<Image> {
        let values = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::InvalidArgument(format!("shape {shape:?} overflows usize")))?;
        if values != data.len() {
            return Err(Error::InvalidArgument(format!(
                "shape {shape:?} holds {values} values, the slice {}",
                data.len()
            )));
        }
        let (dims, channels) = array_layout::<T>(shape, options.num_channels)?;
        let channel_type = if options.norm_int {
            T::NORM_CHANNEL_TYPE.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "no normalized channel type for {}",
                    std::any::type_name::<T>()
                ))
            })?
        } else {
            T::CHANNEL_TYPE
        };
        let order = ChannelOrder::for_channels(channels).ok_or_else(|| {
            Error::InvalidArgument(format!("an image has 1 to 4 channels, got {channels}"))
        })?;
        let desc = ImageDesc::from_shape(&dims, false, false)?;
        Image::from_host(
            context,
            options.access,
            ImageFormat::new(order, channel_type),
            &desc,
            data,
        )
    }
}

#[cfg(feature = "ndarray")]
impl Image {
    /// Refuses an element type whose channel type is not the image's: an `f64` read of a
    /// `CL_FLOAT` image would reinterpret pairs of floats as doubles.
    fn check_element<T: ImageElement>(&self) -> Result<()> {
        let ct = self.format.channel_type;
        if T::CHANNEL_TYPE == ct || T::NORM_CHANNEL_TYPE == Some(ct) {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{} holds {ct:?} channels; `{}` elements are {:?}{}",
                self.format,
                std::any::type_name::<T>(),
                T::CHANNEL_TYPE,
                T::NORM_CHANNEL_TYPE
                    .map(|n| format!(" (or {n:?})"))
                    .unwrap_or_default(),
            )))
        }
    }

    /// The ndarray shape of `region` read as values of `T`: the region's dimensions of this
    /// image type reversed, plus a channel axis when a pixel holds several `T`.
    fn array_shape<T: Pod>(&self, region: [usize; 3]) -> Result<Vec<usize>> {
        let size = std::mem::size_of::<T>();
        if size == 0 || !self.element_size.is_multiple_of(size) {
            return Err(Error::InvalidArgument(format!(
                "a pixel of {} bytes ({}) is not a whole number of {size}-byte values",
                self.element_size, self.format
            )));
        }
        let mut shape: Vec<usize> = region[..self.desc.image_type.rank()]
            .iter()
            .rev()
            .copied()
            .collect();
        let per_pixel = self.element_size / size;
        if per_pixel > 1 {
            shape.push(per_pixel);
        }
        Ok(shape)
    }

    /// Reads `region` at `origin` into a new array shaped as [`image_from_array`] takes it
    /// (dimensions reversed, a trailing channel axis when a pixel holds several `T`), so an image
    /// made from an array reads back as an equal array.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `T`'s channel type is not the image's (`f32` for
    /// `CL_FLOAT`, `u8` for `CL_UNSIGNED_INT8` or `CL_UNORM_INT8`, ...; an `f64` read of a float
    /// image is refused, not reinterpreted) or a pixel is not a whole number of `T`; as
    /// [`Image::read`].
    pub fn read_array<T: ImageElement + Default>(
        &self,
        queue: &Queue,
        origin: &[usize],
        region: &[usize],
        wait: &[&Event],
    ) -> Result<ArrayD<T>> {
        self.check_element::<T>()?;
        let (o, r) = super::transfer::coords(self.extent(), origin, region)?;
        let shape = self.array_shape::<T>(r)?;
        let mut out = ArrayD::<T>::default(IxDyn(&shape));
        let slice = out
            .as_slice_mut()
            .ok_or_else(|| Error::InvalidArgument("a fresh array is contiguous".into()))?;
        let rect = Rect::new(r).src_origin(o);
        self.read(queue, slice, Transfer::from(wait).rect(rect))?;
        Ok(out)
    }

    /// Writes a C-contiguous `array` at `origin`; the region is the array's shape read as
    /// [`Image::read_array`] writes it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `T`'s channel type is not the image's (as
    /// [`Image::read_array`]), for a non-C-contiguous array or a shape that is not a region of
    /// this image type (with a trailing channel axis of the right length when a pixel holds
    /// several `T`); as [`Image::write`].
    pub fn write_array<T, S, D>(
        &self,
        queue: &Queue,
        origin: &[usize],
        array: &ArrayBase<S, D>,
        wait: &[&Event],
    ) -> Result<Event>
    where
        T: ImageElement,
        S: Data<Elem = T>,
        D: Dimension,
    {
        self.check_element::<T>()?;
        let data = array
            .as_slice()
            .ok_or_else(|| Error::InvalidArgument("array must be C-contiguous".into()))?;
        let rank = self.desc.image_type.rank();
        let shape = array.shape();
        let dims = if shape.len() == rank {
            shape
        } else if shape.len() == rank + 1 {
            &shape[..rank]
        } else {
            return Err(Error::InvalidArgument(format!(
                "a {} image takes arrays of {rank} dimensions (plus channels), got shape {shape:?}",
                self.desc.image_type
            )));
        };
        let region: Vec<usize> = dims.iter().rev().copied().collect();
        let (o, r) = super::transfer::coords(self.extent(), origin, &region)?;
        let expected = self.array_shape::<T>(r)?;
        if expected != shape {
            return Err(Error::InvalidArgument(format!(
                "array shape {shape:?} does not match the {} image region; expected {expected:?}",
                self.format
            )));
        }
        let rect = Rect::new(r).dst_origin(o);
        self.write(queue, data, Transfer::from(wait).rect(rect))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "ndarray")]
    fn layouts_follow_image_from_array() {
        // float32 (4, 6) -> width 6, height 4, R.
        assert_eq!(array_layout::<f32>(&[4, 6], None), Ok((vec![6, 4], 1)));
        assert_eq!(array_layout::<f32>(&[4, 6], Some(1)), Ok((vec![6, 4], 1)));
        // (4, 6, 4) with 4 channels -> 6 x 4 RGBA.
        assert_eq!(
            array_layout::<f32>(&[4, 6, 4], Some(4)),
            Ok((vec![6, 4], 4))
        );
        assert!(array_layout::<f32>(&[4, 6, 3], Some(4)).is_err());
        // A vector element type.
        assert_eq!(array_layout::<[f32; 4]>(&[2, 3], None), Ok((vec![3, 2], 4)));
        assert_eq!(array_layout::<[u8; 2]>(&[5], Some(2)), Ok((vec![5], 2)));
        assert!(array_layout::<[u8; 2]>(&[5], Some(4)).is_err());
        assert!(array_layout::<[u8; 8]>(&[5], None).is_err());
        assert!(array_layout::<u8>(&[5, 6], Some(6)).is_err());
    }

    #[test]
    fn element_types_map_to_the_reference_tables() {
        assert_eq!(<f32 as ImageElement>::CHANNEL_TYPE, ChannelType::Float);
        #[cfg(feature = "half")]
        assert_eq!(
            <half::f16 as ImageElement>::CHANNEL_TYPE,
            ChannelType::HalfFloat
        );
        assert_eq!(
            [
                <u8 as ImageElement>::NORM_CHANNEL_TYPE,
                <i8 as ImageElement>::NORM_CHANNEL_TYPE,
                <u16 as ImageElement>::NORM_CHANNEL_TYPE,
                <i16 as ImageElement>::NORM_CHANNEL_TYPE,
                <u32 as ImageElement>::NORM_CHANNEL_TYPE,
            ],
            [
                Some(ChannelType::UnormInt8),
                Some(ChannelType::SnormInt8),
                Some(ChannelType::UnormInt16),
                Some(ChannelType::SnormInt16),
                None,
            ]
        );
        assert_eq!(
            <i32 as ImageElement>::CHANNEL_TYPE,
            ChannelType::SignedInt32
        );
        assert_eq!(<[i16; 4] as ImageElement>::CHANNELS, 4);
        assert_eq!(
            <[i16; 4] as ImageElement>::CHANNEL_TYPE,
            ChannelType::SignedInt16
        );
        assert_eq!(ArrayImageOptions::default().access, MemFlags::READ_ONLY);
    }
}
