//! [`ImageFormat`]: a channel order and a channel data type, with the element sizes derived from
//! them. Both enums keep values this crate does not know (vendor extensions) as `Other(raw)`, so
//! every format a driver reports round-trips.

use std::fmt;

use cl_raw::sys;

use crate::error::{Error, Result};

macro_rules! cl_enum {
    (
        $(#[$meta:meta])*
        $name:ident : $raw:ty, $unknown:literal {
            $($(#[$vmeta:meta])* $variant:ident = $value:literal => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[non_exhaustive]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A value this crate does not know (a vendor extension); kept verbatim.
            Other($raw),
        }

        impl $name {
            /// Decodes a raw value; unknown values become `Other`.
            pub(crate) fn from_raw(raw: $raw) -> $name {
                match raw {
                    $($value => $name::$variant,)*
                    other => $name::Other(other),
                }
            }

            /// The raw value.
            pub(crate) fn to_raw(self) -> $raw {
                match self {
                    $($name::$variant => $value,)*
                    $name::Other(raw) => raw,
                }
            }

            /// The OpenCL name without its `CL_` prefix (`"RGBA"`), or `None` for `Other`.
            pub(crate) fn name(self) -> Option<&'static str> {
                match self {
                    $($name::$variant => Some($text),)*
                    $name::Other(_) => None,
                }
            }
        }

        impl fmt::Display for $name {
            /// The OpenCL name without `CL_` (`RGBA`), or `<unknown ... 0x..>` as PyOpenCL writes it.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, concat!("<unknown ", $unknown, " 0x{:x}>"), self.to_raw()),
                }
            }
        }
    };
}

cl_enum! {
    /// `cl_channel_order`: which channels a pixel has, in which order.
    ChannelOrder: sys::cl_channel_order, "channel order" {
        /// `CL_R`.
        R = 0x10B0 => "R",
        /// `CL_A`.
        A = 0x10B1 => "A",
        /// `CL_RG`.
        Rg = 0x10B2 => "RG",
        /// `CL_RA`.
        Ra = 0x10B3 => "RA",
        /// `CL_RGB` (only with the packed types 565, 555 and 101010).
        Rgb = 0x10B4 => "RGB",
        /// `CL_RGBA`.
        Rgba = 0x10B5 => "RGBA",
        /// `CL_BGRA`.
        Bgra = 0x10B6 => "BGRA",
        /// `CL_ARGB`.
        Argb = 0x10B7 => "ARGB",
        /// `CL_INTENSITY`.
        Intensity = 0x10B8 => "INTENSITY",
        /// `CL_LUMINANCE`.
        Luminance = 0x10B9 => "LUMINANCE",
        /// `CL_Rx` (1.1).
        Rx = 0x10BA => "Rx",
        /// `CL_RGx` (1.1).
        Rgx = 0x10BB => "RGx",
        /// `CL_RGBx` (1.1).
        Rgbx = 0x10BC => "RGBx",
        /// `CL_DEPTH` (2.0).
        Depth = 0x10BD => "DEPTH",
        /// `CL_DEPTH_STENCIL` (2.0, `cl_khr_gl_depth_images`).
        DepthStencil = 0x10BE => "DEPTH_STENCIL",
        /// `CL_sRGB` (2.0).
        Srgb = 0x10BF => "sRGB",
        /// `CL_sRGBx` (2.0).
        Srgbx = 0x10C0 => "sRGBx",
        /// `CL_sRGBA` (2.0).
        Srgba = 0x10C1 => "sRGBA",
        /// `CL_sBGRA` (2.0).
        Sbgra = 0x10C2 => "sBGRA",
        /// `CL_ABGR` (2.0).
        Abgr = 0x10C3 => "ABGR",
    }
}

cl_enum! {
    /// `cl_channel_type`: how each channel (or a packed pixel) is stored.
    ChannelType: sys::cl_channel_type, "channel data type" {
        /// `CL_SNORM_INT8`: `i8` read as a float in [-1, 1].
        SnormInt8 = 0x10D0 => "SNORM_INT8",
        /// `CL_SNORM_INT16`.
        SnormInt16 = 0x10D1 => "SNORM_INT16",
        /// `CL_UNORM_INT8`: `u8` read as a float in [0, 1].
        UnormInt8 = 0x10D2 => "UNORM_INT8",
        /// `CL_UNORM_INT16`.
        UnormInt16 = 0x10D3 => "UNORM_INT16",
        /// `CL_UNORM_SHORT_565`: one packed 16-bit pixel (RGB/RGBx).
        UnormShort565 = 0x10D4 => "UNORM_SHORT_565",
        /// `CL_UNORM_SHORT_555`: one packed 16-bit pixel (RGB/RGBx).
        UnormShort555 = 0x10D5 => "UNORM_SHORT_555",
        /// `CL_UNORM_INT_101010`: one packed 32-bit pixel (RGB/RGBx).
        UnormInt101010 = 0x10D6 => "UNORM_INT_101010",
        /// `CL_SIGNED_INT8`.
        SignedInt8 = 0x10D7 => "SIGNED_INT8",
        /// `CL_SIGNED_INT16`.
        SignedInt16 = 0x10D8 => "SIGNED_INT16",
        /// `CL_SIGNED_INT32`.
        SignedInt32 = 0x10D9 => "SIGNED_INT32",
        /// `CL_UNSIGNED_INT8`.
        UnsignedInt8 = 0x10DA => "UNSIGNED_INT8",
        /// `CL_UNSIGNED_INT16`.
        UnsignedInt16 = 0x10DB => "UNSIGNED_INT16",
        /// `CL_UNSIGNED_INT32`.
        UnsignedInt32 = 0x10DC => "UNSIGNED_INT32",
        /// `CL_HALF_FLOAT`.
        HalfFloat = 0x10DD => "HALF_FLOAT",
        /// `CL_FLOAT`.
        Float = 0x10DE => "FLOAT",
        /// `CL_UNORM_INT24` (2.0, depth images): stored in 32 bits.
        UnormInt24 = 0x10DF => "UNORM_INT24",
        /// `CL_UNORM_INT_101010_2` (2.1): one packed 32-bit RGBA pixel.
        UnormInt101010_2 = 0x10E0 => "UNORM_INT_101010_2",
    }
}

/// How kernels read a channel type, which decides the fill color's type
/// ([`crate::FillColor`]) and the image built-ins (`read_imagef`, `read_imagei`, `read_imageui`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ChannelKind {
    /// Floats, half floats and normalized integers: `float4`.
    Float,
    /// Signed unnormalized integers: `int4`.
    SignedInt,
    /// Unsigned unnormalized integers: `uint4`.
    UnsignedInt,
}

impl ChannelType {
    /// Bytes of one channel, or for packed types of the whole packed pixel (PyOpenCL's
    /// `dtype_size`: 565 and 555 are 2, 101010 is 4); `None` for `Other`.
    pub(crate) fn size_bytes(self) -> Option<usize> {
        use ChannelType::*;
        Some(match self {
            SnormInt8 | UnormInt8 | SignedInt8 | UnsignedInt8 => 1,
            SnormInt16 | UnormInt16 | SignedInt16 | UnsignedInt16 | HalfFloat => 2,
            UnormShort565 | UnormShort555 => 2,
            SignedInt32 | UnsignedInt32 | Float => 4,
            UnormInt101010 | UnormInt101010_2 | UnormInt24 => 4,
            Other(_) => return None,
        })
    }

    /// Whether one value of this type holds a whole pixel (565, 555, 101010, 101010_2).
    pub(crate) fn is_packed(self) -> bool {
        matches!(
            self,
            ChannelType::UnormShort565
                | ChannelType::UnormShort555
                | ChannelType::UnormInt101010
                | ChannelType::UnormInt101010_2
        )
    }

    /// How kernels read it; `None` for `Other`.
    pub(crate) fn kind(self) -> Option<ChannelKind> {
        use ChannelType::*;
        match self {
            SignedInt8 | SignedInt16 | SignedInt32 => Some(ChannelKind::SignedInt),
            UnsignedInt8 | UnsignedInt16 | UnsignedInt32 => Some(ChannelKind::UnsignedInt),
            Other(_) => None,
            _ => Some(ChannelKind::Float),
        }
    }
}

impl ChannelOrder {
    /// Channels per pixel; `None` for `Other`. PyOpenCL knows only R, A, RG, RA, RGB, RGBA,
    /// BGRA, INTENSITY and LUMINANCE and raises for the rest; this covers every order of the
    /// spec (the padded `x` orders count their padding channel, as the spec's pixel sizes do).
    pub(crate) fn channel_count(self) -> Option<usize> {
        use ChannelOrder::*;
        Some(match self {
            R | A | Intensity | Luminance | Depth => 1,
            Rg | Ra | Rx | DepthStencil => 2,
            Rgb | Rgx | Srgb => 3,
            Rgba | Bgra | Argb | Rgbx | Srgbx | Srgba | Sbgra | Abgr => 4,
            Other(_) => return None,
        })
    }

    /// The order of `n` channels that `image_from_array` uses: R, RG, RGB, RGBA.
    pub(crate) fn for_channels(n: usize) -> Option<ChannelOrder> {
        match n {
            1 => Some(ChannelOrder::R),
            2 => Some(ChannelOrder::Rg),
            3 => Some(ChannelOrder::Rgb),
            4 => Some(ChannelOrder::Rgba),
            _ => None,
        }
    }
}

/// An image format (`cl_image_format`): PyOpenCL's `ImageFormat`.
///
/// `Display` writes `ImageFormat(RGBA, FLOAT)`, as PyOpenCL's `repr`; equality and hashing
/// compare the (order, type) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageFormat {
    /// `image_channel_order`.
    pub channel_order: ChannelOrder,
    /// `image_channel_data_type`.
    pub channel_type: ChannelType,
}

impl ImageFormat {
    /// `RGBA`/`FLOAT`, the format every image-capable device supports (the crate's tests).
    #[cfg(test)]
    pub(crate) const RGBA_FLOAT: ImageFormat =
        ImageFormat::new(ChannelOrder::Rgba, ChannelType::Float);

    /// A format from its two parts.
    pub const fn new(channel_order: ChannelOrder, channel_type: ChannelType) -> ImageFormat {
        ImageFormat {
            channel_order,
            channel_type,
        }
    }

    /// Decodes a raw `cl_image_format`.
    pub fn from_raw(raw: sys::cl_image_format) -> ImageFormat {
        ImageFormat::new(
            ChannelOrder::from_raw(raw.image_channel_order),
            ChannelType::from_raw(raw.image_channel_data_type),
        )
    }

    /// The raw `cl_image_format`.
    pub fn to_raw(self) -> sys::cl_image_format {
        sys::cl_image_format {
            image_channel_order: self.channel_order.to_raw(),
            image_channel_data_type: self.channel_type.to_raw(),
        }
    }

    /// Channels per pixel (PyOpenCL's `channel_count`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an unknown channel order.
    pub fn channel_count(&self) -> Result<usize> {
        self.channel_order.channel_count().ok_or_else(|| {
            Error::InvalidArgument(format!("unrecognized channel order {}", self.channel_order))
        })
    }

    /// Bytes per channel, or per packed pixel (PyOpenCL's `dtype_size`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an unknown channel type.
    pub fn dtype_size(&self) -> Result<usize> {
        self.channel_type.size_bytes().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "unrecognized channel data type {}",
                self.channel_type
            ))
        })
    }

    /// Bytes per pixel (PyOpenCL's `itemsize`, `CL_IMAGE_ELEMENT_SIZE`). Unlike PyOpenCL, packed
    /// types count once: RGB/`UNORM_SHORT_565` is 2 bytes, not 6; `DEPTH_STENCIL` is 4 bytes
    /// with `UNORM_INT24` and 8 with `FLOAT` (a float plus a stencil byte, padded).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an unknown order or type.
    pub fn itemsize(&self) -> Result<usize> {
        let size = self.dtype_size()?;
        // The order is checked even where the packed type alone gives the size: an unknown order
        // is an error, as documented (found by the `image` fuzz target: `(Other, 565)` was 2).
        let channels = self.channel_count()?;
        if self.channel_type.is_packed() {
            return Ok(size);
        }
        if self.channel_order == ChannelOrder::DepthStencil {
            return Ok(if self.channel_type == ChannelType::Float {
                8
            } else {
                4
            });
        }
        Ok(channels * size)
    }
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ImageFormat({}, {})",
            self.channel_order, self.channel_type
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_pyopencl_repr() {
        assert_eq!(
            ImageFormat::RGBA_FLOAT.to_string(),
            "ImageFormat(RGBA, FLOAT)"
        );
        let f = ImageFormat::new(ChannelOrder::Srgba, ChannelType::UnormInt8);
        assert_eq!(f.to_string(), "ImageFormat(sRGBA, UNORM_INT8)");
        let f = ImageFormat::from_raw(sys::cl_image_format {
            image_channel_order: 0x4100,
            image_channel_data_type: 0x4200,
        });
        assert_eq!(
            f.to_string(),
            "ImageFormat(<unknown channel order 0x4100>, <unknown channel data type 0x4200>)"
        );
    }

    #[test]
    fn unknown_vendor_values_round_trip() {
        let raw = sys::cl_image_format {
            image_channel_order: 0x4076, // e.g. an NV12 order of cl_intel_planar_yuv
            image_channel_data_type: sys::CL_UNORM_INT8,
        };
        let f = ImageFormat::from_raw(raw);
        assert_eq!(f.channel_order, ChannelOrder::Other(0x4076));
        assert_eq!(f.channel_type, ChannelType::UnormInt8);
        assert_eq!(f.to_raw().image_channel_order, 0x4076);
        assert!(f.channel_count().is_err());
        assert!(f.itemsize().is_err());
        assert_eq!(f.dtype_size(), Ok(1));
        assert_eq!(
            f.channel_count().unwrap_err().to_string(),
            "invalid argument: unrecognized channel order <unknown channel order 0x4076>"
        );
    }

    #[test]
    fn every_known_value_round_trips() {
        for raw in 0x10B0..=0x10C3 {
            let o = ChannelOrder::from_raw(raw);
            assert!(!matches!(o, ChannelOrder::Other(_)), "{raw:#x}");
            assert_eq!(o.to_raw(), raw);
            assert!(o.channel_count().is_some());
        }
        for raw in 0x10D0..=0x10E0 {
            let t = ChannelType::from_raw(raw);
            assert!(!matches!(t, ChannelType::Other(_)), "{raw:#x}");
            assert_eq!(t.to_raw(), raw);
            assert!(t.size_bytes().is_some() && t.kind().is_some());
        }
        assert_eq!(ChannelOrder::from_raw(sys::CL_sBGRA), ChannelOrder::Sbgra);
        assert_eq!(
            ChannelType::from_raw(sys::CL_HALF_FLOAT),
            ChannelType::HalfFloat
        );
    }

    #[test]
    fn sizes_follow_the_reference_and_fix_packed_types() {
        let f = |o, t| ImageFormat::new(o, t);
        use ChannelOrder as O;
        use ChannelType as T;
        // PyOpenCL's table.
        assert_eq!(f(O::Rgba, T::Float).itemsize(), Ok(16));
        assert_eq!(f(O::Rgba, T::Float).channel_count(), Ok(4));
        assert_eq!(f(O::Rgba, T::Float).dtype_size(), Ok(4));
        assert_eq!(f(O::R, T::UnsignedInt8).itemsize(), Ok(1));
        assert_eq!(f(O::Rg, T::HalfFloat).itemsize(), Ok(4));
        assert_eq!(f(O::Bgra, T::UnormInt8).itemsize(), Ok(4));
        assert_eq!(f(O::Intensity, T::SnormInt16).itemsize(), Ok(2));
        assert_eq!(f(O::Luminance, T::SignedInt32).itemsize(), Ok(4));
        assert_eq!(f(O::Ra, T::UnsignedInt16).itemsize(), Ok(4));
        // Packed: PyOpenCL says 6, 6 and 12.
        assert_eq!(f(O::Rgb, T::UnormShort565).itemsize(), Ok(2));
        assert_eq!(f(O::Rgb, T::UnormShort555).itemsize(), Ok(2));
        assert_eq!(f(O::Rgb, T::UnormInt101010).itemsize(), Ok(4));
        assert_eq!(f(O::Rgbx, T::UnormInt101010).itemsize(), Ok(4));
        assert_eq!(f(O::Rgba, T::UnormInt101010_2).itemsize(), Ok(4));
        assert_eq!(f(O::Rgb, T::UnormShort565).dtype_size(), Ok(2));
        // Orders PyOpenCL rejects.
        assert_eq!(f(O::Srgba, T::UnormInt8).itemsize(), Ok(4));
        assert_eq!(f(O::Depth, T::Float).itemsize(), Ok(4));
        assert_eq!(f(O::Depth, T::UnormInt16).itemsize(), Ok(2));
        assert_eq!(f(O::DepthStencil, T::UnormInt24).itemsize(), Ok(4));
        assert_eq!(f(O::DepthStencil, T::Float).itemsize(), Ok(8));
        assert_eq!(f(O::Abgr, T::UnormInt8).itemsize(), Ok(4));
    }

    /// Regression (fuzz target `image`, `fuzz/corpus/image/regression-itemsize-unknown-order`):
    /// a packed type returned its size before the order was looked at.
    #[test]
    fn itemsize_refuses_an_unknown_order_with_a_packed_type() {
        for t in [
            ChannelType::UnormShort565,
            ChannelType::UnormShort555,
            ChannelType::UnormInt101010,
            ChannelType::UnormInt101010_2,
        ] {
            let f = ImageFormat::new(ChannelOrder::Other(0x10FF), t);
            assert!(
                matches!(f.itemsize(), Err(Error::InvalidArgument(_))),
                "{f}"
            );
            assert_eq!(
                ImageFormat::new(ChannelOrder::Rgb, t).itemsize().ok(),
                t.size_bytes()
            );
        }
    }

    #[test]
    fn equality_and_hash_compare_the_pair() {
        use std::collections::HashSet;
        let a = ImageFormat::new(ChannelOrder::R, ChannelType::Float);
        let b = ImageFormat::from_raw(a.to_raw());
        assert_eq!(a, b);
        assert_ne!(a, ImageFormat::RGBA_FLOAT);
        let set: HashSet<_> = [a, b, ImageFormat::RGBA_FLOAT].into_iter().collect();
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn kinds_pick_the_builtin_family() {
        assert_eq!(ChannelType::Float.kind(), Some(ChannelKind::Float));
        assert_eq!(ChannelType::UnormInt8.kind(), Some(ChannelKind::Float));
        assert_eq!(
            ChannelType::SignedInt16.kind(),
            Some(ChannelKind::SignedInt)
        );
        assert_eq!(
            ChannelType::UnsignedInt32.kind(),
            Some(ChannelKind::UnsignedInt)
        );
        assert_eq!(ChannelType::Other(1).kind(), None);
    }
}
