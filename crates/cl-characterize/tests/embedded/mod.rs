//! The recorded profiles of `tests/profiles/`, compiled into the binary: `cl-tests`' characterize
//! suite includes this file (`#[path]`) so that `device_tests` finds them on a machine without the
//! source tree (the GPU bundle, `cargo xtask device-bundle`). `golden.rs` checks that the list names
//! every file of `tests/profiles/`.

/// `(file stem, JSON text)` of every recorded profile, sorted by name.
pub(crate) const PROFILES: &[(&str, &str)] = &[
    (
        "amd-cpu-app-sdk",
        include_str!("../profiles/amd-cpu-app-sdk.json"),
    ),
    (
        "amd-gpu-rocm-gfx1030",
        include_str!("../profiles/amd-gpu-rocm-gfx1030.json"),
    ),
    (
        "apple-cpu-intel-mac",
        include_str!("../profiles/apple-cpu-intel-mac.json"),
    ),
    (
        "apple-gpu-m1",
        include_str!("../profiles/apple-gpu-m1.json"),
    ),
    (
        "intel-cpu-runtime",
        include_str!("../profiles/intel-cpu-runtime.json"),
    ),
    (
        "intel-gpu-neo-uhd770",
        include_str!("../profiles/intel-gpu-neo-uhd770.json"),
    ),
    (
        "mesa-clover-radeonsi",
        include_str!("../profiles/mesa-clover-radeonsi.json"),
    ),
    (
        "mesa-rusticl-radeonsi",
        include_str!("../profiles/mesa-rusticl-radeonsi.json"),
    ),
    (
        "nvidia-cc1.3-tesla-c1060",
        include_str!("../profiles/nvidia-cc1.3-tesla-c1060.json"),
    ),
    (
        "nvidia-cc2.0-tesla-c2050",
        include_str!("../profiles/nvidia-cc2.0-tesla-c2050.json"),
    ),
    (
        "nvidia-cc3.0-gtx-680",
        include_str!("../profiles/nvidia-cc3.0-gtx-680.json"),
    ),
    ("nvidia-h100", include_str!("../profiles/nvidia-h100.json")),
    (
        "oclgrind-21.10",
        include_str!("../profiles/oclgrind-21.10.json"),
    ),
    (
        "pocl-0.13-cpu",
        include_str!("../profiles/pocl-0.13-cpu.json"),
    ),
    (
        "pocl-0.14-cpu-arg-count-bug",
        include_str!("../profiles/pocl-0.14-cpu-arg-count-bug.json"),
    ),
    (
        "pocl-3.1-cpu",
        include_str!("../profiles/pocl-3.1-cpu.json"),
    ),
    (
        "pocl-3.1-cpu-skylake",
        include_str!("../profiles/pocl-3.1-cpu-skylake.json"),
    ),
    (
        "pocl-5.0-cpu",
        include_str!("../profiles/pocl-5.0-cpu.json"),
    ),
    (
        "pocl-cuda-nvidia",
        include_str!("../profiles/pocl-cuda-nvidia.json"),
    ),
    (
        "pocl-unparsable-version",
        include_str!("../profiles/pocl-unparsable-version.json"),
    ),
];
