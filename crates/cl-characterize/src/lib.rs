//! PyOpenCL's device heuristics (`pyopencl.characterize`) over plain data, with identical results.
//!
//! # What this layer is for
//!
//! Kernel generators ask questions the OpenCL API does not answer directly: how wide is a SIMD
//! group, how many local memory banks are there, will this tile layout bank-conflict, which fast
//! math flags are safe, does the driver cache source builds. PyOpenCL answers them with a set of
//! heuristics that many codes (loopy, pyopencl.array, meshmode) depend on. This crate gives the
//! **same answers** from a [`DeviceProfile`]: a plain struct of device facts that any toolkit can
//! fill (opencl3, ocl, a recorded JSON file), so it builds and runs without libOpenCL and
//! without `unsafe` code. It is not for memory objects: `cl-mem` never depends on these guesses.
//!
//! | layer | crate | role |
//! |---|---|---|
//! | raw | `cl-raw` | FFI, typed status, thin wrappers |
//! | safe runtime | `cl-mem` | devices, contexts, memory objects |
//! | pools | `cl-pool` | allocators and memory pools |
//! | **heuristics** | **`cl-characterize`** | device facts -> PyOpenCL's characterization; the device report |
//!
//! | PyOpenCL | here |
//! |---|---|
//! | `pyopencl.Device` (the facts read) | [`DeviceProfile`] |
//! | `has_double_support`, `has_amd_double_support` | [`has_double_support`], [`has_amd_double_support`] |
//! | `reasonable_work_group_size_multiple` | [`reasonable_work_group_size_multiple`] |
//! | `nv_compute_capability` | [`nv_compute_capability`] |
//! | `usable_local_mem_size` | [`usable_local_mem_size`] |
//! | `simultaneous_work_items_on_local_access` | [`simultaneous_work_items_on_local_access`] |
//! | `local_memory_access_granularity` | [`local_memory_access_granularity`] |
//! | `local_memory_bank_count` | [`local_memory_bank_count`] |
//! | `why_not_local_access_conflict_free` | [`why_not_local_access_conflict_free`] |
//! | `get_fast_inaccurate_build_options` | [`get_fast_inaccurate_build_options`] |
//! | `get_simd_group_size` | [`get_simd_group_size`] |
//! | `get_pocl_version` | [`get_pocl_version`] |
//! | `has_struct_arg_count_bug` | [`has_struct_arg_count_bug`] |
//! | `_check_for_pocl_arg_count_bug` | `probe::pocl_struct_arg_count_bug` (feature `probe`) |
//! | `has_src_build_cache` | [`has_src_build_cache`] |
//! | `_may_have_svm` | [`may_have_svm`] |
//! | `has_coarse_grain_buffer_svm` and the other four SVM predicates | [`has_coarse_grain_buffer_svm`], [`has_fine_grain_buffer_svm`], [`has_fine_grain_system_svm`], [`has_fine_grain_buffer_svm_atomics`], [`has_fine_grain_system_svm_atomics`] |
//! | `CLCharacterizationWarning`, `UserWarning` | [`Warning`] inside an [`Estimate`], plus `tracing::warn!` |
//! | exceptions (`RuntimeError`, `TypeError`) | [`CharacterizeError`] |
//!
//! # Guesses and errors
//!
//! Where PyOpenCL warns ("Wildly guessing ..."), the function returns an [`Estimate`]: PyOpenCL's
//! value plus the warnings, so a caller can tell a guess ([`Estimate::is_guess`]) from a device
//! fact; the warning is also logged through `tracing`. Where PyOpenCL raises, the function returns
//! a [`CharacterizeError`]. Where PyOpenCL builds a kernel, the answer comes from the profile's
//! probe fields; if they are empty, [`CharacterizeError::ProbeRequired`].
//!
//! # Heuristics known to mislead
//!
//! Results are kept identical to PyOpenCL even where its heuristic misleads (users compare against
//! it), and a queried alternative sits next to each ([`queried`]): `get_simd_group_size`'s `"ati"`
//! substring matches `"Intel(R) Corporation"` (use [`queried::simd_group_size`]); the bank count is
//! a fixed guess off NVIDIA (read [`DeviceProfile::amd_local_mem_banks`] on AMD);
//! `reasonable_work_group_size_multiple` builds a kernel where OpenCL 3.0 has a device query
//! ([`DeviceProfile::preferred_work_group_size_multiple`]).
//!
//! # Features
//!
//! - `serde`: `Serialize`/`Deserialize` for [`DeviceProfile`] (recorded profiles are JSON) and
//!   `Serialize` for the [`DeviceReport`].
//! - `probe`: `probe::profile_device` fills a profile from a live device through `cl-raw` and runs
//!   PyOpenCL's two kernel probes; `parity::compare` checks a report against PyOpenCL's own output;
//!   builds the `cl-report` binary (the device report, `cargo xtask report`).
//!
//! # Safety
//!
//! The default build has no `unsafe` code (`#![forbid(unsafe_code)]` without `probe`). With `probe`,
//! only the `probe` module calls into `cl-raw`, and each `unsafe` block there says why it holds.
//!
//! # Examples
//!
//! ```
//! use cl_characterize::{
//!     get_simd_group_size, local_memory_bank_count, DeviceProfile, LocalMemType,
//! };
//!
//! let dev = DeviceProfile {
//!     name: "NVIDIA H100 80GB HBM3".into(),
//!     vendor: "NVIDIA Corporation".into(),
//!     device_type: 4, // CL_DEVICE_TYPE_GPU
//!     local_mem_type: LocalMemType::Local,
//!     local_mem_size: 49152,
//!     nv_compute_capability: Some((9, 0)),
//!     nv_warp_size: Some(32),
//!     ..DeviceProfile::default()
//! };
//! assert_eq!(get_simd_group_size(&dev, 4)?, Some(32));
//! let banks = local_memory_bank_count(&dev)?;
//! assert_eq!(banks.value, 32);
//! assert!(banks.is_guess()); // PyOpenCL: "Wildly guessing local memory bank count" for CC >= 3.0
//! # Ok::<(), cl_characterize::CharacterizeError>(())
//! ```

#![cfg_attr(not(feature = "probe"), forbid(unsafe_code))]
#![cfg_attr(feature = "probe", deny(unsafe_code))]

mod conflict;
mod error;
mod heuristics;
#[cfg(feature = "probe")]
pub mod parity;
#[cfg(feature = "probe")]
#[allow(
    unsafe_code,
    reason = "the probe calls cl-raw's unsafe wrappers; each block documents its handles"
)]
pub mod probe;
mod profile;
pub mod queried;
mod report;

pub use conflict::{why_not_local_access_conflict_free, LocalAccessConflict};
pub use error::{CharacterizeError, Estimate, Probe, Warning};
pub use heuristics::{
    get_fast_inaccurate_build_options, get_pocl_version, get_simd_group_size,
    has_amd_double_support, has_coarse_grain_buffer_svm, has_double_support,
    has_fine_grain_buffer_svm, has_fine_grain_buffer_svm_atomics, has_fine_grain_system_svm,
    has_fine_grain_system_svm_atomics, has_src_build_cache, has_struct_arg_count_bug,
    local_memory_access_granularity, local_memory_bank_count, may_have_svm, nv_compute_capability,
    reasonable_work_group_size_multiple, simultaneous_work_items_on_local_access,
    usable_local_mem_size, StructArgCountBug,
};
pub use profile::{DeviceProfile, LocalMemType, PlatformProfile};
pub use report::{format_rows, DeviceReport};
