//! The expectations table: known driver bugs, as expected failures.
//!
//! Each entry names a platform (and optionally a device) by case-insensitive substring, the exact test
//! name (`suite::test`), the reason, and a link to the `docs/DEVICES.md` section that documents the bug.
//! A matching test that fails is reported as an *expected failure* and does not fail the run; one that
//! passes is reported as an *unexpected pass* and does fail it, so that a fixed driver gets its entry
//! removed (use [`Expectation::flaky`] for a bug that only sometimes shows). A host test checks that
//! every link points at an existing heading of `docs/DEVICES.md`.
//!
//! To add one: append an entry below and a section (or a line in the runtime's section) to
//! `docs/DEVICES.md`; see `docs/TESTING.md`.

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
    /// The full test name, `suite::test`.
    pub test: &'static str,
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

    /// Whether this entry covers `test` on the device `device` of the platform `platform`, whose
    /// version and driver version strings are `versions`.
    pub fn matches(&self, platform: &str, device: &str, versions: &str, test: &str) -> bool {
        let contains =
            |hay: &str, needle: &str| hay.to_lowercase().contains(&needle.to_lowercase());
        self.test == test
            && contains(platform, self.platform)
            && contains(device, self.device)
            && contains(versions, self.version)
    }
}

/// Every known driver bug. Keep entries sorted by platform, then test.
pub const EXPECTATIONS: &[Expectation] = &[
    Expectation {
        platform: "intel",
        device: "",
        version: "OpenCL 3.1",
        test: "parity::default_device_queue_is_none_until_one_is_created",
        reason: "clGetCommandQueueInfo(CL_QUEUE_DEVICE_DEFAULT) of a host queue returns CL_INVALID_VALUE although the device reports device-side enqueue",
        link: "docs/DEVICES.md#intel-default-device-queue",
        failure: "CL_QUEUE_DEVICE_DEFAULT of a host queue: clGetCommandQueueInfo failed: CL_INVALID_VALUE",
        flaky: false,
    },
    Expectation {
        platform: "nvidia",
        device: "",
        version: "580.",
        test: "buffers::migration_of_a_buffer_with_its_sub_buffer",
        reason: "CL_MIGRATE_MEM_OBJECT_HOST of a buffer together with its sub-buffer fails with CL_INVALID_VALUE",
        link: "docs/DEVICES.md#nvidia-gpu-machine",
        failure: "clEnqueueMigrateMemObjects failed: CL_INVALID_VALUE",
        flaky: false,
    },
    Expectation {
        platform: "nvidia",
        device: "",
        version: "580.",
        test: "core::marker_waits_for_user_event",
        reason: "markers and barriers with a non-empty wait list report CL_EVENT_COMMAND_TYPE 0x4003, not CL_COMMAND_MARKER",
        link: "docs/DEVICES.md#nvidia-gpu-machine",
        failure: "CL_EVENT_COMMAND_TYPE of a marker with a wait list: 0x4003",
        flaky: false,
    },
    Expectation {
        platform: "nvidia",
        device: "",
        version: "580.",
        test: "core::user_event_error_reaches_callback",
        reason: "a CL_COMPLETE callback gets CL_COMPLETE, not the error, when a user event is set to an error status",
        link: "docs/DEVICES.md#nvidia-gpu-machine",
        failure: "the CL_COMPLETE callback of a user event set to an error got Complete",
        flaky: false,
    },
    Expectation {
        platform: "nvidia",
        device: "",
        version: "580.",
        test: "core::user_event_status_is_set_once",
        reason: "a second clSetUserEventStatus(CL_COMPLETE) returns CL_SUCCESS, not CL_INVALID_OPERATION",
        link: "docs/DEVICES.md#nvidia-gpu-machine",
        failure: "a second clSetUserEventStatus returned Ok(())",
        flaky: false,
    },
    Expectation {
        platform: "nvidia",
        device: "",
        version: "580.",
        test: "images::copies_between_1d_image_arrays_and_buffers",
        reason: "clEnqueueCopyImageToBuffer / clEnqueueCopyBufferToImage fail with CL_INVALID_VALUE for every 1-D image array",
        link: "docs/DEVICES.md#nvidia-gpu-machine",
        failure: "clEnqueueCopyImageToBuffer failed: CL_INVALID_VALUE",
        flaky: false,
    },
    Expectation {
        platform: "oclgrind",
        device: "",
        version: "Oclgrind 21.10",
        test: "core::profiling_needs_a_profiling_queue",
        reason: "clGetEventProfilingInfo answers for queues created without CL_QUEUE_PROFILING_ENABLE",
        link: "docs/DEVICES.md#oclgrind",
        failure: "clGetEventProfilingInfo on a queue without profiling returned Ok(",
        flaky: false,
    },
    Expectation {
        platform: "oclgrind",
        device: "",
        version: "Oclgrind 21.10",
        test: "images::image_info_reports_pitches",
        reason: "CL_IMAGE_ROW_PITCH and CL_IMAGE_SLICE_PITCH read 0 for images created without host pitches",
        link: "docs/DEVICES.md#oclgrind",
        failure: "CL_IMAGE_ROW_PITCH 0 below a packed row",
        flaky: false,
    },
    Expectation {
        platform: "oclgrind",
        device: "",
        version: "Oclgrind 21.10",
        test: "images::used_host_row_pitch_is_honoured",
        reason: "clCreateImage ignores image_row_pitch: USE_HOST_PTR rows are read as if packed",
        link: "docs/DEVICES.md#oclgrind",
        failure: "USE_HOST_PTR rows read with image_row_pitch 20",
        flaky: false,
    },
    Expectation {
        platform: "oclgrind",
        device: "",
        version: "Oclgrind 21.10",
        test: "parity::kernel_attributes_name_the_declaration",
        reason: "clGetKernelInfo(CL_KERNEL_ATTRIBUTES) returns uninitialised bytes before the attribute text",
        link: "docs/DEVICES.md#oclgrind-kernel-attributes",
        failure: "CL_KERNEL_ATTRIBUTES of a reqd_work_group_size kernel",
        flaky: false,
    },
    Expectation {
        platform: "portable",
        device: "",
        version: "5.0+debian",
        test: "parity::kernel_local_mem_size_counts_local_arguments",
        reason: "CL_KERNEL_LOCAL_MEM_SIZE reads 0 with a __local argument set",
        link: "docs/DEVICES.md#pocl5-kernel-local-mem-size",
        failure: "CL_KERNEL_LOCAL_MEM_SIZE with a 16-byte __local argument: 0",
        flaky: false,
    },
    Expectation {
        platform: "portable",
        device: "",
        version: "PoCL",
        test: "core::user_event_error_reaches_callback",
        reason: "a CL_COMPLETE callback never runs when a user event is set to an error status",
        link: "docs/DEVICES.md#pocl",
        failure: "the CL_COMPLETE callback did not run",
        flaky: false,
    },
];

/// The first entry covering `test` on `platform`/`device`, if any.
pub fn lookup(
    platform: &str,
    device: &str,
    versions: &str,
    test: &str,
) -> Option<&'static Expectation> {
    lookup_in(EXPECTATIONS, platform, device, versions, test)
}

/// [`lookup`] over a given table (tests use their own).
pub fn lookup_in<'a>(
    table: &'a [Expectation],
    platform: &str,
    device: &str,
    versions: &str,
    test: &str,
) -> Option<&'a Expectation> {
    table
        .iter()
        .find(|e| e.matches(platform, device, versions, test))
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
        test: "buffers::fill_rejects_bad_pattern",
        reason: "example",
        link: "docs/DEVICES.md#pocl",
        failure: "",
        flaky: false,
    }];

    #[test]
    fn lookup_matches_platform_substring_case_insensitively() {
        let e = lookup_in(
            TABLE,
            "Portable Computing Language",
            "pthread-x",
            "OpenCL 3.0 PoCL 3.1+debian",
            "buffers::fill_rejects_bad_pattern",
        );
        assert_eq!(e.map(|e| e.reason), Some("example"));
        // Keyed to the version it was seen with: a newer driver runs the test as any other.
        let newer = lookup_in(
            TABLE,
            "Portable Computing Language",
            "pthread-x",
            "OpenCL 3.0 PoCL 5.0",
            "buffers::fill_rejects_bad_pattern",
        );
        assert!(newer.is_none());
    }

    #[test]
    fn lookup_needs_the_exact_test_name_and_platform() {
        assert!(lookup_in(
            TABLE,
            "Portable Computing Language",
            "x",
            "PoCL 3.1",
            "buffers::fill"
        )
        .is_none());
        assert!(lookup_in(
            TABLE,
            "Intel(R) OpenCL",
            "x",
            "PoCL 3.1",
            "buffers::fill_rejects_bad_pattern"
        )
        .is_none());
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
        for e in EXPECTATIONS {
            assert!(
                e.failure.len() >= 16,
                "{}: name the failing call and status (or the assertion text) in `failure`",
                e.test
            );
        }
    }

    #[test]
    fn every_expectation_links_an_existing_devices_md_section() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/DEVICES.md");
        let doc = std::fs::read_to_string(path).expect("docs/DEVICES.md exists");
        let known = anchors(&doc);
        for e in EXPECTATIONS {
            let anchor = e.link.strip_prefix("docs/DEVICES.md#").unwrap_or_else(|| {
                panic!(
                    "{}: link `{}` must start with docs/DEVICES.md#",
                    e.test, e.link
                )
            });
            assert!(
                known.iter().any(|a| a == anchor),
                "{}: no section #{anchor} in docs/DEVICES.md",
                e.test
            );
            assert!(
                !e.reason.is_empty() && !e.platform.is_empty(),
                "{}: reason and platform required",
                e.test
            );
        }
    }
}
