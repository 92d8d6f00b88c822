//! The device report: every characterization result for one profile, as a table and as JSON.
//!
//! [`DeviceReport::new`] is pure (it reads a [`DeviceProfile`] only), so the report of a recorded
//! profile can be checked without a device. The JSON of [`DeviceReport`] (feature `serde`) has three
//! parts:
//!
//! - `char`: PyOpenCL-compatible, with the same keys and values as `pyopencl_probe.py`'s
//!   `char_report` (errors as `ERR <class>: <message>`), so the two outputs compare with `==`;
//! - `extra`: what `pyopencl_probe.py` does not record: `reasonable_work_group_size_multiple`, the
//!   queried alternatives, and every warning PyOpenCL would print, by key;
//! - `profile`: the facts the results were computed from.

use std::fmt::Write as _;

use crate::conflict::{why_not_local_access_conflict_free, LocalAccessConflict};
use crate::error::{CharacterizeError, Estimate};
use crate::heuristics::*;
use crate::profile::{
    device_type_names, device_type_pyopencl_string, DeviceProfile, SVM_ATOMICS,
    SVM_COARSE_GRAIN_BUFFER, SVM_FINE_GRAIN_BUFFER, SVM_FINE_GRAIN_SYSTEM,
};
use crate::queried::{self, QueriedSimdGroupSize};

/// Item sizes `pyopencl_probe.py` asks about.
const CONFLICT_ITEMSIZES: [usize; 5] = [1, 2, 4, 8, 16];
/// Shapes `pyopencl_probe.py` asks about (C order), in its order.
const CONFLICT_SHAPES: [&[usize]; 9] = [
    &[32, 32],
    &[16, 16],
    &[16, 17],
    &[64, 8],
    &[8, 64],
    &[33, 32],
    &[32, 33],
    &[16, 16, 16],
    &[128],
];

/// A result or the error PyOpenCL would raise for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome<T> {
    /// The function returned this value.
    Value(T),
    /// The function raised; serialized as `pyopencl_probe.py` records it (`"ERR <class>: <msg>"`).
    Error(CharacterizeError),
}

impl<T> From<Result<T, CharacterizeError>> for Outcome<T> {
    fn from(r: Result<T, CharacterizeError>) -> Self {
        match r {
            Ok(v) => Self::Value(v),
            Err(e) => Self::Error(e),
        }
    }
}

impl<T: std::fmt::Debug> Outcome<T> {
    fn text(&self, f: impl Fn(&T) -> String) -> String {
        match self {
            Self::Value(v) => f(v),
            // PyOpenCL raises where the question does not apply to the device (a bank count of
            // cache-based local memory, SVM before OpenCL 2.0): no answer, and why.
            Self::Error(e) => format!("n/a ({e})"),
        }
    }
}

/// The results keyed exactly as `pyopencl_probe.py`'s `char_report`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub(crate) struct PyOpenClCharacterization {
    /// Device name.
    pub name: String,
    /// Device vendor.
    pub vendor: String,
    /// Device version.
    pub version: String,
    /// Driver version.
    pub driver_version: String,
    /// `cl.device_type.to_string(dev.type)`, quirks included (`ALL`, `_is_bitfield`).
    #[cfg_attr(feature = "serde", serde(rename = "type"))]
    pub device_type: String,
    /// Platform name.
    pub platform: String,
    /// Platform version.
    pub platform_version: String,
    /// `get_simd_group_size(dev, 1)`.
    pub simd_group_size_1: Outcome<Option<usize>>,
    /// `get_simd_group_size(dev, 2)`.
    pub simd_group_size_2: Outcome<Option<usize>>,
    /// `get_simd_group_size(dev, 4)`.
    pub simd_group_size_4: Outcome<Option<usize>>,
    /// `get_simd_group_size(dev, 8)`.
    pub simd_group_size_8: Outcome<Option<usize>>,
    /// `get_simd_group_size(dev, 16)`.
    pub simd_group_size_16: Outcome<Option<usize>>,
    /// `local_memory_bank_count(dev)`.
    pub local_memory_bank_count: Outcome<u32>,
    /// `local_memory_access_granularity(dev)`.
    pub local_memory_access_granularity: u32,
    /// `simultaneous_work_items_on_local_access(dev)`.
    pub simultaneous_work_items_on_local_access: u32,
    /// `usable_local_mem_size(dev)`.
    pub usable_local_mem_size: u64,
    /// `usable_local_mem_size(dev, 4)`.
    pub usable_local_mem_size_nargs4: u64,
    /// `nv_compute_capability(dev)`.
    pub nv_compute_capability: Option<(u32, u32)>,
    /// `has_double_support(dev)`.
    pub has_double_support: bool,
    /// `has_amd_double_support(dev)`.
    pub has_amd_double_support: bool,
    /// `get_fast_inaccurate_build_options(dev)`.
    pub fast_inaccurate_build_options: Vec<&'static str>,
    /// `has_struct_arg_count_bug(dev)`: `false`, `"apple"` or `"pocl"`.
    pub has_struct_arg_count_bug: Outcome<StructArgCountBug>,
    /// `has_src_build_cache(dev)`.
    pub has_src_build_cache: Option<bool>,
    /// `has_coarse_grain_buffer_svm(dev)`.
    pub has_coarse_grain_buffer_svm: Outcome<bool>,
    /// `has_fine_grain_buffer_svm(dev)`.
    pub has_fine_grain_buffer_svm: Outcome<bool>,
    /// `has_fine_grain_system_svm(dev)`.
    pub has_fine_grain_system_svm: Outcome<bool>,
    /// `has_fine_grain_buffer_svm_atomics(dev)`.
    pub has_fine_grain_buffer_svm_atomics: Outcome<bool>,
    /// `has_fine_grain_system_svm_atomics(dev)`.
    pub has_fine_grain_system_svm_atomics: Outcome<bool>,
    /// `get_pocl_version(dev.platform)`.
    pub pocl_version: Option<(u32, u32)>,
    /// `why_not_local_access_conflict_free` over [`CONFLICT_ITEMSIZES`] x [`CONFLICT_SHAPES`] and
    /// `(32, 32)` stored as `(32, 33)`; keys `"4:16x16"`, `"4:32x32 stored 32x33"`.
    pub why_not_local_access_conflict_free: ConflictTable,
}

/// The `why_not_local_access_conflict_free` results in `pyopencl_probe.py`'s key order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ConflictTable(Vec<(String, Outcome<LocalAccessConflict>)>);

/// What the report adds beyond `pyopencl_probe.py`'s keys.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub(crate) struct Extras {
    /// `reasonable_work_group_size_multiple(dev)` (PyOpenCL; not in `pyopencl_probe.py`).
    pub reasonable_work_group_size_multiple: Outcome<usize>,
    /// [`queried::simd_group_size`].
    pub queried_simd_group_size: Option<QueriedSimdGroupSize>,
    /// [`DeviceProfile::preferred_work_group_size_multiple`] (OpenCL 3.0 device query).
    pub queried_preferred_work_group_size_multiple: Option<usize>,
    /// [`DeviceProfile::amd_wavefront_width`].
    pub queried_amd_wavefront_width: Option<u32>,
    /// [`DeviceProfile::amd_local_mem_banks`].
    pub queried_amd_local_mem_banks: Option<u32>,
    /// [`DeviceProfile::intel_sub_group_sizes`].
    pub queried_intel_sub_group_sizes: Option<Vec<usize>>,
    /// Warnings PyOpenCL would print, by the `char` key that produced them (conflict keys are
    /// prefixed `why_not_local_access_conflict_free/`), in report order.
    pub warnings: Vec<(String, Vec<String>)>,
    /// The `char` keys whose value is a guess (PyOpenCL's "wildly guessing").
    pub guesses: Vec<String>,
}

/// Everything the report says about one device: every characterization result for one profile,
/// as a table ([`DeviceReport::to_table`]) and as JSON (feature `serde`), whose three parts are
///
/// - `char`: PyOpenCL-compatible, with the same keys and values as `pyopencl_probe.py`'s
///   `char_report` (errors as `ERR <class>: <message>`), so the two outputs compare with `==`;
/// - `extra`: what `pyopencl_probe.py` does not record: `reasonable_work_group_size_multiple`, the
///   queried alternatives, every warning PyOpenCL would print (`warnings`, by key) and the keys
///   whose value is a guess (`guesses`);
/// - `profile`: the facts the results were computed from.
///
/// Each value is also what the heuristic of the same name returns for [`DeviceReport::profile`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DeviceReport {
    /// PyOpenCL-compatible results.
    #[cfg_attr(feature = "serde", serde(rename = "char"))]
    pub(crate) characterization: PyOpenClCharacterization,
    /// Results PyOpenCL's probe script does not record.
    pub(crate) extra: Extras,
    /// The facts.
    pub profile: DeviceProfile,
}

/// `(key, shape, stored shape)`.
type ConflictCase<'a> = (String, &'a [usize], Option<&'a [usize]>);

struct Collector {
    warnings: Vec<(String, Vec<String>)>,
    guesses: Vec<String>,
}

impl Collector {
    fn take<T>(&mut self, key: &str, e: Estimate<T>) -> T {
        if e.is_guess() {
            self.guesses.push(key.to_owned());
        }
        if !e.warnings.is_empty() {
            self.warnings.push((
                key.to_owned(),
                e.warnings.iter().map(ToString::to_string).collect(),
            ));
        }
        e.value
    }

    fn take_result<T>(
        &mut self,
        key: &str,
        r: Result<Estimate<T>, CharacterizeError>,
    ) -> Outcome<T> {
        r.map(|e| self.take(key, e)).into()
    }
}

impl DeviceReport {
    /// Computes every result for `profile`.
    pub fn new(profile: &DeviceProfile) -> Self {
        let dev = profile;
        let mut c = Collector {
            warnings: Vec::new(),
            guesses: Vec::new(),
        };
        let simd = |n| Outcome::from(get_simd_group_size(dev, n));
        let bank = local_memory_bank_count(dev);
        let local_memory_bank_count = c.take_result("local_memory_bank_count", bank);
        let sim_wi = c.take(
            "simultaneous_work_items_on_local_access",
            simultaneous_work_items_on_local_access(dev),
        );
        let struct_bug = c.take_result("has_struct_arg_count_bug", has_struct_arg_count_bug(dev));
        let pocl_version = c.take("pocl_version", get_pocl_version(dev, None));

        let mut conflicts = Vec::new();
        for itemsize in CONFLICT_ITEMSIZES {
            let mut cases: Vec<ConflictCase<'_>> = CONFLICT_SHAPES
                .iter()
                .map(|shape| (format!("{itemsize}:{}", shape_key(shape)), *shape, None))
                .collect();
            cases.push((
                format!("{itemsize}:32x32 stored 32x33"),
                &[32, 32],
                Some(&[32, 33]),
            ));
            for (key, shape, stored) in cases {
                let r = why_not_local_access_conflict_free(dev, itemsize, shape, stored);
                let outcome =
                    c.take_result(&format!("why_not_local_access_conflict_free/{key}"), r);
                conflicts.push((key, outcome));
            }
        }

        let characterization = PyOpenClCharacterization {
            name: dev.name.clone(),
            vendor: dev.vendor.clone(),
            version: dev.version.clone(),
            driver_version: dev.driver_version.clone(),
            device_type: device_type_pyopencl_string(dev.device_type),
            platform: dev.platform.name.clone(),
            platform_version: dev.platform.version.clone(),
            simd_group_size_1: simd(1),
            simd_group_size_2: simd(2),
            simd_group_size_4: simd(4),
            simd_group_size_8: simd(8),
            simd_group_size_16: simd(16),
            local_memory_bank_count,
            local_memory_access_granularity: local_memory_access_granularity(dev),
            simultaneous_work_items_on_local_access: sim_wi,
            usable_local_mem_size: usable_local_mem_size(dev, None),
            usable_local_mem_size_nargs4: usable_local_mem_size(dev, Some(4)),
            nv_compute_capability: nv_compute_capability(dev),
            has_double_support: has_double_support(dev),
            has_amd_double_support: has_amd_double_support(dev),
            fast_inaccurate_build_options: get_fast_inaccurate_build_options(dev),
            has_struct_arg_count_bug: struct_bug,
            has_src_build_cache: has_src_build_cache(dev),
            has_coarse_grain_buffer_svm: has_coarse_grain_buffer_svm(dev).into(),
            has_fine_grain_buffer_svm: has_fine_grain_buffer_svm(dev).into(),
            has_fine_grain_system_svm: has_fine_grain_system_svm(dev).into(),
            has_fine_grain_buffer_svm_atomics: has_fine_grain_buffer_svm_atomics(dev).into(),
            has_fine_grain_system_svm_atomics: has_fine_grain_system_svm_atomics(dev).into(),
            pocl_version,
            why_not_local_access_conflict_free: ConflictTable(conflicts),
        };
        let extra = Extras {
            reasonable_work_group_size_multiple: reasonable_work_group_size_multiple(dev).into(),
            queried_simd_group_size: queried::simd_group_size(dev),
            queried_preferred_work_group_size_multiple: dev.preferred_work_group_size_multiple,
            queried_amd_wavefront_width: dev.amd_wavefront_width,
            queried_amd_local_mem_banks: dev.amd_local_mem_banks,
            queried_intel_sub_group_sizes: dev.intel_sub_group_sizes.clone(),
            warnings: c.warnings,
            guesses: c.guesses,
        };
        Self {
            characterization,
            extra,
            profile: profile.clone(),
        }
    }

    /// The report as a readable two-column table (facts, PyOpenCL results, queried alternatives,
    /// bank conflicts, warnings).
    pub fn to_table(&self) -> String {
        format_rows(&self.rows())
    }

    /// The rows of [`DeviceReport::to_table`]: `(label, value)`, section headers as `"[name]"`
    /// labels; what `cl-report` puts side by side in its Markdown table.
    pub fn rows(&self) -> Vec<(String, String)> {
        let ch = &self.characterization;
        let p = &self.profile;
        let ex = &self.extra;
        let mut rows: Vec<(String, String)> = Vec::new();
        let mut row = |k: &str, v: String| rows.push((k.to_owned(), v));
        let opt = |v: Option<String>| v.unwrap_or_else(|| "None".to_owned());
        let pair = |v: Option<(u32, u32)>| opt(v.map(|(a, b)| format!("({a}, {b})")));
        let guess = |key: &str| {
            if ex.guesses.iter().any(|g| g == key) {
                "  (guess)"
            } else {
                ""
            }
        };

        row("[facts]", String::new());
        row(
            "platform",
            format!("{} ({})", p.platform.name, p.platform.vendor),
        );
        row("platform version", p.platform.version.clone());
        row("device", format!("{} ({})", p.name, p.vendor));
        row("device version", p.version.clone());
        row("driver version", p.driver_version.clone());
        row(
            "type",
            format!(
                "{} = {}",
                p.device_type,
                device_type_names(p.device_type).join(" | ")
            ),
        );
        row(
            "local memory",
            format!("{} bytes, {:?}", p.local_mem_size, p.local_mem_type),
        );
        row(
            "SVM capabilities",
            p.svm_capabilities.map_or_else(
                || "n/a (not queried: OpenCL before 2.0)".to_owned(),
                svm_names,
            ),
        );
        row("NV compute capability", pair(p.nv_compute_capability));
        row("NV warp size", shown(p.nv_warp_size));
        row(
            "AMD wavefront / SIMD width / banks",
            format!(
                "{} / {} / {}",
                shown(p.amd_wavefront_width),
                shown(p.amd_simd_width),
                shown(p.amd_local_mem_banks)
            ),
        );
        row(
            "Intel sub-group sizes",
            opt(p.intel_sub_group_sizes.as_ref().map(|v| format!("{v:?}"))),
        );
        row(
            "preferred WG multiple (device)",
            shown(p.preferred_work_group_size_multiple),
        );
        row(
            "preferred WG multiple (kernel probe)",
            shown(p.kernel_preferred_work_group_size_multiple),
        );
        row("struct arg count probe", shown(p.pocl_struct_arg_count_bug));
        row(
            "extensions",
            format!("{} names", p.extensions.split_whitespace().count()),
        );

        row("[pyopencl.characterize]", String::new());
        let simd_text = |o: &Outcome<Option<usize>>| o.text(|v| shown(*v));
        row("get_simd_group_size(dev, 1..16)", {
            let all = [
                &ch.simd_group_size_1,
                &ch.simd_group_size_2,
                &ch.simd_group_size_4,
                &ch.simd_group_size_8,
                &ch.simd_group_size_16,
            ];
            let texts: Vec<String> = all.iter().map(|o| simd_text(o)).collect();
            if texts.iter().all(|t| *t == texts[0]) {
                texts[0].clone()
            } else {
                texts.join(" / ")
            }
        });
        row(
            "reasonable_work_group_size_multiple",
            ex.reasonable_work_group_size_multiple
                .text(|v| v.to_string()),
        );
        row(
            "local_memory_bank_count",
            ch.local_memory_bank_count.text(|v| v.to_string()) + guess("local_memory_bank_count"),
        );
        row(
            "local_memory_access_granularity",
            ch.local_memory_access_granularity.to_string(),
        );
        row(
            "simultaneous_work_items_on_local_access",
            ch.simultaneous_work_items_on_local_access.to_string()
                + guess("simultaneous_work_items_on_local_access"),
        );
        row(
            "usable_local_mem_size",
            ch.usable_local_mem_size.to_string(),
        );
        row(
            "usable_local_mem_size(nargs=4)",
            ch.usable_local_mem_size_nargs4.to_string(),
        );
        row("nv_compute_capability", pair(ch.nv_compute_capability));
        row("has_double_support", py_bool(ch.has_double_support));
        row("has_amd_double_support", py_bool(ch.has_amd_double_support));
        row(
            "get_fast_inaccurate_build_options",
            ch.fast_inaccurate_build_options.join(" "),
        );
        row(
            "has_struct_arg_count_bug",
            ch.has_struct_arg_count_bug.text(|v| v.as_str().to_owned()),
        );
        row(
            "has_src_build_cache",
            opt(ch.has_src_build_cache.map(py_bool)),
        );
        for (name, o) in [
            (
                "has_coarse_grain_buffer_svm",
                &ch.has_coarse_grain_buffer_svm,
            ),
            ("has_fine_grain_buffer_svm", &ch.has_fine_grain_buffer_svm),
            ("has_fine_grain_system_svm", &ch.has_fine_grain_system_svm),
            (
                "has_fine_grain_buffer_svm_atomics",
                &ch.has_fine_grain_buffer_svm_atomics,
            ),
            (
                "has_fine_grain_system_svm_atomics",
                &ch.has_fine_grain_system_svm_atomics,
            ),
        ] {
            row(name, o.text(|v| py_bool(*v)));
        }
        row("get_pocl_version", pair(ch.pocl_version));

        row("[queried alternatives]", String::new());
        row(
            "SIMD group size (queried)",
            opt(ex
                .queried_simd_group_size
                .map(|q| format!("{} ({:?})", q.size, q.source))),
        );
        row(
            "preferred WG multiple (OpenCL 3.0)",
            shown(ex.queried_preferred_work_group_size_multiple),
        );
        row(
            "AMD local memory banks",
            shown(ex.queried_amd_local_mem_banks),
        );

        row(
            "[why_not_local_access_conflict_free]",
            "multiplicity (axis, bank)".to_owned(),
        );
        row(
            "legend",
            "row `N:AxB` = N-byte items in an array of shape AxB (C order), `stored 32x33` = padded \
             storage; value `Mx` = M work items hit one bank at once (1x = conflict-free), on that \
             array axis and bank"
                .to_owned(),
        );
        let cases = &ch.why_not_local_access_conflict_free.0;
        let first_error = cases.first().and_then(|(_, o)| match o {
            Outcome::Error(e) => Some(e),
            Outcome::Value(_) => None,
        });
        match first_error {
            // A CPU with cache-based local memory: every case raises the same error.
            Some(e) if cases.iter().all(|(_, o)| *o == Outcome::Error(e.clone())) => {
                row(&format!("all {} cases", cases.len()), format!("n/a ({e})"));
            }
            _ => {
                for (key, o) in cases {
                    row(key, o.text(conflict_summary));
                }
            }
        }

        if !ex.warnings.is_empty() {
            row("[warnings]", String::new());
            let mut seen: Vec<&str> = Vec::new();
            for (key, ws) in &ex.warnings {
                for w in ws {
                    if !seen.contains(&w.as_str()) {
                        seen.push(w);
                        row(key, w.clone());
                    }
                }
            }
        }

        rows
    }
}

/// [`DeviceReport::rows`] (or rows like them) as the two-column text of
/// [`DeviceReport::to_table`], section headers flush left.
pub fn format_rows(rows: &[(String, String)]) -> String {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in rows {
        if k.starts_with('[') {
            let _ = writeln!(
                out,
                "  {k}{}",
                if v.is_empty() {
                    String::new()
                } else {
                    format!("  {v}")
                }
            );
        } else {
            let _ = writeln!(out, "    {k:<width$}  {v}");
        }
    }
    out
}

/// `CL_DEVICE_SVM_CAPABILITIES` by name (`"none"` for 0).
fn svm_names(c: u64) -> String {
    let names: Vec<&str> = [
        (SVM_COARSE_GRAIN_BUFFER, "coarse-grain buffer"),
        (SVM_FINE_GRAIN_BUFFER, "fine-grain buffer"),
        (SVM_FINE_GRAIN_SYSTEM, "fine-grain system"),
        (SVM_ATOMICS, "atomics"),
    ]
    .into_iter()
    .filter(|&(bit, _)| c & bit != 0)
    .map(|(_, n)| n)
    .collect();
    let unknown = c & !0xf;
    match (names.is_empty(), unknown) {
        (true, 0) => "none".to_owned(),
        (_, 0) => names.join(", "),
        _ => format!("{}, unknown bits {unknown:#x}", names.join(", ")),
    }
}

/// An optional figure as PyOpenCL prints it (`None` when absent).
fn shown<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "None".to_owned(), |v| v.to_string())
}

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_owned()
}

fn shape_key(shape: &[usize]) -> String {
    shape
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// `"8x (axis 1, bank 24)"` from PyOpenCL's explanation text.
fn conflict_summary(c: &LocalAccessConflict) -> String {
    let Some(text) = &c.explanation else {
        return format!("{}x (conflict-free)", c.multiplicity);
    };
    let axis = text
        .split_once(" on axis ")
        .and_then(|(_, rest)| rest.split_once(' '))
        .map_or("?", |(a, _)| a);
    let bank = text.rsplit_once("access bank ").map_or("?", |(_, b)| b);
    format!("{}x (axis {axis}, bank {bank})", c.multiplicity)
}

#[cfg(feature = "serde")]
mod ser {
    use serde::ser::{SerializeMap, SerializeTuple};
    use serde::{Serialize, Serializer};

    use super::{ConflictTable, Outcome, StructArgCountBug};
    use crate::conflict::LocalAccessConflict;

    impl<T: Serialize> Serialize for Outcome<T> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Self::Value(v) => v.serialize(s),
                Self::Error(e) => s.serialize_str(&e.pyopencl_record()),
            }
        }
    }

    impl Serialize for StructArgCountBug {
        /// PyOpenCL's value: `false`, `"apple"` or `"pocl"`.
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Self::None => s.serialize_bool(false),
                other => s.serialize_str(other.as_str()),
            }
        }
    }

    /// `[multiplicity, explanation-or-null]`, as Python's tuple becomes JSON.
    pub(super) struct ConflictPair<'a>(pub(super) &'a LocalAccessConflict);

    impl Serialize for ConflictPair<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut t = s.serialize_tuple(2)?;
            t.serialize_element(&self.0.multiplicity)?;
            t.serialize_element(&self.0.explanation)?;
            t.end()
        }
    }

    impl Serialize for ConflictTable {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(self.0.len()))?;
            for (key, outcome) in &self.0 {
                match outcome {
                    Outcome::Value(c) => m.serialize_entry(key, &ConflictPair(c))?,
                    Outcome::Error(e) => m.serialize_entry(key, &e.pyopencl_record())?,
                }
            }
            m.end()
        }
    }
}
