//! [`Error`]: everything a `cl-mem` call can fail with, and the [`Result`] alias.

use cl_raw::{ClError, Version, VersionParseError};

use cl_raw::select::SelectError;

/// `Result<T, cl_mem::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a `cl-mem` call failed.
///
/// Driver failures say which call failed ([`Error::Cl`]); everything `cl-mem` can check before
/// calling the driver (versions, capabilities, bounds, alignment, argument shapes) has its own
/// variant and never reaches the driver.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An OpenCL call returned an error status: `"clEnqueueReadBuffer failed: CL_INVALID_VALUE"`.
    #[error("{call} failed: {status}")]
    Cl {
        /// The C function that failed (`"clCreateBuffer"`).
        call: &'static str,
        /// The status it returned.
        status: ClError,
    },
    /// The platform or device is too old for, or lacks, what was asked; checked before calling
    /// (some drivers hang on entry points newer than their version).
    #[error("{feature} is not supported: needs {needs}")]
    Unsupported {
        /// What was asked for (`"clCreateBufferWithProperties"`, `"out-of-order queues"`).
        feature: &'static str,
        /// What it needs and what is there (`"OpenCL 3.0, the platform is OpenCL 1.2"`).
        needs: String,
    },
    /// An offset, size or pointer is not a multiple of the alignment it must have.
    #[error("misaligned {what}: {value} is not a multiple of {alignment}")]
    Misaligned {
        /// What is misaligned (`"sub-buffer origin"`).
        what: &'static str,
        /// The offending value.
        value: usize,
        /// The required alignment.
        alignment: usize,
    },
    /// A range reaches past the end of the object it addresses.
    #[error("out of bounds: {what} at offset {offset} with length {len} exceeds size {size}")]
    OutOfBounds {
        /// What was accessed (`"buffer read"`).
        what: &'static str,
        /// Start of the range, in bytes.
        offset: usize,
        /// Length of the range, in bytes.
        len: usize,
        /// Size of the object, in bytes.
        size: usize,
    },
    /// An argument is invalid in a way the driver need not be asked about (an empty device list,
    /// a zero size, devices from different platforms, a string with a NUL byte, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// `clBuildProgram` failed; `log` holds the build log of every device, each headed by the
    /// device name.
    #[error("clBuildProgram failed: {status}\n{log}")]
    Build {
        /// The status `clBuildProgram` returned (usually `CL_BUILD_PROGRAM_FAILURE`).
        status: ClError,
        /// The build logs.
        log: String,
    },
    /// `clSVMAlloc` returned NULL. It reports no status, so this covers running out of memory
    /// and sizes or alignments the driver refuses; [`Error::is_out_of_memory`] is true for it
    /// (PyOpenCL's allocator silently returned address 0 instead).
    #[error("clSVMAlloc returned NULL for {size} bytes with alignment {alignment}")]
    SvmAllocFailed {
        /// The requested size in bytes.
        size: usize,
        /// The requested alignment in bytes.
        alignment: usize,
    },
    /// A kernel argument does not match the parameter's declaration (`clGetKernelArgInfo`): a
    /// scalar for a pointer, image, sampler or pipe, a memory object for a scalar, a buffer for
    /// an image, ...; checked before `clSetKernelArg`, which would accept some of these and let
    /// the device read bytes as an address.
    #[error("kernel '{kernel}' argument {index} is {expected}, got {got}")]
    KernelArg {
        /// The kernel's name.
        kernel: String,
        /// The argument index.
        index: u32,
        /// What the parameter declares (`"a __global pointer (buffer, SVM or NullMem) `int*`"`).
        expected: String,
        /// What was given (`"a by-value argument of 8 bytes"`).
        got: String,
    },
    /// Host-mapped memory would alias: a second map of bytes already mapped for writing (or a
    /// writable map of mapped bytes), or a command that writes bytes the host has mapped or
    /// touches bytes the host has mapped for writing. Unmap first.
    #[error("memory is mapped: {0}")]
    Mapped(String),
    /// External memory (a buffer imported from another API, `Buffer::from_external`) is handed
    /// back to the API that exported it: commands and maps are refused until
    /// `Buffer::acquire_external` takes it back.
    #[error("external memory is handed back: {0}")]
    HandedBack(String),
    /// A CUDA driver call failed (feature `cuda`, `cl_mem::cuda`): the call and CUDA's own
    /// error text.
    #[error("{call} failed: {message}")]
    Cuda {
        /// The CUDA driver function (`"cuMemCreate"`).
        call: &'static str,
        /// CUDA's error name and text.
        message: String,
    },
    /// An SVM allocation is still held as a kernel argument, so host access or an explicit
    /// release could race with a later enqueue of that kernel.
    #[error("SVM in use: {0}")]
    SvmInUse(String),
    /// The command behind an awaited event terminated abnormally with this (negative) status
    /// (`CL_EVENT_COMMAND_EXECUTION_STATUS`), e.g. a user event set with
    /// [`crate::UserEvent::set_error`], or a command waiting on one.
    #[error("the command terminated abnormally: {status}")]
    CommandFailed {
        /// The event's negative execution status.
        status: ClError,
    },
    /// A version string reported by the driver does not follow the spec's format.
    #[error(transparent)]
    Version(#[from] VersionParseError),
    /// A device selector (`CL_TEST`, `CL_CTX`, `PYOPENCL_TEST`) is malformed or matches nothing.
    #[error("{variable}: {error}")]
    Select {
        /// Where the selector came from (`"CL_TEST"`, `"CL_CTX"`, or what the caller named it).
        variable: String,
        /// What is wrong with it (already part of this error's message, so not a `source()`).
        error: SelectError,
    },
}

impl Error {
    /// A mapper for `map_err`: `.map_err(Error::cl("clCreateBuffer"))`.
    pub(crate) fn cl(call: &'static str) -> impl Fn(ClError) -> Error {
        move |status| Error::Cl { call, status }
    }

    /// The OpenCL status, when the error came from the driver.
    pub fn cl_status(&self) -> Option<ClError> {
        match self {
            Error::Cl { status, .. }
            | Error::Build { status, .. }
            | Error::CommandFailed { status } => Some(*status),
            _ => None,
        }
    }

    /// True when the driver reported one of the out-of-memory statuses (-4, -5, -6): memory pools
    /// free cached blocks and retry on this.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Error::SvmAllocFailed { .. })
            || self.cl_status().is_some_and(ClError::is_out_of_memory)
    }

    /// An [`Error::Unsupported`] for a version requirement.
    pub(crate) fn needs_version(
        feature: &'static str,
        needed: Version,
        what: &str,
        have: Version,
    ) -> Error {
        Error::Unsupported {
            feature,
            needs: format!("OpenCL {needed}, the {what} is OpenCL {have}"),
        }
    }
}

/// A release or unmap that failed inside a `Drop`, where it cannot be returned (PyOpenCL raises
/// such an error at the next call; here it is logged with `tracing` and reported to the hook of
/// [`set_drop_failure_hook`]; a hook that counts them replaces a counter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropFailure {
    /// What failed (`"clReleaseMemObject"`, `"unmapping a buffer"`).
    pub call: &'static str,
    /// The driver's status, when the failure came from a status.
    pub status: Option<ClError>,
    /// The error's text.
    pub message: String,
}

/// What [`set_drop_failure_hook`] takes.
pub type DropHook = Box<dyn Fn(&DropFailure) + Send + Sync>;

static DROP_HOOK: std::sync::RwLock<Option<DropHook>> = std::sync::RwLock::new(None);

/// Calls `hook` (on whatever thread a `Drop` fails on) for every release or unmap that fails in a
/// `Drop` from now on, replacing the previous hook; `None` removes it. For a program that wants
/// such failures to stop it, or to surface them at its next call.
pub fn set_drop_failure_hook(hook: Option<DropHook>) {
    *DROP_HOOK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = hook;
}

/// Logs and reports a failure in a `Drop`.
pub(crate) fn drop_failed(call: &'static str, status: Option<ClError>, message: String) {
    tracing::warn!(call, message = %message, "failed in drop");
    let failure = DropFailure {
        call,
        status,
        message,
    };
    if let Some(hook) = DROP_HOOK
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
    {
        // A panicking hook must not unwind out of a Drop (possibly during another unwind).
        run_contained("the drop-failure hook", || hook(&failure));
    }
}

/// Runs `f`, containing a panic (logged as `what` panicked): a callback's work or a hook must
/// neither unwind into the driver (undefined behaviour across `extern "C"`), out of a `Drop`,
/// nor end the worker.
pub(crate) fn run_contained(what: &str, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        tracing::error!("{what} panicked; the panic was contained");
    }
}

/// [`drop_failed`] for a driver status.
pub(crate) fn drop_status(call: &'static str, status: ClError) {
    drop_failed(call, Some(status), format!("{call} failed: {status}"));
}

/// [`drop_failed`] for an [`Error`].
pub(crate) fn drop_error(call: &'static str, e: &Error) {
    drop_failed(call, e.cl_status(), e.to_string());
}

/// Refuses flags with bits their type does not name (made with `from_bits_retain`), which the
/// driver would answer with `CL_INVALID_VALUE` or, worse, take.
pub(crate) fn check_known_bits<F: bitflags::Flags>(flags: &F, what: &str) -> Result<()> {
    if flags.contains_unknown_bits() {
        Err(Error::InvalidArgument(format!(
            "{what} carry bits OpenCL does not define"
        )))
    } else {
        Ok(())
    }
}

/// [`Error::OutOfBounds`] unless `offset..offset + len` lies within `size` (without overflow):
/// the one range check behind buffers, SVM allocations and views, host slices and image
/// coordinates.
pub(crate) fn check_range(
    what: &'static str,
    offset: usize,
    len: usize,
    size: usize,
) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::OutOfBounds {
            what,
            offset,
            len,
            size,
        }),
    }
}

/// [`Error::Misaligned`] (naming `what`) unless `ptr` (a mapped pointer, pinned or host memory)
/// is non-null and aligned for `T`: the check before any `[T]` is formed over it.
pub(crate) fn check_aligned_ptr<T>(what: &'static str, ptr: *mut std::ffi::c_void) -> Result<()> {
    let alignment = std::mem::align_of::<T>();
    if ptr.is_null() || !(ptr as usize).is_multiple_of(alignment) {
        return Err(Error::Misaligned {
            what,
            value: ptr as usize,
            alignment,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_call_and_status() {
        let e = Error::cl("clEnqueueReadBuffer")(ClError::InvalidValue);
        assert_eq!(
            e.to_string(),
            "clEnqueueReadBuffer failed: CL_INVALID_VALUE"
        );
        assert_eq!(e.cl_status(), Some(ClError::InvalidValue));
        assert!(!e.is_out_of_memory());
        assert!(Error::cl("clCreateBuffer")(ClError::OutOfResources).is_out_of_memory());
    }

    #[test]
    fn drop_failures_reach_the_hook() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = std::sync::Arc::clone(&seen);
        set_drop_failure_hook(Some(Box::new(move |f: &DropFailure| {
            into.lock().unwrap().push(f.clone());
        })));
        drop_status("clReleaseMemObject", ClError::InvalidMemObject);
        set_drop_failure_hook(Some(Box::new(|_: &DropFailure| panic!("a hook may panic"))));
        drop_error("unmapping a buffer", &Error::InvalidArgument("x".into()));
        set_drop_failure_hook(None);
        let got = seen.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].call, "clReleaseMemObject");
        assert_eq!(got[0].status, Some(ClError::InvalidMemObject));
    }

    #[test]
    fn semantic_variants_read_well() {
        let e = Error::needs_version(
            "clCreateBufferWithProperties",
            Version::V3_0,
            "platform",
            Version::V1_2,
        );
        assert_eq!(
            e.to_string(),
            "clCreateBufferWithProperties is not supported: needs OpenCL 3.0, the platform is OpenCL 1.2"
        );
        let e = Error::OutOfBounds {
            what: "buffer read",
            offset: 8,
            len: 16,
            size: 16,
        };
        assert_eq!(
            e.to_string(),
            "out of bounds: buffer read at offset 8 with length 16 exceeds size 16"
        );
        let e = Error::Misaligned {
            what: "sub-buffer origin",
            value: 3,
            alignment: 128,
        };
        assert_eq!(
            e.to_string(),
            "misaligned sub-buffer origin: 3 is not a multiple of 128"
        );
        assert_eq!(e.cl_status(), None);
    }
}
