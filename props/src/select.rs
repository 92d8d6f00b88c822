//! Target `select`: the device-selection grammar (`CL_TEST`, `CL_CTX`, `PYOPENCL_TEST`).
//!
//! Input: one byte picks a catalogue of platforms and devices from names real runtimes report
//! (so selectors can match), the rest is the selector text.
//!
//! Properties:
//! - `Selector::parse` never panics; an error is `Syntax` or `Empty` naming one `;`-separated
//!   entry of the input, `Syntax` exactly for an entry with 3+ `:` parts;
//! - a parsed selector has one entry per `;`-separated piece (none for blank text) and
//!   re-parses to itself from its rendering (names verbatim, indices in decimal);
//! - `resolve` never panics and equals a plain model of the documented semantics (Python
//!   indices, first case-insensitive substring match of `"name vendor"`): the same pairs, all in
//!   range, or the same typed error.

use cl_raw::select::{Entry, Ident, PlatformEntry, SelectError, Selector};

use crate::input::Input;

/// `(name, vendor)`.
type Named = (&'static str, &'static str);

/// Names real runtimes report (platform name, vendor, devices).
const PLATFORMS: &[(&str, &str, &[Named])] = &[
    (
        "Oclgrind",
        "University of Bristol",
        &[("Oclgrind Simulator", "University of Bristol")],
    ),
    (
        "Portable Computing Language",
        "The pocl project",
        &[
            ("pthread-haswell-AMD EPYC 7B12", "AuthenticAMD"),
            ("cpu-minimal", "GenuineIntel"),
        ],
    ),
    (
        "Intel(R) OpenCL",
        "Intel(R) Corporation",
        &[("Intel(R) Xeon(R) CPU", "Intel(R) Corporation")],
    ),
    (
        "NVIDIA CUDA",
        "NVIDIA Corporation",
        &[
            ("NVIDIA H100 80GB HBM3", "NVIDIA Corporation"),
            ("NVIDIA H200", "NVIDIA Corporation"),
        ],
    ),
    ("Empty Platform", "Nobody", &[]),
    // Case folding that changes length (U+0130 lowercases to two chars).
    ("İNTEL ǅ", "Ωmega", &[("Straße GPU", "ǅevice")]),
];

/// The catalogue picked by `pick`: a bit per platform, in `PLATFORMS` order, twice for the upper
/// bits (duplicate platforms are real: two PoCL installations).
fn catalogue(pick: u8) -> Vec<PlatformEntry> {
    let mut out = Vec::new();
    for (i, &(name, vendor, devices)) in PLATFORMS.iter().enumerate() {
        if pick & (1 << i) != 0 {
            out.push(PlatformEntry {
                name: name.into(),
                vendor: vendor.into(),
                devices: devices.iter().map(|&(n, v)| (n.into(), v.into())).collect(),
            });
        }
    }
    if pick & 0xC0 != 0 && !out.is_empty() {
        let again = out[usize::from(pick >> 6) % out.len()].clone();
        out.push(again);
    }
    out
}

/// The text `parse` reads back as `sel` (names verbatim, indices in decimal).
pub fn render(sel: &Selector) -> String {
    let ident = |i: &Ident| match i {
        Ident::Index(n) => n.to_string(),
        Ident::Name(s) => s.clone(),
    };
    sel.entries
        .iter()
        .map(|e| match &e.devices {
            None => ident(&e.platform),
            Some(d) => format!(
                "{}:{}",
                ident(&e.platform),
                d.iter().map(ident).collect::<Vec<_>>().join(",")
            ),
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The model of `find`: Python's index semantics or the first case-insensitive substring match.
fn model_find(ident: &Ident, items: &[(String, String)]) -> Option<usize> {
    match ident {
        Ident::Index(i) => {
            let len = i128::try_from(items.len()).ok()?;
            let i = i128::from(*i);
            let idx = if i < 0 { i + len } else { i };
            if (0..len).contains(&idx) {
                usize::try_from(idx).ok()
            } else {
                None
            }
        }
        Ident::Name(n) => {
            let needle = n.to_lowercase();
            items
                .iter()
                .position(|(a, b)| format!("{a} {b}").to_lowercase().contains(&needle))
        }
    }
}

/// What `resolve` must return: the pairs, or which error (compared by variant and selector).
fn model_resolve(sel: &Selector, cat: &[PlatformEntry]) -> Result<Vec<(usize, usize)>, String> {
    if cat.is_empty() {
        return Err("no platforms".into());
    }
    if sel.entries.is_empty() {
        return Ok(cat
            .iter()
            .enumerate()
            .flat_map(|(p, e)| (0..e.devices.len()).map(move |d| (p, d)))
            .collect());
    }
    let plats: Vec<(String, String)> = cat
        .iter()
        .map(|p| (p.name.clone(), p.vendor.clone()))
        .collect();
    let mut out = Vec::new();
    for Entry { platform, devices } in &sel.entries {
        let p = model_find(platform, &plats).ok_or_else(|| format!("platform {platform}"))?;
        let devs = &cat[p].devices;
        match devices {
            None => out.extend((0..devs.len()).map(|d| (p, d))),
            Some(sels) => {
                for s in sels {
                    let d = model_find(s, devs).ok_or_else(|| format!("device {s}"))?;
                    out.push((p, d));
                }
            }
        }
    }
    Ok(out)
}

/// The properties above, for one input.
///
/// # Panics
///
/// When a property does not hold.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let cat = catalogue(input.u8());
    let text = input.rest_text();
    check_text(&text, &cat);
}

/// The properties for one selector text over one catalogue.
///
/// # Panics
///
/// When a property does not hold.
pub fn check_text(text: &str, cat: &[PlatformEntry]) {
    let pieces: Vec<&str> = text.split(';').collect();
    let sel = match Selector::parse(text) {
        Ok(sel) => sel,
        Err(SelectError::Syntax { entry }) => {
            assert!(
                pieces.contains(&entry.as_str()) && entry.split(':').count() >= 3,
                "Syntax error names {entry:?}, not a 3+ part entry of {text:?}"
            );
            return;
        }
        Err(SelectError::Empty { entry }) => {
            assert!(
                pieces.contains(&entry.as_str()),
                "Empty error names {entry:?}, not an entry of {text:?}"
            );
            let parts: Vec<&str> = entry.split(':').collect();
            let empty = match parts.as_slice() {
                [p] => p.is_empty(),
                [p, d] => p.is_empty() || d.split(',').any(str::is_empty),
                _ => false,
            };
            assert!(empty, "Empty error for {entry:?}, which has no empty part");
            return;
        }
        Err(other) => panic!("parse of {text:?} returned a resolution error: {other:?}"),
    };
    if text.trim().is_empty() {
        assert!(
            sel.entries.is_empty(),
            "blank text {text:?} parsed to {sel:?}"
        );
    } else {
        assert_eq!(
            sel.entries.len(),
            pieces.len(),
            "{text:?}: one entry per ';' piece"
        );
        assert!(
            pieces.iter().all(|p| p.split(':').count() <= 2),
            "{text:?} has a 3+ part entry but parsed"
        );
        let again = Selector::parse(&render(&sel));
        assert_eq!(again.as_ref(), Ok(&sel), "{text:?} does not round trip");
    }

    let got = sel.resolve(cat);
    let want = model_resolve(&sel, cat);
    match (&got, &want) {
        (Ok(g), Ok(w)) => {
            assert_eq!(g, w, "{text:?}: resolve differs from the model");
            for &(p, d) in g {
                assert!(
                    p < cat.len() && d < cat[p].devices.len(),
                    "({p}, {d}) out of range"
                );
            }
        }
        (Err(SelectError::NoPlatforms), Err(w)) => assert_eq!(w, "no platforms"),
        (Err(SelectError::PlatformNotFound { selector, .. }), Err(w)) => {
            assert_eq!(*w, format!("platform {selector}"));
        }
        (Err(SelectError::DeviceNotFound { selector, .. }), Err(w)) => {
            assert_eq!(*w, format!("device {selector}"));
        }
        _ => panic!("{text:?} over {cat:?}: resolve gave {got:?}, the model {want:?}"),
    }
}
