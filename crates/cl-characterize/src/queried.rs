//! Queried alternatives: answers read from what the device reports, next to PyOpenCL's heuristics
//! where those are known to mislead.
//!
//! | question | PyOpenCL heuristic | queried alternative here |
//! |---|---|---|
//! | SIMD group size | [`crate::get_simd_group_size`]: vendor substrings, `"ati"` matches Intel | [`simd_group_size`]: NV warp size, AMD wavefront width, Intel sub-group sizes |
//! | work-group-size multiple | [`crate::reasonable_work_group_size_multiple`]: builds a kernel | [`DeviceProfile::preferred_work_group_size_multiple`]: the OpenCL 3.0 device query |
//! | local memory banks | [`crate::local_memory_bank_count`]: 16 or 32, guessed off NVIDIA | [`DeviceProfile::amd_local_mem_banks`]: `CL_DEVICE_LOCAL_MEM_BANKS_AMD` |
//!
//! These never replace the PyOpenCL-compatible results (users compare those against PyOpenCL); they
//! sit next to them in the report.

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::profile::DeviceProfile;

/// Where a [`QueriedSimdGroupSize`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case")
)]
#[non_exhaustive]
pub enum SimdSource {
    /// `CL_DEVICE_WARP_SIZE_NV`.
    NvWarpSize,
    /// `CL_DEVICE_WAVEFRONT_WIDTH_AMD`.
    AmdWavefrontWidth,
    /// The smallest of `CL_DEVICE_SUB_GROUP_SIZES_INTEL`.
    IntelSubGroupSizes,
}

/// A SIMD group size the device itself reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct QueriedSimdGroupSize {
    /// Work items executed in lock-step.
    pub size: usize,
    /// The device query it came from.
    pub source: SimdSource,
}

/// The SIMD group size as the device reports it: the NVIDIA warp size, else the AMD wavefront
/// width, else the smallest Intel sub-group size (the width the compiler can always use, i.e. the
/// hardware's native SIMD width); `None` when the device reports none of these.
///
/// Unlike [`crate::get_simd_group_size`] this never matches vendor strings, so an Intel GPU is not
/// mistaken for an AMD one, and it needs no kernel.
pub fn simd_group_size(dev: &DeviceProfile) -> Option<QueriedSimdGroupSize> {
    if let Some(w) = dev.nv_warp_size {
        return Some(QueriedSimdGroupSize {
            size: w as usize,
            source: SimdSource::NvWarpSize,
        });
    }
    if let Some(w) = dev.amd_wavefront_width {
        return Some(QueriedSimdGroupSize {
            size: w as usize,
            source: SimdSource::AmdWavefrontWidth,
        });
    }
    let smallest = dev
        .intel_sub_group_sizes
        .as_deref()
        .and_then(|sizes| sizes.iter().copied().filter(|&s| s > 0).min())?;
    Some(QueriedSimdGroupSize {
        size: smallest,
        source: SimdSource::IntelSubGroupSizes,
    })
}
