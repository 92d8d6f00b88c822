//! Shared set-up of the criterion benches (the benches themselves are in `benches/benches/`).

use cl_mem::Queue;

/// A fresh in-order queue on the bench device: the first device `CL_TEST` (else `PYOPENCL_TEST`, else
/// all devices) selects. `None`, after saying why on stderr, when there is none: the benches then do
/// nothing rather than fail.
pub fn bench_queue() -> Option<Queue> {
    let devices = match cl_mem::test_devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cl-benches: device selection failed: {e}");
            return None;
        }
    };
    let Some(device) = devices.first().map(|s| &s.device) else {
        eprintln!(
            "cl-benches: no OpenCL device selected: nothing to bench (run `cargo xtask setup`)"
        );
        return None;
    };
    let queue = cl_mem::Context::new(&[*device]).and_then(|ctx| Queue::new(&ctx, device));
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

/// The median of `v` (the upper one of an even count); 0 for none.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// `bytes` moved in `secs` seconds, in GB/s (10^9 B/s).
pub fn gbps(bytes: usize, secs: f64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a rate")]
    let b = bytes as f64;
    b / secs / 1e9
}
