//! Side-by-side comparison with PyOpenCL's own output (feature `probe`).
//!
//! `tools/pyopencl-reference` (PyOpenCL's `pyopencl_probe.py`) prints, per device, a
//! `char` object; [`crate::DeviceReport`] serializes a `char` object with the same keys and value
//! encoding. [`compare`] pairs the devices (by platform name, device name and order) and compares
//! every key, each `why_not_local_access_conflict_free` case separately.

use serde_json::Value;

use crate::report::DeviceReport;

/// The comparison for one device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceParity {
    /// Platform name.
    pub platform: String,
    /// Device name.
    pub device: String,
    /// Keys whose values are equal (conflict cases as `why_not_local_access_conflict_free/<case>`).
    pub matched: Vec<String>,
    /// Keys whose values differ: `(key, ours, PyOpenCL's)`; a key one side lacks has `null` there.
    pub mismatched: Vec<(String, Value, Value)>,
}

impl DeviceParity {
    /// Whether every key matched.
    pub fn is_identical(&self) -> bool {
        self.mismatched.is_empty()
    }
}

/// The result of [`compare`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parity {
    /// Devices present on both sides.
    pub devices: Vec<DeviceParity>,
    /// `"platform / device"` of devices only we report.
    pub only_ours: Vec<String>,
    /// `"platform / device"` of devices only PyOpenCL reports.
    pub only_pyopencl: Vec<String>,
}

fn flatten(char_obj: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    if let Some(map) = char_obj.as_object() {
        for (k, v) in map {
            match (k.as_str(), v) {
                ("why_not_local_access_conflict_free", Value::Object(cases)) => {
                    for (case, cv) in cases {
                        out.push((format!("{k}/{case}"), cv.clone()));
                    }
                }
                _ => out.push((k.clone(), v.clone())),
            }
        }
    }
    out
}

fn key_of(c: &Value) -> (String, String) {
    let s = |k: &str| {
        c.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (s("platform"), s("name"))
}

/// Compares our reports with the JSON `pyopencl-reference` printed (`{"devices": [{"char":
/// {...}}, ...]}`).
///
/// # Errors
///
/// A message when `pyopencl` has no `devices` list or a report cannot be serialized.
pub fn compare(ours: &[DeviceReport], pyopencl: &Value) -> Result<Parity, String> {
    let theirs: Vec<&Value> = pyopencl
        .get("devices")
        .and_then(Value::as_array)
        .ok_or("the PyOpenCL output has no \"devices\" list")?
        .iter()
        .filter_map(|d| d.get("char"))
        .collect();
    let mut ours_json = Vec::new();
    for r in ours {
        ours_json.push(serde_json::to_value(&r.characterization).map_err(|e| e.to_string())?);
    }
    let mut used = vec![false; theirs.len()];
    let mut parity = Parity::default();
    for o in &ours_json {
        let key = key_of(o);
        let Some(i) = (0..theirs.len()).find(|&i| !used[i] && key_of(theirs[i]) == key) else {
            parity.only_ours.push(format!("{} / {}", key.0, key.1));
            continue;
        };
        used[i] = true;
        let ours_flat = flatten(o);
        let theirs_flat = flatten(theirs[i]);
        let mut dp = DeviceParity {
            platform: key.0,
            device: key.1,
            matched: Vec::new(),
            mismatched: Vec::new(),
        };
        let mut keys: Vec<&String> = theirs_flat.iter().map(|(k, _)| k).collect();
        for (k, _) in &ours_flat {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for k in keys {
            let a = ours_flat
                .iter()
                .find(|(x, _)| x == k)
                .map(|(_, v)| v.clone());
            let b = theirs_flat
                .iter()
                .find(|(x, _)| x == k)
                .map(|(_, v)| v.clone());
            if a == b {
                dp.matched.push(k.clone());
            } else {
                dp.mismatched.push((
                    k.clone(),
                    a.unwrap_or(Value::Null),
                    b.unwrap_or(Value::Null),
                ));
            }
        }
        parity.devices.push(dp);
    }
    for (i, t) in theirs.iter().enumerate() {
        if !used[i] {
            let k = key_of(t);
            parity.only_pyopencl.push(format!("{} / {}", k.0, k.1));
        }
    }
    Ok(parity)
}

impl Parity {
    /// A readable summary: one line per device, then each mismatch.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for d in &self.devices {
            out.push_str(&format!(
                "  {} / {}: {} of {} keys identical to PyOpenCL\n",
                d.platform,
                d.device,
                d.matched.len(),
                d.matched.len() + d.mismatched.len()
            ));
            for (k, a, b) in &d.mismatched {
                out.push_str(&format!("    DIFF {k}: ours {a}, PyOpenCL {b}\n"));
            }
        }
        for d in &self.only_ours {
            out.push_str(&format!("  {d}: not in the PyOpenCL output\n"));
        }
        for d in &self.only_pyopencl {
            out.push_str(&format!("  {d}: only in the PyOpenCL output\n"));
        }
        out
    }
}
