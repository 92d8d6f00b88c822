//! [`Program`]: OpenCL C source built for the devices of a context (minimal: what tests of memory
//! need).

use std::ffi::CString;

use cl_raw::object::Object;
use cl_raw::{program as raw, sys, ClError};

use crate::error::{Error, Result};
use crate::raw_handle::{
    adopt_or_release, clone_retains, debug_fields, drop_releases, get_info, get_info_retained,
    RawHandle,
};
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::kernel::Kernel;

/// The build option that makes argument information available to [`Kernel`]'s checks.
const KERNEL_ARG_INFO: &str = "-cl-kernel-arg-info";

/// A program object. Owns one reference: `Clone` retains, `Drop` releases (never panics).
pub struct Program {
    raw: sys::cl_program,
    context: Context,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"),
// including clBuildProgram and clCreateKernel on one program.
unsafe impl Send for Program {}
// SAFETY: as for `Send`.
unsafe impl Sync for Program {}

impl Program {
    /// A program from OpenCL C source, not yet built.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for empty source (checked first); [`Error::Cl`] from
    /// `clCreateProgramWithSource`.
    fn from_source(context: &Context, source: &str) -> Result<Program> {
        if source.trim().is_empty() {
            return Err(Error::InvalidArgument("program source is empty".into()));
        }
        // SAFETY: a valid context; we own the returned program.
        let raw = unsafe { raw::create_with_source(context.as_raw(), &[source]) }
            .map_err(Error::cl("clCreateProgramWithSource"))?;
        Ok(Program {
            raw,
            context: context.clone(),
        })
    }

    /// A program from OpenCL C source, built for every device of the context (blocking):
    /// PyOpenCL's `cl.Program(ctx, src).build(options)`. `-cl-kernel-arg-info` is added to
    /// `options` (kernels check their arguments against it).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for empty source or options with a NUL byte (checked first);
    /// [`Error::Build`] with every device's build log when compilation fails; [`Error::Cl`] from
    /// `clCreateProgramWithSource` or for other `clBuildProgram` failures.
    pub fn build_from_source(context: &Context, source: &str, options: &str) -> Result<Program> {
        let p = Program::from_source(context, source)?;
        p.build(options)?;
        Ok(p)
    }

    /// Builds for every device of the context (blocking).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `options` contains a NUL byte (checked first);
    /// [`Error::Build`] with every device's build log when compilation fails; [`Error::Cl`] for
    /// other `clBuildProgram` failures.
    fn build(&self, options: &str) -> Result<()> {
        // Kernels check their arguments against clGetKernelArgInfo, which some drivers answer
        // only for programs built with this option (OpenCL 1.2; every accepted platform is 1.2+).
        let options = if options.split_whitespace().any(|o| o == KERNEL_ARG_INFO) {
            options.to_owned()
        } else {
            format!("{options} {KERNEL_ARG_INFO}")
        };
        let options = CString::new(options)
            .map_err(|_| Error::InvalidArgument("build options contain a NUL byte".into()))?;
        // SAFETY: a valid program; all devices of its context; no callback (blocking build).
        match unsafe { raw::build(self.raw, &[], &options, None, std::ptr::null_mut()) } {
            Ok(()) => Ok(()),
            Err(
                status @ (ClError::BuildProgramFailure
                | ClError::InvalidBuildOptions
                | ClError::CompilerNotAvailable),
            ) => {
                let mut log = String::new();
                for device in self.context.devices() {
                    let name = device.name().unwrap_or_else(|_| "?".into());
                    let text = self
                        .build_log(device)
                        .unwrap_or_else(|e| format!("(build log unavailable: {e})"));
                    log.push_str(&format!(
                        "--- build log for {name} ---\n{}\n",
                        text.trim_end()
                    ));
                }
                Err(Error::Build { status, log })
            }
            Err(status) => Err(Error::cl("clBuildProgram")(status)),
        }
    }

    /// `CL_PROGRAM_BUILD_LOG` for one device.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetProgramBuildInfo`.
    pub fn build_log(&self, device: &Device) -> Result<String> {
        // SAFETY: a valid program; `device` is checked by the driver (CL_INVALID_DEVICE).
        unsafe { raw::get_build_info(self.raw, device.as_raw(), sys::CL_PROGRAM_BUILD_LOG) }
            .map_err(Error::cl("clGetProgramBuildInfo"))
    }

    /// `CL_PROGRAM_KERNEL_NAMES` (1.2), split on `;`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetProgramInfo` (`CL_INVALID_PROGRAM_EXECUTABLE` before a build).
    pub fn kernel_names(&self) -> Result<Vec<String>> {
        // SAFETY: a valid program; a 1.2 parameter on the 1.2+ platforms this crate supports.
        let s: String =
            unsafe { get_info(Object::Program, self.raw, sys::CL_PROGRAM_KERNEL_NAMES) }?;
        Ok(s.split(';')
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// `CL_PROGRAM_SOURCE`: the source the program was created from.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetProgramInfo`.
    pub fn source(&self) -> Result<String> {
        // SAFETY: a valid program; a 1.0 parameter.
        let s: String = unsafe { get_info(Object::Program, self.raw, sys::CL_PROGRAM_SOURCE) }?;
        Ok(s.trim_end_matches('\0').to_owned())
    }

    /// `CL_PROGRAM_BINARIES`: each device's binary (PTX on NVIDIA, an ELF or SPIR-V container
    /// on the CPU runtimes), in the order of the context's devices (one per device: the program
    /// is built for all of them).
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetProgramInfo`.
    pub fn binaries(&self) -> Result<Vec<Vec<u8>>> {
        // SAFETY: a valid program; a 1.0 parameter.
        let sizes: Vec<usize> =
            unsafe { get_info(Object::Program, self.raw, sys::CL_PROGRAM_BINARY_SIZES) }?;
        // SAFETY: a valid program; `sizes` is its CL_PROGRAM_BINARY_SIZES, read just before.
        unsafe { raw::get_binaries(self.raw, &sizes) }.map_err(Error::cl("clGetProgramInfo"))
    }

    /// The kernel `name` of this program (PyOpenCL's `prg.name` / `cl.Kernel(prg, name)`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a name with a NUL byte (checked first) or one the program
    /// does not define; [`Error::Cl`] from `clCreateKernel`.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        Kernel::new(self, name)
    }

    /// The program's context.
    pub fn context(&self) -> &Context {
        &self.context
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` retains one more for the caller and drops the wrapper
// (`retain_then_drop`; if the retain fails, it forgets the wrapper instead).
unsafe impl crate::raw_handle::RawHandle for Program {
    crate::raw_handle::raw_handle_field!(Program: sys::cl_program);

    /// Adopts one reference to a raw program (no retain), reading its context
    /// (`CL_PROGRAM_CONTEXT`, retained by the new `Program`): PyOpenCL's
    /// `Program.from_int_ptr(ptr, retain=False)`.
    ///
    /// Kernels check their arguments against `clGetKernelArgInfo`, which needs a program built
    /// with `-cl-kernel-arg-info` (as [`Program::build_from_source`] does); kernels of a program built
    /// elsewhere without it only take arguments through the `unsafe` unchecked setter.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetProgramInfo` or the context's queries. The reference is released
    /// on error.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid program and the caller gives its reference to the new `Program`.
    unsafe fn from_raw(raw: sys::cl_program) -> Result<Program> {
        let read = || -> Result<Program> {
            // SAFETY: obligation 1; a 1.0 parameter, the program's live context.
            let context =
                unsafe { get_info_retained(Object::Program, raw, sys::CL_PROGRAM_CONTEXT) }?;
            Ok(Program { raw, context })
        };
        // SAFETY: obligation 1.
        unsafe { adopt_or_release(Object::Program, raw, read) }
    }

    /// Gives a reference away without releasing it (the `Program`'s context reference is
    /// released; the driver's program keeps its context alive itself).
    fn into_raw(self) -> sys::cl_program {
        crate::raw_handle::retain_then_drop(self)
    }
}

clone_retains!(Program: Program { context });
drop_releases!(Program: Program);
debug_fields!(Program: raw);
