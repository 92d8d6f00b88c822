//! Expected failures: known driver bugs, written in the `device_test!` of the test they break.
//!
//! Each names a platform (and optionally a device and a version) by case-insensitive substring,
//! the reason, and a link to the `docs/DEVICES.md` section that documents the bug. A matching test
//! that fails with the named failure is reported as an *expected failure* and does not fail the
//! run; one that passes is reported as an *unexpected pass* and does fail it, so that a fixed
//! driver gets its entry removed (set `flaky` for a bug that only sometimes shows). The device
//! test binary refuses to run when a link does not name a heading of `docs/DEVICES.md`
//! ([`check`]), so a renamed section cannot leave a dangling entry.
//!
//! To add one: write it in the test's `device_test!(name, expected = &[Expectation { .. }])` and
//! add a section (or a line in the runtime's section) to `docs/DEVICES.md`; see `docs/TESTING.md`.

/// One known driver bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expectation {
    /// Case-insensitive substring of the platform name (`"portable"`, `"intel"`, `"oclgrind"`).
    pub platform: &'static str,
    /// Case-insensitive substring of the device name; `""` matches every device of the platform.
    pub device: &'static str,
    /// Case-insensitive substring of the device's `CL_VERSION` string or `CL_DRIVER_VERSION` that
    /// the bug was seen with (`"580."`, `"Oclgrind 21.10"`, `"PoCL 3.1"`); `""` for every version.
    /// A newer driver then runs the test as any other: a fixed bug shows as a pass, not as an
    /// unexpected pass hidden behind a vendor-wide entry.
    pub version: &'static str,
    /// What goes wrong, in a few words.
    pub reason: &'static str,
    /// `docs/DEVICES.md#anchor` of the section that documents it.
    pub link: &'static str,
    /// A substring the test's failure message must contain (the failing call and status, or the
    /// assertion's text): a failure of that test for any other reason is a real failure, so the
    /// entry cannot hide a regression elsewhere in the test.
    pub failure: &'static str,
    /// The bug shows only sometimes: a pass is then not reported as an unexpected pass.
    pub flaky: bool,
}

impl Expectation {
    /// Whether a failure with `message` is the documented bug (the message names it).
    pub fn explains(&self, message: &str) -> bool {
        message.contains(self.failure)
    }

    /// Whether this entry covers the device `device` of the platform `platform`, whose version
    /// and driver version strings are `versions`.
    pub fn matches(&self, platform: &str, device: &str, versions: &str) -> bool {
        let contains =
            |hay: &str, needle: &str| hay.to_lowercase().contains(&needle.to_lowercase());
        contains(platform, self.platform)
            && contains(device, self.device)
            && contains(versions, self.version)
    }
}

/// The first of `table` covering `platform`/`device` at `versions`, if any.
pub fn lookup<'a>(
    table: &'a [Expectation],
    platform: &str,
    device: &str,
    versions: &str,
) -> Option<&'a Expectation> {
    table.iter().find(|e| e.matches(platform, device, versions))
}

/// `docs/DEVICES.md` as this binary was built with: the sections expectations link to.
const DEVICES_MD: &str = include_str!("../../docs/DEVICES.md");

/// Why the expectation `e` of the test `test` is malformed, if it is: its link must name an
/// existing section of `devices_md` (`docs/DEVICES.md`), its platform and reason must be given,
/// and its failure must name the failing call and status (or the assertion's text).
pub fn check_in(e: &Expectation, test: &str, devices_md: &str) -> Result<(), String> {
    let Some(anchor) = e.link.strip_prefix("docs/DEVICES.md#") else {
        return Err(format!(
            "{test}: link `{}` must start with docs/DEVICES.md#",
            e.link
        ));
    };
    if !anchors(devices_md).iter().any(|a| a == anchor) {
        return Err(format!("{test}: no section #{anchor} in docs/DEVICES.md"));
    }
    if e.reason.is_empty() || e.platform.is_empty() {
        return Err(format!("{test}: reason and platform required"));
    }
    if e.failure.len() < 16 {
        return Err(format!(
            "{test}: name the failing call and status (or the assertion text) in `failure`"
        ));
    }
    Ok(())
}

/// [`check_in`] against the `docs/DEVICES.md` this binary was built with.
pub fn check(e: &Expectation, test: &str) -> Result<(), String> {
    check_in(e, test, DEVICES_MD)
}

/// GitHub-style anchor of a Markdown heading: lowercase, spaces to `-`, punctuation other than `-` and `_`
/// dropped.
pub fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor a Markdown document defines: its headings' anchors and explicit `<a id="...">` tags.
pub fn anchors(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in markdown.lines() {
        let t = line.trim_start();
        if t.starts_with('#') {
            out.push(heading_anchor(t.trim_start_matches('#')));
        }
        let mut rest = line;
        while let Some(i) = rest.find("<a id=\"") {
            rest = &rest[i + 7..];
            if let Some(end) = rest.find('"') {
                out.push(rest[..end].to_owned());
                rest = &rest[end..];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Expectation] = &[Expectation {
        platform: "portable",
        device: "",
        version: "PoCL 3.1",
        reason: "example",
        link: "docs/DEVICES.md#pocl",
        failure: "clEnqueueFillBuffer failed: CL_INVALID_VALUE",
        flaky: false,
    }];

    #[test]
    fn lookup_matches_platform_substring_case_insensitively() {
        let e = lookup(
            TABLE,
            "Portable Computing Language",
            "pthread-x",
            "OpenCL 3.0 PoCL 3.1+debian",
        );
        assert_eq!(e.map(|e| e.reason), Some("example"));
        // Keyed to the version it was seen with: a newer driver runs the test as any other.
        let newer = lookup(
            TABLE,
            "Portable Computing Language",
            "pthread-x",
            "OpenCL 3.0 PoCL 5.0",
        );
        assert!(newer.is_none());
    }

    #[test]
    fn lookup_needs_the_platform() {
        assert!(lookup(TABLE, "Intel(R) OpenCL", "x", "PoCL 3.1").is_none());
    }

    #[test]
    fn anchors_follow_github_slugs_and_explicit_ids() {
        let md = "# Devices\n## PoCL 3.1 (Debian)\ntext <a id=\"intel-svm\"></a>\n### Oclgrind: quirks\n";
        assert_eq!(
            anchors(md),
            ["devices", "pocl-31-debian", "intel-svm", "oclgrind-quirks"]
        );
    }

    #[test]
    fn every_expectation_names_the_failure_it_covers() {
        let short = Expectation {
            failure: "CL_INVALID",
            ..TABLE[0]
        };
        assert!(check_in(&short, "s::t", "## PoCL\n").is_err());
        assert_eq!(check_in(&TABLE[0], "s::t", "## PoCL\n"), Ok(()));
    }

    /// The binary runs [`check`] on every registered expectation before any test; this is the
    /// same check on a document without the section, and the real document has the sections the
    /// runner's own messages point to.
    #[test]
    fn every_expectation_links_an_existing_devices_md_section() {
        assert_eq!(
            check_in(&TABLE[0], "s::t", "## Oclgrind\n"),
            Err("s::t: no section #pocl in docs/DEVICES.md".to_owned())
        );
        let elsewhere = Expectation {
            link: "docs/TESTING.md#pocl",
            ..TABLE[0]
        };
        assert!(check_in(&elsewhere, "s::t", "## PoCL\n").is_err());
        assert_eq!(check(&TABLE[0], "s::t"), Ok(()));
    }
}
