//! [`Pipe`]: an OpenCL 2.0 pipe memory object (PyOpenCL's `Pipe`): a FIFO of fixed-size packets
//! that kernels write (`write_pipe`) and read (`read_pipe`); the host never touches its contents.
//!
//! Pipes are optional in OpenCL 3.0 (`CL_DEVICE_PIPE_SUPPORT`: PoCL's CPU device lacks them) and
//! absent before 2.0 (Oclgrind is 1.2 and hangs on newer entry points), so both are checked
//! before `clCreatePipe` is called and reported as [`Error::Unsupported`].

use cl_raw::{pipe as raw, sys, Version};

use crate::error::{Error, Result};
use crate::memory::{MemFlags, MemObject};
use crate::raw_handle::{clone_retains, debug_fields, drop_releases, eq_by_handle, RawHandle};
use crate::runtime::context::Context;
use crate::runtime::extra;
use crate::runtime::kernel::{ArgValue, KernelArg};

/// A pipe object. Owns one reference: `Clone` retains, `Drop` releases (never panics).
pub struct Pipe {
    raw: sys::cl_mem,
    packet_size: u32,
    max_packets: u32,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"); the
// host only passes the handle to kernels and queries it.
unsafe impl Send for Pipe {}
// SAFETY: as for `Send`.
unsafe impl Sync for Pipe {}

impl Pipe {
    /// A pipe of `max_packets` packets of `packet_size` bytes (PyOpenCL's
    /// `Pipe(ctx, flags, packet_size, max_packets, properties=())`; OpenCL 3.0 requires the
    /// properties to be empty, so there are none to give). `flags` may hold only `READ_WRITE`
    /// and `HOST_NO_ACCESS` (empty means both).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] before OpenCL 2.0 or when a device of the context lacks pipe
    /// support; [`Error::InvalidArgument`] for other flags, a zero size or count, or a packet
    /// larger than `CL_DEVICE_PIPE_MAX_PACKET_SIZE` (all checked first); [`Error::Cl`] from
    /// `clCreatePipe`.
    pub fn new(
        context: &Context,
        flags: MemFlags,
        packet_size: u32,
        max_packets: u32,
    ) -> Result<Pipe> {
        context.require_platform_version(Version::V2_0, "clCreatePipe")?;
        for d in context.devices() {
            if !d.pipe_support()? {
                return Err(Error::Unsupported {
                    feature: "pipes",
                    needs: format!(
                        "CL_DEVICE_PIPE_SUPPORT, which device '{}' lacks",
                        d.name()?.trim()
                    ),
                });
            }
        }
        let allowed = MemFlags::READ_WRITE | MemFlags::HOST_NO_ACCESS;
        if !allowed.contains(flags) {
            return Err(Error::InvalidArgument(format!(
                "a pipe takes only READ_WRITE and HOST_NO_ACCESS, got {flags:?}"
            )));
        }
        if packet_size == 0 || max_packets == 0 {
            return Err(Error::InvalidArgument(format!(
                "a pipe needs a positive packet size and count, got {packet_size} and {max_packets}"
            )));
        }
        for d in context.devices() {
            let max: u32 = d.info(sys::CL_DEVICE_PIPE_MAX_PACKET_SIZE)?;
            if packet_size > max {
                return Err(Error::InvalidArgument(format!(
                    "packet size {packet_size} exceeds CL_DEVICE_PIPE_MAX_PACKET_SIZE ({max})"
                )));
            }
        }
        // SAFETY: a valid context of a 2.0+ platform whose devices support pipes; no properties
        // (a null list, see PyOpenCL issue #464); we own the result.
        let raw = unsafe {
            raw::create(
                context.as_raw(),
                flags.bits(),
                packet_size,
                max_packets,
                &[],
            )
        }
        .map_err(Error::cl("clCreatePipe"))?;
        Ok(Pipe {
            raw,
            packet_size,
            max_packets,
        })
    }

    /// The packet size given at creation (`CL_PIPE_PACKET_SIZE`; for an adopted pipe, the
    /// driver's answer), in bytes.
    pub fn packet_size(&self) -> u32 {
        self.packet_size
    }

    /// The capacity given at creation (`CL_PIPE_MAX_PACKETS`; for an adopted pipe, the
    /// driver's answer), in packets.
    pub fn max_packets(&self) -> u32 {
        self.max_packets
    }

    /// `CL_PIPE_PACKET_SIZE` as the driver reports it (read when adopting a raw pipe).
    fn query_packet_size(&self) -> Result<u32> {
        // SAFETY: a valid pipe (so a 2.0+ platform); a 2.0 parameter.
        unsafe { raw::get_info(self.raw, sys::CL_PIPE_PACKET_SIZE) }
            .map_err(Error::cl("clGetPipeInfo"))
    }

    /// `CL_PIPE_MAX_PACKETS` as the driver reports it (read when adopting a raw pipe).
    fn query_max_packets(&self) -> Result<u32> {
        // SAFETY: a valid pipe (so a 2.0+ platform); a 2.0 parameter.
        unsafe { raw::get_info(self.raw, sys::CL_PIPE_MAX_PACKETS) }
            .map_err(Error::cl("clGetPipeInfo"))
    }

    /// `CL_PIPE_PROPERTIES` (3.0): empty, since pipes take no properties (PyOpenCL refuses this
    /// query).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] before 3.0 (checked first); [`Error::Cl`] from `clGetPipeInfo`.
    pub fn properties(&self) -> Result<Vec<sys::cl_pipe_properties>> {
        crate::memory::mem_context(self.raw)?
            .require_platform_version(Version::V3_0, "CL_PIPE_PROPERTIES")?;
        // SAFETY: a valid pipe of a 3.0 platform; a 3.0 parameter.
        unsafe { raw::get_info(self.raw, extra::CL_PIPE_PROPERTIES) }
            .map_err(Error::cl("clGetPipeInfo"))
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` gives that reference away and forgets the wrapper.
unsafe impl crate::raw_handle::RawHandle for Pipe {
    crate::raw_handle::raw_handle_field!(Mem: sys::cl_mem);

    /// Adopts one reference to a raw pipe (no retain), reading its packet size and count.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when it is not a pipe; [`Error::Cl`] from the queries. The
    /// reference is released on error.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid memory object and the caller gives its reference to the new `Pipe`.
    unsafe fn from_raw(raw: sys::cl_mem) -> Result<Pipe> {
        // `max_packets`/`packet_size` are filled below; dropping `p` on error releases `raw`.
        let mut p = Pipe {
            raw,
            packet_size: 0,
            max_packets: 0,
        };
        if crate::memory::mem_type(raw)? != crate::memory::MemObjectType::Pipe {
            return Err(Error::InvalidArgument(
                "the memory object is not a pipe".into(),
            ));
        }
        p.packet_size = p.query_packet_size()?;
        p.max_packets = p.query_max_packets()?;
        Ok(p)
    }

    /// Gives the reference away without releasing it.
    fn into_raw(self) -> sys::cl_mem {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }
}

// SAFETY: `raw` is a valid pipe we hold a reference to for as long as `self` lives.
unsafe impl MemObject for Pipe {}

// SAFETY: a valid pipe handle, kept alive by the kernel (it retains memory arguments).
unsafe impl KernelArg for Pipe {
    fn arg_value(&self) -> ArgValue<'_> {
        ArgValue::Mem(self.raw)
    }
}

clone_retains!(Mem: Pipe { packet_size, max_packets });
drop_releases!(Mem: Pipe);
eq_by_handle!(hash raw: Pipe);
debug_fields!(Pipe: raw, packet_size, max_packets);
