//! [`ClError`]: the OpenCL status domain, and [`check`], the one place a raw status becomes a `Result`.
//!
//! The table below lists every negative status defined by the Khronos OpenCL 3.0 headers
//! (`CL/cl.h` and the extension headers `cl_ext.h`, `cl_gl.h`, `cl_egl.h`, `cl_d3d10.h`,
//! `cl_d3d11.h`, `cl_dx9_media_sharing.h`, `cl_va_api_media_sharing_intel.h`), as shipped in
//! OpenCL-Headers v2023.02.06. Where two extensions share a code (-1010..-1013 are both
//! `cl_khr_dx9_media_sharing` and the older `cl_intel_dx9_media_sharing` codes), the Khronos (KHR)
//! name is used so that `code -> variant -> code` is a bijection.

use std::fmt;

use crate::sys;

macro_rules! status_codes {
    ($( $variant:ident = $code:literal => $name:literal, )*) => {
        /// An OpenCL status code other than `CL_SUCCESS`.
        ///
        /// One variant per status of the OpenCL 3.0 headers; `Display` prints the exact C name
        /// (`CL_INVALID_MEM_OBJECT`). Codes this table does not know (vendor-private codes, codes
        /// added by newer headers) become [`ClError::Unknown`]; nothing here panics.
        #[non_exhaustive]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ClError {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($code), ").")]
                $variant,
            )*
            /// A status this table does not know; holds the raw code.
            Unknown(i32),
        }

        impl ClError {
            /// Every known status, in header order (useful for tests and tables).
            pub const ALL: &'static [ClError] = &[$(ClError::$variant,)*];

            /// The raw status code (`CL_INVALID_VALUE` -> -30).
            pub const fn code(self) -> i32 {
                match self {
                    $(ClError::$variant => $code,)*
                    ClError::Unknown(code) => code,
                }
            }

            /// The exact C name (`"CL_INVALID_VALUE"`), or `"CL_UNKNOWN_STATUS"` for
            /// [`ClError::Unknown`] (whose `Display` also prints the number).
            pub const fn name(self) -> &'static str {
                match self {
                    $(ClError::$variant => $name,)*
                    ClError::Unknown(_) => "CL_UNKNOWN_STATUS",
                }
            }

            /// The variant for a raw code. Total: `CL_SUCCESS` (0), positive codes and codes not
            /// in the table give [`ClError::Unknown`] (use [`check`] to treat 0 as success).
            pub const fn from_code(code: i32) -> ClError {
                match code {
                    $($code => ClError::$variant,)*
                    other => ClError::Unknown(other),
                }
            }
        }
    };
}

status_codes! {
    DeviceNotFound = -1 => "CL_DEVICE_NOT_FOUND",
    DeviceNotAvailable = -2 => "CL_DEVICE_NOT_AVAILABLE",
    CompilerNotAvailable = -3 => "CL_COMPILER_NOT_AVAILABLE",
    MemObjectAllocationFailure = -4 => "CL_MEM_OBJECT_ALLOCATION_FAILURE",
    OutOfResources = -5 => "CL_OUT_OF_RESOURCES",
    OutOfHostMemory = -6 => "CL_OUT_OF_HOST_MEMORY",
    ProfilingInfoNotAvailable = -7 => "CL_PROFILING_INFO_NOT_AVAILABLE",
    MemCopyOverlap = -8 => "CL_MEM_COPY_OVERLAP",
    ImageFormatMismatch = -9 => "CL_IMAGE_FORMAT_MISMATCH",
    ImageFormatNotSupported = -10 => "CL_IMAGE_FORMAT_NOT_SUPPORTED",
    BuildProgramFailure = -11 => "CL_BUILD_PROGRAM_FAILURE",
    MapFailure = -12 => "CL_MAP_FAILURE",
    MisalignedSubBufferOffset = -13 => "CL_MISALIGNED_SUB_BUFFER_OFFSET",
    ExecStatusErrorForEventsInWaitList = -14 => "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
    CompileProgramFailure = -15 => "CL_COMPILE_PROGRAM_FAILURE",
    LinkerNotAvailable = -16 => "CL_LINKER_NOT_AVAILABLE",
    LinkProgramFailure = -17 => "CL_LINK_PROGRAM_FAILURE",
    DevicePartitionFailed = -18 => "CL_DEVICE_PARTITION_FAILED",
    KernelArgInfoNotAvailable = -19 => "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
    InvalidValue = -30 => "CL_INVALID_VALUE",
    InvalidDeviceType = -31 => "CL_INVALID_DEVICE_TYPE",
    InvalidPlatform = -32 => "CL_INVALID_PLATFORM",
    InvalidDevice = -33 => "CL_INVALID_DEVICE",
    InvalidContext = -34 => "CL_INVALID_CONTEXT",
    InvalidQueueProperties = -35 => "CL_INVALID_QUEUE_PROPERTIES",
    InvalidCommandQueue = -36 => "CL_INVALID_COMMAND_QUEUE",
    InvalidHostPtr = -37 => "CL_INVALID_HOST_PTR",
    InvalidMemObject = -38 => "CL_INVALID_MEM_OBJECT",
    InvalidImageFormatDescriptor = -39 => "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
    InvalidImageSize = -40 => "CL_INVALID_IMAGE_SIZE",
    InvalidSampler = -41 => "CL_INVALID_SAMPLER",
    InvalidBinary = -42 => "CL_INVALID_BINARY",
    InvalidBuildOptions = -43 => "CL_INVALID_BUILD_OPTIONS",
    InvalidProgram = -44 => "CL_INVALID_PROGRAM",
    InvalidProgramExecutable = -45 => "CL_INVALID_PROGRAM_EXECUTABLE",
    InvalidKernelName = -46 => "CL_INVALID_KERNEL_NAME",
    InvalidKernelDefinition = -47 => "CL_INVALID_KERNEL_DEFINITION",
    InvalidKernel = -48 => "CL_INVALID_KERNEL",
    InvalidArgIndex = -49 => "CL_INVALID_ARG_INDEX",
    InvalidArgValue = -50 => "CL_INVALID_ARG_VALUE",
    InvalidArgSize = -51 => "CL_INVALID_ARG_SIZE",
    InvalidKernelArgs = -52 => "CL_INVALID_KERNEL_ARGS",
    InvalidWorkDimension = -53 => "CL_INVALID_WORK_DIMENSION",
    InvalidWorkGroupSize = -54 => "CL_INVALID_WORK_GROUP_SIZE",
    InvalidWorkItemSize = -55 => "CL_INVALID_WORK_ITEM_SIZE",
    InvalidGlobalOffset = -56 => "CL_INVALID_GLOBAL_OFFSET",
    InvalidEventWaitList = -57 => "CL_INVALID_EVENT_WAIT_LIST",
    InvalidEvent = -58 => "CL_INVALID_EVENT",
    InvalidOperation = -59 => "CL_INVALID_OPERATION",
    InvalidGlObject = -60 => "CL_INVALID_GL_OBJECT",
    InvalidBufferSize = -61 => "CL_INVALID_BUFFER_SIZE",
    InvalidMipLevel = -62 => "CL_INVALID_MIP_LEVEL",
    InvalidGlobalWorkSize = -63 => "CL_INVALID_GLOBAL_WORK_SIZE",
    InvalidProperty = -64 => "CL_INVALID_PROPERTY",
    InvalidImageDescriptor = -65 => "CL_INVALID_IMAGE_DESCRIPTOR",
    InvalidCompilerOptions = -66 => "CL_INVALID_COMPILER_OPTIONS",
    InvalidLinkerOptions = -67 => "CL_INVALID_LINKER_OPTIONS",
    InvalidDevicePartitionCount = -68 => "CL_INVALID_DEVICE_PARTITION_COUNT",
    InvalidPipeSize = -69 => "CL_INVALID_PIPE_SIZE",
    InvalidDeviceQueue = -70 => "CL_INVALID_DEVICE_QUEUE",
    InvalidSpecId = -71 => "CL_INVALID_SPEC_ID",
    MaxSizeRestrictionExceeded = -72 => "CL_MAX_SIZE_RESTRICTION_EXCEEDED",
    InvalidGlSharegroupReferenceKhr = -1000 => "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR",
    PlatformNotFoundKhr = -1001 => "CL_PLATFORM_NOT_FOUND_KHR",
    InvalidD3d10DeviceKhr = -1002 => "CL_INVALID_D3D10_DEVICE_KHR",
    InvalidD3d10ResourceKhr = -1003 => "CL_INVALID_D3D10_RESOURCE_KHR",
    D3d10ResourceAlreadyAcquiredKhr = -1004 => "CL_D3D10_RESOURCE_ALREADY_ACQUIRED_KHR",
    D3d10ResourceNotAcquiredKhr = -1005 => "CL_D3D10_RESOURCE_NOT_ACQUIRED_KHR",
    InvalidD3d11DeviceKhr = -1006 => "CL_INVALID_D3D11_DEVICE_KHR",
    InvalidD3d11ResourceKhr = -1007 => "CL_INVALID_D3D11_RESOURCE_KHR",
    D3d11ResourceAlreadyAcquiredKhr = -1008 => "CL_D3D11_RESOURCE_ALREADY_ACQUIRED_KHR",
    D3d11ResourceNotAcquiredKhr = -1009 => "CL_D3D11_RESOURCE_NOT_ACQUIRED_KHR",
    InvalidDx9MediaAdapterKhr = -1010 => "CL_INVALID_DX9_MEDIA_ADAPTER_KHR",
    InvalidDx9MediaSurfaceKhr = -1011 => "CL_INVALID_DX9_MEDIA_SURFACE_KHR",
    Dx9MediaSurfaceAlreadyAcquiredKhr = -1012 => "CL_DX9_MEDIA_SURFACE_ALREADY_ACQUIRED_KHR",
    Dx9MediaSurfaceNotAcquiredKhr = -1013 => "CL_DX9_MEDIA_SURFACE_NOT_ACQUIRED_KHR",
    DevicePartitionFailedExt = -1057 => "CL_DEVICE_PARTITION_FAILED_EXT",
    InvalidPartitionCountExt = -1058 => "CL_INVALID_PARTITION_COUNT_EXT",
    InvalidPartitionNameExt = -1059 => "CL_INVALID_PARTITION_NAME_EXT",
    EglResourceNotAcquiredKhr = -1092 => "CL_EGL_RESOURCE_NOT_ACQUIRED_KHR",
    InvalidEglObjectKhr = -1093 => "CL_INVALID_EGL_OBJECT_KHR",
    InvalidAcceleratorIntel = -1094 => "CL_INVALID_ACCELERATOR_INTEL",
    InvalidAcceleratorTypeIntel = -1095 => "CL_INVALID_ACCELERATOR_TYPE_INTEL",
    InvalidAcceleratorDescriptorIntel = -1096 => "CL_INVALID_ACCELERATOR_DESCRIPTOR_INTEL",
    AcceleratorTypeNotSupportedIntel = -1097 => "CL_ACCELERATOR_TYPE_NOT_SUPPORTED_INTEL",
    InvalidVaApiMediaAdapterIntel = -1098 => "CL_INVALID_VA_API_MEDIA_ADAPTER_INTEL",
    InvalidVaApiMediaSurfaceIntel = -1099 => "CL_INVALID_VA_API_MEDIA_SURFACE_INTEL",
    VaApiMediaSurfaceAlreadyAcquiredIntel = -1100 => "CL_VA_API_MEDIA_SURFACE_ALREADY_ACQUIRED_INTEL",
    VaApiMediaSurfaceNotAcquiredIntel = -1101 => "CL_VA_API_MEDIA_SURFACE_NOT_ACQUIRED_INTEL",
    CommandTerminatedItselfWithFailureArm = -1108 => "CL_COMMAND_TERMINATED_ITSELF_WITH_FAILURE_ARM",
    ContextTerminatedKhr = -1121 => "CL_CONTEXT_TERMINATED_KHR",
    InvalidCommandBufferKhr = -1138 => "CL_INVALID_COMMAND_BUFFER_KHR",
    InvalidSyncPointWaitListKhr = -1139 => "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR",
    IncompatibleCommandQueueKhr = -1140 => "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR",
    InvalidMutableCommandKhr = -1141 => "CL_INVALID_MUTABLE_COMMAND_KHR",
    InvalidSemaphoreKhr = -1142 => "CL_INVALID_SEMAPHORE_KHR",
}

impl ClError {
    /// True for the three "out of memory" statuses: `CL_MEM_OBJECT_ALLOCATION_FAILURE` (-4),
    /// `CL_OUT_OF_RESOURCES` (-5) and `CL_OUT_OF_HOST_MEMORY` (-6).
    ///
    /// PyOpenCL's `error::is_out_of_memory` uses the same set; memory pools free cached blocks and
    /// retry once when an allocation fails with one of these.
    pub const fn is_out_of_memory(self) -> bool {
        matches!(
            self,
            ClError::MemObjectAllocationFailure
                | ClError::OutOfResources
                | ClError::OutOfHostMemory
        )
    }
}

impl fmt::Display for ClError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClError::Unknown(code) => write!(f, "unknown OpenCL status {code}"),
            known => f.write_str(known.name()),
        }
    }
}

impl std::error::Error for ClError {}

impl From<ClError> for i32 {
    fn from(e: ClError) -> i32 {
        e.code()
    }
}

/// The one conversion point from a raw status to a `Result`: `CL_SUCCESS` is `Ok(())`, anything
/// else is the matching [`ClError`].
///
/// # Errors
///
/// Every status other than `CL_SUCCESS` (0).
#[inline]
pub fn check(status: sys::cl_int) -> Result<(), ClError> {
    if status == sys::CL_SUCCESS {
        Ok(())
    } else {
        Err(ClError::from_code(status))
    }
}

/// Runs a `clCreate*`-shaped call, which returns the object and writes its status through its
/// last parameter: the object, or the status when that is not `CL_SUCCESS`.
///
/// # Errors
///
/// The status the call wrote, when not `CL_SUCCESS`.
#[inline]
pub(crate) fn created<T>(call: impl FnOnce(&mut sys::cl_int) -> T) -> Result<T, ClError> {
    let mut err = 0;
    let made = call(&mut err);
    check(err).map(|()| made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_variant() {
        for &e in ClError::ALL {
            assert_eq!(ClError::from_code(e.code()), e, "{e}");
            assert!(e.code() < 0, "{e} has non-negative code");
            assert!(!matches!(e, ClError::Unknown(_)));
        }
    }

    #[test]
    fn codes_and_names_are_unique() {
        let mut codes: Vec<i32> = ClError::ALL.iter().map(|e| e.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), ClError::ALL.len());
        let mut names: Vec<&str> = ClError::ALL.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ClError::ALL.len());
    }

    #[test]
    fn table_has_every_header_code() {
        // 19 runtime errors (-1..-19), 43 invalid-argument errors (-30..-72), 34 extension codes.
        assert_eq!(ClError::ALL.len(), 19 + 43 + 34);
        for code in (-19..=-1).chain(-72..=-30) {
            assert!(
                !matches!(ClError::from_code(code), ClError::Unknown(_)),
                "{code}"
            );
        }
    }

    #[test]
    fn display_is_the_exact_c_name() {
        assert_eq!(
            ClError::InvalidMemObject.to_string(),
            "CL_INVALID_MEM_OBJECT"
        );
        assert_eq!(ClError::from_code(-30).to_string(), "CL_INVALID_VALUE");
        assert_eq!(
            ClError::from_code(-1001).to_string(),
            "CL_PLATFORM_NOT_FOUND_KHR"
        );
        assert_eq!(ClError::from_code(-11).name(), "CL_BUILD_PROGRAM_FAILURE");
        for &e in ClError::ALL {
            assert_eq!(e.to_string(), e.name());
            assert!(e.name().starts_with("CL_"));
        }
    }

    #[test]
    fn agrees_with_cl_sys_constants() {
        let pairs = [
            (sys::CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"),
            (
                sys::CL_MEM_OBJECT_ALLOCATION_FAILURE,
                "CL_MEM_OBJECT_ALLOCATION_FAILURE",
            ),
            (
                sys::CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
                "CL_KERNEL_ARG_INFO_NOT_AVAILABLE",
            ),
            (sys::CL_INVALID_VALUE, "CL_INVALID_VALUE"),
            (sys::CL_INVALID_DEVICE_QUEUE, "CL_INVALID_DEVICE_QUEUE"),
            (sys::CL_PLATFORM_NOT_FOUND_KHR, "CL_PLATFORM_NOT_FOUND_KHR"),
            (
                sys::CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR,
                "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR",
            ),
        ];
        for (code, name) in pairs {
            assert_eq!(ClError::from_code(code).name(), name);
        }
    }

    #[test]
    fn unknown_codes_never_panic_and_keep_the_number() {
        for code in [0, 1, -20, -29, -73, -999, -9999, i32::MIN, i32::MAX] {
            let e = ClError::from_code(code);
            assert_eq!(e, ClError::Unknown(code));
            assert_eq!(e.code(), code);
            assert_eq!(e.to_string(), format!("unknown OpenCL status {code}"));
        }
    }

    #[test]
    fn out_of_memory_is_exactly_minus_4_5_6() {
        let oom: Vec<i32> = ClError::ALL
            .iter()
            .filter(|e| e.is_out_of_memory())
            .map(|e| e.code())
            .collect();
        assert_eq!(oom, vec![-4, -5, -6]);
        assert!(!ClError::Unknown(-4000).is_out_of_memory());
    }

    #[test]
    fn check_maps_success_and_failure() {
        assert_eq!(check(0), Ok(()));
        assert_eq!(check(-38), Err(ClError::InvalidMemObject));
        assert_eq!(check(-12345), Err(ClError::Unknown(-12345)));
    }
}
