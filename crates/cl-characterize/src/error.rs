//! Typed errors for PyOpenCL's exceptions, and the warnings it prints, as values.

use std::fmt;

/// A kernel-based probe PyOpenCL runs to answer a question (feature `probe` runs them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Probe {
    /// `CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE` of a trivial kernel
    /// ([`crate::DeviceProfile::kernel_preferred_work_group_size_multiple`]).
    KernelPreferredWorkGroupSizeMultiple,
    /// PoCL's struct-argument-count check ([`crate::DeviceProfile::pocl_struct_arg_count_bug`]).
    PoclStructArgCount,
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KernelPreferredWorkGroupSizeMultiple => {
                "kernel_preferred_work_group_size_multiple"
            }
            Self::PoclStructArgCount => "pocl_struct_arg_count_bug",
        })
    }
}

/// What a characterization function cannot answer; PyOpenCL raises an exception in these cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CharacterizeError {
    /// `local_memory_bank_count` on a CPU-type device whose local memory is cache-backed global
    /// memory (PyOpenCL: `RuntimeError`). Every CPU runtime reports this.
    #[error("asking for a bank count is meaningless for cache-based lmem")]
    BankCountMeaningless,
    /// `get_simd_group_size` on an AMD device (by PyOpenCL's vendor test) that is neither a GPU
    /// nor a CPU (PyOpenCL: `RuntimeError`).
    #[error("unexpected AMD device type")]
    UnexpectedAmdDeviceType {
        /// The device's `CL_DEVICE_TYPE` bits.
        device_type: u64,
    },
    /// The platform version string does not match `^OpenCL ([0-9]+)\.([0-9]+) .*$` (PyOpenCL:
    /// builtin `RuntimeError` from `_get_cl_version()`, raised by the SVM predicates).
    #[error("platform returned non-conformant platform version string '{version}'")]
    NonConformantPlatformVersion {
        /// The platform's version string.
        version: String,
    },
    /// A PoCL platform whose version string has no parsable PoCL version: PyOpenCL's
    /// `_may_have_svm` then compares `None >= (1, 0)` and raises `TypeError`.
    #[error("'>=' not supported between instances of 'NoneType' and 'tuple'")]
    UnparsablePoclVersion {
        /// The platform's version string.
        version: String,
    },
    /// The answer needs a kernel-probe result the profile does not hold. PyOpenCL would build a
    /// kernel here; fill the field (feature `probe` does) and ask again.
    #[error("this answer needs the kernel probe `{probe}`, which the profile does not hold")]
    ProbeRequired {
        /// The probe whose result is missing.
        probe: Probe,
    },
    /// `why_not_local_access_conflict_free` got shapes of different lengths (PyOpenCL:
    /// `ValueError` from `zip(..., strict=True)`).
    #[error("array shape has {shape_len} axes but the stored shape has {stored_len}")]
    ShapeRankMismatch {
        /// Number of axes of `array_shape`.
        shape_len: usize,
        /// Number of axes of `array_stored_shape`.
        stored_len: usize,
    },
    /// `why_not_local_access_conflict_free` got an axis of size 0 (PyOpenCL: `ZeroDivisionError`).
    #[error("array shape has an axis of size 0")]
    ZeroSizedAxis,
    /// The SVM predicates need `CL_DEVICE_SVM_CAPABILITIES`, which the profile does not hold
    /// (the device could not report it; PyOpenCL's `clGetDeviceInfo` raises `LogicError` then).
    #[error("clGetDeviceInfo failed: INVALID_VALUE")]
    SvmCapabilitiesUnavailable,
}

impl CharacterizeError {
    /// The name of the exception class PyOpenCL raises for this case (`"RuntimeError"`,
    /// `"TypeError"`, ...), or `None` where PyOpenCL would build a kernel instead.
    pub fn pyopencl_exception(&self) -> Option<&'static str> {
        match self {
            Self::BankCountMeaningless
            | Self::UnexpectedAmdDeviceType { .. }
            | Self::NonConformantPlatformVersion { .. } => Some("RuntimeError"),
            Self::UnparsablePoclVersion { .. } => Some("TypeError"),
            Self::ZeroSizedAxis => Some("ZeroDivisionError"),
            Self::ShapeRankMismatch { .. } => Some("ValueError"),
            Self::SvmCapabilitiesUnavailable => Some("LogicError"),
            Self::ProbeRequired { .. } => None,
        }
    }

    /// The text `pyopencl_probe.py` records for this error: `ERR <class>: <message>`.
    ///
    /// For [`CharacterizeError::NonConformantPlatformVersion`] PyOpenCL's message starts with the
    /// platform object's repr, which has no stable form; ours names the platform generically.
    pub fn pyopencl_record(&self) -> String {
        format!(
            "ERR {}: {}",
            self.pyopencl_exception().unwrap_or("Error"),
            self
        )
    }
}

/// A warning PyOpenCL emits (`CLCharacterizationWarning` or `UserWarning`), as a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Warning {
    /// `Wildly guessing conflicting local access size on '<dev>'`: the answer is a guess.
    GuessingConflictingLocalAccessSize {
        /// The device name.
        device: String,
    },
    /// `Wildly guessing local memory bank count on '<dev>'`: the answer is a guess.
    GuessingLocalMemoryBankCount {
        /// The device name.
        device: String,
    },
    /// "Local conflict info might be inaccurate for itemsize != 4".
    ItemsizeNotGranularity {
        /// The item size asked about.
        itemsize: usize,
    },
    /// `PoCL version number did not have expected format: '<version>'`: the fallback was used.
    PoclVersionFormat {
        /// The platform version string.
        version: String,
    },
}

impl Warning {
    /// Whether this warning marks the value it came with as a guess (rather than a caveat).
    pub fn is_guess(&self) -> bool {
        matches!(
            self,
            Self::GuessingConflictingLocalAccessSize { .. }
                | Self::GuessingLocalMemoryBankCount { .. }
        )
    }
}

impl fmt::Display for Warning {
    /// PyOpenCL's warning text; `dev` is the device name (PyOpenCL prints the object's repr).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::GuessingConflictingLocalAccessSize { device } => {
                write!(
                    f,
                    "Wildly guessing conflicting local access size on '{device}'"
                )
            }
            Self::GuessingLocalMemoryBankCount { device } => {
                write!(f, "Wildly guessing local memory bank count on '{device}'")
            }
            Self::ItemsizeNotGranularity { .. } => {
                f.write_str("Local conflict info might be inaccurate for itemsize != 4")
            }
            Self::PoclVersionFormat { version } => write!(
                f,
                "PoCL version number did not have expected format: '{version}'"
            ),
        }
    }
}

/// A result together with the warnings PyOpenCL would print while computing it.
///
/// A value with a guess warning ([`Estimate::is_guess`]) is PyOpenCL's "wildly guessing" answer:
/// the same number, but the caller can see that it is not a device fact. Each warning is also
/// emitted once through `tracing::warn!` when the estimate is made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Estimate<T> {
    /// The value PyOpenCL returns.
    pub value: T,
    /// The warnings PyOpenCL emits on the way, in order.
    pub warnings: Vec<Warning>,
}

impl<T> Estimate<T> {
    /// A value with no warning.
    pub(crate) fn exact(value: T) -> Self {
        Self {
            value,
            warnings: Vec::new(),
        }
    }

    /// A value with one warning (logged through `tracing`).
    pub(crate) fn warned(value: T, warning: Warning) -> Self {
        emit(&warning);
        Self {
            value,
            warnings: vec![warning],
        }
    }

    /// Whether any warning says the value is a guess.
    pub fn is_guess(&self) -> bool {
        self.warnings.iter().any(Warning::is_guess)
    }

    /// Maps the value, keeping the warnings.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Estimate<U> {
        Estimate {
            value: f(self.value),
            warnings: self.warnings,
        }
    }
}

/// Logs a warning through `tracing` (PyOpenCL's `warn(...)`).
pub(crate) fn emit(warning: &Warning) {
    tracing::warn!(target: "cl_characterize", "{warning}");
}
