//! [`Queue`]: a host command queue (in-order by default), with flush/finish, markers and
//! barriers.

use cl_raw::object::Object;
use cl_raw::{queue as raw, sys, Version};

use crate::error::{Error, Result};
use crate::raw_handle::{
    adopt_or_release, clone_retains, debug_fields, drop_releases, eq_by_handle, get_info,
    get_info_retained, RawHandle,
};
use crate::runtime::context::Context;
use crate::runtime::device::{Device, QueueProperties};
use crate::runtime::event::{checked_list, Event};

/// A host command queue on one device of a context.
///
/// Owns one reference: `Clone` retains, `Drop` releases (never panics). Keeps its context alive.
pub struct Queue {
    raw: sys::cl_command_queue,
    context: Context,
    device: Device,
    properties: QueueProperties,
    /// Counts this wrapper in [`crate::live_objects`].
    _live: crate::runtime::live::Live<{ crate::runtime::live::QUEUE }>,
}

// SAFETY: OpenCL 1.1+ API calls are thread-safe (OpenCL 3.0 spec, "Multiple Host Threads"), so
// several threads may enqueue into, flush, finish and release one queue.
unsafe impl Send for Queue {}
// SAFETY: as for `Send`.
unsafe impl Sync for Queue {}

impl Queue {
    /// An in-order queue without profiling.
    ///
    /// # Errors
    ///
    /// As [`Queue::with_properties`].
    pub fn new(context: &Context, device: &Device) -> Result<Queue> {
        Queue::with_properties(context, device, QueueProperties::empty())
    }

    /// A queue with explicit properties: PyOpenCL's `CommandQueue(ctx, dev, properties)`, e.g.
    /// `Queue::with_properties(&ctx, &dev, QueueProperties::PROFILING_ENABLE)` (combine with
    /// `|`: `OUT_OF_ORDER_EXEC_MODE_ENABLE | PROFILING_ENABLE`).
    ///
    /// Uses `clCreateCommandQueueWithProperties` when platform and device are 2.0 or newer and the
    /// classic `clCreateCommandQueue` otherwise (a 1.2 platform may hang on the 2.0 entry point).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `device` is not in `context` or device-queue bits are asked
    /// for; [`Error::Unsupported`] when the device does not list a requested property in
    /// `CL_DEVICE_QUEUE_PROPERTIES` (both checked first); [`Error::Cl`] from the create call.
    pub fn with_properties(
        context: &Context,
        device: &Device,
        properties: QueueProperties,
    ) -> Result<Queue> {
        if !context.devices().contains(device) {
            return Err(Error::InvalidArgument(
                "the device is not one of the context's devices".into(),
            ));
        }
        if properties.bits() & (sys::CL_QUEUE_ON_DEVICE | sys::CL_QUEUE_ON_DEVICE_DEFAULT) != 0 {
            return Err(Error::InvalidArgument(
                "device-side queues are not supported by Queue".into(),
            ));
        }
        let supported =
            QueueProperties::from_bits_retain(device.info(sys::CL_DEVICE_QUEUE_PROPERTIES)?);
        if properties.contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE)
            && !supported.contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE)
        {
            return Err(Error::Unsupported {
                feature: "out-of-order queues",
                needs: "CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE in CL_DEVICE_QUEUE_PROPERTIES"
                    .into(),
            });
        }
        if properties.contains(QueueProperties::PROFILING_ENABLE)
            && !supported.contains(QueueProperties::PROFILING_ENABLE)
        {
            return Err(Error::Unsupported {
                feature: "profiling queues",
                needs: "CL_QUEUE_PROFILING_ENABLE in CL_DEVICE_QUEUE_PROPERTIES".into(),
            });
        }
        let raw = if device.platform_version() >= Version::V2_0 && device.version() >= Version::V2_0
        {
            let props: [sys::cl_queue_properties; 3] = [
                sys::CL_QUEUE_PROPERTIES as sys::cl_queue_properties,
                properties.bits(),
                0,
            ];
            let list: &[sys::cl_queue_properties] =
                if properties.is_empty() { &[] } else { &props };
            // SAFETY: a 2.0+ platform and device of `context` (checked above); we own the result.
            unsafe { raw::create_with_properties(context.as_raw(), device.as_raw(), list) }
                .map_err(Error::cl("clCreateCommandQueueWithProperties"))?
        } else {
            // SAFETY: a device of `context`; we own the result.
            unsafe { raw::create(context.as_raw(), device.as_raw(), properties.bits()) }
                .map_err(Error::cl("clCreateCommandQueue"))?
        };
        Ok(Queue {
            _live: crate::runtime::live::Live::new(),
            raw,
            context: context.clone(),
            device: *device,
            properties,
        })
    }

    /// The context's own in-order queue on `device` (`StagingCache::queue_for`), wrapped with a
    /// reference of its own; what copies between devices read the source on.
    ///
    /// # Errors
    ///
    /// As [`Queue::new`] (first use only), [`Error::Cl`] from `clRetainCommandQueue`.
    pub(crate) fn staging_queue(
        context: &Context,
        device: &Device,
        role: crate::runtime::staging::QueueRole,
    ) -> Result<Queue> {
        let raw = context.staging().queue_for(device.as_raw(), role, || {
            Ok(Queue::new(context, device)?.into_raw())
        })?;
        // SAFETY: a live queue the cache holds a reference to; the wrapper takes its own.
        unsafe { cl_raw::object::retain(cl_raw::object::Object::Queue, raw) }
            .map_err(Error::cl("clRetainCommandQueue"))?;
        Ok(Queue {
            _live: crate::runtime::live::Live::new(),
            raw,
            context: context.clone(),
            device: *device,
            properties: QueueProperties::empty(),
        })
    }

    /// The queue's context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The queue's device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The properties it was created with.
    pub fn properties(&self) -> QueueProperties {
        self.properties
    }

    /// Whether commands run in order (no `OUT_OF_ORDER_EXEC_MODE_ENABLE`).
    pub(crate) fn is_in_order(&self) -> bool {
        !self
            .properties
            .contains(QueueProperties::OUT_OF_ORDER_EXEC_MODE_ENABLE)
    }

    /// Submits queued commands to the device.
    ///
    /// Driver quirk: Oclgrind 21.10 runs the queue inside `clFlush` on the calling thread, so a
    /// flush while a command waits on a [`crate::UserEvent`] that is not yet set never returns
    /// there (docs/DEVICES.md). Set user events before flushing.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clFlush`.
    pub fn flush(&self) -> Result<()> {
        // SAFETY: a valid queue.
        unsafe { raw::flush(self.raw) }.map_err(Error::cl("clFlush"))
    }

    /// Blocks until every queued command completed.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clFinish`.
    pub fn finish(&self) -> Result<()> {
        // SAFETY: a valid queue.
        unsafe { raw::finish(self.raw) }.map_err(Error::cl("clFinish"))
    }

    /// A marker: an event that completes when `wait` has (or, if empty, every earlier command).
    /// Later commands do not wait for it.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clEnqueueMarkerWithWaitList`.
    pub fn enqueue_marker(&self, wait: &[&Event]) -> Result<Event> {
        // SAFETY: a 1.2 platform (every context of this crate); valid queue and events; we own
        // the returned event.
        unsafe {
            let ev = raw::enqueue_marker_with_wait_list(self.raw, &checked_list(self, wait)?);
            Event::adopt(ev, "clEnqueueMarkerWithWaitList")
        }
    }

    /// A barrier: later commands wait for `wait` (or, if empty, every earlier command). Returns
    /// an event completing with the barrier.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clEnqueueBarrierWithWaitList`.
    pub fn enqueue_barrier(&self, wait: &[&Event]) -> Result<Event> {
        // SAFETY: a 1.2 platform (every context of this crate); valid queue and events; we own
        // the returned event.
        unsafe {
            let ev = raw::enqueue_barrier_with_wait_list(self.raw, &checked_list(self, wait)?);
            Event::adopt(ev, "clEnqueueBarrierWithWaitList")
        }
    }

    /// `CL_QUEUE_DEVICE_DEFAULT` (2.1): the device's default on-device queue, as a raw handle
    /// (not retained); `None` when none was created (this crate creates none).
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] below OpenCL 2.1 (platform or device) or on a 3.0 device without
    /// device-side enqueue (checked first); [`Error::Cl`] from `clGetCommandQueueInfo` (the Intel
    /// CPU runtime answers `CL_INVALID_VALUE` on host queues, docs/DEVICES.md).
    pub fn device_default_raw(&self) -> Result<Option<sys::cl_command_queue>> {
        self.device
            .require_version(Version::V2_1, "CL_QUEUE_DEVICE_DEFAULT")?;
        if !self.device.device_enqueue_support()? {
            return Err(Error::Unsupported {
                feature: "CL_QUEUE_DEVICE_DEFAULT",
                needs: "device-side enqueue (CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES is 0 on this \
                        OpenCL 3.0 device)"
                    .into(),
            });
        }
        // SAFETY: a valid queue of a 2.1+ platform and device (checked).
        let q: sys::cl_command_queue =
            unsafe { get_info(Object::Queue, self.raw, sys::CL_QUEUE_DEVICE_DEFAULT) }?;
        Ok((!q.is_null()).then_some(q))
    }
}

// SAFETY: `as_raw` is the handle this wrapper owns one reference to while it lives, of the kind
// `object()` names; `into_raw` retains one more for the caller and drops the wrapper
// (`retain_then_drop`; if the retain fails, it forgets the wrapper instead).
unsafe impl crate::raw_handle::RawHandle for Queue {
    crate::raw_handle::raw_handle_field!(Queue: sys::cl_command_queue);

    /// Adopts one reference to a raw host queue (no retain), reading its context
    /// (`CL_QUEUE_CONTEXT`, retained by the new `Queue`), device and properties: PyOpenCL's
    /// `CommandQueue.from_int_ptr(ptr, retain=False)`.
    ///
    /// # Errors
    ///
    /// [`Error::Cl`] from `clGetCommandQueueInfo` or the context's and device's queries;
    /// [`Error::InvalidArgument`] for a device-side queue (`CL_QUEUE_ON_DEVICE`), which `Queue`
    /// does not drive. The reference is released on error.
    ///
    /// # Safety
    ///
    /// 1. `raw` is a valid command queue and the caller gives its reference to the new `Queue`.
    /// 2. Its device is a root device, or a sub-device that stays valid for the process's life
    ///    ([`Device::from_raw`]'s obligation: `Device` is `Copy` and holds no reference).
    unsafe fn from_raw(raw: sys::cl_command_queue) -> Result<Queue> {
        let read = || -> Result<Queue> {
            // SAFETY: obligation 1; 1.0 parameters.
            let bits: sys::cl_command_queue_properties =
                unsafe { get_info(Object::Queue, raw, sys::CL_QUEUE_PROPERTIES) }?;
            if bits & (sys::CL_QUEUE_ON_DEVICE | sys::CL_QUEUE_ON_DEVICE_DEFAULT) != 0 {
                return Err(Error::InvalidArgument(
                    "device-side queues are not supported by Queue".into(),
                ));
            }
            // SAFETY: as above; the queue's live context.
            let context = unsafe { get_info_retained(Object::Queue, raw, sys::CL_QUEUE_CONTEXT) }?;
            // SAFETY: as above.
            let dev: sys::cl_device_id =
                unsafe { get_info(Object::Queue, raw, sys::CL_QUEUE_DEVICE) }?;
            // SAFETY: the queue's device (obligation 2 for sub-devices).
            let device = unsafe { Device::from_raw(dev) }?;
            Ok(Queue {
                raw,
                context,
                device,
                properties: QueueProperties::from_bits_retain(bits),
                _live: crate::runtime::live::Live::new(),
            })
        };
        // SAFETY: obligation 1.
        unsafe { adopt_or_release(Object::Queue, raw, read) }
    }

    /// Gives a reference away without releasing it (the context reference the `Queue` held
    /// is released; the driver's queue keeps its context alive itself).
    fn into_raw(self) -> sys::cl_command_queue {
        crate::raw_handle::retain_then_drop(self)
    }
}

clone_retains!(Queue: Queue { context, device, properties, _live });
drop_releases!(Queue: Queue);
eq_by_handle!(raw: Queue);
debug_fields!(Queue: raw, device, properties);
