//! Tests of the harness's own device plumbing: what every other suite relies on.

use cl_mem::RawHandle;
use cl_tests::{device_test, TestDevice, TestResult};

device_test!(context_is_fresh_per_call);
fn context_is_fresh_per_call(dev: &TestDevice) -> TestResult {
    let a = dev.context();
    let b = dev.context();
    assert_ne!(a, b, "two calls must give two distinct contexts");
    assert_eq!(a.devices(), [dev.device]);
    assert_eq!(a.reference_count()?, 1);
    Ok(())
}

device_test!(queue_is_in_order_on_the_test_device);
fn queue_is_in_order_on_the_test_device(dev: &TestDevice) -> TestResult {
    let q = dev.queue();
    assert_eq!(*q.device(), dev.device);
    assert_eq!(q.properties(), cl_mem::QueueProperties::empty());
    assert_eq!(q.context().devices(), [dev.device]);
    q.finish()?;
    Ok(())
}

device_test!(label_names_platform_and_device);
fn label_names_platform_and_device(dev: &TestDevice) -> TestResult {
    assert_eq!(dev.platform_name(), dev.platform.name()?.trim());
    assert_eq!(dev.device_name(), dev.device.name()?.trim());
    assert_eq!(
        dev.label(),
        format!("[{}/{}]", dev.platform_name(), dev.device_name())
    );
    assert_eq!(dev.device.platform(), dev.platform);
    let listed = dev.platform.devices(cl_mem::DeviceType::ALL)?;
    assert_eq!(listed.get(dev.device_index()), Some(&dev.device));
    assert!(
        dev.version().starts_with("OpenCL "),
        "CL_DEVICE_VERSION `{}`",
        dev.version()
    );
    Ok(())
}
