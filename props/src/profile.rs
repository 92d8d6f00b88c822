//! Target `profile`: `DeviceProfile` JSON (the recorded profiles) and the report over it.
//!
//! Input: JSON text (the corpus starts from the recorded profiles of real devices).
//!
//! Properties:
//! - `serde_json::from_str::<DeviceProfile>` never panics;
//! - a profile that parses serialises, and that text parses back to the same profile and
//!   serialises to the same text (a fixpoint);
//! - every heuristic over it answers (a value or a typed error): `DeviceReport::new` and its
//!   table never panic, the report serialises, and its `char` object has the same keys as
//!   every other profile's (the keys of PyOpenCL's probe script, whatever the facts).

use cl_characterize::{DeviceProfile, DeviceReport};

/// The properties above, for one input.
///
/// # Panics
///
/// When a property does not hold.
pub fn check(data: &[u8]) {
    // Bytes (as files are read) and text give the same answer. Invalid UTF-8 inside an ignored
    // (unknown) field is skipped by serde_json's byte reader, so bytes may parse where text cannot.
    let from_bytes = serde_json::from_slice::<DeviceProfile>(data).ok();
    if let Ok(text) = std::str::from_utf8(data) {
        let from_text = serde_json::from_str::<DeviceProfile>(text).ok();
        assert_eq!(from_text, from_bytes, "text and bytes parse differently");
    }
    if let Some(profile) = from_bytes {
        check_profile(&profile);
    }
}

/// The properties for one parsed profile.
///
/// # Panics
///
/// When a property does not hold.
pub fn check_profile(profile: &DeviceProfile) {
    let json = serde_json::to_string(profile).expect("a profile serialises");
    let back: DeviceProfile = serde_json::from_str(&json).expect("its own JSON parses");
    assert_eq!(&back, profile, "JSON round trip of {json}");
    assert_eq!(
        serde_json::to_string(&back).ok().as_deref(),
        Some(json.as_str())
    );
    let report = DeviceReport::new(profile);
    assert_eq!(&report.profile, profile);
    assert!(!report.to_table().is_empty());
    assert_eq!(
        char_keys(&report),
        char_keys(&DeviceReport::new(&DeviceProfile::default())),
        "the report's PyOpenCL keys depend on the facts"
    );
}

/// The keys of the report's PyOpenCL-compatible `char` object.
fn char_keys(report: &DeviceReport) -> Vec<String> {
    let value = serde_json::to_value(report).expect("a report serialises");
    let object = value
        .get("char")
        .and_then(serde_json::Value::as_object)
        .expect("the report has a `char` object");
    object.keys().cloned().collect()
}
