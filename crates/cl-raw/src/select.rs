//! The device-selector grammar of `CL_TEST` / `PYOPENCL_TEST` (described in `cl_mem::select`),
//! pure: parsing ([`Selector::parse`]) and resolution over platform and device names
//! ([`Selector::resolve`]), with no OpenCL call.
//!
//! It lives here, below `cl-mem`, so that every tool that selects devices uses one grammar:
//! `cl-mem` re-exports it as `cl_mem::select` and runs it against the live platforms, and
//! `cl-characterize`'s `cl-report` (which may depend on `cl-raw` only) uses it for `--device`.

use std::fmt;

/// One selector: an index or a name substring.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ident {
    /// Python-style index: negative counts from the end.
    Index(i64),
    /// Case-insensitive substring of `name + " " + vendor`.
    Name(String),
}

impl Ident {
    fn parse(s: &str) -> Ident {
        // Python's int() accepts surrounding whitespace and a sign.
        match s.trim().parse::<i64>() {
            Ok(i) => Ident::Index(i),
            Err(_) => Ident::Name(s.to_owned()),
        }
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ident::Index(i) => write!(f, "{i}"),
            Ident::Name(n) => write!(f, "'{n}'"),
        }
    }
}

/// One `platform[:device,...]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The platform selector.
    pub platform: Ident,
    /// The device selectors; `None` selects every device of the platform.
    pub devices: Option<Vec<Ident>>,
}

/// A parsed selector string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Selector {
    /// The entries, in order.
    pub entries: Vec<Entry>,
}

/// A platform as selection sees it: name, vendor and its devices' `(name, vendor)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformEntry {
    /// `CL_PLATFORM_NAME`.
    pub name: String,
    /// `CL_PLATFORM_VENDOR`.
    pub vendor: String,
    /// `(CL_DEVICE_NAME, CL_DEVICE_VENDOR)` of each device, in driver order.
    pub devices: Vec<(String, String)>,
}

/// Why a selector is malformed or matches nothing. Resolution errors list what is available.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// An entry with three or more `:`-separated parts (`"a:b:c"`).
    #[error(
        "invalid selector entry '{entry}': expected 'platform' or 'platform:device,device,...'"
    )]
    Syntax {
        /// The offending entry.
        entry: String,
    },
    /// An empty entry or device selector (`"port;"`, `"port:"`).
    #[error("empty selector in '{entry}'")]
    Empty {
        /// The entry (possibly empty itself).
        entry: String,
    },
    /// No platform matched.
    #[error("no platform matches {selector}; available platforms: {available}")]
    PlatformNotFound {
        /// The selector.
        selector: Ident,
        /// `"0: name (vendor), 1: ..."`, or `"none"`.
        available: String,
    },
    /// No device of the platform matched.
    #[error(
        "no device of platform '{platform}' matches {selector}; available devices: {available}"
    )]
    DeviceNotFound {
        /// The platform's name.
        platform: String,
        /// The selector.
        selector: Ident,
        /// `"0: name (vendor), 1: ..."`, or `"none"`.
        available: String,
    },
    /// No platform is registered with the ICD loader.
    #[error("no OpenCL platform found (is an ICD registered in /etc/OpenCL/vendors?)")]
    NoPlatforms,
    /// The selection (or, unselected, the whole system) has no device.
    #[error("no OpenCL device found; available platforms: {available}")]
    NoDevices {
        /// `"0: name (vendor), 1: ..."`, or `"none"`.
        available: String,
    },
}

/// `"0: name (vendor), 1: ..."` of `(name, vendor)` pairs, or `"none"`: how the errors list
/// what is available.
pub fn listing<'a>(items: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let parts: Vec<String> = items
        .enumerate()
        .map(|(i, (n, v))| format!("{i}: {n} ({v})"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// Finds `ident` among `(name, vendor)` pairs: index (Python semantics) or first substring match.
fn find(ident: &Ident, items: &[(&str, &str)]) -> Option<usize> {
    match ident {
        Ident::Index(i) => {
            let len = i64::try_from(items.len()).ok()?;
            let idx = if *i < 0 { i + len } else { *i };
            (0..len)
                .contains(&idx)
                .then(|| usize::try_from(idx).ok())
                .flatten()
        }
        Ident::Name(n) => {
            let needle = n.to_lowercase();
            items.iter().position(|(name, vendor)| {
                format!("{name} {vendor}").to_lowercase().contains(&needle)
            })
        }
    }
}

impl Selector {
    /// Parses a selector string. An empty (or all-whitespace) string is the empty selector, which
    /// [`Selector::resolve`] reads as "every device".
    ///
    /// # Errors
    ///
    /// [`SelectError::Syntax`] for an entry with three or more `:` parts, [`SelectError::Empty`]
    /// for an empty entry or device selector.
    pub fn parse(s: &str) -> Result<Selector, SelectError> {
        if s.trim().is_empty() {
            return Ok(Selector {
                entries: Vec::new(),
            });
        }
        let mut entries = Vec::new();
        for entry in s.split(';') {
            let parts: Vec<&str> = entry.split(':').collect();
            let empty = || SelectError::Empty {
                entry: entry.to_owned(),
            };
            match parts.as_slice() {
                [""] => return Err(empty()),
                [p] => entries.push(Entry {
                    platform: Ident::parse(p),
                    devices: None,
                }),
                [p, d] => {
                    if p.is_empty() || d.split(',').any(str::is_empty) {
                        return Err(empty());
                    }
                    entries.push(Entry {
                        platform: Ident::parse(p),
                        devices: Some(d.split(',').map(Ident::parse).collect()),
                    });
                }
                _ => {
                    return Err(SelectError::Syntax {
                        entry: entry.to_owned(),
                    })
                }
            }
        }
        Ok(Selector { entries })
    }

    /// Resolves against a catalogue of platforms: `(platform index, device index)` pairs in
    /// selection order. The empty selector selects every device of every platform.
    ///
    /// # Errors
    ///
    /// [`SelectError::NoPlatforms`] for an empty catalogue, `PlatformNotFound` /
    /// `DeviceNotFound` (with the available names) for a selector that matches nothing or an
    /// index out of range.
    pub fn resolve(&self, platforms: &[PlatformEntry]) -> Result<Vec<(usize, usize)>, SelectError> {
        if platforms.is_empty() {
            return Err(SelectError::NoPlatforms);
        }
        let plat_items: Vec<(&str, &str)> = platforms
            .iter()
            .map(|p| (p.name.as_str(), p.vendor.as_str()))
            .collect();
        if self.entries.is_empty() {
            return Ok(platforms
                .iter()
                .enumerate()
                .flat_map(|(pi, p)| (0..p.devices.len()).map(move |di| (pi, di)))
                .collect());
        }
        let mut out = Vec::new();
        for entry in &self.entries {
            let pi = find(&entry.platform, &plat_items).ok_or_else(|| {
                SelectError::PlatformNotFound {
                    selector: entry.platform.clone(),
                    available: listing(plat_items.iter().copied()),
                }
            })?;
            let p = &platforms[pi];
            let dev_items: Vec<(&str, &str)> = p
                .devices
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            match &entry.devices {
                None => out.extend((0..dev_items.len()).map(|di| (pi, di))),
                Some(sels) => {
                    for sel in sels {
                        let di =
                            find(sel, &dev_items).ok_or_else(|| SelectError::DeviceNotFound {
                                platform: p.name.clone(),
                                selector: sel.clone(),
                                available: listing(dev_items.iter().copied()),
                            })?;
                        out.push((pi, di));
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The platforms of the semantics reference's examples (section 5.1).
    fn catalogue() -> Vec<PlatformEntry> {
        let p = |name: &str, vendor: &str, devs: &[(&str, &str)]| PlatformEntry {
            name: name.into(),
            vendor: vendor.into(),
            devices: devs
                .iter()
                .map(|(n, v)| ((*n).into(), (*v).into()))
                .collect(),
        };
        vec![
            p(
                "Oclgrind",
                "University of Bristol",
                &[("Oclgrind Simulator", "University of Bristol")],
            ),
            p(
                "Portable Computing Language",
                "The pocl project",
                &[("pthread-haswell-AMD EPYC 7B12", "AuthenticAMD")],
            ),
            p(
                "Intel(R) OpenCL",
                "Intel(R) Corporation",
                &[("Intel(R) Xeon(R) CPU", "Intel(R) Corporation")],
            ),
            p(
                "Portable Computing Language",
                "The pocl project",
                &[
                    ("pthread-skylake", "GenuineIntel"),
                    ("cpu-minimal", "GenuineIntel"),
                ],
            ),
        ]
    }

    fn pick(s: &str) -> Result<Vec<(usize, usize)>, SelectError> {
        Selector::parse(s)?.resolve(&catalogue())
    }

    /// Selectors that resolve, with the `(platform, device)` indices they pick.
    #[rstest::rstest]
    #[case::port_selects_the_first_pocl("port", &[(1, 0)])]
    #[case::port_pthread_selects_its_pthread_device("port:pthread", &[(1, 0)])]
    #[case::zero_zero_is_oclgrind("0:0", &[(0, 0)])]
    #[case::two_entries_keep_order("port;intel", &[(1, 0), (2, 0)])]
    #[case::two_entries_keep_order("1;2", &[(1, 0), (2, 0)])]
    #[case::two_entries_keep_order("intel;port", &[(2, 0), (1, 0)])]
    #[case::vendor_matches_too("corporation", &[(2, 0)])]
    #[case::vendor_matches_too("POCL PROJECT", &[(1, 0)])]
    #[case::negative_index_counts_from_the_end("-1", &[(3, 0), (3, 1)])]
    #[case::negative_index_counts_from_the_end("-4:-1", &[(0, 0)])]
    #[case::negative_index_counts_from_the_end("3:-1", &[(3, 1)])]
    #[case::device_substring_matches_the_device_name("port:amd", &[(1, 0)])]
    #[case::device_substring_matches_the_device_name("3:minimal", &[(3, 1)])]
    #[case::duplicates_are_kept("3:0,0", &[(3, 0), (3, 0)])]
    #[case::duplicates_are_kept("3:1,0", &[(3, 1), (3, 0)])]
    fn resolves(#[case] selector: &str, #[case] picked: &[(usize, usize)]) {
        assert_eq!(pick(selector), Ok(picked.to_vec()));
    }

    #[test]
    fn three_parts_is_a_syntax_error() {
        assert_eq!(
            pick("a:b:c"),
            Err(SelectError::Syntax {
                entry: "a:b:c".into()
            })
        );
        assert!(pick("a:b:c")
            .unwrap_err()
            .to_string()
            .contains("platform:device"));
    }

    #[test]
    fn docstring_equals_syntax_is_not_found() {
        let e = pick("intel=i5,i7").unwrap_err();
        assert!(
            matches!(&e, SelectError::PlatformNotFound { selector: Ident::Name(n), .. } if n == "intel=i5,i7")
        );
        let msg = e.to_string();
        assert!(msg.contains("'intel=i5,i7'"), "{msg}");
        assert!(msg.contains("0: Oclgrind (University of Bristol)"), "{msg}");
        assert!(
            msg.contains("2: Intel(R) OpenCL (Intel(R) Corporation)"),
            "{msg}"
        );
    }

    #[test]
    fn index_out_of_range_names_the_platforms() {
        let e = pick("5").unwrap_err();
        assert!(matches!(
            e,
            SelectError::PlatformNotFound {
                selector: Ident::Index(5),
                ..
            }
        ));
        assert!(e
            .to_string()
            .contains("3: Portable Computing Language (The pocl project)"));
        assert!(matches!(
            pick("-5"),
            Err(SelectError::PlatformNotFound { .. })
        ));
    }

    #[test]
    fn device_not_found_names_the_devices() {
        let e = pick("3:titan").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("platform 'Portable Computing Language'"),
            "{msg}"
        );
        assert!(
            msg.contains("0: pthread-skylake (GenuineIntel), 1: cpu-minimal (GenuineIntel)"),
            "{msg}"
        );
        assert!(matches!(
            pick("0:1"),
            Err(SelectError::DeviceNotFound {
                selector: Ident::Index(1),
                ..
            })
        ));
    }

    #[test]
    fn ci_style_selectors_work() {
        // First match wins: "portable" is the first PoCL, whose only device has no "cpu" in it,
        // even though the second PoCL has a "cpu-minimal" device.
        let e = pick("portable:cpu").unwrap_err();
        assert!(
            matches!(&e, SelectError::DeviceNotFound { selector: Ident::Name(n), .. } if n == "cpu"),
            "{e}"
        );
        assert!(e
            .to_string()
            .contains("0: pthread-haswell-AMD EPYC 7B12 (AuthenticAMD)"));
        assert_eq!(pick("intel(r):pu"), Ok(vec![(2, 0)]));
        assert!(matches!(
            pick("nvi:titan"),
            Err(SelectError::PlatformNotFound { .. })
        ));
    }

    #[test]
    fn empty_string_selects_everything() {
        assert_eq!(pick(""), Ok(vec![(0, 0), (1, 0), (2, 0), (3, 0), (3, 1)]));
        assert_eq!(pick("  "), Ok(vec![(0, 0), (1, 0), (2, 0), (3, 0), (3, 1)]));
    }

    #[test]
    fn empty_parts_are_errors_not_wildcards() {
        for s in ["port;", ";port", "port:", "0:1,", ":0", "a;;b"] {
            assert!(matches!(pick(s), Err(SelectError::Empty { .. })), "{s}");
        }
    }

    #[test]
    fn integers_parse_like_python_int() {
        assert_eq!(
            Selector::parse(" 1 ").unwrap().entries[0].platform,
            Ident::Index(1)
        );
        assert_eq!(
            Selector::parse("+2").unwrap().entries[0].platform,
            Ident::Index(2)
        );
        assert_eq!(
            Selector::parse("1.0").unwrap().entries[0].platform,
            Ident::Name("1.0".into())
        );
    }

    #[test]
    fn no_platforms_is_its_own_error() {
        assert_eq!(
            Selector::parse("0").unwrap().resolve(&[]),
            Err(SelectError::NoPlatforms)
        );
    }
}
