//! PyOpenCL's `pyopencl.characterize` on every device present: SIMD group size, local memory
//! banks, a bank-conflict analysis, SVM kinds. The heuristics take a plain [`DeviceProfile`]
//! (a toolkit can fill one from its own OpenCL bindings); the `probe` feature fills it from a
//! live device.
//!
//! Run: `cargo run -p cl-characterize --features probe --example characterize`.

use cl_characterize::probe::{profile_selected, ProbeOptions};
use cl_characterize::{why_not_local_access_conflict_free, DeviceProfile};

fn show(p: &DeviceProfile) {
    println!("{} ({})", p.name, p.platform.name);
    match cl_characterize::get_simd_group_size(p, 4) {
        Ok(Some(n)) => println!("  SIMD group size: {n}"),
        Ok(None) => println!("  SIMD group size: unknown for this vendor"),
        Err(e) => println!("  SIMD group size: n/a ({e})"),
    }
    match cl_characterize::local_memory_bank_count(p) {
        Ok(e) if e.is_guess() => println!("  local memory banks: {} (a guess)", e.value),
        Ok(e) => println!("  local memory banks: {}", e.value),
        Err(e) => println!("  local memory banks: n/a ({e})"),
    }
    // A 32x32 float tile read column-wise, and the usual fix: pad each row by one.
    for stored in [[32usize, 32], [32, 33]] {
        match why_not_local_access_conflict_free(p, 4, &[32, 32], Some(&stored)) {
            Ok(e) => println!(
                "  32x32 f32 tile stored as {stored:?}: {}-way conflict",
                e.value.multiplicity
            ),
            Err(e) => println!("  32x32 f32 tile stored as {stored:?}: n/a ({e})"),
        }
    }
    let svm = [
        (
            "coarse-grain buffer",
            cl_characterize::has_coarse_grain_buffer_svm(p),
        ),
        (
            "fine-grain buffer",
            cl_characterize::has_fine_grain_buffer_svm(p),
        ),
        (
            "fine-grain system",
            cl_characterize::has_fine_grain_system_svm(p),
        ),
    ];
    let kinds: Vec<&str> = svm
        .iter()
        .filter(|(_, has)| matches!(has, Ok(true)))
        .map(|(name, _)| *name)
        .collect();
    println!(
        "  SVM: {}",
        if kinds.is_empty() {
            "none".to_owned()
        } else {
            kinds.join(", ")
        }
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // "" selects every device of every platform (else a `PYOPENCL_TEST`-style selector).
    let (devices, errors) = profile_selected("", ProbeOptions::default())?;
    for d in &devices {
        show(&d.profile);
    }
    for e in errors {
        println!("could not profile: {e}");
    }
    Ok(())
}
