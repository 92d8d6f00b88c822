//! Shared set-up of the criterion benches (the benches themselves are in `benches/benches/`).

use cl_mem::Queue;

/// A fresh in-order queue on the bench device: the first device `CL_TEST` (else `PYOPENCL_TEST`, else
/// all devices) selects. `None`, after saying why on stderr, when there is none: the benches then do
/// nothing rather than fail.
pub fn bench_queue() -> Option<Queue> {
    let devices = match cl_mem::select::test_devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cl-benches: device selection failed: {e}");
            return None;
        }
    };
    let Some(device) = devices.first() else {
        eprintln!(
            "cl-benches: no OpenCL device selected: nothing to bench (run `cargo xtask setup`)"
        );
        return None;
    };
    let queue = cl_mem::Context::from_device(device).and_then(|ctx| Queue::new(&ctx, device));
    match queue {
        Ok(q) => {
            let name = device.name().unwrap_or_default();
            eprintln!(
                "cl-benches: benching on {} / {}",
                device.platform().name().unwrap_or_default(),
                name.trim()
            );
            Some(q)
        }
        Err(e) => {
            eprintln!("cl-benches: cannot create a queue: {e}");
            None
        }
    }
}
