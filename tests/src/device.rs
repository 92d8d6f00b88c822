//! [`TestDevice`]: one selected device, with fresh-context factories, and the selection glue.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use cl_mem::{Context, Device, Platform, Queue};

/// A device the tests run on, as the harness hands it to each [`crate::DeviceTest`].
///
/// [`context`](TestDevice::context) and [`queue`](TestDevice::queue) make a *fresh* context each call,
/// like PyOpenCL's `ctx_factory`, so tests never share driver state.
#[derive(Debug, Clone)]
pub struct TestDevice {
    /// The device's platform.
    pub platform: Platform,
    /// The device.
    pub device: Device,
    platform_name: String,
    device_name: String,
    version: String,
    driver: String,
    platform_index: usize,
    device_index: usize,
    /// For every context [`context`](TestDevice::context) made since the harness last took them
    /// (on OpenCL 3.0 platforms), a flag its destructor callback sets: after each test the harness
    /// checks that every one was destroyed, i.e. the test released all its references and every
    /// object it made in it.
    created: Arc<Mutex<Vec<ContextGone>>>,
}

/// Device selection failed: a malformed `CL_TEST`, a selector matching nothing, or a driver error while
/// enumerating. The message names the available platforms and devices (from `cl_mem::select`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectionError(pub String);

impl fmt::Display for SelectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SelectionError {}

impl From<cl_mem::Error> for SelectionError {
    fn from(e: cl_mem::Error) -> Self {
        SelectionError(e.to_string())
    }
}

/// Drivers on which the harness registers no context destructor callbacks (so the leak check
/// after each test compares only the live-wrapper counts there): (platform substring, driver
/// version prefix, why).
const NO_DESTRUCTOR_CALLBACKS: &[(&str, &str, &str)] = &[(
    "NVIDIA",
    "580.",
    "clReleaseContext hangs inside the driver after many contexts with a \
     clSetContextDestructorCallback (glibc: 'The futex facility returned an unexpected error \
     code'); repro/nvidia_context_destructor_release_hang.c, docs/DEVICES.md",
)];

/// Set by a context's destructor callback: the context and everything made in it are gone.
#[derive(Debug, Clone)]
pub(crate) struct ContextGone(Arc<AtomicBool>);

impl ContextGone {
    /// True once the driver destroyed the context.
    pub(crate) fn is_gone(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl TestDevice {
    /// The devices `CL_TEST` (else `PYOPENCL_TEST`, else every device) selects, in selection order.
    ///
    /// With no OpenCL platform at all the list is empty (the harness then prints its no-device banner)
    /// rather than an error: the cause is the machine, not the selector.
    ///
    /// # Errors
    ///
    /// [`SelectionError`] as described there.
    pub fn selected() -> Result<Vec<TestDevice>, SelectionError> {
        if Platform::list()?.is_empty() {
            return Ok(Vec::new());
        }
        let selected = cl_mem::test_devices().map_err(|e| SelectionError(e.to_string()))?;
        selected.into_iter().map(TestDevice::new).collect()
    }

    /// Wraps a selected device, reading its names; its `platform index:device index` (the grammar's
    /// index form, which `cargo xtask test-devices` uses to pin one device) comes from the selection.
    fn new(selected: cl_mem::Selected) -> Result<TestDevice, SelectionError> {
        let device = selected.device;
        let platform = device.platform();
        Ok(TestDevice {
            platform,
            device,
            platform_name: platform.name()?.trim().to_owned(),
            device_name: device.name()?.trim().to_owned(),
            version: device
                .info::<String>(cl_raw::sys::CL_DEVICE_VERSION)?
                .trim()
                .to_owned(),
            driver: device
                .info::<String>(cl_raw::sys::CL_DRIVER_VERSION)?
                .trim()
                .to_owned(),
            platform_index: selected.platform_index,
            device_index: selected.device_index,
            created: Arc::default(),
        })
    }

    /// A fresh context on this device alone (PyOpenCL's `ctx_factory()`).
    ///
    /// # Panics
    ///
    /// When the driver cannot create one: inside a device test that is a failure with the message.
    pub fn context(&self) -> Context {
        let context = Context::new(&[self.device])
            .unwrap_or_else(|e| panic!("cannot create a context on {}: {e}", self.label()));
        // A destructor callback, not a second reference: holding one would change the reference
        // counts tests assert and keep the context's caches alive. Older platforms (Oclgrind,
        // 1.2) have no callback and get only the live-wrapper check.
        let gone = ContextGone(Arc::new(AtomicBool::new(false)));
        let flag = Arc::clone(&gone.0);
        let callbacks_hang = NO_DESTRUCTOR_CALLBACKS
            .iter()
            .any(|(p, v, _)| self.platform_name.contains(p) && self.driver.starts_with(v));
        if !callbacks_hang
            && context
                .on_destroy(move || flag.store(true, Ordering::SeqCst))
                .is_ok()
        {
            self.created
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(gone);
        }
        context
    }

    /// What [`context`](TestDevice::context) made since the last call (for the leak check after
    /// each test).
    pub(crate) fn take_created_contexts(&self) -> Vec<ContextGone> {
        std::mem::take(&mut *self.created.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// A fresh in-order queue on a fresh context of this device ([`queue.context()`](Queue::context)
    /// returns that context).
    ///
    /// # Panics
    ///
    /// When the driver cannot create them: inside a device test that is a failure with the message.
    pub fn queue(&self) -> Queue {
        let context = self.context();
        Queue::new(&context, &self.device)
            .unwrap_or_else(|e| panic!("cannot create a queue on {}: {e}", self.label()))
    }

    /// `[platform name/device name]`, the prefix of result names.
    pub fn label(&self) -> String {
        format!("[{}/{}]", self.platform_name, self.device_name)
    }

    /// `CL_PLATFORM_NAME`, trimmed.
    pub fn platform_name(&self) -> &str {
        &self.platform_name
    }

    /// `CL_DEVICE_NAME`, trimmed.
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// `CL_DEVICE_VERSION` as the driver reports it (`OpenCL 3.0 PoCL ...`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `CL_DRIVER_VERSION`, trimmed (expectations are keyed to it where a bug is version-specific).
    pub fn driver_version(&self) -> &str {
        &self.driver
    }

    /// The platform's index in `clGetPlatformIDs` order.
    pub fn platform_index(&self) -> usize {
        self.platform_index
    }

    /// The device's index within its platform's `clGetDeviceIDs(CL_DEVICE_TYPE_ALL)` list.
    pub fn device_index(&self) -> usize {
        self.device_index
    }
}
