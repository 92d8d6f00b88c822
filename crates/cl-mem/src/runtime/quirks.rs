//! Driver quirks: the one place that reads a platform's name and version to decide how to work
//! around its bugs. Decided once per platform; each flag names its reproduction under `repro/` and
//! its section of docs/DEVICES.md.

use std::sync::{Mutex, PoisonError};

use crate::runtime::platform::Platform;

/// What a platform's driver needs worked around.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Quirks {
    /// PoCL: concurrent map commands of one allocation crash it, so they run one after another
    /// (`repro/pocl_concurrent_read_maps.c`, DEVICES.md#pocl-concurrent-maps).
    pub(crate) orders_map_commands: bool,
    /// PoCL: an event that fails never runs its callbacks, so futures also poll
    /// (`repro/pocl_failed_wait_event.c`, DEVICES.md#pocl).
    pub(crate) failed_events_need_polling: bool,
    /// PoCL: `clEnqueueFillImage` on a 1-D buffer image crashes
    /// (`repro/pocl_fill_image1d_buffer_crash.c`, DEVICES.md#pocl).
    pub(crate) fill_image1d_buffer_crashes: bool,
    /// PoCL: an image in a context of sub-devices aborts in `clEnqueueWriteImage`
    /// (`repro/pocl_subdevice_image_write_abort.c`, DEVICES.md#pocl-subdevice-images).
    pub(crate) subdevice_images_abort: bool,
    /// PoCL (3.1 and 5.0 seen): `clEnqueueCopyBufferRect` with a sub-buffer on either side
    /// crashes; the same copy between the roots works (`repro/pocl_copy_rect_sub_buffer.c`,
    /// DEVICES.md#pocl-copy-rect-sub-buffer).
    pub(crate) copy_rect_sub_buffer_crashes: bool,
    /// Oclgrind: not thread-safe, and it runs callbacks on the calling thread, so callbacks' work
    /// runs where it calls them instead of on the callback worker (`runtime/worker.rs`,
    /// DEVICES.md#oclgrind-threads-release).
    pub(crate) callbacks_in_place: bool,
    /// NVIDIA (580.159.04): the first `clEnqueueSVMMap` of coarse-grain SVM of a context over two
    /// GPUs kills the process (`repro/nvidia_two_gpu_image_svm.c`, DEVICES.md#nvidia-multi-gpu-svm).
    pub(crate) multi_gpu_svm_crashes: bool,
    /// NVIDIA (580.159.04): the driver copies or migrates a buffer between two GPUs of one context
    /// 20-50x slower than pinned chunks through the host, so `TransferPath::Auto` sends such copies
    /// through them (`buffer/between.rs`; docs/PERFORMANCE.md#between-two-gpus-run-d-and-run-x,
    /// `multi_device_bandwidth`).
    pub(crate) cross_device_copy_slow: bool,
}

impl Quirks {
    /// The quirks of a platform with this `CL_PLATFORM_NAME` (no quirk seen so far depends on
    /// the driver's version: PoCL 3.1 and 5.0 share theirs).
    pub(crate) fn of(name: &str) -> Quirks {
        let pocl = name.contains("Portable Computing Language");
        Quirks {
            callbacks_in_place: name.contains("Oclgrind"),
            multi_gpu_svm_crashes: name.contains("NVIDIA"),
            cross_device_copy_slow: name.contains("NVIDIA"),
            orders_map_commands: pocl,
            failed_events_need_polling: pocl,
            fill_image1d_buffer_crashes: pocl,
            subdevice_images_abort: pocl,
            copy_rect_sub_buffer_crashes: pocl,
        }
    }
}

/// The quirks of `platform`, read once (a platform's name and version do not change).
pub(crate) fn quirks(platform: &Platform) -> Quirks {
    static KNOWN: Mutex<Vec<(usize, Quirks)>> = Mutex::new(Vec::new());
    let key = platform.as_raw() as usize;
    let mut known = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&(_, q)) = known.iter().find(|(k, _)| *k == key) {
        return q;
    }
    let q = Quirks::of(&platform.name().unwrap_or_default());
    known.push((key, q));
    q
}

#[cfg(test)]
mod tests {
    use super::Quirks;

    #[test]
    fn each_platform_gets_its_own_workarounds() {
        let pocl = Quirks::of("Portable Computing Language");
        assert!(pocl.copy_rect_sub_buffer_crashes && pocl.orders_map_commands);
        assert!(!pocl.callbacks_in_place && !pocl.multi_gpu_svm_crashes);
        let nvidia = Quirks::of("NVIDIA CUDA");
        assert!(nvidia.multi_gpu_svm_crashes && !nvidia.copy_rect_sub_buffer_crashes);
        assert!(nvidia.cross_device_copy_slow && !pocl.cross_device_copy_slow);
        assert!(Quirks::of("Oclgrind").callbacks_in_place);
        assert_eq!(Quirks::of("Intel(R) OpenCL"), Quirks::default());
    }
}
