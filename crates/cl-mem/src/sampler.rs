//! [`Sampler`]: how kernels read images (PyOpenCL's `Sampler`).
//!
//! Created through `clCreateSamplerWithProperties` on OpenCL 2.0+ platforms and through the
//! classic `clCreateSampler` before, as PyOpenCL does. The property-list constructor
//! ([`Sampler::with_properties`]) works on both: before 2.0 the three classic properties are
//! passed to `clCreateSampler` (PyOpenCL calls the 2.0 entry point anyway, after a warning that
//! "the next thing you see may be a crash"), and anything else is [`Error::Unsupported`].

use crate::raw_handle::{
    clone_retains, debug_fields, drop_releases, eq_by_handle, get_info, get_info_retained,
};
use cl_raw::object::Object;
use cl_raw::{sampler as raw, sys, Version};

use crate::error::{Error, Result};
use crate::raw_handle::RawHandle;
use crate::runtime::context::Context;
use crate::runtime::extra;
use crate::runtime::kernel::{ArgValue, KernelArg};

/// `cl_addressing_mode`: what reads outside the image return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddressingMode {
    /// `CL_ADDRESS_NONE`: undefined outside.
    None,
    /// `CL_ADDRESS_CLAMP_TO_EDGE`: the nearest edge pixel.
    ClampToEdge,
    /// `CL_ADDRESS_CLAMP`: the border color.
    Clamp,
    /// `CL_ADDRESS_REPEAT` (normalized coordinates only).
    Repeat,
    /// `CL_ADDRESS_MIRRORED_REPEAT` (1.1, normalized coordinates only).
    MirroredRepeat,
    /// A value this crate does not know (reported by a driver).
    Other(u32),
}

impl AddressingMode {
    /// The raw value.
    pub(crate) fn to_raw(self) -> sys::cl_addressing_mode {
        match self {
            AddressingMode::None => sys::CL_ADDRESS_NONE,
            AddressingMode::ClampToEdge => sys::CL_ADDRESS_CLAMP_TO_EDGE,
            AddressingMode::Clamp => sys::CL_ADDRESS_CLAMP,
            AddressingMode::Repeat => sys::CL_ADDRESS_REPEAT,
            AddressingMode::MirroredRepeat => sys::CL_ADDRESS_MIRRORED_REPEAT,
            AddressingMode::Other(v) => v,
        }
    }

    /// Decodes a raw value.
    pub(crate) fn from_raw(v: sys::cl_addressing_mode) -> AddressingMode {
        match v {
            sys::CL_ADDRESS_NONE => AddressingMode::None,
            sys::CL_ADDRESS_CLAMP_TO_EDGE => AddressingMode::ClampToEdge,
            sys::CL_ADDRESS_CLAMP => AddressingMode::Clamp,
            sys::CL_ADDRESS_REPEAT => AddressingMode::Repeat,
            sys::CL_ADDRESS_MIRRORED_REPEAT => AddressingMode::MirroredRepeat,
            other => AddressingMode::Other(other),
        }
    }
}

/// `cl_filter_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// `CL_FILTER_NEAREST`.
    Nearest,
    /// `CL_FILTER_LINEAR`.
    Linear,
    /// A value this crate does not know (reported by a driver).
    Other(u32),
}

impl FilterMode {
    /// The raw value.
    pub(crate) fn to_raw(self) -> sys::cl_filter_mode {
        match self {
            FilterMode::Nearest => sys::CL_FILTER_NEAREST,
            FilterMode::Linear => sys::CL_FILTER_LINEAR,
            FilterMode::Other(v) => v,
        }
    }

    /// Decodes a raw value.
    pub(crate) fn from_raw(v: sys::cl_filter_mode) -> FilterMode {
        match v {
            sys::CL_FILTER_NEAREST => FilterMode::Nearest,
            sys::CL_FILTER_LINEAR => FilterMode::Linear,
            other => FilterMode::Other(other),
        }
    }
}

/// One entry of a sampler property list (`cl_sampler_properties` key and value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SamplerProperty {
    /// `CL_SAMPLER_NORMALIZED_COORDS`.
    NormalizedCoords(bool),
    /// `CL_SAMPLER_ADDRESSING_MODE`.
    AddressingMode(AddressingMode),
    /// `CL_SAMPLER_FILTER_MODE`.
    FilterMode(FilterMode),
    /// Any other key and value (`cl_khr_mipmap_image`'s `CL_SAMPLER_MIP_FILTER_MODE_KHR`, ...),
    /// passed as given (2.0+ platforms only).
    Raw(sys::cl_sampler_properties, sys::cl_sampler_properties),
}

impl SamplerProperty {
    fn pair(self) -> [sys::cl_sampler_properties; 2] {
        let b = |v: bool| sys::cl_sampler_properties::from(v);
        match self {
            SamplerProperty::NormalizedCoords(v) => {
                [sys::CL_SAMPLER_NORMALIZED_COORDS.into(), b(v)]
            }
            SamplerProperty::AddressingMode(m) => {
                [sys::CL_SAMPLER_ADDRESSING_MODE.into(), m.to_raw().into()]
            }
            SamplerProperty::FilterMode(m) => {
                [sys::CL_SAMPLER_FILTER_MODE.into(), m.to_raw().into()]
            }
            SamplerProperty::Raw(k, v) => [k, v],
        }
    }
}

/// A sampler object. Owns one reference: `Clone` retains, `Drop` releases (never panics).
/// Pass it to a kernel's `sampler_t` argument with [`crate::Kernel::set_arg`].
pub struct Sampler {
    raw: sys::cl_sampler,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"); a
// sampler is immutable after creation.
unsafe impl Send for Sampler {}
// SAFETY: as for `Send`.
unsafe impl Sync for Sampler {}

impl Sampler {
    /// A sampler (PyOpenCL's `Sampler(ctx, normalized_coords, addressing_mode, filter_mode)`).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] when no device of the context supports images (checked first: the
    /// driver answers `CL_INVALID_OPERATION`); [`Error::InvalidArgument`] for a repeat addressing
    /// mode with unnormalized coordinates; [`Error::Cl`] from the create call.
    pub fn new(
        context: &Context,
        normalized_coords: bool,
        addressing_mode: AddressingMode,
        filter_mode: FilterMode,
    ) -> Result<Sampler> {
        Sampler::with_properties(
            context,
            &[
                SamplerProperty::NormalizedCoords(normalized_coords),
                SamplerProperty::AddressingMode(addressing_mode),
                SamplerProperty::FilterMode(filter_mode),
            ],
        )
    }

    /// A sampler from a property list (PyOpenCL's `Sampler(ctx, properties)`); the terminating 0
    /// is added. Missing properties take the spec's defaults (normalized coordinates, clamp,
    /// nearest).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a property given twice or a repeat addressing mode with
    /// unnormalized coordinates (undefined in OpenCL C); [`Error::Unsupported`] without image
    /// support, or for a [`SamplerProperty::Raw`] property before OpenCL 2.0; [`Error::Cl`] from
    /// `clCreateSamplerWithProperties` or `clCreateSampler`.
    pub fn with_properties(context: &Context, properties: &[SamplerProperty]) -> Result<Sampler> {
        context.require_image_support("samplers")?;
        let mut keys: Vec<sys::cl_sampler_properties> = Vec::new();
        for p in properties {
            let key = p.pair()[0];
            if keys.contains(&key) {
                return Err(Error::InvalidArgument(format!(
                    "sampler property {key:#x} given twice"
                )));
            }
            keys.push(key);
        }
        let normalized = properties
            .iter()
            .rev()
            .find_map(|p| match p {
                SamplerProperty::NormalizedCoords(v) => Some(*v),
                _ => None,
            })
            .unwrap_or(true);
        let repeats = properties.iter().any(|p| {
            matches!(
                p,
                SamplerProperty::AddressingMode(
                    AddressingMode::Repeat | AddressingMode::MirroredRepeat
                )
            )
        });
        if repeats && !normalized {
            // OpenCL C: the repeat modes are defined only for normalized coordinates.
            return Err(Error::InvalidArgument(
                "REPEAT and MIRRORED_REPEAT addressing need normalized coordinates".into(),
            ));
        }
        let raw = if context.platform_version() >= Version::V2_0 {
            let mut list: Vec<sys::cl_sampler_properties> =
                properties.iter().flat_map(|p| p.pair()).collect();
            list.push(0);
            // SAFETY: a valid context of a 2.0+ platform; a 0-terminated list; we own the result.
            unsafe { raw::create_with_properties(context.as_raw(), &list) }
                .map_err(Error::cl("clCreateSamplerWithProperties"))?
        } else {
            let (mut nc, mut am, mut fm) = (true, AddressingMode::Clamp, FilterMode::Nearest);
            for p in properties {
                match *p {
                    SamplerProperty::NormalizedCoords(v) => nc = v,
                    SamplerProperty::AddressingMode(m) => am = m,
                    SamplerProperty::FilterMode(m) => fm = m,
                    SamplerProperty::Raw(..) => {
                        return Err(Error::needs_version(
                            "sampler properties beyond the classic three",
                            Version::V2_0,
                            "platform",
                            context.platform_version(),
                        ))
                    }
                }
            }
            // SAFETY: a valid context; we own the result.
            unsafe { raw::create(context.as_raw(), nc, am.to_raw(), fm.to_raw()) }
                .map_err(Error::cl("clCreateSampler"))?
        };
        Ok(Sampler { raw })
    }

    fn query<T: cl_raw::InfoValue>(&self, param: sys::cl_sampler_info) -> Result<T> {
        // SAFETY: a valid sampler; callers pass 1.0 parameters or gate newer ones.
        unsafe { get_info(Object::Sampler, self.raw, param) }
    }

    /// `clGetSamplerInfo`: every `CL_SAMPLER_*` query in one value (PyOpenCL's
    /// `Sampler.get_info`).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetSamplerInfo` or `clRetainContext`.
    pub fn info(&self) -> Result<SamplerInfo> {
        // SAFETY: a valid sampler; a 1.0 parameter, its live context.
        let context: Context =
            unsafe { get_info_retained(Object::Sampler, self.raw, sys::CL_SAMPLER_CONTEXT) }?;
        // Asked only of 3.0 platforms: an older driver may misbehave on the newer query.
        let properties = match context.platform_version() >= Version::V3_0 {
            true => Some(self.query(extra::CL_SAMPLER_PROPERTIES)?),
            false => None,
        };
        Ok(SamplerInfo {
            normalized_coords: self.query(sys::CL_SAMPLER_NORMALIZED_COORDS)?,
            addressing_mode: AddressingMode::from_raw(self.query(sys::CL_SAMPLER_ADDRESSING_MODE)?),
            filter_mode: FilterMode::from_raw(self.query(sys::CL_SAMPLER_FILTER_MODE)?),
            context,
            properties,
        })
    }
}

/// What [`Sampler::info`] returns: the sampler's `clGetSamplerInfo` answers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SamplerInfo {
    /// `CL_SAMPLER_NORMALIZED_COORDS`.
    pub normalized_coords: bool,
    /// `CL_SAMPLER_ADDRESSING_MODE`.
    pub addressing_mode: AddressingMode,
    /// `CL_SAMPLER_FILTER_MODE`.
    pub filter_mode: FilterMode,
    /// `CL_SAMPLER_CONTEXT`, as a new owning [`Context`].
    pub context: Context,
    /// `CL_SAMPLER_PROPERTIES` (3.0): the list given at creation, 0-terminated, or empty (the
    /// classic call); `None` on an older platform.
    pub properties: Option<Vec<sys::cl_sampler_properties>>,
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` gives that reference away and forgets the wrapper.
unsafe impl crate::raw_handle::RawHandle for Sampler {
    crate::raw_handle::raw_handle_field!(Sampler: sys::cl_sampler);

    /// Adopts one reference to a raw sampler (no retain); never fails.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid sampler and the caller gives its reference to the new `Sampler`.
    unsafe fn from_raw(raw: sys::cl_sampler) -> Result<Sampler> {
        Ok(Sampler { raw })
    }

    /// Gives the reference away without releasing it.
    fn into_raw(self) -> sys::cl_sampler {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }
}

// SAFETY: a valid sampler handle, kept alive by the kernel (it retains sampler arguments).
unsafe impl KernelArg for Sampler {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::Sampler(self.raw)
    }
}

clone_retains!(Sampler: Sampler {});
drop_releases!(Sampler: Sampler);
eq_by_handle!(hash raw: Sampler);
debug_fields!(Sampler: raw);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip() {
        for m in [
            AddressingMode::None,
            AddressingMode::ClampToEdge,
            AddressingMode::Clamp,
            AddressingMode::Repeat,
            AddressingMode::MirroredRepeat,
            AddressingMode::Other(7),
        ] {
            assert_eq!(AddressingMode::from_raw(m.to_raw()), m);
        }
        for m in [
            FilterMode::Nearest,
            FilterMode::Linear,
            FilterMode::Other(9),
        ] {
            assert_eq!(FilterMode::from_raw(m.to_raw()), m);
        }
    }

    #[test]
    fn properties_flatten_to_pairs() {
        assert_eq!(SamplerProperty::NormalizedCoords(true).pair(), [0x1152, 1]);
        assert_eq!(
            SamplerProperty::FilterMode(FilterMode::Linear).pair(),
            [0x1154, 0x1141]
        );
    }
}
